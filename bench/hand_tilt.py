"""Is the opponent's hand like a uniform draw from the unseen cards? (experiment, docs/performance.md)

At every turn of searched games (``bench/fit_win_chance.py play`` files), the opponent's hand
counted by the standing of each color for the opponent (in its river or not, in one of its
fields or not), beside what a uniform draw of as many cards from what the seat to move does not
see holds on average::

    python bench/hand_tilt.py GAMES.jsonl [--games 200]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from mandala import Game, view
from mandala.sample import Sampler


def standing(game: Game, seat: int, color: int) -> str:
    river = "river" if color in game.rivers[seat] else "new"
    return river + ("+field" if any(game.fields[m][seat][color] for m in range(2)) else "")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("file", type=Path)
    p.add_argument("--games", type=int, default=200)
    args = p.parse_args()
    rows = [json.loads(line) for line in args.file.read_text().splitlines() if line.strip()][:args.games]
    held: defaultdict[str, float] = defaultdict(float)
    drawn: defaultdict[str, float] = defaultdict(float)
    n = 0
    for r in rows:
        game = Game.new(seed=r["seed"], first_player=r["first"])
        for code in r["codes"]:
            if game.phase == "turn":
                me = game.to_move
                assert me is not None
                pool = [0] * 6
                for c in Sampler(view(game, me))._unseen:
                    pool[c] += 1
                o = 1 - me
                for c in range(6):
                    held[standing(game, o, c)] += game.hands[o][c]
                    drawn[standing(game, o, c)] += game.hand_sizes[o] * pool[c] / sum(pool)
                n += 1
            game.push_code(code)
    print(f"{n} positions: cards a turn, the opponent's hand beside a uniform draw")
    for k in sorted(held):
        print(f"  {k:12s} {held[k] / n:.3f}  {drawn[k] / n:.3f}  ratio {held[k] / drawn[k]:.3f}")


if __name__ == "__main__":
    main()
