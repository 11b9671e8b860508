"""Mandala as a Gymnasium environment: one seat learns, the other is a chosen opponent.

::

    from mandala_client.env import MandalaGymEnv

    e = MandalaGymEnv(opponent="greedy")
    obs, info = e.reset(seed=1)
    while True:
        action = e.action_space.sample(obs["action_mask"])
        obs, reward, terminated, truncated, info = e.step(action)
        if terminated:
            break

One ``step`` is one decision of the learning seat; the opponent's decisions in between are
taken inside it. Observations, actions, rewards and ``info`` at the end are the PettingZoo
environment's (:mod:`.aec`). ``action_masks()`` returns the current mask too, for trainers
that ask for it that way (sb3-contrib's ``MaskablePPO``).
"""

from __future__ import annotations

import random
from typing import Any, SupportsFloat

import gymnasium
import numpy as np
import numpy.typing as npt

from mandala import Game, View, view

from .core import (
    AGENTS,
    RENDER_MODES,
    IllegalAction,
    IllegalMode,
    RewardMode,
    check_modes,
    check_render_mode,
    checked_code,
    end_info,
    final_rewards,
    new_game,
    rendered,
)
from .encoding import ACTION_COUNT
from .observer import Observer, legal_mask
from .opponents import Opponent, Seat, Sitting
from .spaces import action_space, observation_space

Observation = dict[str, npt.NDArray[Any]]


class MandalaGymEnv(gymnasium.Env[Observation, np.int64]):
    """One seat against ``opponent`` (see :data:`.opponents.Opponent`), seeded.

    - ``seat``: 0 or 1 for that seat in every game; ``None`` (the default) for a seat drawn
      from the reset's seed each game. ``reset(options={"seat": s})`` sets it for one game.
    - ``reward``, ``illegal``, ``illegal_penalty``: as in :class:`.aec.MandalaEnv`.
    - ``reset(seed=s)`` deals the same game, gives the learner the same seat and seeds a
      named opponent the same way, so an episode repeats exactly (an opponent object or
      function keeps its own randomness).
    """

    metadata: dict[str, Any] = {"render_modes": list(RENDER_MODES), "render_fps": 1}  # noqa: RUF012  # as gymnasium.Env declares it

    def __init__(self, opponent: Opponent = "random", seat: int | None = None, reward: RewardMode = "win",
                 illegal: IllegalMode = "raise", illegal_penalty: float | None = None,
                 render_mode: str | None = None) -> None:
        penalty = check_modes(reward, illegal, illegal_penalty)
        if seat not in (None, 0, 1):
            raise ValueError(f"seat is 0, 1 or None, not {seat!r}")
        check_render_mode(render_mode)
        Seat(opponent, 0).close()  # a bad opponent fails here, not at the first reset
        self.opponent = opponent
        self.seat = seat
        self.reward_mode: RewardMode = reward
        self.illegal: IllegalMode = illegal
        self.illegal_penalty = penalty
        self.render_mode = render_mode
        self.observation_space = observation_space()  # type: ignore[assignment]  # a Dict space of these arrays
        self.action_space = action_space()
        self._game: Game | None = None
        self._me = 0
        self._other: Seat | None = None
        self._sitting: Sitting | None = None
        self._over = False
        self._observer = Observer()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Observation, dict[str, Any]]:
        super().reset(seed=seed)
        options = dict(options or {})
        seat = options.pop("seat", self.seat)
        if seat not in (None, 0, 1):
            raise ValueError(f"seat is 0, 1 or None, not {seat!r}")
        rng = random.Random(int(self.np_random.integers(2**63)))
        drawn = rng.randrange(2)
        game = new_game(rng, options)
        self.close()  # the last game's opponent (an external program stops)
        other = Seat(self.opponent, rng.getrandbits(63))
        self._game, self._other, self._over = game, other, False
        self._me = drawn if seat is None else seat
        self._sitting = other.sit(game, 1 - self._me)
        return self._advance(game, {})

    def step(self, action: Any) -> tuple[Observation, SupportsFloat, bool, bool, dict[str, Any]]:
        game = self._game
        if game is None:
            raise AssertionError("reset() needs to be called before step.")
        if self._over:
            raise ValueError("the game is over: call reset() before step()")
        me = self._me
        try:
            code = checked_code(game, action, AGENTS[me])
        except IllegalAction as e:
            if self.illegal == "raise":
                raise
            self._over = True
            info = end_info(game, me, str(e))
            info["seat"] = me
            assert self._sitting is not None
            self._sitting.end(forfeit=me)
            return self._observe(game), -self.illegal_penalty, True, False, info
        game.push_code(code)
        assert self._sitting is not None
        self._sitting.moved(code)
        obs, info = self._advance(game, {})
        if not self._over:
            return obs, 0.0, False, False, info
        return obs, final_rewards(game, self.reward_mode)[me], True, False, info

    def _advance(self, game: Game, info: dict[str, Any]) -> tuple[Observation, dict[str, Any]]:
        """Let the opponent move until the learner decides or the game ends."""
        me, sitting = self._me, self._sitting
        assert sitting is not None
        sitting.advance()
        if game.to_move is None:
            self._over = True
            info = end_info(game)
        info["seat"] = me
        return self._observe(game), info

    def _observe(self, game: Game) -> Observation:
        me = self._me
        return self._observer.observation(game, me, game.to_move == me and not self._over, self._over)

    def action_masks(self) -> npt.NDArray[np.bool_]:
        """The legal actions now, as booleans (the method ``MaskablePPO`` calls)."""
        game = self._game
        if game is None or self._over or game.to_move != self._me:
            return np.zeros(ACTION_COUNT, dtype=bool)
        return legal_mask(game.legal_codes()).astype(bool)

    def view(self) -> View:
        """What the learning seat sees now (R24): the raw view its observation encodes."""
        if self._game is None:
            raise AssertionError("reset() needs to be called before view().")
        return view(self._game, self._me)

    @property
    def game(self) -> Game | None:
        """The game being played, hidden cards included (for tests and analysis only)."""
        return self._game

    def render(self) -> str | None:  # type: ignore[override]
        if self.render_mode is None or self._game is None:
            return None
        return rendered(self._game, self.render_mode)

    def close(self) -> None:
        """Let the opponent release what it holds (an external program stops)."""
        if self._other is not None:
            self._other.close()
