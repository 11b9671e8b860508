"""The training environments' speed on one core, beside the engine's own.

Each figure is decisions a second of CPU over whole games, a random legal move at each, pinned
to one core with numpy's BLAS on one thread, the best of ``--runs`` runs of ``--games`` games:

- ``engine``: the engine alone (``legal_codes``, ``push_code``), as ``make bench`` measures it;
- ``engine_with_views``: the same, plus the deciding seat's view (``mandala.view``), which is
  what any player of a decision is shown (the server builds it for every ``decision``);
- ``aec``: the PettingZoo environment driven the documented way (``agent_iter``, ``last``,
  ``step``), each observation encoded and masked;
- ``gym``: the Gymnasium environment against the random bot, counting the learner's steps and,
  separately, every decision of the game;
- ``batch``: :class:`mandala_client.env.GameBatch` of ``--batch`` games, the random legal
  action of each row drawn with one numpy call;
- ``arrays``: :class:`mandala_client.env.ArrayBatch` (self-play, the rules over arrays) of each
  size in ``--arrays``, driven the same way, over at least twice as many games as rows;
- ``vector``: :class:`mandala_client.env.MandalaVectorEnv` (``gymnasium.make_vec``), the
  largest size in ``--arrays`` against the random opponent: the learners' steps a second;
- ``aec_mlp``, ``batch_mlp`` and ``arrays_mlp``: the PettingZoo environment, the ``GameBatch``
  and the largest ``ArrayBatch`` with :class:`mandala_client.env.MLPPolicy` (64 hidden units)
  choosing, one observation at a time or a batch at a time, as in training;
- ``per_decision_us``: where a step's time goes, over the positions of 100 random games: the
  engine's move (legal codes and push); the reference path a bot takes on the server's frames
  (the seat's view, its encoding, the mask from the legal codes); the environments' path
  (:mod:`mandala_client.env.observer`: the observation from the game directly, the mask); a
  whole PettingZoo step (``last`` and ``step``); and the random choice from the mask that the
  ``aec`` driver makes (``np.flatnonzero``) (CPU time, the best of three).

Run with ``.venv/bin/python bench/env.py``; docs/training.md lists the figures measured.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from mandala import Game, view
from mandala_cli.selfplay_cmd import play_random
from mandala_client.env import ACTION_COUNT, ArrayBatch, GameBatch, MandalaGymEnv, MandalaVectorEnv, MLPPolicy, env
from mandala_client.env.encoding import action_mask, encode
from mandala_client.env.observer import Observer, legal_mask


def _clock() -> float:
    """CPU seconds of this process: on a shared machine, what the work cost rather than how
    long others kept it waiting (on an idle core the two agree)."""
    return time.process_time()


def _engine(games: int, seed: int) -> float:
    """``mandala selfplay``'s loop (``make bench``'s figure), timed like the others."""
    rand = random.Random(seed).random
    decisions = 0
    start = _clock()
    for i in range(games):
        game = Game.new(seed=f"{seed}:{i}", first_player=i % 2)  # type: ignore[arg-type]
        legal_codes, push = game.legal_codes, game.push_code
        while game.to_move is not None:
            codes = legal_codes()
            push(codes[int(rand() * len(codes))])
        decisions += len(game.history)
    return decisions / (_clock() - start)


def _engine_with_views(games: int, seed: int) -> float:
    rand = random.Random(seed).random
    decisions = 0
    start = _clock()
    for i in range(games):
        game = Game.new(seed=f"{seed}:{i}", first_player=i % 2)  # type: ignore[arg-type]
        while game.to_move is not None:
            view(game, game.to_move)
            codes = game.legal_codes()
            game.push_code(codes[int(rand() * len(codes))])
        decisions += len(game.history)
    return decisions / (_clock() - start)


def _aec(games: int, seed: int, choose: Callable[[dict[str, Any]], int] | None = None) -> float:
    """The PettingZoo environment's decisions per second, each chosen by ``choose`` from the
    observation (a random legal action if none)."""
    if choose is None:
        rand = random.Random(seed).random

        def choose(obs: dict[str, Any]) -> int:
            legal = np.flatnonzero(obs["action_mask"])
            return int(legal[int(rand() * len(legal))])

    e = env()
    decisions = 0
    start = _clock()
    for i in range(games):
        e.reset(seed=seed * 100_003 + i)
        for _agent in e.agent_iter():
            obs, _reward, terminated, truncated, _info = e.last()
            if terminated or truncated:
                e.step(None)
                continue
            e.step(choose(obs))
            decisions += 1
    return decisions / (_clock() - start)


def _gym(games: int, seed: int) -> tuple[float, float]:
    rand = random.Random(seed).random
    e = MandalaGymEnv(opponent="random")
    steps = decisions = 0
    start = _clock()
    for i in range(games):
        obs, _info = e.reset(seed=seed * 100_003 + i)
        terminated = False
        while not terminated:
            legal = np.flatnonzero(obs["action_mask"])
            obs, _reward, terminated, _truncated, _info = e.step(int(legal[int(rand() * len(legal))]))
            steps += 1
        assert e.game is not None
        decisions += len(e.game.history)
    elapsed = _clock() - start
    return steps / elapsed, decisions / elapsed


def _batch(games: int, seed: int, size: int, form: type[GameBatch] | type[ArrayBatch] = GameBatch) -> float:
    rng = np.random.default_rng(seed)
    batch = form(size, seed=seed)
    _obs, mask = batch.observations()
    start = _clock()
    while batch.finished < games:
        actions = np.argmax(rng.random(mask.shape, dtype=np.float32) * mask, axis=1)  # a random legal action per row
        _obs, mask, _ended = batch.step(actions)
    return batch.decisions / (_clock() - start)


def _vector(games: int, seed: int, size: int) -> float:
    rng = np.random.default_rng(seed)
    envs = MandalaVectorEnv(size)
    obs, _infos = envs.reset(seed=seed)
    steps = finished = 0
    start = _clock()
    while finished < games:
        obs, _rewards, terminations, _truncations, _infos = envs.step(
            np.argmax((rng.random((size, ACTION_COUNT), dtype=np.float32) + 1) * obs["action_mask"], axis=1))
        steps += size
        finished += int(terminations.sum())
    return steps / (_clock() - start)


def _aec_mlp(games: int, seed: int) -> float:
    return _aec(games, seed, MLPPolicy(seed=seed).act)


def _batch_mlp(games: int, seed: int, size: int, form: type[GameBatch] | type[ArrayBatch] = GameBatch) -> float:
    policy = MLPPolicy(seed=seed)
    batch = form(size, seed=seed)
    obs, mask = batch.observations()
    start = _clock()
    while batch.finished < games:
        obs, mask, _ended = batch.step(policy.act_batch(obs, mask))
    return batch.decisions / (_clock() - start)


def _parts(seed: int) -> dict[str, float]:
    """Microseconds per decision of each part of a step, over the positions of 100 games."""
    rand = random.Random(seed).random
    lines = []
    for i in range(100):
        game = Game.new(seed=i)
        moves = []
        while game.to_move is not None:
            codes = game.legal_codes()
            moves.append(codes[int(rand() * len(codes))])
            game.push_code(moves[-1])
        lines.append((i, moves))

    def per_decision(work: Callable[[Game], object]) -> float:
        n = 0
        start = time.process_time()
        for i, moves in lines:
            game = Game.new(seed=i)
            for code in moves:
                work(game)
                game.push_code(code)
                n += 1
        return (time.process_time() - start) / n * 1e6

    observer = Observer()

    engine = min(per_decision(lambda g: g.legal_codes()) for _ in range(3))
    viewed = min(per_decision(lambda g: (g.legal_codes(), view(g, g.to_move))) for _ in range(3))
    encoded = min(per_decision(lambda g: (g.legal_codes(), encode(view(g, g.to_move)))) for _ in range(3))
    masked = min(per_decision(lambda g: (action_mask(g.legal_codes()), encode(view(g, g.to_move)))) for _ in range(3))
    observed = min(per_decision(lambda g: (g.legal_codes(), observer.observe(g, g.to_move))) for _ in range(3))  # type: ignore[arg-type]
    fast = min(per_decision(lambda g: (legal_mask(g.legal_codes()), observer.observe(g, g.to_move))) for _ in range(3))  # type: ignore[arg-type]
    chosen = min(per_decision(lambda g: np.flatnonzero(legal_mask(g.legal_codes()))) for _ in range(3))
    masked_only = min(per_decision(lambda g: legal_mask(g.legal_codes())) for _ in range(3))
    e = env()

    def aec_step() -> float:
        n = 0
        start = time.process_time()
        for i, moves in lines:
            e.reset(options={"game": Game.new(seed=i)})
            for code in moves:
                e.last()
                e.step(code)
                n += 1
        return (time.process_time() - start) / n * 1e6

    whole = min(aec_step() for _ in range(3))
    return {"engine": round(engine, 2), "view": round(viewed - engine, 2), "encode": round(encoded - viewed, 2),
            "mask": round(masked - encoded, 2), "observer": round(observed - engine, 2),
            "observer_mask": round(fast - observed, 2), "aec_step": round(whole, 2),
            "choice_from_mask": round(chosen - masked_only, 2)}


FORMS = ("engine_with_views", "aec", "gym", "batch", "arrays", "vector", "aec_mlp", "batch_mlp", "arrays_mlp", "per_decision_us")


def _best(runs: int, measure: Callable[[int], float]) -> float:
    return max(measure(run) for run in range(runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=500, help="games per run (default 500)")
    parser.add_argument("--runs", type=int, default=3, help="runs per figure, the best kept (default 3)")
    parser.add_argument("--batch", type=int, default=64, help="games stepped together in the batch form (default 64)")
    parser.add_argument("--arrays", default="64,256,1024",
                        help="sizes of the array batches, comma-separated (default 64,256,1024)")
    parser.add_argument("--only", default=",".join(FORMS),
                        help=f"the forms to measure, comma-separated (default all: {','.join(FORMS)}); the engine's always")
    args = parser.parse_args()
    only = set(args.only.split(","))
    if only - set(FORMS):
        parser.error(f"--only takes some of {', '.join(FORMS)}")
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    threadpool_limits(1)  # and one BLAS thread: more only fight over it
    play_random(0, 200)  # warm the engine's per-hand move tables
    n, size = args.games, args.batch
    sizes = [int(k) for k in args.arrays.split(",")]
    largest = max(sizes)
    engine = _best(args.runs, lambda r: _engine(n, r + 1))
    figures: dict[str, Any] = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "games_per_run": n,
        "engine_decisions_per_s": round(engine),
    }
    if "engine_with_views" in only:
        with_views = _best(args.runs, lambda r: _engine_with_views(n, r + 1))
        figures["engine_with_views_decisions_per_s"] = round(with_views)
    if "aec" in only:
        aec = _best(args.runs, lambda r: _aec(n, r + 1))
        figures["aec_steps_per_s"] = round(aec)
    if "gym" in only:
        gym_steps, gym_decisions = max(_gym(n, r + 1) for r in range(args.runs))
        figures["gym_learner_steps_per_s"] = round(gym_steps)
        figures["gym_decisions_per_s"] = round(gym_decisions)
    if "batch" in only:
        batch = _best(args.runs, lambda r: _batch(n, r + 1, size))
        figures[f"batch{size}_decisions_per_s"] = round(batch)
    if "arrays" in only:
        for k in sizes:
            arrays = _best(args.runs, lambda r, k=k: _batch(max(n, 2 * k), r + 1, k, ArrayBatch))
            figures[f"arrays{k}_decisions_per_s"] = round(arrays)
            figures[f"arrays{k}_over_engine"] = round(arrays / engine, 3)
    if "vector" in only:
        vector = _best(args.runs, lambda r: _vector(max(n, 2 * largest), r + 1, largest))
        figures[f"vector{largest}_learner_steps_per_s"] = round(vector)
        figures[f"vector{largest}_over_engine"] = round(vector / engine, 3)
    if "aec_mlp" in only:
        aec_mlp = _best(args.runs, lambda r: _aec_mlp(n, r + 1))
        figures["aec_mlp_steps_per_s"] = round(aec_mlp)
    if "batch_mlp" in only:
        batch_mlp = _best(args.runs, lambda r: _batch_mlp(n, r + 1, size))
        figures[f"batch{size}_mlp_decisions_per_s"] = round(batch_mlp)
    if "arrays_mlp" in only:
        arrays_mlp = _best(args.runs, lambda r: _batch_mlp(max(n, 2 * largest), r + 1, largest, ArrayBatch))
        figures[f"arrays{largest}_mlp_decisions_per_s"] = round(arrays_mlp)
    if "aec" in only:
        figures["aec_over_engine"] = round(aec / engine, 3)
    if "aec" in only and "engine_with_views" in only:
        figures["aec_over_engine_with_views"] = round(aec / with_views, 3)
    if "batch" in only:
        figures["batch_over_engine"] = round(batch / engine, 3)
    if "aec_mlp" in only and "batch_mlp" in only:
        figures["batch_mlp_over_aec_mlp"] = round(batch_mlp / aec_mlp, 3)
    if "per_decision_us" in only:
        figures["per_decision_us"] = _parts(1)
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
