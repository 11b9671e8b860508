"""Training offline: Mandala as a PettingZoo AEC environment (two seats) and a Gymnasium
environment (one seat against a chosen opponent), seeing exactly what the arena shows.

- :func:`encode`, :func:`action_mask`, :func:`action_of`, :func:`move_of` (:mod:`.encoding`):
  a seat's view as a fixed-size vector, and R22 moves as action indices. Needs numpy only.
- :func:`env` / :class:`MandalaEnv` (:mod:`.aec`): the PettingZoo environment.
- :class:`MandalaGymEnv` (:mod:`.single`): the Gymnasium environment, registered as
  ``gymnasium.make("mandala/Mandala-v0")``; :class:`MandalaVectorEnv` (:mod:`.gym_vector`),
  many of them at once in arrays, ``gymnasium.make_vec("mandala/Mandala-v0", num_envs=N)``.
- :class:`GameBatch` (:mod:`.vector`): many games stepped at once (self-play or against an
  opponent), observations and masks as arrays.
- :class:`ArrayBatch` (:mod:`.arrays`): the same, the games kept in numpy arrays, as fast as the
  engine from about a thousand games (self-play, a random opponent or a batch policy).
- :class:`MLPPolicy` (:mod:`.mlp`): a small numpy policy, what the example trains.
- :class:`PolicyBot` (:mod:`.policy`): a policy trained on these observations, as a bot for
  ``mandala-bot`` and ``mandala match`` (``--bot policy:module:attr``).

PettingZoo and Gymnasium are the ``train`` extra (``pip install -e '.[train]'``); the
encoding and :class:`PolicyBot` work without them. Names load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .aec import MandalaEnv as MandalaEnv
    from .aec import env as env
    from .aec import raw_env as raw_env
    from .arrays import ArrayBatch as ArrayBatch
    from .core import AGENTS as AGENTS
    from .core import IllegalAction as IllegalAction
    from .encoding import ACTION_COUNT as ACTION_COUNT
    from .encoding import LAYOUT as LAYOUT
    from .encoding import OBS_SIZE as OBS_SIZE
    from .encoding import action_mask as action_mask
    from .encoding import action_of as action_of
    from .encoding import encode as encode
    from .encoding import move_of as move_of
    from .gym_vector import MandalaVectorEnv as MandalaVectorEnv
    from .mlp import MLPPolicy as MLPPolicy
    from .policy import PolicyBot as PolicyBot
    from .single import MandalaGymEnv as MandalaGymEnv
    from .vector import GameBatch as GameBatch

_LAZY = {
    "MandalaEnv": ".aec", "env": ".aec", "raw_env": ".aec",
    "ArrayBatch": ".arrays",
    "AGENTS": ".core", "IllegalAction": ".core",
    "ACTION_COUNT": ".encoding", "LAYOUT": ".encoding", "OBS_SIZE": ".encoding",
    "action_mask": ".encoding", "action_of": ".encoding", "encode": ".encoding", "move_of": ".encoding",
    "MLPPolicy": ".mlp",
    "PolicyBot": ".policy",
    "MandalaGymEnv": ".single",
    "MandalaVectorEnv": ".gym_vector",
    "GameBatch": ".vector",
}

__all__ = sorted(_LAZY)

GYM_ID = "mandala/Mandala-v0"
"""The Gymnasium id of :class:`MandalaGymEnv` (its keyword arguments pass through ``make``)."""

try:
    import gymnasium as _gymnasium
except ImportError:  # the encoding and PolicyBot need numpy only
    pass
else:
    if GYM_ID not in _gymnasium.registry:
        _gymnasium.register(id=GYM_ID, entry_point="mandala_client.env.single:MandalaGymEnv",
                            vector_entry_point="mandala_client.env.gym_vector:MandalaVectorEnv")


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
