"""The search bot's cost per iteration, and where it goes, on one core.

At a fixed time a decision the search runs as many iterations as its speed allows, so a change
meant to make it faster is measured by this. Positions are the turns of greedy self-play
(``GreedyBot`` both seats, deals ``0``–``3``) with more than one legal move, every
``--every``-th; the figures are CPU microseconds, the best of ``--runs`` runs:

- ``iteration_us``: ``SearchBot(iterations=…)`` deciding at every position (the shipped
  settings), its whole time over the iterations it ran;
- ``sample_us``: one :meth:`mandala.sample.Sampler.sample` (a game consistent with the view);
- ``playout_us``: the default policy's six decisions and the judgement that ends them;
- ``judgement_us``: the judgement alone (the shipped one,
  :func:`~mandala_client.bots.heuristics.win_chance`), on those cut-off positions;
- ``tree_us``: what is left of an iteration: following the tree, adding a node, backing up.

``--repo DIR`` measures ``iteration_us`` of another checkout too, alternately with this one in
one run (each round a fresh process of each), so that a noisy machine slows both alike; it
prints each round and the ratio of the medians. The other checkout needs only ``SearchBot``,
``Sampler`` and ``choose_code``. Run with ``make bench`` or ``.venv/bin/python bench/search.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from engine import _cpu_name  # bench/, this script's folder

from mandala import Game
from mandala.game import build_move_tables
from mandala.player_view import view
from mandala.sample import Sampler
from mandala_client.bots.greedy import GreedyBot
from mandala_client.bots.search import SearchBot

THIS_CHECKOUT = Path(__file__).resolve().parent.parent


def positions(every: int) -> list[Game]:
    """Every ``every``-th turn with a choice in four greedy self-play games, copied as they stood."""
    found: list[Game] = []
    seen = 0
    for deal in range(4):
        game = Game.new(seed=deal, first_player=deal % 2)
        bots = (GreedyBot(seed=2 * deal), GreedyBot(seed=2 * deal + 1))
        while game.to_move is not None:
            legal = game.legal_moves
            if game.phase == "turn" and len(legal) > 1:
                if seen % every == 0:
                    found.append(game.copy())
                seen += 1
            game.push(bots[game.to_move].choose(view(game, game.to_move), legal))
    return found


def _cpu(fn: Callable[[], object]) -> float:
    start = time.thread_time()
    fn()
    return time.thread_time() - start


def iteration_us(games: list[Game], iterations: int) -> float:
    """CPU microseconds an iteration of the shipped search, over a decision at each position."""
    samplers = [Sampler(view(g, g.to_move)) for g in games]
    codes = [list(g.legal_codes()) for g in games]
    bot = SearchBot(seed=1, iterations=iterations)

    def decide() -> None:
        for sampler, legal in zip(samplers, codes, strict=True):
            bot.choose_code(sampler, legal)

    return _cpu(decide) / (iterations * len(games)) * 1e6


def parts_us(games: list[Game], per_position: int) -> dict[str, float]:
    """CPU microseconds of a sample, a playout with its judgement, and the judgement alone."""
    # Imported here: only the parts need the search's inner pieces, so ``--repo`` can time
    # any checkout that has ``SearchBot``.
    from mandala_client.bots.heuristics import resolve_picks
    from mandala_client.bots.search import JUDGEMENTS, _playout

    shipped = SearchBot()  # the playout's policy, length and judgement as the search has them
    policy, depth, judge = shipped.policy, shipped.depth, JUDGEMENTS[shipped.evaluation]
    rng = random.Random(3)
    samplers = [Sampler(view(g, g.to_move)) for g in games] * per_position
    n = len(samplers)

    def sample_only() -> None:
        for s in samplers:
            s.sample(rng)

    def sample_and_play() -> None:
        for s in samplers:
            _playout(s.sample(rng), rng, policy, depth, judge)

    sample = _cpu(sample_only) / n
    playout = _cpu(sample_and_play) / n - sample
    cut = []
    for s in samplers:
        g = s.sample(rng)
        _playout(g, rng, policy, depth, lambda _: 0.5)
        resolve_picks(g)
        if g.to_move is not None:
            cut.append(g)
    judgement = _cpu(lambda: [judge(g) for g in cut]) / len(cut)
    return {"sample_us": sample * 1e6, "playout_us": playout * 1e6, "judgement_us": judgement * 1e6}


def measure(every: int, iterations: int, runs: int, parts: bool) -> dict[str, object]:
    build_move_tables()  # a server builds them at start; no decision pays for them
    games = positions(every)
    figures: dict[str, object] = {"positions": len(games), "iterations_a_decision": iterations}
    figures["iteration_us"] = round(min(iteration_us(games, iterations) for _ in range(runs)), 1)
    if parts:
        best = [parts_us(games, 200) for _ in range(runs)]
        for key in best[0]:
            figures[key] = round(min(b[key] for b in best), 1)
        spent = figures["sample_us"] + figures["playout_us"]  # type: ignore[operator]
        figures["tree_us"] = round(figures["iteration_us"] - spent, 1)  # type: ignore[operator]
    return figures


def _one_round(repo: Path, args: argparse.Namespace) -> float:
    """``iteration_us`` of the checkout at ``repo``, measured in a fresh process."""
    env = {**os.environ, "PYTHONPATH": f"{repo}/clients/python:{repo}"}
    command = [sys.executable, str(Path(__file__).resolve()), "--every", str(args.every),
               "--iterations", str(args.iterations), "--runs", "1", "--no-parts", "--quiet"]
    out = subprocess.run(command, env=env, cwd=repo, check=True, capture_output=True, text=True).stdout
    return float(json.loads(out)["iteration_us"])


def compare(args: argparse.Namespace) -> None:
    """This checkout and ``--repo``, alternately, ``--runs`` rounds; the ratio of the medians."""
    ours: list[float] = []
    theirs: list[float] = []
    for k in range(args.runs):
        ours.append(_one_round(THIS_CHECKOUT, args))
        theirs.append(_one_round(args.repo.resolve(), args))
        print(f"round {k + 1}: this checkout {ours[-1]:.1f} µs, {args.repo} {theirs[-1]:.1f} µs", flush=True)
    a, b = statistics.median(ours), statistics.median(theirs)
    print(json.dumps({"this_us": round(a, 1), "repo_us": round(b, 1), "repo": str(args.repo.resolve()),
                      "speedup": round(b / a, 3)}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=8, help="take every k-th turn with a choice (default 8)")
    parser.add_argument("--iterations", type=int, default=1000, help="iterations a decision (default 1000)")
    parser.add_argument("--runs", type=int, default=3, help="runs to take the best of (with --repo: rounds, compared by their medians)")
    parser.add_argument("--repo", type=Path, help="another checkout to measure alternately with this one")
    parser.add_argument("--no-parts", dest="parts", action="store_false", help="time whole iterations only")
    parser.add_argument("--quiet", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    if args.repo is not None:
        compare(args)
        return
    figures = measure(args.every, args.iterations, args.runs, args.parts)
    if not args.quiet:
        figures = {"python": platform.python_version(), "processor": _cpu_name(), **figures}
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
