"""``mandala replay FILE... [--trace]``: replay R23 records (JSON, or the compact form the
server stores, ``mandala/compact.py``) and print each result. A file may also be an export's
or a tournament's games (JSON Lines, each game's record in its ``record``, gzipped or not):
each of its games is replayed; a game exported without its record (held while another game on
its deal was still to be played, or aborted by a server stop) is passed over with a note on
standard error."""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from mandala import Game, RecordError, compact, move_to_dict, replay

from .summary import summary


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("replay", help="replay game records, validating every move, and print each result as JSON")
    p.add_argument("files", nargs="+", type=Path, metavar="FILE",
                   help="R23 record files (JSON, or compact as the server stores them), or the games of "
                        "`mandala export` or `mandala tournament records` (JSON Lines, .gz or not)")
    p.add_argument("--trace", action="store_true", help="first print each decision's legal moves (one file only)")
    p.set_defaults(run=run)


def _legal_line(ply: int, game: Game) -> str:
    legal = sorted(json.dumps(move_to_dict(m), sort_keys=True) for m in game.legal_moves)
    # to_move is null once the game is over (a record with moves past the end)
    return f'{{"ply": {ply}, "to_move": {json.dumps(game.to_move)}, "legal": [{", ".join(legal)}]}}'


def run(args: argparse.Namespace) -> int:
    if args.trace and len(args.files) != 1:
        print("mandala replay: --trace takes exactly one file", file=sys.stderr)
        return 2
    out = sys.stdout

    def trace(ply: int, game: Game) -> None:
        out.write(_legal_line(ply, game) + "\n")

    for path in args.files:
        try:
            data = path.read_bytes()
            if data.startswith(b"\x1f\x8b"):  # gzip's magic: an export kept compressed
                data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            print(f"mandala replay: {path}: {getattr(e, 'strerror', None) or e}", file=sys.stderr)
            return 2
        where: dict[str, Any] = {}
        try:
            for where, record in _records(data):
                if record is None:
                    print(f"mandala replay: {path}: game {where['game_id']}: {_no_record(where)}", file=sys.stderr)
                    where = {}
                    continue
                game = replay(record, on_decision=trace if args.trace else None)
                out.write(json.dumps({**where, **summary(game)}) + "\n")
                where = {}
        except RecordError as e:
            at = f"ply {e.ply}" if e.ply is not None else "record"
            named = f"game {where['game_id']}: " if where else ""
            print(f"mandala replay: {path}: {named}{at}: rule {e.rule}: {e.message}", file=sys.stderr)
            out.flush()
            return 2
    out.flush()
    return 0


def _no_record(where: dict[str, Any]) -> str:
    """Why an exported game has no record, in words."""
    held = where.get("record_held")
    if not isinstance(held, dict):
        return "no record (aborted by a server stop), passed over"
    if held.get("tournament_id") is not None:
        waits = f"slot {held.get('slot')} of tournament {held['tournament_id']} was over"
    else:
        waits = f"the return game of pair {held.get('pair_id')} was over"
    return f"record held until {waits} (export it again then), passed over"


def _records(data: bytes) -> Iterator[tuple[dict[str, Any], bytes | dict[str, Any] | None]]:
    """The records a file holds, each with what names it in the output: one record (JSON or
    compact), or the games of an export (JSON Lines: each line's ``record``, named by its
    ``game_id``; ``None`` for a game exported without one, or with only its held record's public
    part, with its ``record_held``). Raises
    :class:`RecordError` for anything else."""
    if not data.lstrip().startswith(b"{"):  # not JSON: the compact form
        try:
            yield {}, msgspec.json.encode(compact.unpack(data))
        except ValueError as e:
            raise RecordError("R23", f"neither a JSON record, a compact record nor an export ({e})") from None
        return
    lines = data.strip().split(b"\n")
    try:
        first = json.loads(lines[0])
    except ValueError:
        first = None  # one record over several lines
    if not (isinstance(first, dict) and "record" in first and "game_id" in first):
        yield {}, data
        return
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            game = json.loads(line)
            game_id, record = game["game_id"], game["record"]
        except (ValueError, KeyError, TypeError):
            raise RecordError("R23", f"line {n} is not a game of an export (an object with game_id and record)") from None
        if record is None or game.get("record_held"):  # none kept, or its deal held back
            yield {"game_id": game_id, "record_held": game.get("record_held")}, None
            continue
        yield {"game_id": game_id}, record
