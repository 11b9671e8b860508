"""What a tournament's view costs the event loop as the tournament grows, in one run::

    .venv/bin/python bench/tournament_view.py
    .venv/bin/python bench/tournament_view.py --sizes 1000,15000,100000 --bots 64

The director publishes a running tournament's view (``/live``) at most every 0.2 s while its
games end, and ``GET /api/tournaments/{id}`` and ``…/results`` build the same view, all on the
event loop. For a synthetic round robin of each size (``--bots`` bots, random results, one game
in twenty a forfeit) it prints, in CPU milliseconds, the best of ``--repeat`` runs:

- ``from scratch``: the view from a new tally of every finished game (what each view cost
  before the tally was kept between reads);
- ``kept``: the view from the tally kept by ``server.tournaments.view.Tallies``, after one
  more game ended (what each view costs now): the games are checked against the tally's
  slots, the new one counted, the ranking fitted to the pairs' totals.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from server.storage import GameRow, TournamentRow
from server.tournaments import view


def tournament(size: int, bots: int, seed: int) -> tuple[TournamentRow, list[GameRow]]:
    """A round robin of ``bots`` bots whose first ``size`` slots have finished games."""
    rng = random.Random(seed)
    names = [f"bot{i:02d}" for i in range(bots)]
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    schedule = [[1, *pairs[slot % len(pairs)], slot // 2] for slot in range(size)]
    row = TournamentRow(tournament_id="bench", name="bench", state="running", created="2030-01-01T00:00:00.000Z",
                        definition={"name": "bench", "format": "round_robin", "participants": names,
                                    "games_per_pairing": 2},
                        schedule=schedule)
    games = []
    for slot, (_, a, b, _) in enumerate(schedule):
        players = [a, b] if slot % 2 == 0 else [b, a]
        winner = rng.choice((0, 1, 0, 1, None))
        reason = "forfeit" if winner is not None and rng.random() < 0.05 else "river"
        games.append(GameRow(game_id=f"g{slot}", players=players, status="finished", rated=False, first_player=0,
                             ply=80, started="2030-01-01T00:00:00.000Z", kind="tournament", tournament_id="bench",
                             slot=slot, end_reason=reason,
                             result={"winner": winner, "end_reason": reason, "scores": [30, 20], "cup_sizes": [9, 9]}))
    return row, games


def best_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return 1000 * min(times)


def measure(size: int, bots: int, repeat: int) -> tuple[float, float]:
    """CPU ms of a view from scratch, and of one from the kept tally after one more game."""
    row, games = tournament(size + repeat, bots, seed=size)
    done = games[:size]
    scratch = best_ms(lambda: view.tournament_view(row, view.Tallies().of(row, done), [], []), repeat)
    tallies = view.Tallies()
    tallies.of(row, done)
    step = iter(range(size + 1, size + repeat + 1))
    kept = best_ms(lambda: view.tournament_view(row, tallies.of(row, games[:next(step)]), [], []), repeat)
    return scratch, kept


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1000,15000,50000", help="finished games, comma-separated")
    p.add_argument("--bots", type=int, default=64)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    print(f"{'games':>8}  {'from scratch ms':>15}  {'kept ms':>8}  ratio")
    for size in (int(s) for s in args.sizes.split(",")):
        scratch, kept = measure(size, args.bots, args.repeat)
        print(f"{size:>8,}  {scratch:>15.1f}  {kept:>8.1f}  {scratch / kept:5.0f}×")


if __name__ == "__main__":
    main()
