"""How many iterations the search's ``reuse`` carries into a decision, beside those it runs.

With ``reuse=1`` a decision starts from the node of the moves played since the bot's last
search, with that node's visits (``SearchBot.last_carried``); the clock then adds its own
iterations (``last_iterations``). This plays ``--games`` games of ``search,reuse=1`` against
``search``, both on the CPU clock at ``--budget`` seconds a decision, seats alternating, and
prints the means over the reusing side's decisions with more than one legal move, grouped by
what was played since its last one: its own move only (a pick right after its turn), one
more move (the opponent's turn or pick), or more.

    nice -n 10 .venv/bin/python bench/reuse_carried.py --budget 0.3 --games 8
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from typing import Any

from mandala import Game, Move, View
from mandala_client.bots.search import SearchBot
from mandala_client.offline import load_bot, play_game
from protocol.messages import Update


class Counted:
    """A reusing search that notes, for each decision, the plies since its last and its figures."""

    def __init__(self, bot: SearchBot) -> None:
        self.bot = bot
        self.on_game_start = bot.on_game_start
        self.on_game_over = bot.on_game_over
        self.ply = 0
        self.last_ply: int | None = None
        self.rows: list[tuple[int | None, str, int, int]] = []

    def on_update(self, update: Update) -> None:
        self.ply = update.ply
        self.bot.on_update(update)

    def choose(self, v: View, legal: list[Move]) -> Move:
        move = self.bot.choose(v, legal)
        if len(legal) > 1:
            since = None if self.last_ply is None else self.ply - self.last_ply
            self.rows.append((since, v.phase, self.bot.last_carried, self.bot.last_iterations))
            self.last_ply = self.ply
        return move


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=float, default=0.3, help="CPU seconds a decision")
    parser.add_argument("--games", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rows: list[tuple[int | None, str, int, int]] = []
    for g in range(args.games):
        a = Counted(load_bot("search,clock=cpu,reuse=1", seed=2 * (args.seed + g), budget=args.budget))
        b = load_bot("search,clock=cpu", seed=2 * (args.seed + g) + 1, budget=args.budget)
        bots: list[Any] = [a, b] if g % 2 == 0 else [b, a]
        play_game(bots, Game.new(seed=f"reuse:{args.seed}:{g}", first_player=g % 2), f"g{g}")  # type: ignore[arg-type]
        rows += a.rows
    groups: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for since, phase, carried, fresh in rows:
        key = "first" if since is None else "own move" if since == 1 else "2 plies" if since == 2 else "3+ plies"
        groups[key, phase].append((carried, fresh))
    print(f"{'since the last decision':<24} {'phase':<6} {'decisions':>9} {'carried':>8} {'run':>8}")
    order = ["first", "own move", "2 plies", "3+ plies"]
    for (since_text, phase), v in sorted(groups.items(), key=lambda kv: (order.index(kv[0][0]), kv[0][1])):
        print(f"{since_text:<24} {phase:<6} {len(v):>9} {sum(c for c, _ in v) / len(v):>8.0f} {sum(f for _, f in v) / len(v):>8.0f}")
    carried, fresh = sum(r[2] for r in rows), sum(r[3] for r in rows)
    print(f"{'all':<31} {len(rows):>9} {carried / len(rows):>8.0f} {fresh / len(rows):>8.0f}  "
          f"(carried / run: {carried / fresh:.3f})")


if __name__ == "__main__":
    main()
