"""The observation and action spaces both environments declare (Gymnasium's types)."""

from __future__ import annotations

import gymnasium
import numpy as np

from .encoding import ACTION_COUNT, HIGH, OBS_SIZE


def observation_space() -> gymnasium.spaces.Dict:
    """``{"observation": Box(0, HIGH, (167,), float32), "action_mask": Box(0, 1, (151,), int8)}``:
    the shape of PettingZoo's classic card games (the mask beside the vector)."""
    return gymnasium.spaces.Dict({
        "observation": gymnasium.spaces.Box(low=np.zeros(OBS_SIZE, dtype=np.float32), high=HIGH.copy(),
                                            shape=(OBS_SIZE,), dtype=np.float32),
        "action_mask": gymnasium.spaces.Box(low=0, high=1, shape=(ACTION_COUNT,), dtype=np.int8),
    })


def action_space() -> gymnasium.spaces.Discrete:
    """``Discrete(151)``: every R22 move, numbered as :mod:`.encoding` says."""
    return gymnasium.spaces.Discrete(ACTION_COUNT)
