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
looked at again only after a claim (the history's length less the turns played has grown),
made again if its river or its cup grew (within a game both only grow, R13).
:class:`Observer` serves the single environments, one observation at a time;
:class:`BatchObserver` serves ``GameBatch``: Python gathers only the counts a move changes
often, and numpy makes the rest of every row at once (docs/training.md, "Speed").
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from mandala import Game
from mandala.cards import CARDS_PER_COLOR

from .encoding import ACTION_COUNT, OBS_SIZE, RESHUFFLES_CAP, SCALES, scaled

_INT8: Final = np.dtype(np.int8)
_UINT8: Final = np.dtype(np.uint8)
_FLAGS: Final = (b"\x01\x00", b"\x01\x01")
"""``my_decision`` and ``i_moved_first``, by whether the seat moved first."""
_PHASE: Final = {"turn": (1, 0, 0), "pick": (0, 1, 0), "over": (0, 0, 1)}
_NO_DESTRUCTION: Final = (0, 0, 0, 0)
_PHASE_AT: Final = 0
"""Where the phase's three flags and then ``my_decision`` stand in an observation."""


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

    __slots__ = ("_game", "_claims", "_cups")

    def __init__(self) -> None:
        self._game: Game | None = None
        self._claims = 0
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
        claims = len(game.history) - game.turns  # each move but a claim counts a turn (R5)
        if game is not self._game:
            self._game = game
            self._cups = [None, None]
        elif claims != self._claims:
            self._cups = [self._cup(game, 0), self._cup(game, 1)]
        self._claims = claims
        op = 1 - me
        cups = self._cups
        mine, theirs = cups[me] or self._cup(game, me), cups[op] or self._cup(game, op)
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

    def observation(self, game: Game, me: int, deciding: bool, ended: bool = False) -> dict[str, npt.NDArray[Any]]:
        """What the environments hand seat ``me``: the observation and the mask of its legal
        actions, all zeros unless it is ``deciding``. A game ``ended`` by a forfeit, which the
        engine's game does not know of, is shown over: phase ``over``, no seat deciding."""
        mask = legal_mask(game.legal_codes()) if deciding else np.zeros(ACTION_COUNT, dtype=np.int8)
        obs = self.observe(game, me)
        if ended and game.phase != "over":
            obs[_PHASE_AT:_PHASE_AT + 4] = (*_PHASE["over"], 0)  # phase and my_decision
        return {"observation": obs, "action_mask": mask}


def legal_mask(codes: Sequence[int]) -> npt.NDArray[np.int8]:
    """``action_mask(codes)`` for the engine's legal codes, without its checks."""
    mask = bytearray(ACTION_COUNT)
    for c in codes:
        mask[c] = 1
    return np.frombuffer(mask, _INT8)


# ---------------------------------------------------------------------- many games at once

_TURNS, _SCORE = 5, 166
_FREQUENT = (0, 1, 2, *range(5, 50), 50, 96, *range(142, 148), *range(154, 160))
"""Where the 62 entries that change at almost every move go: the header (phase, ``turns`` held
at 0, deck … destruction), the mandalas' piles, both hand sizes, the discard pile, my hand."""
_KEPT = (3, 4, *range(51, 96), *range(97, 142), *range(160, 166))
"""Where the 98 kept per seat go (the same for a game's whole life but when a seat claims
cards): ``my_decision`` (the row's seat decides), ``i_moved_first``, my cup's and river's
public part, the opponent's, my cup."""
_UNSEEN = tuple(range(148, 154))
_SOURCE = (*_FREQUENT, *_KEPT, *_UNSEEN, _SCORE)
"""The batch's working columns, in order: frequent, kept, unseen (made from the others), score."""
_PERM = np.array([_SOURCE.index(i) for i in range(OBS_SIZE)], dtype=np.intp)
"""The observation's entry ``i`` is the working column ``_PERM[i]``."""


def _seen_matrix() -> npt.NDArray[np.float32]:
    """``(working columns, 6)``: 1 where a working column counts cards of a color the seat sees:
    the mountains, fields, discard and my hand (frequent), my cup, the opponent's claimed
    cards and both rivers' slots (kept). ``18 - counts @ W`` is then ``unseen`` (R24)."""
    w = np.zeros((len(_SOURCE), 6), dtype=np.float32)
    piles = (*range(14, 50), *range(142, 148), *range(154, 160), *range(160, 166),
             *range(97 + 1, 97 + 7))  # ..., my cup, the opponent's claimed cards
    for i in piles:
        w[_SOURCE.index(i), (i - 14) % 6 if i < 50 else (i - 142) % 6 if i >= 142 else (i - 98) % 6] = 1
    for first in (51 + 9, 97 + 9):  # each river's 6 × 6 one-hot slots
        for k in range(36):
            w[_SOURCE.index(first + k), k % 6] = 1
    return w


_SEEN = _seen_matrix()
_FREQUENT_SIZE, _KEPT_SIZE = len(_FREQUENT), len(_KEPT)
_W_TURNS = _SOURCE.index(_TURNS)


def _public(game: Game, q: int) -> tuple[int, ...]:
    """Seat ``q``'s cup and river as everyone sees them: its part of the layout after the
    hand size (cup size, claimed cards, starting cards, river)."""
    cup, start = game.cups[q], game.starting_cups[q]
    return (sum(cup), *(a - b for a, b in zip(cup, start, strict=True)), sum(start), *_RIVERS[tuple(game.rivers[q])])


class _Kept:
    """One row's entries that change only when a seat claims cards (:data:`_KEPT`), as bytes
    for either seat deciding, and the seats' scores; a seat's part is made again only when its
    cup or river grew (within a game both only grow, R13)."""

    __slots__ = ("game", "claims", "stamps", "public", "cups", "rows", "scores")

    def __init__(self, game: Game, claims: int) -> None:
        self.game = game
        self.claims = -1
        self.stamps = [(-1, -1), (-1, -1)]
        self.public = [b"", b""]
        self.cups = [b"", b""]
        self.rows = [b"", b""]
        self.scores = [0, 0]
        self.update(claims)

    def update(self, claims: int) -> None:
        game = self.game
        self.claims = claims
        changed = False
        for q in (0, 1):
            stamp = (len(game.rivers[q]), sum(game.cups[q]))
            if stamp != self.stamps[q]:
                self.stamps[q] = stamp
                self.public[q] = bytes(_public(game, q))
                self.cups[q] = bytes(game.cups[q])
                self.scores[q] = game.score(q)
                changed = True
        if changed:
            p0, p1 = self.public
            first = game.first_player
            self.rows = [_FLAGS[first == 0] + p0 + p1 + self.cups[0], _FLAGS[first == 1] + p1 + p0 + self.cups[1]]


class BatchObserver:
    """The observations and masks of many games at once, each for the seat deciding there:
    the rows of ``encode_batch`` of their views and of ``action_mask`` of their legal codes.

    Python writes only what a move changes often (62 small counts a row, converted to bytes
    in one call for the whole batch) and copies the rest from bytes kept per game until a
    claim (R12–R13) changes them; numpy then counts the unseen cards, puts the entries in
    order and scales them, once for the whole batch. Each call returns new arrays."""

    __slots__ = ("_kept",)

    def __init__(self) -> None:
        self._kept: list[_Kept | None] = []
        """Each row's kept entries."""

    def observe(self, games: Sequence[Game]) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int8]]:
        n = len(games)
        frequent: list[int] = []
        rows = bytearray()
        extra: list[int] = []  # turns and score, which may pass 255
        codes: list[int] = []
        lengths: list[int] = []
        cache = self._kept
        if len(cache) < n:
            cache += [None] * (n - len(cache))
        for i, g in enumerate(games):
            me: int = g.to_move  # type: ignore[assignment]
            op = 1 - me
            claims = len(g.history) - g.turns  # each move but a claim counts a turn (R5)
            kept = cache[i]
            if kept is None or kept.game is not g:
                kept = cache[i] = _Kept(g, claims)
            elif kept.claims != claims:
                kept.update(claims)
            rows += kept.rows[me]
            extra.append(g.turns)
            extra.append(kept.scores[me])
            m0, m1 = g.mountains
            f0, f1 = g.fields
            hs = g.hand_sizes
            destroying = g.destroying
            frequent += [
                *_PHASE[g.phase], 0, len(g.deck), min(len(g.reshuffles), RESHUFFLES_CAP), g.deck_exhausted, g.river_filled,
                *(_NO_DESTRUCTION if destroying is None else
                  (destroying == 0, destroying == 1, g.completed_by == me, g.first_picker == me)),
                *m0, *f0[me], *f0[op], *m1, *f1[me], *f1[op], hs[me], hs[op], *g.discard, *g.hands[me],
            ]
            legal = g.legal_codes()
            codes += legal
            lengths.append(len(legal))
        work = np.empty((n, len(_SOURCE)), dtype=np.float32)
        kept_end = _FREQUENT_SIZE + _KEPT_SIZE
        work[:, :_FREQUENT_SIZE] = np.frombuffer(bytearray(frequent), _UINT8).reshape(n, _FREQUENT_SIZE)
        work[:, _FREQUENT_SIZE:kept_end] = np.frombuffer(rows, _UINT8).reshape(n, _KEPT_SIZE)
        work[:, kept_end:] = 0
        extra_a = np.array(extra, dtype=np.float32).reshape(n, 2)
        work[:, _W_TURNS] = extra_a[:, 0]
        work[:, -1] = extra_a[:, 1]
        work[:, kept_end:-1] = CARDS_PER_COLOR - work @ _SEEN
        obs = work[:, _PERM]
        obs *= SCALES
        mask = np.zeros((n, ACTION_COUNT), dtype=np.int8)
        mask.ravel()[np.frombuffer(bytearray(codes), _UINT8) + np.repeat(np.arange(0, n * ACTION_COUNT, ACTION_COUNT), lengths)] = 1
        return obs, mask


__all__ = ["BatchObserver", "Observer", "legal_mask"]
