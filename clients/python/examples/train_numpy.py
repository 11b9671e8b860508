"""Train a small policy for Mandala with numpy alone, in minutes, on the training environment.

REINFORCE with a learned baseline (an actor-critic without bootstrapping): a batch of games
against an opponent (:class:`mandala_client.env.GameBatch`, or with ``--arrays``
:class:`mandala_client.env.ArrayBatch`), actions sampled from the masked
softmax of :class:`mandala_client.env.MLPPolicy`, and once enough games are over, one Adam
step on ``-(return - value) · log π(action) + ½ (value - return)² - β · entropy`` over their
decisions. The return is the game's reward, the same for each of the learner's decisions: the
score difference divided by 25 (``--reward win``: +1, -1 or 0), which learns faster here.

::

    .venv/bin/python clients/python/examples/train_numpy.py --minutes 6 --out mlp.npz
    mandala match policy:mandala_client.env.mlp:MLPPolicy,weights=mlp.npz random --games 400
    mandala-bot --bot policy:mandala_client.env.mlp:MLPPolicy,weights=mlp.npz --ladder

It prints, every ``--report`` games, the games played, the share won of the last ones (with
the sampling policy, so below what the greedy policy wins) and the time taken.
docs/training.md has what a run reached and how long it took.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits

from mandala_client.env import ArrayBatch, GameBatch, MLPPolicy

Array = npt.NDArray[np.float32]


class Adam:
    """Adam over a dict of arrays, in place."""

    def __init__(self, params: dict[str, Array], lr: float) -> None:
        self.lr, self.t = lr, 0
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}

    def step(self, params: dict[str, Array], grads: dict[str, Array]) -> None:
        self.t += 1
        b1, b2 = 0.9, 0.999
        for k, g in grads.items():
            self.m[k] = b1 * self.m[k] + (1 - b1) * g
            self.v[k] = b2 * self.v[k] + (1 - b2) * g * g
            m_hat = self.m[k] / (1 - b1**self.t)
            v_hat = self.v[k] / (1 - b2**self.t)
            params[k] -= (self.lr * m_hat / (np.sqrt(v_hat) + 1e-8)).astype(np.float32)


def gradients(policy: MLPPolicy, obs: Array, mask: npt.NDArray[Any], actions: npt.NDArray[np.int64],
              returns: Array, entropy_coef: float) -> tuple[dict[str, Array], dict[str, float]]:
    """The loss's gradients for a set of decisions, and a few figures about them."""
    p = policy.params
    n = len(obs)
    pre = obs @ p["w1"] + p["b1"]
    h = np.maximum(pre, 0.0)
    z = h @ p["w2"] + p["b2"]
    legal = mask.astype(bool)
    z = np.where(legal, z, -np.inf)
    z -= z.max(axis=1, keepdims=True)
    prob = np.where(legal, np.exp(z), 0.0)
    prob /= prob.sum(axis=1, keepdims=True)
    logp = np.where(legal, np.log(np.maximum(prob, 1e-12)), 0.0)
    entropy = -(prob * logp).sum(axis=1)
    value = h @ p["vw"] + p["vb"][0]
    advantage = returns - value
    advantage_n = (advantage - advantage.mean()) / (advantage.std() + 1e-6)
    # d(loss)/dz for the policy term, then the entropy bonus (dH/dz_j = -p_j (log p_j + H)).
    dz = prob.copy()
    dz[np.arange(n), actions] -= 1.0
    dz *= advantage_n[:, None]
    dz += entropy_coef * prob * (logp + entropy[:, None])
    dz /= n
    dvalue = (value - returns) / n  # ½ (value - return)²
    dh = dz @ p["w2"].T + np.outer(dvalue, p["vw"])
    dpre = dh * (pre > 0)
    grads = {
        "w2": (h.T @ dz).astype(np.float32), "b2": dz.sum(axis=0).astype(np.float32),
        "vw": (h.T @ dvalue).astype(np.float32), "vb": np.array([dvalue.sum()], dtype=np.float32),
        "w1": (obs.T @ dpre).astype(np.float32), "b1": dpre.sum(axis=0).astype(np.float32),
    }
    return grads, {"entropy": float(entropy.mean()), "value_error": float(np.abs(advantage).mean())}


def train(args: argparse.Namespace) -> MLPPolicy:
    policy = MLPPolicy(hidden=args.hidden, seed=args.seed, sample=True)
    hidden = args.hidden
    rng = np.random.default_rng(args.seed)
    policy.params["vw"] = (rng.standard_normal(hidden) * 0.01).astype(np.float32)
    policy.params["vb"] = np.zeros(1, dtype=np.float32)
    adam = Adam(policy.params, args.lr)
    form = ArrayBatch if args.arrays else GameBatch
    batch = form(args.batch, seed=args.seed, opponent=args.opponent, reward=args.reward)
    scale = 1.0 if args.reward == "win" else 1.0 / 25  # a score difference of 25 counts as much as a win
    obs, mask = batch.observations()
    running: list[list[tuple[Array, npt.NDArray[np.int8], int]]] = [[] for _ in range(args.batch)]
    done_obs: list[Array] = []
    done_mask: list[npt.NDArray[np.int8]] = []
    done_act: list[int] = []
    done_ret: list[float] = []
    results: list[float] = []
    start = time.perf_counter()
    deadline = start + 60 * args.minutes
    next_report = args.report
    games_in_update = 0
    while time.perf_counter() < deadline and batch.finished < args.games:
        actions = policy.act_batch(obs, mask, sample=True)
        for i in range(args.batch):
            running[i].append((obs[i], mask[i], int(actions[i])))
        obs, mask, ended = batch.step(actions)
        for row, rewards, info in ended:
            seat = info["seat"]
            r = rewards[seat] * scale
            results.append(1.0 if info["winner"] == f"player_{seat}" else -1.0 if info["winner"] else 0.0)
            for o, m, a in running[row]:
                done_obs.append(o)
                done_mask.append(m)
                done_act.append(a)
                done_ret.append(r)
            running[row] = []
            games_in_update += 1
        if games_in_update >= args.update_games:
            grads, _stats = gradients(policy, np.array(done_obs), np.array(done_mask), np.array(done_act),
                                     np.array(done_ret, dtype=np.float32), args.entropy)
            adam.step(policy.params, grads)
            done_obs, done_mask, done_act, done_ret = [], [], [], []
            games_in_update = 0
        if batch.finished >= next_report:
            last = np.array(results[-args.report:])
            print(f"{batch.finished:7d} games  won {np.mean(last > 0):.1%} of the last {len(last)}"
                  f"  {time.perf_counter() - start:6.0f} s", flush=True)
            next_report += args.report
    print(f"trained on {batch.finished} games ({batch.decisions} decisions) in {time.perf_counter() - start:.0f} s",
          flush=True)
    return policy


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("mlp.npz"), help="where to write the weights (default mlp.npz)")
    p.add_argument("--minutes", type=float, default=5.0, help="stop after this long (default 5)")
    p.add_argument("--games", type=int, default=10**9, help="or after this many games")
    p.add_argument("--opponent", default="random", help="the opponent's bot spec (default random)")
    p.add_argument("--reward", choices=("win", "score"), default="score",
                   help="learn from the score difference (R21, the default) or the win (+1/-1/0)")
    p.add_argument("--batch", type=int, default=64, help="games played at once (default 64)")
    p.add_argument("--arrays", action="store_true",
                   help="play them in an ArrayBatch (the rules over numpy arrays: faster from a few hundred "
                        "games; the opponent random or a batch policy) rather than a GameBatch")
    p.add_argument("--update-games", type=int, default=128, help="finished games per update (default 128)")
    p.add_argument("--hidden", type=int, default=64, help="hidden units (default 64)")
    p.add_argument("--lr", type=float, default=2e-3, help="Adam's step size (default 0.002)")
    p.add_argument("--entropy", type=float, default=0.01, help="entropy bonus (default 0.01)")
    p.add_argument("--report", type=int, default=1000, help="print progress every this many games (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the deals, the opponent and the policy (default 0)")
    args = p.parse_args()
    # Small matrices: BLAS threads only fight over the cores (ten to fifty times slower here).
    with threadpool_limits(1):
        policy = train(args)
    policy.save(args.out)
    print(f"weights written to {args.out}")


if __name__ == "__main__":
    main()
