"""``mandala replay FILE... [--trace]``: replay R23 records (JSON, or the compact form the
server stores, ``mandala/compact.py``) and print each result."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import msgspec

from mandala import Game, RecordError, compact, move_to_dict, replay

from .summary import summary


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("replay", help="replay game records, validating every move, and print each result as JSON")
    p.add_argument("files", nargs="+", type=Path, metavar="FILE",
                   help="R23 record files (JSON, or compact as the server stores them)")
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
        except OSError as e:
            print(f"mandala replay: {path}: {e.strerror}", file=sys.stderr)
            return 2
        try:
            if not data.lstrip().startswith(b"{"):  # not JSON: the compact form
                try:
                    data = msgspec.json.encode(compact.unpack(data))
                except ValueError as e:
                    raise RecordError("R23", f"neither a JSON nor a compact record ({e})") from None
            game = replay(data, on_decision=trace if args.trace else None)
        except RecordError as e:
            where = f"ply {e.ply}" if e.ply is not None else "record"
            print(f"mandala replay: {path}: {where}: rule {e.rule}: {e.message}", file=sys.stderr)
            out.flush()
            return 2
        out.write(json.dumps(summary(game)) + "\n")
    out.flush()
    return 0
