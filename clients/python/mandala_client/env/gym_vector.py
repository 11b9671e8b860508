"""Mandala as a Gymnasium vector environment: ``num_envs`` games, one seat learning in each
against an opponent, stepped together by :class:`.arrays.ArrayBatch`.

::

    import gymnasium
    import mandala_client.env  # registers mandala/Mandala-v0

    envs = gymnasium.make_vec("mandala/Mandala-v0", num_envs=1024)   # this class
    obs, infos = envs.reset(seed=1)
    while True:
        actions = my_policy(obs["observation"], obs["action_mask"])
        obs, rewards, terminations, truncations, infos = envs.step(actions)

Each sub-environment is :class:`.single.MandalaGymEnv`'s game: the same observations (the
``observation`` and ``action_mask`` of the learner's view), actions and rewards, at the end
of each game. Games reset in the same step (Gymnasium's ``AutoresetMode.SAME_STEP``): a row
whose game ended holds the first observation of its next game, and ``infos["final_obs"]``
and ``infos["final_info"]`` (with their masks ``infos["_final_obs"]``…) the ended game's last
observation and its ``info`` (``end_reason``, ``winner``, ``scores``, ``cup_sizes``,
``turns``, ``seat``), as Gymnasium's own ``SyncVectorEnv`` gives them in that mode.
``infos["seat"]`` is every row's learner seat. The opponent is ``"random"`` or a batch
policy (:data:`.arrays.BatchOpponent`); a bot opponent (``"greedy"``, ``"search"``…) needs the
engine's game: ``gymnasium.make_vec(..., vectorization_mode="sync", opponent="greedy")``
steps ``MandalaGymEnv`` copies instead.
"""

from __future__ import annotations

import warnings
from typing import Any

import gymnasium
import numpy as np
import numpy.typing as npt
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from .arrays import ArrayBatch, BatchOpponent, check_opponent
from .core import RewardMode, check_modes
from .encoding import ACTION_COUNT
from .spaces import action_space, observation_space

Observations = dict[str, npt.NDArray[Any]]


class MandalaVectorEnv(gymnasium.vector.VectorEnv[Observations, npt.NDArray[np.int64], npt.NDArray[Any]]):
    """``num_envs`` learners against ``opponent``, each learner's seat drawn per game; seeded
    by ``reset(seed=...)`` (the same seed, actions and opponent repeat every game)."""

    metadata: dict[str, Any] = {"autoreset_mode": AutoresetMode.SAME_STEP}  # noqa: RUF012  # as VectorEnv declares it

    def __init__(self, num_envs: int = 64, opponent: BatchOpponent = "random", reward: RewardMode = "win",
                 seat: None = None, illegal: str = "raise", render_mode: None = None) -> None:
        if not isinstance(num_envs, int) or isinstance(num_envs, bool) or num_envs < 1:
            raise ValueError(f"num_envs is a positive number of games, not {num_envs!r}")
        if opponent is None:
            raise ValueError("the vector environment's opponent is 'random' or a batch policy; "
                             "self-play in arrays is ArrayBatch(opponent=None)")
        if isinstance(opponent, str) and opponent != "random":
            raise ValueError(f"the opponent {opponent!r} is a bot, which needs the engine's game: "
                             f"gymnasium.make_vec(..., vectorization_mode='sync') steps MandalaGymEnv copies")
        check_opponent(opponent)
        check_modes(reward, "raise", 1.0)
        for name, value, default in (("seat", seat, None), ("illegal", illegal, "raise"), ("render_mode", render_mode, None)):
            if value != default:
                raise ValueError(f"the vector environment takes {name}={default!r} only, not {value!r}; "
                                 f"gymnasium.make_vec(..., vectorization_mode='sync') steps MandalaGymEnv copies")
        self.num_envs = num_envs
        self.opponent = opponent
        self.reward_mode: RewardMode = reward
        self.single_observation_space = observation_space()
        self.single_action_space = action_space()
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._batch: ArrayBatch | None = None
        self._mask: npt.NDArray[np.int8] | None = None
        self._no_mask = np.zeros(ACTION_COUNT, np.int8)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[Observations, dict[str, Any]]:
        """Deal every game anew, from ``seed`` (drawn afresh if ``None``)."""
        super().reset(seed=seed)
        if options:
            warnings.warn(f"the vector environment's reset ignores the option(s) {', '.join(map(repr, sorted(options)))}",
                          stacklevel=2)
        self._batch = ArrayBatch(self.num_envs, seed=int(self.np_random.integers(2**63)), opponent=self.opponent,
                                 reward=self.reward_mode, final_observations=True)
        obs, mask = self._batch.observations()
        self._mask = mask.copy()
        return {"observation": obs, "action_mask": mask}, self._seats()

    def step(self, actions: Any) -> tuple[Observations, npt.NDArray[np.float64], npt.NDArray[np.bool_],
                                          npt.NDArray[np.bool_], dict[str, Any]]:
        """One decision of every learner (and the opponent's in between): an action outside
        a row's mask raises :class:`~.core.IllegalAction` naming the row and the move, and
        nothing moves."""
        batch = self._batch
        if batch is None:
            raise AssertionError("reset() needs to be called before step.")
        obs, mask, ended = batch.step(actions if isinstance(actions, np.ndarray) else list(actions))
        self._mask = mask.copy()
        rewards = np.zeros(self.num_envs, np.float64)
        terminations = np.zeros(self.num_envs, np.bool_)
        infos = self._seats()
        for k, (row, by_seat, info) in enumerate(ended):
            seat = info["seat"]
            rewards[row] = by_seat[seat]
            terminations[row] = True
            final = {"observation": batch.final_observations[k, seat], "action_mask": self._no_mask.copy()}
            infos = self._add_info(infos, {"final_obs": final, "final_info": info}, row)
        return ({"observation": obs, "action_mask": mask}, rewards, terminations,
                np.zeros(self.num_envs, np.bool_), infos)

    def _seats(self) -> dict[str, Any]:
        assert self._batch is not None
        return {"seat": np.array(self._batch.learner, np.int64), "_seat": np.ones(self.num_envs, np.bool_)}

    def action_masks(self) -> npt.NDArray[np.bool_]:
        """Every row's legal actions now, as booleans (``(num_envs, 151)``)."""
        if self._mask is None:
            raise AssertionError("reset() needs to be called before action_masks().")
        return self._mask.astype(np.bool_)
