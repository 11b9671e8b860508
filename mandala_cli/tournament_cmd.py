"""``mandala tournament``: run a tournament on a running server through its HTTP API.

Usage::

    export MANDALA_ADMIN_TOKEN=...     # the organizer's token, the one `mandala serve` was given
    mandala tournament create --name cup --bots ann,ben,cat --games-per-pairing 4 --start
    mandala tournament status ID --watch
    mandala tournament list                     # the newest 50 (--all: every one)
    mandala tournament results ID              # ranking and crosstable (--csv, --json)
    mandala tournament records ID -o cup.jsonl

Actions:

  create     --name NAME --bots A,B,C [--format round_robin|gauntlet|swiss] [--games-per-pairing N]
             [--rounds N] [--bot-under-test NAME] [--decision-ms MS] [--max-concurrent N]
             [--max-games-per-bot N] [--grace-s S] [--seed N], or --file DEFINITION.json (the
             body of POST /api/tournaments as is; - reads it from stdin). Prints the new
             tournament's id on stdout and a summary on stderr; --start starts it at once.
             Options left out take the server's defaults (format: round_robin).
  start ID, pause ID, resume ID, cancel ID
             The organizer's controls; each prints the tournament's new state.
  status ID  State, progress (played/planned games, with a bar), running games, the bots
             waited for, and the ranking so far. --watch polls every second until the
             tournament is finished or cancelled (redrawn on a terminal; piped, a line per
             change of progress, then the summary); --json prints the server's JSON (with
             --watch, a line each time it changes).
  list       The tournaments, newest first: id, name, format, state, games played of those
             planned, running games, when created. --limit N (1-500, default 50) a page; --all
             follows the pages to the first tournament; --json prints the server's objects as
             one JSON array.
  results ID The ranking (rank, bot, rating with its 95% interval, score, W/D/L, forfeits, the
             likelihood of being stronger than the next bot) and the crosstable; --csv prints
             the server's CSV, --json its JSON.
  records ID Every counted game as JSON Lines (game id, players, result, R23 record, slot), to
             stdout or with -o FILE to FILE (written whole or not at all).

Every action takes --server URL (default http://127.0.0.1:8080). The organizer's actions
(create, start, pause, resume, cancel) send the admin token: --admin-token, default
$MANDALA_ADMIN_TOKEN. Reading needs no token. The server's ids never begin with ``-``; an id that
does goes last, after ``--`` (``mandala tournament status --server URL -- -ID``).

Exit status: 0 when done; 1 when the server refuses (``error: CODE: MESSAGE`` on stderr, CODE
as in its JSON error, e.g. unknown_bot, unauthorized, wrong_state) or cannot be reached; 2 for a
bad command line.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import math
import sys
import time
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, NoReturn

from .http_client import ADMIN_TOKEN_ENV, Failure, add_server_option, as_json, call, call_page, chunks, open_url, save

FORMATS = ("round_robin", "gauntlet", "swiss")
CONTROLS = ("start", "pause", "resume", "cancel")
FINAL = ("finished", "cancelled")
POLL_S = 1.0
BAR_WIDTH = 30
RUNNING_SHOWN = 10
"""Running games listed by ``status`` (the rest are counted)."""


def finite(text: str) -> float:
    """A number of seconds as the definition takes it: finite (``nan`` and ``inf`` are no JSON)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"a finite number of seconds, not {text!r}")
    return value


OPTIONS = (
    ("--games-per-pairing", "games_per_pairing", int, "N", "games each pairing plays, even (server's default 2)"),
    ("--rounds", "rounds", int, "N", "Swiss: rounds to play (required there)"),
    ("--bot-under-test", "bot_under_test", str, "NAME", "gauntlet: the bot that meets each of the others (required there)"),
    ("--decision-ms", "decision_ms", int, "MS", "time per decision (default: the server's)"),
    ("--max-concurrent", "max_concurrent", int, "N", "games running at once, at most (server's default 8)"),
    ("--max-games-per-bot", "max_games_per_bot", int, "N", "games one bot plays at once, at most (server's default 2)"),
    ("--grace-s", "grace_s", finite, "S", "how long a game waits for a bot away before it forfeits (server's default 60)"),
    ("--seed", "seed", int, "N", "fixes the deals (default: drawn by the server)"),
)
"""The optional fields of a definition: flag, field, type, metavar, help. Only those given are sent."""


# ---------------------------------------------------------------------- the command line


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("tournament", help="create, control and follow a tournament on a running server",
                       description=(__doc__ or "").split("\n", 1)[-1].replace("::\n", ":\n"),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")

    server = argparse.ArgumentParser(add_help=False)
    add_server_option(server)
    admin = argparse.ArgumentParser(add_help=False)
    admin.add_argument("--admin-token", metavar="TOKEN",
                       help=f"the organizer's token (default ${ADMIN_TOKEN_ENV})")

    create = actions.add_parser("create", parents=[server, admin], help="create a tournament and print its id")
    create.add_argument("--name", help="the tournament's name")
    create.add_argument("--format", choices=FORMATS, help="default round_robin")
    create.add_argument("--bots", metavar="A,B,...", help="the participants, registered bots, comma-separated")
    for flag, _, kind, metavar, text in OPTIONS:
        create.add_argument(flag, type=kind, metavar=metavar, help=text)
    create.add_argument("--file", metavar="FILE",
                        help="the whole definition, the JSON body of POST /api/tournaments (- for stdin);"
                             " no other definition option then")
    create.add_argument("--start", action="store_true", help="start it at once")
    create.set_defaults(run=run, act=_create, usage_error=create.error)

    for op in CONTROLS:
        control = actions.add_parser(op, parents=[server, admin], help=f"{op} a tournament; prints its new state")
        control.add_argument("id", metavar="ID")
        control.set_defaults(run=run, act=_control, op=op)

    status = actions.add_parser("status", parents=[server], help="a tournament's state, progress and ranking")
    status.add_argument("id", metavar="ID")
    status.add_argument("--watch", action="store_true", help="poll every second until it is finished or cancelled")
    status.add_argument("--json", action="store_true", help="the server's JSON")
    status.set_defaults(run=run, act=_status)

    listing = actions.add_parser("list", parents=[server], help="the tournaments, newest first")
    listing.add_argument("--limit", type=int, default=50, metavar="N", help="tournaments a page, 1-500 (default 50)")
    listing.add_argument("--all", action="store_true", help="every tournament, page after page")
    listing.add_argument("--json", action="store_true", help="the server's objects, as one JSON array")
    listing.set_defaults(run=run, act=_list)

    results = actions.add_parser("results", parents=[server], help="the ranking and the crosstable")
    results.add_argument("id", metavar="ID")
    shape = results.add_mutually_exclusive_group()
    shape.add_argument("--csv", action="store_true", help="the ranking as CSV, as the server writes it")
    shape.add_argument("--json", action="store_true", help="the server's JSON")
    results.set_defaults(run=run, act=_results)

    records = actions.add_parser("records", parents=[server], help="every counted game's record, as JSON Lines")
    records.add_argument("id", metavar="ID")
    records.add_argument("-o", "--output", metavar="FILE",
                         help="write them to FILE (default: stdout); a FILE named *.gz is gzip-compressed")
    records.set_defaults(run=run, act=_records)


def run(args: argparse.Namespace) -> int:
    try:
        return int(args.act(args))
    except Failure as f:
        print(f, file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C during --watch
        return 130


# ---------------------------------------------------------------------- HTTP


def _path(tournament_id: str, tail: str = "") -> str:
    return f"/api/tournaments/{urllib.parse.quote(tournament_id, safe='')}{tail}"


# ---------------------------------------------------------------------- actions


def _create(args: argparse.Namespace) -> int:
    body = _definition(args)
    info = as_json(call(args, "POST", "/api/tournaments", body, admin=True))
    tid = info["tournament_id"]
    print(tid, flush=True)
    names = info["participants"]
    print(f"tournament {tid} created: {info['name']!r}, {info['format']}, {len(names)} bots ({', '.join(names)}),"
          f" {info['progress']['planned']} games planned", file=sys.stderr, flush=True)
    if args.start:
        started = as_json(call(args, "POST", _path(tid, "/start"), admin=True))
        print(f"tournament {tid}: {started['state']}", file=sys.stderr)
    return 0


def _definition(args: argparse.Namespace) -> bytes:
    """The body of ``POST /api/tournaments``: the file as is, or built from the options."""
    error: Callable[[str], NoReturn] = args.usage_error
    flags = [("--name", args.name), ("--format", args.format), ("--bots", args.bots)]
    flags += [(flag, getattr(args, field)) for flag, field, *_ in OPTIONS]
    given = [flag for flag, value in flags if value is not None]
    if args.file is not None:
        if given:
            error(f"--file holds the whole definition: leave out {', '.join(given)}")
        try:
            return sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
        except OSError as e:
            error(f"cannot read {args.file}: {e.strerror or e}")
    missing = [flag for flag, value in flags[:3] if value is None and flag != "--format"]
    if missing:
        error(f"give {' and '.join(missing)}, or the whole definition with --file")
    definition: dict[str, Any] = {
        "name": args.name,
        "format": args.format or "round_robin",
        "participants": [name.strip() for name in args.bots.split(",") if name.strip()],
    }
    for _, field, *_ in OPTIONS:
        value = getattr(args, field)
        if value is not None:
            definition[field] = value
    return json.dumps(definition).encode()


def _control(args: argparse.Namespace) -> int:
    info = as_json(call(args, "POST", _path(args.id, f"/{args.op}"), admin=True))
    print(info["state"])
    return 0


def _status(args: argparse.Namespace) -> int:
    if not args.watch:
        raw = call(args, "GET", _path(args.id))
        print(raw.decode() if args.json else render_status(as_json(raw)))
        return 0
    terminal = sys.stdout.isatty() and not args.json
    last: Any = None
    while True:
        raw = call(args, "GET", _path(args.id))
        view = as_json(raw)
        if args.json:
            if raw != last:
                print(raw.decode(), flush=True)
            last = raw
        elif terminal:
            sys.stdout.write("\x1b[H\x1b[2J" + render_status(view)
                             + f"\n\nwatching, every {POLL_S:g} s (Ctrl-C stops) - {time.strftime('%H:%M:%S')}\n")
            sys.stdout.flush()
        else:
            now = (view["state"], view["progress"]["played"], view["progress"]["running"])
            if now != last:
                print(f"{view['state']:<9} {progress_line(view['progress'])}", flush=True)
            last = now
        if view["state"] in FINAL:
            if not args.json and not terminal:
                print("\n" + render_status(view))
            return 0
        time.sleep(POLL_S)


def _list(args: argparse.Namespace) -> int:
    listed: list[dict[str, Any]] = []
    path: str | None = f"/api/tournaments?limit={args.limit}"
    while path is not None:
        raw, path = call_page(args, path)
        listed += as_json(raw)
        if not args.all:
            break
    print(json.dumps(listed) if args.json else render_list(listed))
    if path is not None and not args.json:
        print(f"(the newest {len(listed)}; --all lists every one)", file=sys.stderr)
    return 0


def _results(args: argparse.Namespace) -> int:
    if args.csv:
        sys.stdout.write(call(args, "GET", _path(args.id, "/results?format=csv")).decode())
        return 0
    raw = call(args, "GET", _path(args.id, "/results"))
    print(raw.decode() if args.json else render_results(as_json(raw)))
    return 0


def _records(args: argparse.Namespace) -> int:
    lines = 0

    def write(out: IO[bytes]) -> None:
        nonlocal lines
        with open_url(args, "GET", _path(args.id, "/records")) as resp, \
                (gzip.GzipFile(fileobj=out, mode="wb", mtime=0) if (args.output or "").endswith(".gz")
                 else contextlib.nullcontext(out)) as sink:
            for chunk in chunks(args, resp):
                lines += chunk.count(b"\n")
                sink.write(chunk)

    save(args.output, write)
    if args.output not in (None, "-"):
        print(f"{lines} games written to {args.output}", file=sys.stderr)
    return 0


# ---------------------------------------------------------------------- rendering


def progress_line(progress: dict[str, Any]) -> str:
    """``[#####.....]  3/6 games (50%), 2 running, 0 forfeits``"""
    planned, played = progress["planned"], progress["played"]
    share = played / planned if planned else 1.0
    filled = min(BAR_WIDTH, int(share * BAR_WIDTH))
    bar = "#" * filled + "." * (BAR_WIDTH - filled)
    return (f"[{bar}]  {played}/{planned} games ({int(share * 100)}%), {progress['running']} running,"
            f" {progress['forfeits']} forfeits")


def render_status(view: dict[str, Any]) -> str:
    """``GET /api/tournaments/{id}`` as text."""
    d = view["definition"]
    head = f"{view['name']} ({view['tournament_id']}): {view['format']}, {len(d['participants'])} bots," \
           f" {d['games_per_pairing']} games a pairing, {d['decision_ms']} ms a decision"
    if view["format"] == "gauntlet" and d.get("bot_under_test"):
        head += f", {d['bot_under_test']} against the rest"
    lines = [head]
    state = view["state"]
    if view["format"] == "swiss":
        state += f", round {view['rounds']} of {d['rounds']}"
    times = [(label, view[key]) for label, key in (("created", "created"), ("started", "started"), ("ended", "ended"))
             if view.get(key)]
    lines.append(f"state     {state} ({', '.join(f'{label} {at}' for label, at in times)})")
    lines.append(f"progress  {progress_line(view['progress'])}")
    running = view["running"]
    for i, game in enumerate(running[:RUNNING_SHOWN]):
        label = "running" if i == 0 else ""
        lines.append(f"{label:<9} {game['game_id']}  {' vs '.join(game['players'])}, ply {game['ply']}")
    if len(running) > RUNNING_SHOWN:
        lines.append(f"{'':<9} and {len(running) - RUNNING_SHOWN} more")
    for i, waiting in enumerate(view["waiting"]):
        lines.append(f"{'waiting' if i == 0 else '':<9} {waiting_line(waiting)}")
    lines += ["", ranking_table(view["ranking"])]
    return "\n".join(lines)


def waiting_line(waiting: dict[str, Any]) -> str:
    """One bot the schedule waits for (PROTOCOL.md §21.11): away, with the time its games have
    before they are forfeited, or busy with other games (never forfeited for that)."""
    if waiting.get("reason") == "busy":
        games = ", ".join(f"{g['kind']} {g['game_id']} against {g['opponent']}" for g in waiting.get("busy_with", []))
        return f"{waiting['bot']}: busy since {waiting['since']}" + (f" with {games}" if games else "")
    left = waiting.get("forfeits_in_s")
    when = f"forfeits in {left:g} s" if left else "forfeits its games as they come due"
    return f"{waiting['bot']}: away since {waiting['since']}, {when}"


def render_list(listed: Sequence[dict[str, Any]]) -> str:
    """``GET /api/tournaments`` as a table, newest first."""
    if not listed:
        return "no tournament"
    rows = [[t["tournament_id"], t["name"], t["format"], t["state"],
             f"{t['progress']['played']}/{t['progress']['planned']}", str(t["progress"]["running"]), t["created"]]
            for t in listed]
    return _table(["id", "name", "format", "state", "games", "running", "created"], rows, "lllllrl")


def render_results(results: dict[str, Any]) -> str:
    """``GET /api/tournaments/{id}/results`` as text: the ranking, then the crosstable."""
    lines = [f"{results['name']} ({results['tournament_id']}): {results['state']},"
             f" {results['played']}/{results['planned']} games", "", ranking_table(results["ranking"])]
    order = [line["bot"] for line in results["ranking"]]
    if order:
        lines += ["", "crosstable: the row's points/games against the column", crosstable(order, results["crosstable"])]
    return "\n".join(lines)


def _number(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def ranking_table(ranking: Sequence[dict[str, Any]]) -> str:
    rows = [[
        str(r["rank"]),
        r["bot"],
        _number(r["rating"]),
        f"[{_number(r['low'])}, {_number(r['high'])}]",
        f"{r['score']:.1f}",
        f"{r['wins']}/{r['draws']}/{r['losses']}",
        str(r["forfeits"]),
        "" if r["stronger_than_next"] is None else f"{r['stronger_than_next'] * 100:.1f}%",
    ] for r in ranking]
    return _table(["rank", "bot", "rating", "95% interval", "score", "W/D/L", "forfeits", "> next"], rows,
                  "rlrrrrrr")


def crosstable(order: Sequence[str], table: dict[str, dict[str, dict[str, Any]]]) -> str:
    """Rows and columns in ranking order; columns by rank number."""
    rows = []
    for i, bot in enumerate(order):
        cells = []
        for j, other in enumerate(order):
            cell = table.get(bot, {}).get(other)
            cells.append("*" if i == j else "-" if cell is None else f"{cell['score']:g}/{cell['games']}")
        rows.append([str(i + 1), bot, *cells])
    return _table(["", "", *(str(j + 1) for j in range(len(order)))], rows, "rl" + "r" * len(order))


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], align: str) -> str:
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if a == "r" else c.ljust(w) for c, w, a in zip(cells, widths, align, strict=True)).rstrip()

    return "\n".join(line(r) for r in [headers, *rows])
