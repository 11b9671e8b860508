"""Mandala as a PettingZoo AEC environment: two agents, ``player_0`` and ``player_1`` (the
seats), taking the decisions of one game in the order the rules give them (R5, R12, R15).

::

    from mandala_client.env import env

    e = env(reward="win")
    e.reset(seed=1)
    for agent in e.agent_iter():
        obs, reward, terminated, truncated, info = e.last()
        action = None if terminated or truncated else e.action_space(agent).sample(obs["action_mask"])
        e.step(action)

Each observation is ``{"observation": encode(view), "action_mask": ...}`` where ``view`` is
``mandala.view(game, seat)``, the view the server sends that seat (R24), made without building
the view (:mod:`.observer`, tested equal to it at every decision); the mask is all zeros
for the agent whose decision it is not. Rewards come at the end only. The conventions are those
of PettingZoo's classic games (tic-tac-toe, connect four), with two differences that make
mistakes loud: an action outside the mask raises :class:`~.core.IllegalAction` (or, with
``illegal="forfeit"``, loses the game), and stepping after the game is over and every agent
is done raises ``ValueError``, as stepping a done agent with an action does.
"""

from __future__ import annotations

import random
from typing import Any, ClassVar

import gymnasium
import numpy.typing as npt
from pettingzoo import AECEnv
from pettingzoo.utils.env import AECIterable
from pettingzoo.utils.env_logger import EnvLogger

from mandala import Game, View, view

from .core import (
    AGENTS,
    RENDER_MODES,
    SEAT_OF,
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
from .observer import Observer
from .spaces import action_space, observation_space

Observation = dict[str, npt.NDArray[Any]]


class MandalaEnv(AECEnv[str, Observation, int | None]):
    """One game of Mandala at a time, seeded: ``reset(seed=s)`` deals the same game for the
    same ``s``, and ``reset()`` without a seed goes on from the last seed.

    - ``reward``: ``"win"`` (+1, -1, 0 at the end) or ``"score"`` (the score difference, R21).
    - ``illegal``: ``"raise"`` (:class:`~.core.IllegalAction`, the game untouched) or
      ``"forfeit"`` (the game ends, the agent that acted gets ``-illegal_penalty`` and the
      other ``+illegal_penalty``; ``info["end_reason"]`` is ``"forfeit"``). The penalty is
      by default 1 under ``"win"`` and :data:`~.core.SCORE_FORFEIT` under ``"score"``. The
      engine's game stays where it stopped, but the observations show it over.
    - ``reset(options=...)``: a given deal (``deck``, ``first_player``, ``reshuffles``) or a
      ``game`` to go on from (:func:`~.core.new_game`).
    - ``render_mode="ansi"``: :meth:`render` returns the spectator's view as JSON;
      ``"human"`` prints it.
    """

    metadata: ClassVar[dict[str, Any]] = {
        "name": "mandala_v0", "render_modes": list(RENDER_MODES), "is_parallelizable": False, "render_fps": 1,
    }

    def __init__(self, reward: RewardMode = "win", illegal: IllegalMode = "raise", illegal_penalty: float | None = None,
                 render_mode: str | None = None) -> None:
        super().__init__()
        penalty = check_modes(reward, illegal, illegal_penalty)
        check_render_mode(render_mode)
        self.reward_mode: RewardMode = reward
        self.illegal: IllegalMode = illegal
        self.illegal_penalty = penalty
        self.render_mode = render_mode
        self.possible_agents = list(AGENTS)
        obs_space, act_space = observation_space(), action_space()
        self.observation_spaces = dict.fromkeys(AGENTS, obs_space)
        self.action_spaces = dict.fromkeys(AGENTS, act_space)
        self._rng = random.Random()
        self._game: Game | None = None
        self._over = False
        """The game ended (by the rules, or by a forfeit, which leaves the engine's game running)."""
        self._observer = Observer()

    # ------------------------------------------------------------------ PettingZoo's API

    def observation_space(self, agent: str) -> gymnasium.spaces.Space[Any]:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> gymnasium.spaces.Space[Any]:
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        rng = random.Random(int(seed)) if seed is not None else self._rng  # numpy integers too
        game = new_game(rng, options)  # a bad option raises here, before anything changes
        self._rng = rng
        self._game = game
        self._over = False
        self.agents = list(AGENTS)
        self.rewards = dict.fromkeys(AGENTS, 0.0)
        self._cumulative_rewards = dict.fromkeys(AGENTS, 0.0)
        self.terminations = dict.fromkeys(AGENTS, False)
        self.truncations = dict.fromkeys(AGENTS, False)
        self.infos: dict[str, dict[str, Any]] = {agent: {} for agent in AGENTS}
        if game.to_move is None:  # a finished game given through options
            self._finish(game, None, None)
        else:
            self.agent_selection = AGENTS[game.to_move]

    def agent_iter(self, max_iter: int = 2**63) -> AECIterable[str, Observation, int | None]:
        if self._game is None:
            EnvLogger.error_agent_iter_before_reset()
        return super().agent_iter(max_iter)

    def last(self, observe: bool = True) -> tuple[Observation | None, float, bool, bool, dict[str, Any]]:
        if self._game is None:
            raise AssertionError("reset() needs to be called before last().")
        return super().last(observe)

    def observe(self, agent: str) -> Observation:
        game = self._game
        if game is None:
            EnvLogger.error_observe_before_reset()
        assert game is not None
        seat = SEAT_OF[agent]
        return self._observer.observation(game, seat, game.to_move == seat and not self._over, self._over)

    def step(self, action: int | None) -> None:
        game = self._game
        if game is None:
            EnvLogger.error_step_before_reset()
        assert game is not None
        if not self.agents:
            raise ValueError("the game is over and every agent is done: call reset() before step()")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)  # PettingZoo's own: ValueError unless action is None
            return
        try:
            code = checked_code(game, action, agent)
        except IllegalAction as e:
            if self.illegal == "raise":
                raise
            self._forfeit(game, SEAT_OF[agent], str(e))
            return
        self._cumulative_rewards[agent] = 0.0
        mover = game.to_move
        game.push_code(code)
        if game.to_move is None:
            self._finish(game, mover, None)
            return
        # self.rewards stay 0: a game rewards only its end
        self.agent_selection = AGENTS[game.to_move]

    def render(self) -> str | None:
        if self._game is None:
            EnvLogger.error_render_before_reset()
        if self.render_mode is None:
            gymnasium.logger.warn("render() without a render_mode: make the environment with render_mode='ansi'")
            return None
        return rendered(self._game, self.render_mode)  # type: ignore[arg-type]

    def close(self) -> None:
        """Nothing to release: the game is plain Python state."""

    # ------------------------------------------------------------------ beyond the API

    @property
    def game(self) -> Game | None:
        """The game being played (all of it, hidden cards included: for tests and analysis,
        never for a policy, which sees only :meth:`observe`)."""
        return self._game

    def view(self, agent: str) -> View:
        """What ``agent``'s seat sees now (R24): the raw view its observation encodes, for
        authors who want their own encoding."""
        if self._game is None:
            raise AssertionError("reset() needs to be called before view().")
        return view(self._game, SEAT_OF[agent])

    # ------------------------------------------------------------------ the end

    def _finish(self, game: Game, mover: int | None, forfeit: str | None) -> None:
        """Both agents done: final rewards, the end in ``info``, and the agent that did not
        move last selected first (then the other) to collect them."""
        if forfeit is not None:
            assert mover is not None
            p = self.illegal_penalty
            rewards = (-p, p) if mover == 0 else (p, -p)
            info = end_info(game, mover, forfeit)
        else:
            rewards = final_rewards(game, self.reward_mode)
            info = end_info(game)
        for seat, agent in enumerate(AGENTS):
            self.rewards[agent] = rewards[seat]
            self.terminations[agent] = True
            self.infos[agent] = dict(info)
        self._accumulate_rewards()
        self._over = True
        self.agent_selection = AGENTS[0 if mover is None else 1 - mover]

    def _forfeit(self, game: Game, seat: int, why: str) -> None:
        self._cumulative_rewards[AGENTS[seat]] = 0.0
        self._finish(game, seat, why)


def env(**kwargs: Any) -> MandalaEnv:
    """A :class:`MandalaEnv` (PettingZoo's ``env()`` convention; it needs no wrapper: it checks
    the order of calls and the actions itself)."""
    return MandalaEnv(**kwargs)


raw_env = MandalaEnv
