"""The environments' fast path: a seat's observation and mask made from the engine's
:class:`mandala.Game` directly, without building the :class:`mandala.View` first.

The reference stays :func:`~.encoding.encode` of ``mandala.view(game, seat)``: that is what a
bot computes from the server's frames, and what decides what a seat may see (R24). This module
makes the same numbers for the environments, about four times as fast, and
``tests/env/test_env_observer.py`` proves it equal to the reference, entry by entry, at every
decision of many random games (for both seats, finished games included). It reads of the
hidden state only what the view shows of it: the opponent's cup through its size, its claimed
cards (the cup less the starting cards) and the number of starting cards, and the deck only
through its length.

What costs time is building the 167 integers and turning them into ``float32``; so the parts
that change only when a seat claims cards (its cup and river, its score) are kept per seat and
made again when a claim is seen (its river or its cup grew: within a game both only grow, R13).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from mandala import Game
from mandala.cards import CARDS_PER_COLOR

from .encoding import ACTION_COUNT, RESHUFFLES_CAP, scaled, scaled_batch

_PHASE: Final = {"turn": (1, 0, 0), "pick": (0, 1, 0), "over": (0, 0, 1)}
_NO_DESTRUCTION: Final = (0, 0, 0, 0)


def _river_rows() -> dict[tuple[int, ...], tuple[int, ...]]:
    """Every river (at most 6 distinct colors, in slot order, R13b) as its length and its 6×6
    one-hot slots: 1,957 rivers, looked up rather than written out at each step."""
    rows = {}
    for k in range(7):
        for colors in itertools.permutations(range(6), k):
            row = [k] + [0] * 36
            for slot, c in enumerate(colors):
                row[1 + slot * 6 + c] = 1
            rows[colors] = tuple(row)
    return rows


_RIVERS: Final = _river_rows()


class _Cup:
    """One seat's cup and river, which change only when that seat claims cards (R12–R13):
    what everyone sees of them and what the seat itself sees, kept between steps."""

    __slots__ = ("stamp", "public", "cup", "score", "seen_by_self", "seen_by_other")

    def __init__(self, game: Game, q: int, stamp: tuple[int, int]) -> None:
        cup, start, river = game.cups[q], game.starting_cups[q], game.rivers[q]
        claimed = [a - b for a, b in zip(cup, start, strict=True)]
        self.stamp = stamp
        self.public = (sum(cup), *claimed, sum(start), *_RIVERS[tuple(river)])
        """Cup size, claimed cards, hidden starting cards, river: the seat's part of the layout."""
        self.cup = tuple(cup)
        self.score = game.score(q)
        in_river = [0] * 6
        for c in river:
            in_river[c] = 1
        self.seen_by_self = tuple(a + r for a, r in zip(cup, in_river, strict=True))
        """Cards of each color the seat knows to be in its cup and river."""
        self.seen_by_other = tuple(a + r for a, r in zip(claimed, in_river, strict=True))
        """Cards of each color the other seat knows to be there (not the starting cards)."""


class Observer:
    """Observations of one game after another, for either seat; keeps each seat's cup and
    river (:class:`_Cup`) between calls. One per environment (not thread-safe)."""

    __slots__ = ("_game", "_cups")

    def __init__(self) -> None:
        self._game: Game | None = None
        self._cups: list[_Cup | None] = [None, None]

    def _cup(self, game: Game, q: int) -> _Cup:
        # Within a game a cup and a river only grow (R13), so their sizes tell a claim apart.
        stamp = (len(game.rivers[q]), sum(game.cups[q]))
        cup = self._cups[q]
        if cup is None or cup.stamp != stamp:
            cup = self._cups[q] = _Cup(game, q, stamp)
        return cup

    def raw(self, game: Game, me: int) -> tuple[list[int], int, int]:
        """The observation before scaling (:func:`~.encoding._counts`' form): the counts with
        ``turns`` and ``my_score`` at 0, and those two beside."""
        if game is not self._game:
            self._game = game
            self._cups = [None, None]
        op = 1 - me
        mine, theirs = self._cup(game, me), self._cup(game, op)
        m0, m1 = game.mountains
        f0, f1 = game.fields
        hand, discard = game.hands[me], game.discard
        u0 = u1 = u2 = u3 = u4 = u5 = CARDS_PER_COLOR  # less every card this seat sees
        for a, b, c, d, e, f in (m0, m1, *f0, *f1, discard, hand, mine.seen_by_self, theirs.seen_by_other):
            u0 -= a
            u1 -= b
            u2 -= c
            u3 -= d
            u4 -= e
            u5 -= f
        destroying = game.destroying
        sizes = game.hand_sizes
        out = [
            *_PHASE[game.phase], game.to_move == me, game.first_player == me,
            0, len(game.deck), min(len(game.reshuffles), RESHUFFLES_CAP), game.deck_exhausted, game.river_filled,
            *(_NO_DESTRUCTION if destroying is None else
              (destroying == 0, destroying == 1, game.completed_by == me, game.first_picker == me)),
            *m0, *f0[me], *f0[op], *m1, *f1[me], *f1[op],
            sizes[me], *mine.public, sizes[op], *theirs.public,
            *discard, u0, u1, u2, u3, u4, u5, *hand, *mine.cup, 0,
        ]
        return out, game.turns, mine.score  # type: ignore[return-value]  # bools are ints

    def observe(self, game: Game, me: int) -> npt.NDArray[np.float32]:
        """``encode(view(game, me))``, made from ``game`` directly."""
        return scaled(*self.raw(game, me))

    def observation(self, game: Game, me: int, deciding: bool) -> dict[str, npt.NDArray[Any]]:
        """What the environments hand seat ``me``: the observation and the mask of its legal
        actions, all zeros unless it is ``deciding``."""
        mask = legal_mask(game.legal_codes()) if deciding else np.zeros(ACTION_COUNT, dtype=np.int8)
        return {"observation": self.observe(game, me), "action_mask": mask}


def observe_batch(observers: Sequence[Observer], games: Sequence[Game]) -> npt.NDArray[np.float32]:
    """Each game's observation for the seat deciding there (``observers[i]`` keeps game
    ``i``'s), as one ``(len(games), OBS_SIZE)`` array, ``encode_batch`` of their views: one
    conversion to numbers for the whole batch."""
    return scaled_batch(observer.raw(g, g.to_move)  # type: ignore[arg-type]
                        for observer, g in zip(observers, games, strict=True))


def legal_mask(codes: Sequence[int]) -> npt.NDArray[np.int8]:
    """``action_mask(codes)`` for the engine's legal codes, without its checks."""
    mask = bytearray(ACTION_COUNT)
    for c in codes:
        mask[c] = 1
    return np.frombuffer(mask, dtype=np.int8)


__all__ = ["Observer", "legal_mask", "observe_batch"]
