"""``mandala selfplay``: random bots play each other, to test the engine and time it."""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path

from mandala import Game, encode_record


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("selfplay", help="play games between uniformly random bots and print throughput")
    p.add_argument("--games", type=int, default=1000, help="how many games (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="seed for the deals and the bots (default 0)")
    p.add_argument("--records", type=Path, metavar="DIR", help="write each game's R23 record to DIR/game-NNNNNN.json")
    p.set_defaults(run=run)


def play_random(seed: int, games: int, records: Path | None = None) -> dict[str, object]:
    """Play ``games`` random games; game ``i`` is dealt from ``f"{seed}:{i}"`` and seat
    ``i % 2`` moves first. Returns the figures that ``selfplay`` prints."""
    if records is not None:
        records.mkdir(parents=True, exist_ok=True)
    rand = random.Random(seed).random
    reasons = {"river": 0, "deck": 0, "no_moves": 0, "turn_limit": 0}
    wins = [0, 0]
    decisions = 0
    start = time.perf_counter()
    for i in range(games):
        game = Game.new(seed=f"{seed}:{i}", first_player=i % 2)  # type: ignore[arg-type]
        legal_codes = game.legal_codes
        push = game.push_code
        while game.to_move is not None:
            codes = legal_codes()
            push(codes[int(rand() * len(codes))])
        decisions += len(game.history)
        reasons[game.end_reason] += 1  # type: ignore[index]
        winner = game.winner()
        if winner is not None:
            wins[winner] += 1
        if records is not None:
            (records / f"game-{i:06d}.json").write_bytes(encode_record(game))
    elapsed = time.perf_counter() - start
    return {
        "games": games,
        "seconds": round(elapsed, 3),
        "games_per_s": round(games / elapsed, 1) if elapsed else None,
        "decisions_per_s": round(decisions / elapsed, 1) if elapsed else None,
        "decisions_per_game": round(decisions / games, 2) if games else None,
        "end_reasons": reasons,
        **reasons,
        "wins": wins,
        "draws": games - sum(wins),
    }


def run(args: argparse.Namespace) -> int:
    if args.games < 0:
        print("mandala selfplay: --games must not be negative")
        return 2
    print(json.dumps(play_random(args.seed, args.games, args.records)))
    return 0
