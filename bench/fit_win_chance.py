"""Fit the search's learned evaluation, ``heuristics.WIN_WEIGHTS``, to searched games.

Two steps. ``play`` has the search (a fixed number of iterations a decision, so every game is
reproducible from its number) play itself and appends each game to a JSON-lines file: its
seed, first player, moves and winner. ``fit`` replays those games, takes every position where a
turn begins, and fits a logistic model of the game's outcome for seat 0 (a win 1, a draw ½, a
loss 0) on :func:`mandala_client.bots.heuristics.win_features` by Newton's method, with a small
ridge. It prints the held-out log-loss, each fifth of the games held out in turn and fitted
on the rest, beside that of the hand-made evaluation as the search uses it and that of the
model without its prospects, and the weights to paste into ``WIN_WEIGHTS``, fitted on all
games. The shipped weights were fitted on the learned search's own games:

    python bench/fit_win_chance.py play --evaluation learned --games 1000 --first 2000 --jobs 2 --out learned.jsonl
    python bench/fit_win_chance.py fit learned.jsonl

The model has no constant term: every feature is a lead of one seat over the other, so the
same weights judge a position from either seat and a level position is worth one half.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from concurrent.futures import ProcessPoolExecutor
from itertools import repeat
from pathlib import Path
from typing import Any

import numpy as np

from mandala import Game, view
from mandala.sample import Sampler
from mandala_client.bots.heuristics import evaluate, win_features
from mandala_client.bots.search import EVAL_SCALE, JUDGEMENTS, SearchBot

ITERATIONS = 150
"""Iterations a decision of the searches that play the games (about 1.3 s of CPU a game)."""
BASE_FEATURES = 11
"""The features of ``win_chance`` before its prospects (``heuristics.win_features``)."""


def play_one(k: int, iterations: int = ITERATIONS, evaluation: str = "hand") -> dict[str, Any]:
    """Game ``k``: its deal, first player and both searches' seeds follow from ``k``; the
    searches judge their playouts by ``evaluation`` (the search's option of that name)."""
    seed = f"win-chance:{k}"
    game = Game.new(seed=seed, first_player=k % 2)  # type: ignore[arg-type]
    bots = [SearchBot(seed=2 * k + s, iterations=iterations, evaluation=evaluation) for s in (0, 1)]
    codes: list[int] = []
    while game.to_move is not None:
        legal = list(game.legal_codes())
        p = game.to_move
        code = legal[0] if len(legal) == 1 else bots[p].choose_code(Sampler(view(game, p)), legal)
        game.push_code(code)
        codes.append(code)
    return {"seed": seed, "first": k % 2, "codes": codes, "winner": game.winner()}


def positions(rows: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Features, seat 0's outcome, game number and the hand-made judgement of every turn's start."""
    xs: list[tuple[float, ...]] = []
    ys: list[float] = []
    games: list[int] = []
    hand: list[float] = []
    for i, r in enumerate(rows):
        game = Game.new(seed=r["seed"], first_player=r["first"])
        w = r["winner"]
        y = 0.5 if w is None else 1.0 if w == 0 else 0.0
        for code in r["codes"]:
            if game.phase == "turn":
                xs.append(win_features(game, 0))
                ys.append(y)
                games.append(i)
                hand.append(evaluate(game, 0) / EVAL_SCALE)
            game.push_code(code)
    return np.array(xs), np.array(ys), np.array(games), np.array(hand)


def chance(z: np.ndarray) -> np.ndarray:
    """The logistic function, its argument clipped as ``heuristics.win_chance`` clips it (a fit
    on a few games may separate them and send the weights far out)."""
    return 1.0 / (1.0 + np.exp(-np.clip(z, -30.0, 30.0)))


def fit(x: np.ndarray, y: np.ndarray, ridge: float = 1e-3) -> np.ndarray:
    """Logistic regression by Newton's method (outcomes may be ½)."""
    w = np.zeros(x.shape[1])
    for _ in range(50):
        p = chance(x @ w)
        grad = x.T @ (p - y) + ridge * w
        hess = (x * (p * (1.0 - p))[:, None]).T @ x + ridge * np.eye(x.shape[1])
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.max(np.abs(step))) < 1e-9:
            break
    return w


def log_loss(z: np.ndarray, y: np.ndarray) -> float:
    """Mean log-loss of the chances ``1 / (1 + e^-z)``."""
    p = np.clip(chance(z), 1e-9, 1 - 1e-9)
    return float(-np.mean(y * np.log(p) + (1.0 - y) * np.log(1.0 - p)))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    pl = sub.add_parser("play", help="searched self-play games, appended to --out")
    pl.add_argument("--games", type=int, default=1200)
    pl.add_argument("--first", type=int, default=0, help="number of the first game (to add games to a file)")
    pl.add_argument("--iterations", type=int, default=ITERATIONS, help=f"a decision (default {ITERATIONS})")
    pl.add_argument("--evaluation", choices=sorted(JUDGEMENTS), default="hand",
                    help="how the searches judge their playouts (default hand: the shipped weights' games)")
    pl.add_argument("--jobs", type=int, default=1)
    pl.add_argument("--out", type=Path, required=True)
    ft = sub.add_parser("fit", help="fit the weights to games")
    ft.add_argument("files", type=Path, nargs="+")
    args = p.parse_args(argv)
    if args.command == "play":
        numbers = range(args.first, args.first + args.games)
        with args.out.open("a") as out, ProcessPoolExecutor(max_workers=args.jobs) as pool:
            for n, row in enumerate(pool.map(play_one, numbers, repeat(args.iterations), repeat(args.evaluation), chunksize=4), 1):
                out.write(json.dumps(row) + "\n")
                out.flush()
                print(f"\r{n} games", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
        return 0
    rows = [json.loads(line) for f in args.files for line in f.read_text().splitlines() if line.strip()]
    x, y, games, hand = positions(rows)
    print(f"{len(rows)} games, {len(y)} positions; held-out log-loss, each fifth of the games held out in turn:")
    print(f"  {'fold':>4}  {'hand-made':>9}  {'best scale':>10}  {'win_chance':>10}  {'without prospects':>17}")
    losses = []
    for k in range(5):
        held = games % 5 == k
        scale = fit(hand[~held][:, None], y[~held])[0]
        w = fit(x[~held], y[~held])
        w_base = fit(x[~held][:, :BASE_FEATURES], y[~held])
        losses.append((log_loss(hand[held], y[held]), log_loss(scale * hand[held], y[held]),
                       log_loss(x[held] @ w, y[held]), log_loss(x[held][:, :BASE_FEATURES] @ w_base, y[held])))
        print(f"  {k:>4}  " + "  ".join(f"{v:>{width}.4f}" for v, width in zip(losses[-1], (9, 10, 10, 17), strict=True)))
    mean = np.mean(np.array(losses), axis=0)
    print(f"  {'mean':>4}  " + "  ".join(f"{v:>{width}.4f}" for v, width in zip(mean, (9, 10, 10, 17), strict=True)))
    print(f"  (hand-made: e^(-eval / {EVAL_SCALE:g}); best scale: fitted on the rest; without prospects: "
          f"the first {BASE_FEATURES} features)")
    weights = fit(x, y)
    print("WIN_WEIGHTS = (" + ", ".join(f"{v:.4f}" for v in weights) + ")")
    print(f"# the mean judgement of a seat-0 position that it won: {math.fsum(chance(x[y == 1] @ weights)) / max(1, int((y == 1).sum())):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
