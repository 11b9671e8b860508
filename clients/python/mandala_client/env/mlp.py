"""A small numpy policy over the environment's observations: one hidden layer, masked logits.

It is the policy ``clients/python/examples/train_numpy.py`` trains, and what plays it: on the
arena as ``--bot policy:mandala_client.env.mlp:MLPPolicy,weights=FILE.npz`` (``mandala-bot``,
``mandala match``), or in a program as ``PolicyBot(MLPPolicy(weights))``. Weights are an
``.npz`` with ``w1`` (167 × hidden), ``b1``, ``w2`` (hidden × 151) and ``b2``; other arrays
(a trainer's value head) are kept and ignored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .encoding import ACTION_COUNT, OBS_SIZE

Array = npt.NDArray[np.float32]


class MLPPolicy:
    """``logits = relu(obs @ w1 + b1) @ w2 + b2``, illegal actions masked out; plays the most
    likely legal action, or samples one when ``sample`` is true (seeded by ``seed``)."""

    def __init__(self, weights: str | Path | None = None, hidden: int = 64, seed: int | None = None,
                 sample: bool = False) -> None:
        self.rng = np.random.default_rng(seed)
        self.sample = sample
        if weights is not None:
            with np.load(weights) as data:
                self.params: dict[str, Array] = {k: data[k].astype(np.float32) for k in data.files}
            shapes = {k: self.params[k].shape for k in ("w1", "b1", "w2", "b2") if k in self.params}
            h = shapes.get("b1", (0,))[0]
            if shapes != {"w1": (OBS_SIZE, h), "b1": (h,), "w2": (h, ACTION_COUNT), "b2": (ACTION_COUNT,)}:
                raise ValueError(f"{weights}: not an MLPPolicy's weights for {OBS_SIZE} inputs and {ACTION_COUNT}"
                                 f" actions (w1, b1, w2, b2 shaped {shapes})")
        else:
            self.params = {
                "w1": (self.rng.standard_normal((OBS_SIZE, hidden)) * np.sqrt(2.0 / OBS_SIZE)).astype(np.float32),
                "b1": np.zeros(hidden, dtype=np.float32),
                "w2": (self.rng.standard_normal((hidden, ACTION_COUNT)) * 0.01).astype(np.float32),
                "b2": np.zeros(ACTION_COUNT, dtype=np.float32),
            }

    def hidden(self, obs: Array) -> Array:
        """The hidden layer for a batch of observations, ``(n, hidden)``."""
        p = self.params
        out: Array = np.maximum(obs @ p["w1"] + p["b1"], 0.0)
        return out

    def logits(self, obs: Array, mask: npt.NDArray[Any]) -> Array:
        """Masked logits for a batch: illegal actions at ``-inf``."""
        p = self.params
        z: Array = self.hidden(obs) @ p["w2"] + p["b2"]
        return np.where(mask.astype(bool), z, -np.inf).astype(np.float32)

    def act_batch(self, obs: Array, mask: npt.NDArray[Any], sample: bool | None = None) -> npt.NDArray[np.int64]:
        """One legal action per row: the most likely, or drawn from the softmax."""
        z = self.logits(obs, mask)
        if not (self.sample if sample is None else sample):
            return np.argmax(z, axis=1)
        z = z - z.max(axis=1, keepdims=True)
        prob = np.exp(z)
        prob /= prob.sum(axis=1, keepdims=True)
        cumulative = prob.cumsum(axis=1)
        u = self.rng.random((len(prob), 1)) * cumulative[:, -1:]  # below the total: lands on a legal action
        return (cumulative <= u).sum(axis=1)

    def act(self, observation: dict[str, npt.NDArray[Any]]) -> int:
        """The action for one observation dict, as the environment gives it."""
        return int(self.act_batch(observation["observation"][None, :], observation["action_mask"][None, :])[0])

    __call__ = act

    def save(self, path: str | Path, **extra: Any) -> None:
        """Write the weights (and any ``extra`` arrays) to an ``.npz``."""
        np.savez_compressed(path, **{**self.params, **extra})
