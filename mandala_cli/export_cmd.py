"""``mandala export``: download games with their records from a running server, in bulk.

Usage::

    mandala export -o games.jsonl                       # every finished or aborted game
    mandala export --bot my-bot --kind ladder --since 2026-11-01 -o mine.jsonl.gz
    mandala export --limit 100 -o last.jsonl             # the last 100 games

It reads ``GET /api/games/export`` (PROTOCOL.md §17.10): JSON Lines, one game a line (id,
kind, players, result, times, R23 record), in the order the games started. The answer comes
gzip-compressed; a FILE named ``*.gz`` (or ``--gzip``) keeps it compressed, any other is
written as plain JSON Lines. FILE is written whole or not at all; without ``-o`` the lines go
to stdout. A progress bar (tqdm) counts the games on a terminal.

Exit status: 0 when done; 1 when the server refuses (``error: CODE: MESSAGE``, e.g.
``unknown_bot``, ``bad_date``) or cannot be reached, or FILE cannot be written; 2 for a bad
command line.
"""

from __future__ import annotations

import argparse
import sys
import time
import urllib.parse
import zlib
from typing import IO

from tqdm import tqdm

from .http_client import Failure, add_server_option, chunks, open_url, save

FILTERS = ("bot", "kind", "status", "since", "until", "limit")


def positive(text: str) -> int:
    """``--limit``: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a whole number, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"at least 1, not {value}")
    return value


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("export", help="download games with their records as JSON Lines",
                       description=(__doc__ or "").split("\n", 1)[-1].replace("::\n", ":\n"),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_server_option(p)
    p.add_argument("--bot", metavar="NAME", help="only the games of this bot")
    p.add_argument("--kind", choices=("challenge", "ladder", "qualification", "admin", "tournament"),
                   help="only games of this kind")
    p.add_argument("--status", choices=("finished", "aborted"), help="only finished or only aborted games")
    p.add_argument("--since", metavar="TIME", help="started at or after (ISO 8601 date or time, UTC by default)")
    p.add_argument("--until", metavar="TIME", help="started before (default: now)")
    p.add_argument("--limit", type=positive, metavar="N", help="only the last N games of those, in the same order")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE (default: stdout)")
    p.add_argument("--gzip", action="store_true", help="keep the gzip compression (implied by FILE.gz)")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    try:
        return export(args)
    except Failure as f:
        print(f, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


def export(args: argparse.Namespace) -> int:
    keep_gzip = args.gzip or (args.output or "").endswith(".gz")
    query = {name: getattr(args, name) for name in FILTERS if getattr(args, name)}
    query["compress"] = "gzip"
    path = "/api/games/export?" + urllib.parse.urlencode(query)
    games = 0
    started = time.monotonic()

    def write(out: IO[bytes]) -> None:
        nonlocal games
        with open_url(args, "GET", path) as resp:
            total = int(resp.headers.get("X-Game-Count") or 0) or None
            unpack = zlib.decompressobj(16 + zlib.MAX_WBITS)
            with tqdm(total=total, unit=" games", file=sys.stderr, disable=True if args.quiet else None,
                      dynamic_ncols=True) as bar:
                for chunk in chunks(args, resp):
                    lines = unpack.decompress(chunk)
                    out.write(chunk if keep_gzip else lines)
                    n = lines.count(b"\n")
                    games += n
                    bar.update(n)
                if not unpack.eof:
                    raise Failure("error: the export was cut off before its end")

    save(args.output, write)
    if not args.quiet:
        seconds = time.monotonic() - started
        where = args.output if args.output not in (None, "-") else "stdout"
        print(f"{games} games written to {where} in {seconds:.1f} s ({games / max(seconds, 1e-9):,.0f} games/s)",
              file=sys.stderr)
    return 0
