"""Engine throughput on one core: random self-play, legal-move listing, views.

Run with ``make bench``. Figures are wall-clock on whatever machine runs it;
docs/performance.md lists the ones measured for the project.
"""

from __future__ import annotations

import json
import os
import platform
import random
import time

import msgspec

from mandala import Game, View, view
from mandala_cli.selfplay_cmd import play_random


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _per_call(fn, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def main() -> None:
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    play_random(0, 300)  # warm the per-hand move tables
    runs = [play_random(seed, 3000) for seed in (1, 2, 3)]
    best = max(runs, key=lambda r: r["games_per_s"])  # type: ignore[arg-type,return-value]

    game = Game.new(seed=11)
    rng = random.Random(5)
    for _ in range(20):
        game.push(rng.choice(game.legal_moves))

    def legal() -> None:
        game._legal = None
        _ = game.legal_moves

    def seat_view() -> View:
        game.forget_views()  # views are kept until the next move: time building one
        return view(game, 0)

    def both_seats() -> None:
        game.forget_views()
        view(game, 0)
        view(game, 1)

    encoder = msgspec.json.Encoder()
    figures = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "processor": _cpu_name(),
        "selfplay_games_per_s": best["games_per_s"],
        "selfplay_decisions_per_s": best["decisions_per_s"],
        "selfplay_decisions_per_game": best["decisions_per_game"],
        "runs_games_per_s": [r["games_per_s"] for r in runs],
        "legal_moves_us": round(_per_call(legal, 20000), 2),
        "seat_view_us": round(_per_call(seat_view, 5000), 2),
        "seat_view_json_us": round(_per_call(lambda: encoder.encode(seat_view()), 5000), 2),
        "both_seats_views_us": round(_per_call(both_seats, 5000), 2),
        "game_copy_us": round(_per_call(game.copy, 20000), 2),
    }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
