"""Many games at once: one call steps every game and returns the observations and masks of
the next decisions as two arrays, so the conversion to numbers and a policy's forward pass
run once per batch instead of once per decision.

::

    from mandala_client.env import GameBatch

    batch = GameBatch(64, seed=1, opponent="random")   # opponent=None: self-play
    obs, mask = batch.observations()                    # (64, 167) float32, (64, 151) int8
    while batch.finished < 1000:
        actions = my_policy(obs, mask)                   # one legal action per row
        obs, mask, ended = batch.step(actions)

Row ``i`` is game ``i``'s next decision for the seat that takes it (``batch.seats[i]``):
``encode(view(game, seat))`` and its mask, as the PettingZoo environment gives that agent
(made, as there, by :mod:`.observer` without building the view).
With an ``opponent`` (any :data:`.opponents.Opponent`) every row is the learner's decision,
the learner's seat drawn per game, and the opponent's moves are made inside ``step``; without
one, one policy plays both seats (self-play). A game that ends is dealt anew in its row at
once: ``ended`` lists ``(row, rewards by seat, info)`` for the games that ended in the step,
with the rewards and ``info`` of :mod:`.aec` (and ``info["seat"]``, the learner's seat).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from mandala import Game

from .core import AGENTS, RewardMode, check_modes, checked_code, end_info, final_rewards, new_game
from .encoding import ACTION_COUNT
from .observer import BatchObserver
from .opponents import Opponent, Seat, Sitting

Ended = tuple[int, tuple[float, float], dict[str, Any]]


class GameBatch:
    """``size`` games, each dealt from ``seed`` in turn, so a batch repeats exactly for the
    same seed and actions (and a seeded named opponent)."""

    def __init__(self, size: int, seed: int | None = None, opponent: Opponent | None = None,
                 reward: RewardMode = "win") -> None:
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"size is a positive number of games, not {size!r}")
        check_modes(reward, "raise", 1.0)
        self.size = size
        self.reward_mode: RewardMode = reward
        self._rng = random.Random(None if seed is None else int(seed))
        self._other = None if opponent is None else Seat(opponent, self._rng.getrandbits(63))
        self.learner: list[int | None] = [None] * size
        """Each row's learning seat (``None`` in self-play)."""
        self._sittings: list[Sitting | None] = [None] * size
        """Each row's opponent at its game (``None`` in self-play)."""
        self.games: list[Game] = []
        self._observer = BatchObserver()
        self._legal: npt.NDArray[np.int8] | None = None
        """The masks of the last observations, to check the next actions against."""
        self._legal_games: list[Game] = []
        self._rows = np.arange(size)
        self.finished = 0
        """Games that ended so far."""
        self.decisions = 0
        """Decisions the actions of :meth:`step` took so far (one per row per step)."""
        for i in range(size):
            self.games.append(self._deal(i))

    def _deal(self, row: int) -> Game:
        """A new game for ``row``, advanced to the learner's first decision."""
        while True:
            game = new_game(self._rng, None)
            if self._other is not None:
                me = self.learner[row] = self._rng.randrange(2)
                sitting = self._sittings[row] = self._other.sit(game, 1 - me)
                sitting.advance()
            if game.to_move is not None:
                return game

    def close(self) -> None:
        """Let a bot opponent made from a spec release what it holds (an external program stops)."""
        if self._other is not None:
            self._other.close()

    @property
    def seats(self) -> list[int]:
        """The seat deciding in each row."""
        return [g.to_move for g in self.games]  # type: ignore[misc]

    def observations(self) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int8]]:
        """Each row's observation and action mask, for the seat deciding there: new arrays at
        each call (and each :meth:`step`), which the batch never writes into again, so a
        trainer may keep them (a replay buffer) or write into them."""
        obs, mask = self._observer.observe(self.games)
        self._legal = mask.copy()  # the caller may write into what it gets
        self._legal_games = list(self.games)
        return obs, mask

    def _fast_codes(self, actions: Sequence[int] | npt.NDArray[np.integer[Any]]) -> list[int] | None:
        """The actions as codes when every one is an integer inside its row's last mask,
        checked with a few numpy calls for the whole batch; ``None`` otherwise (then each row
        is checked, and the first bad one named)."""
        legal = self._legal
        if legal is None or not isinstance(actions, np.ndarray) or actions.dtype.kind not in "iu" \
                or actions.shape != (len(legal),) or self._legal_games != self.games:  # a row's game replaced
            return None
        if not (actions.min() >= 0 and actions.max() < ACTION_COUNT and legal[self._rows, actions].all()):
            return None
        return actions.tolist()  # type: ignore[no-any-return]

    def step(self, actions: Sequence[int] | npt.NDArray[np.integer[Any]]
             ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int8], list[Ended]]:
        """Play ``actions[i]`` in row ``i`` for every row; the next observations and masks,
        and the games that ended. An action outside its row's mask raises
        :class:`~.core.IllegalAction` (naming the row and the move) before any game moves."""
        games = self.games
        if len(actions) != len(games):
            raise ValueError(f"one action per game: {len(games)} expected, {len(actions)} given")
        codes = self._fast_codes(actions)
        if codes is None:
            # numpy's integers as Python ints first (bools stay bools, refused below): an int in the
            # row's legal codes needs no other check, and the message is written only for a bad one
            given = actions.tolist() if isinstance(actions, np.ndarray) else list(actions)
            codes = [a if type(a) is int and a in g.legal_codes()
                     else checked_code(g, a, f"row {i} ({AGENTS[g.to_move]})")  # type: ignore[index]
                     for i, (g, a) in enumerate(zip(games, given, strict=True))]
        ended: list[Ended] = []
        sittings = self._sittings
        for i, (g, code) in enumerate(zip(games, codes, strict=True)):
            g.push_code(code)
            sitting = sittings[i]
            if sitting is not None:
                sitting.moved(code)
                sitting.advance()
            if g.to_move is None:
                info = end_info(g)
                info["seat"] = self.learner[i]
                ended.append((i, final_rewards(g, self.reward_mode), info))
                games[i] = self._deal(i)
        self.finished += len(ended)
        self.decisions += len(games)
        obs, mask = self.observations()
        return obs, mask, ended
