"""Games in arrays: many games stepped together by numpy, for trainers that want decisions by
the million.

::

    from mandala_client.env import ArrayBatch

    batch = ArrayBatch(1024, seed=1)            # self-play: one policy plays both seats
    obs, mask = batch.observations()            # (1024, 167) float32, (1024, 151) int8
    while batch.finished < 100_000:
        obs, mask, ended = batch.step(my_policy(obs, mask))

    ArrayBatch(1024, seed=1, opponent="random")              # the learner against random moves
    ArrayBatch(1024, seed=1, opponent=frozen.act_batch)      # ... or against any batch policy

It is :class:`~.vector.GameBatch` with the same calls, the same observations, masks, rewards
and ``info`` (for the same seed, actions and a deterministic opponent, the very same numbers),
but the games live in arrays rather than in :class:`mandala.Game` objects: each
step is a few dozen numpy operations for the whole batch, whatever its size, instead of
Python work per game. That is what lets a batch of a thousand games step about as fast as the
engine decides (docs/training.md, "Speed"), where an environment around the Python engine
cannot reach half its pace: its observation costs more Python work than the engine's move.

The rules here are the engine's (:mod:`mandala.game`), written over arrays; each game is dealt
by the engine (``Game.new``) and its reshuffles (R16) are drawn from that game's own generator,
as the engine draws them. ``tests/env/test_env_arrays.py`` holds every step equal to
``GameBatch``'s (itself held equal to ``encode(view(game, seat))``, the observation a bot
makes from the server's frames) over random games and positions made by hand, every end
(R17-R19) included. Rare turns (a draw that empties the deck, R16-R17b) are played row by row.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal, cast

import numpy as np
import numpy.typing as npt

from mandala import Game
from mandala.cards import CARDS_PER_COLOR, DECK_SIZE, expand
from mandala.game import HAND_LIMIT, TURN_LIMIT, shuffled, winner_of
from mandala.moves import (
    CLAIM,
    CLAIM_BASE,
    DISCARD,
    DISCARD_BASE,
    FIELD,
    FIELD_BASE,
    MAX_DISCARD,
    MAX_FIELD,
    MOUNTAIN,
    MOVE_PARTS,
    PASS,
    PASS_CODE,
)

from .core import AGENTS, IllegalAction, RewardMode, check_modes, new_game, result_info, rewards_of
from .encoding import ACTION_COUNT, OBS_SIZE, RESHUFFLES_CAP, SCALES, describe
from .vector import Ended

BatchOpponent = Literal["random"] | Callable[[npt.NDArray[np.float32], npt.NDArray[np.int8]], Any]
"""The other seat of an :class:`ArrayBatch`: ``"random"`` (a uniformly random legal action), or a
batch policy ``f(observations, masks) -> actions``, called with the rows where it decides, from
its seat's view (``MLPPolicy.act_batch`` is one)."""


def check_opponent(opponent: object) -> None:
    """Refuse what cannot be a :data:`BatchOpponent`, saying where a bot plays."""
    if not (opponent == "random" or (callable(opponent) and not isinstance(opponent, str))):
        raise ValueError(f"an opponent in arrays is 'random' or a function of (observations, masks) -> actions, "
                         f"not {opponent!r}; a bot (greedy, search, module:Class) plays in GameBatch")


TURN, PICK, OVER = 0, 1, 2
"""The phases, as stored in ``phase``."""
END_REASONS: Final = ("deck", "river", "turn_limit", "no_moves")
"""The ends (R17-R19), as stored in ``end_reason``."""
_DECK, _RIVER, _TURN_LIMIT, _NO_MOVES = range(4)

_KIND = np.array([p[0] for p in MOVE_PARTS], dtype=np.intp)
_MANDALA = np.array([max(p[1], 0) for p in MOVE_PARTS], dtype=np.intp)
_COLOR = np.array([max(p[2], 0) for p in MOVE_PARTS], dtype=np.intp)
_COUNT = np.array([p[3] for p in MOVE_PARTS], dtype=np.intp)
_SLOTS = np.arange(1, 7).reshape(1, 6, 1)
"""River slot numbers, against ``river[:, None, :]``: slot ``s`` holds color ``c``."""
_FIELD_COUNTS = np.arange(1, MAX_FIELD + 1)
_DISCARD_COUNTS = np.arange(1, MAX_DISCARD + 1)
_I64: Final = np.int64


def _is_integer(action: object) -> bool:
    """An int or a numpy integer (not a bool, which is refused as an action)."""
    return isinstance(action, int | np.integer) and not isinstance(action, bool)


class ArrayBatch:
    """``size`` games, each dealt from ``seed`` in turn as ``GameBatch`` deals them, so the two
    repeat each other exactly for the same seed and actions (and opponent, if deterministic).
    Without an ``opponent`` one policy plays both seats; with one, every row is the learner's
    decision (``learner`` its seat, drawn per game) and the opponent moves inside ``step``.

    The state is public and read-only to callers: arrays with the games along the first axis,
    seats and mandalas as in :class:`mandala.Game` (``fields[:, m, p]`` is seat ``p``'s field of
    mandala ``m``; ``river[:, p, c]`` is the slot, 1 to 6, of color ``c`` in seat ``p``'s river, 0
    if none; ``deck[:, :deck_size]`` is the draw deck, its top last)."""

    def __init__(self, size: int, seed: int | None = None, opponent: BatchOpponent | None = None,
                 reward: RewardMode = "win", final_observations: bool = False) -> None:
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise ValueError(f"size is a positive number of games, not {size!r}")
        if opponent is not None:
            check_opponent(opponent)
        check_modes(reward, "raise", 1.0)
        self.size = size
        self.reward_mode: RewardMode = reward
        self._rng = random.Random(None if seed is None else int(seed))
        self._opponent = opponent
        self._choices = None if opponent is None else np.random.default_rng(self._rng.getrandbits(63))
        """The random opponent's generator (drawn first, as ``GameBatch`` draws its opponent's seed)."""
        self._learner = np.full(size, -1, np.intp)
        self._keep_final = final_observations
        self.final_observations = np.zeros((0, 2, OBS_SIZE), np.float32)
        """With ``final_observations=True``, after each :meth:`step`: the last observation of
        each game that ended in it, for seat 0 and seat 1 (``(len(ended), 2, 167)``, in the
        order of ``ended``), which the new deal in its row replaced."""
        n = size
        self.hands = np.zeros((n, 2, 6), _I64)
        self.hand_sizes = np.zeros((n, 2), _I64)
        self.mountains = np.zeros((n, 2, 6), _I64)
        self.fields = np.zeros((n, 2, 2, 6), _I64)
        self.discard = np.zeros((n, 6), _I64)
        self.cups = np.zeros((n, 2, 6), _I64)
        self.starting_cups = np.zeros((n, 2, 6), _I64)
        self.river = np.zeros((n, 2, 6), _I64)
        self.river_length = np.zeros((n, 2), _I64)
        self.deck = np.zeros((n, DECK_SIZE), _I64)
        self.deck_size = np.zeros(n, _I64)
        self.reshuffles = np.zeros(n, _I64)
        self.deck_exhausted = np.zeros(n, bool)
        self.river_filled = np.zeros(n, bool)
        self.turns = np.zeros(n, _I64)
        self.phase = np.zeros(n, _I64)
        self.to_move = np.zeros(n, _I64)
        """The seat deciding (-1 once over: never seen between steps, a finished game is dealt anew)."""
        self.current = np.zeros(n, _I64)
        self.first_player = np.zeros(n, _I64)
        self.destroying = np.full(n, -1, _I64)
        self.completed_by = np.full(n, -1, _I64)
        self.first_picker = np.full(n, -1, _I64)
        self.end_reason = np.full(n, -1, _I64)
        """Once over, the end's index in :data:`END_REASONS`."""
        self._generators: list[random.Random] = [random.Random()] * n
        """Each game's generator of reshuffles (R16), the engine's own."""
        self._rows = np.arange(n)
        self._legal: npt.NDArray[np.int8] | None = None
        self.finished = 0
        """Games that ended so far."""
        self.decisions = 0
        """Decisions the actions of :meth:`step` took so far (one per row per step)."""
        self._deal(list(range(n)))

    @property
    def learner(self) -> list[int | None]:
        """Each row's learning seat (``None`` in self-play)."""
        if self._opponent is None:
            return [None] * self.size
        return cast("list[int | None]", self._learner.tolist())

    @property
    def seats(self) -> list[int]:
        """The seat deciding in each row."""
        return self.to_move.tolist()  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ dealing

    def _deal(self, rows: list[int]) -> None:
        """New games in ``rows``, drawn from the batch's generator as ``GameBatch`` draws them
        (the deal, then the learner's seat), advanced to the learner's first decision."""
        games = []
        for r in rows:
            games.append(new_game(self._rng, None))
            if self._opponent is not None:
                self._learner[r] = self._rng.randrange(2)
        self._load(rows, games)
        self._advance()
        again = [r for r in rows if self.phase[r] == OVER]  # over before the learner's first decision
        if again:
            self._deal(again)

    def _load(self, rows: list[int], games: list[Game]) -> None:
        """Put the engine's games, freshly dealt (or made by hand, in a turn), in ``rows``."""
        for g in games:
            if g.phase != "turn":
                raise ValueError(f"a game is put in a row at a turn, not in phase {g.phase!r}")
        r = np.array(rows, dtype=np.intp)
        self.hands[r] = [g.hands for g in games]
        self.hand_sizes[r] = [g.hand_sizes for g in games]
        self.mountains[r] = [g.mountains for g in games]
        self.fields[r] = [g.fields for g in games]
        self.discard[r] = [g.discard for g in games]
        self.cups[r] = [g.cups for g in games]
        self.starting_cups[r] = [g.starting_cups for g in games]
        self.river[r] = 0
        self.deck_size[r] = [len(g.deck) for g in games]
        self.reshuffles[r] = [len(g.reshuffles) for g in games]
        self.deck_exhausted[r] = [g.deck_exhausted for g in games]
        self.river_filled[r] = [g.river_filled for g in games]
        self.turns[r] = [g.turns for g in games]
        self.current[r] = [g.current for g in games]
        self.first_player[r] = [g.first_player for g in games]
        self.end_reason[r] = -1
        for i, g in zip(rows, games, strict=True):
            self.deck[i, :len(g.deck)] = g.deck
            for p, colors in enumerate(g.rivers):
                for slot, c in enumerate(colors, 1):
                    self.river[i, p, c] = slot
            self.river_length[i] = [len(g.rivers[0]), len(g.rivers[1])]
            self._generators[i] = g._own_rng()  # a dealt game always has one; not shared with a copy
        self.phase[r] = TURN
        self.to_move[r] = self.current[r]
        self.destroying[r] = self.completed_by[r] = self.first_picker[r] = -1

    # ------------------------------------------------------------------ what a seat sees

    def observations(self) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int8]]:
        """Each row's observation and action mask, for the seat deciding there: the rows
        ``GameBatch`` gives for the same games (``encode(view(game, seat))`` and its mask).
        New arrays at each call, which the batch never writes into again."""
        mask = self._masks()
        self._legal = mask.copy()  # the caller may write into what it gets
        return self._observe(), mask

    def _observe(self, rows: npt.NDArray[np.intp] | None = None,
                 seats: npt.NDArray[np.intp] | None = None) -> npt.NDArray[np.float32]:
        """The observations of ``rows`` (all, by default) for ``seats`` (the seat deciding, by
        default): ``encode(view(game, seat))`` of each."""
        at: slice | npt.NDArray[np.intp] = slice(None) if rows is None else rows
        idx = self._rows if rows is None else rows  # row numbers, beside the seats
        n = len(idx)
        ar = self._rows if rows is None else np.arange(n)
        to_move = self.to_move[at]
        me = np.maximum(to_move, 0) if seats is None else seats  # (over, -1, only while the opponent decides elsewhere)
        op = 1 - me
        obs = np.zeros((n, OBS_SIZE), np.float32)
        obs[ar, self.phase[at]] = 1
        obs[:, 3] = to_move == me
        obs[:, 4] = self.first_player[at] == me
        obs[:, 5] = self.turns[at]
        obs[:, 6] = self.deck_size[at]
        obs[:, 7] = np.minimum(self.reshuffles[at], RESHUFFLES_CAP)
        obs[:, 8] = self.deck_exhausted[at]
        obs[:, 9] = self.river_filled[at]
        destroying = self.destroying[at]
        obs[:, 10] = destroying == 0
        obs[:, 11] = destroying == 1
        obs[:, 12] = self.completed_by[at] == me
        obs[:, 13] = self.first_picker[at] == me
        fields, mountains, discard = self.fields, self.mountains[at], self.discard[at]
        for m, first in ((0, 14), (1, 32)):
            obs[:, first:first + 6] = mountains[:, m]
            obs[:, first + 6:first + 12] = fields[idx, m, me]
            obs[:, first + 12:first + 18] = fields[idx, m, op]
        cups, starts, river = self.cups, self.starting_cups, self.river
        slots = river[at][:, :, None, :] == _SLOTS[:, None]  # (n, seat, slot, color)
        unseen = CARDS_PER_COLOR - mountains.sum(1) - fields[at].sum((1, 2)) - discard
        for seat, first in ((me, 50), (op, 96)):
            cup, start = cups[idx, seat], starts[idx, seat]
            claimed = cup - start
            obs[:, first] = self.hand_sizes[idx, seat]
            obs[:, first + 1] = cup.sum(1)
            obs[:, first + 2:first + 8] = claimed
            obs[:, first + 8] = start.sum(1)
            obs[:, first + 9] = self.river_length[idx, seat]
            obs[:, first + 10:first + 46] = slots[ar, seat].reshape(n, 36)
            unseen -= (cup if seat is me else claimed) + (river[idx, seat] > 0)
        hand = self.hands[idx, me]
        obs[:, 142:148] = discard
        obs[:, 148:154] = unseen - hand
        obs[:, 154:160] = hand
        obs[:, 160:166] = cups[idx, me]
        obs[:, 166] = (cups[idx, me] * river[idx, me]).sum(1)  # R21: a cup card scores its color's slot
        obs *= SCALES
        return obs

    def _masks(self, rows: npt.NDArray[np.intp] | None = None) -> npt.NDArray[np.int8]:
        """The action masks of ``rows`` (all, by default), for the seat deciding there."""
        at: slice | npt.NDArray[np.intp] = slice(None) if rows is None else rows
        idx = self._rows if rows is None else rows
        n = len(idx)
        mask = np.zeros((n, ACTION_COUNT), np.int8)
        p = self.current[at]
        o = 1 - p
        hand = self.hands[idx, p]  # (n, 6)
        size = self.hand_sizes[idx, p]
        phase = self.phase[at]
        turn = (phase == TURN)[:, None]
        held = (hand > 0) & turn & (size > 0)[:, None]
        fields, mountains = self.fields, self.mountains[at]
        most = np.minimum(hand, (size - 1)[:, None])  # R8: one card stays in hand
        for m in (0, 1):
            fm = fields[at, m]
            mask[:, m * 6:m * 6 + 6] = held & (fm[:, 0] == 0) & (fm[:, 1] == 0)  # R6, R9
            open_ = held & (mountains[:, m] == 0) & (fields[idx, m, o] == 0)  # R8, R9
            runs = open_[:, :, None] & (most[:, :, None] >= _FIELD_COUNTS)
            mask[:, FIELD_BASE + m * 6 * MAX_FIELD:FIELD_BASE + (m + 1) * 6 * MAX_FIELD] = runs.reshape(n, 6 * MAX_FIELD)
        discards = held[:, :, None] & (hand[:, :, None] >= _DISCARD_COUNTS)  # R8a
        mask[:, DISCARD_BASE:DISCARD_BASE + 6 * MAX_DISCARD] = discards.reshape(n, 6 * MAX_DISCARD)
        mask[:, PASS_CODE] = turn[:, 0] & (size == 0)  # R18
        picking = np.flatnonzero(phase == PICK)
        if len(picking):
            mask[picking, CLAIM_BASE:CLAIM_BASE + 6] = mountains[picking, self.destroying[idx[picking]]] > 0  # R12
        return mask

    # ------------------------------------------------------------------ moves

    def step(self, actions: Sequence[int] | npt.NDArray[np.integer[Any]]
             ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int8], list[Ended]]:
        """Play ``actions[i]`` in row ``i`` for every row; the next observations and masks,
        and the games that ended (``(row, rewards by seat, info)``, as ``GameBatch``'s). An
        action outside its row's mask raises :class:`~.core.IllegalAction` (naming the row and
        the move) before any game moves."""
        codes = self._checked(actions)
        self._play(self._rows, codes)
        self._advance()
        over = np.flatnonzero(self.phase == OVER).tolist()
        ended = [self._ended(r) for r in over]
        if self._keep_final:
            both = np.tile(np.arange(2), len(over))
            self.final_observations = self._observe(np.repeat(np.array(over, np.intp), 2), both).reshape(-1, 2, OBS_SIZE)
        if over:
            self._deal(over)
        self.finished += len(ended)
        self.decisions += self.size
        obs, mask = self.observations()
        return obs, mask, ended

    def _checked(self, actions: Sequence[int] | npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.intp]:
        if self._legal is None:
            self.observations()
        legal: npt.NDArray[np.int8] = self._legal  # type: ignore[assignment]
        if isinstance(actions, np.ndarray) and actions.ndim != 1:
            raise ValueError(f"one action per game: an array of shape ({self.size},), not {actions.shape}")
        if len(actions) != self.size:
            raise ValueError(f"one action per game: {self.size} expected, {len(actions)} given")
        if isinstance(actions, np.ndarray):
            given = actions
        else:
            items = list(actions)
            given = np.array(items, dtype=np.intp if all(map(_is_integer, items)) else object)
        if given.dtype.kind in "iu" and given.ndim == 1:
            codes = given.astype(np.intp)
            if codes.min() >= 0 and codes.max() < ACTION_COUNT and legal[self._rows, codes].all():
                return codes
        for i, a in enumerate(given.tolist()):  # name the first bad one
            who = f"row {i} ({AGENTS[int(self.to_move[i])]})"
            if not _is_integer(a):
                raise IllegalAction(f"{who}: an action is an integer from 0 to {ACTION_COUNT - 1}, not {a!r}")
            a = int(a)
            if not 0 <= a < ACTION_COUNT:
                raise IllegalAction(f"{who}: an action is an integer from 0 to {ACTION_COUNT - 1}, not {a!r}")
            if not legal[i, a]:
                raise IllegalAction(f"{who} cannot play action {describe(a)}: not legal now (outside its action mask)")
        raise AssertionError("unreachable: every action was legal")  # pragma: no cover

    def _advance(self) -> None:
        """The opponent's decisions, round after round, until every row that is not over is
        the learner's decision."""
        opponent = self._opponent
        if opponent is None:
            return
        while True:
            rows = np.flatnonzero((self.to_move != self._learner) & (self.phase != OVER))
            if not len(rows):
                return
            masks = self._masks(rows)
            if self._choices is not None and opponent == "random":
                # 1 to 2 where legal, 0 elsewhere: the largest is a uniformly random legal action
                codes = np.argmax((self._choices.random(masks.shape, dtype=np.float32) + 1) * masks, axis=1)
            else:
                codes = self._opponents_codes(opponent(self._observe(rows), masks.copy()), masks)  # type: ignore[operator]
            self._play(rows, codes)

    def _opponents_codes(self, actions: Any, masks: npt.NDArray[np.int8]) -> npt.NDArray[np.intp]:
        """A batch opponent's ``actions``, each legal in its row; an error in the opponent, named
        as such, otherwise."""
        name = getattr(self._opponent, "__qualname__", type(self._opponent).__name__)
        codes = np.asarray(actions)
        if codes.shape != (len(masks),) or codes.dtype.kind not in "iu":
            raise RuntimeError(f"the opponent ({name}) returned {codes.dtype} actions of shape {codes.shape}, "
                               f"not {len(masks)} integers")
        codes = codes.astype(np.intp)
        ok = (codes >= 0) & (codes < ACTION_COUNT)
        ok[ok] = masks[np.flatnonzero(ok), codes[ok]] == 1
        if not ok.all():
            bad = int(codes[np.argmin(ok)])
            what = describe(bad) if 0 <= bad < ACTION_COUNT else repr(bad)
            raise RuntimeError(f"the opponent ({name}) chose action {what}, which is not legal")
        return codes

    def _play(self, rows: npt.NDArray[np.intp], codes: npt.NDArray[np.intp]) -> None:
        """Play ``codes[i]``, legal, in row ``rows[i]`` (each row once)."""
        kind = _KIND[codes]
        picks = kind == CLAIM
        if picks.any():
            self._claim(rows[picks], _COLOR[codes[picks]])
        turn = ~picks
        turns, codes, kind = rows[turn], codes[turn], kind[turn]
        if not len(turns):
            return
        self.turns[turns] += 1
        p = self.current[turns]
        played = kind != PASS
        r, pr, kr, cp = turns[played], p[played], kind[played], codes[played]
        c, n, mr = _COLOR[cp], _COUNT[cp], _MANDALA[cp]
        self.hands[r, pr, c] -= n
        self.hand_sizes[r, pr] -= n
        size = self.hand_sizes[r, pr]
        dis = kr == DISCARD
        self.discard[r[dis], c[dis]] += n[dis]
        mou = kr == MOUNTAIN
        self.mountains[r[mou], mr[mou], c[mou]] += 1
        fie = kr == FIELD
        self.fields[r[fie], mr[fie], pr[fie], c[fie]] += n[fie]
        # draws: action C draws what it discarded (R8a), action A fills the hand up (R7)
        drawing = dis | mou
        draw = np.where(mou, np.where(size < 6, 3, HAND_LIMIT - size), n)[drawing]
        self._draw(r[drawing], pr[drawing], draw)
        # a mountain or field move may complete its mandala (R10)
        placed = mou | fie
        rp, mp, pp = r[placed], mr[placed], pr[placed]
        mountain = self.mountains[rp, mp] > 0
        both = self.fields[rp, mp]  # (k, seat, color)
        complete = (mountain | (both[:, 0] > 0) | (both[:, 1] > 0)).all(1)
        if complete.any():
            self._begin_destruction(rp[complete], mp[complete], pp[complete])
        rest = np.ones(len(turns), bool)
        rest[np.flatnonzero(played)[placed][complete]] = False
        self._begin_turn(turns[rest], 1 - p[rest])

    def _draw(self, rows: npt.NDArray[np.intp], seats: npt.NDArray[np.intp], counts: npt.NDArray[np.intp]) -> None:
        """Each row's seat draws its count of cards (R7): from the top of a deck that holds
        more than that at once; row by row, with R16's reshuffles, otherwise."""
        slow = self.deck_size[rows] <= counts
        if slow.any():
            for r, p, k in zip(rows[slow].tolist(), seats[slow].tolist(), counts[slow].tolist(), strict=True):
                for _ in range(k):
                    card = self._take(r)
                    if card < 0:
                        break
                    self.hands[r, p, card] += 1
                    self.hand_sizes[r, p] += 1
            fast = ~slow
            rows, seats, counts = rows[fast], seats[fast], counts[fast]
        top = self.deck_size[rows]
        for j in range(int(counts.max()) if len(counts) else 0):
            more = counts > j
            r = rows[more]
            self.hands[r, seats[more], self.deck[r, top[more] - 1 - j]] += 1
        self.deck_size[rows] = top - counts
        self.hand_sizes[rows, seats] += counts

    def _take(self, r: int) -> int:
        """The engine's ``_take`` for row ``r``: the top card, reshuffling as R16 says; -1 if none."""
        if not self.deck_size[r]:
            if not self.discard[r].any():
                return -1
            self._reshuffle(r)
        top = int(self.deck_size[r]) - 1
        self.deck_size[r] = top
        card = int(self.deck[r, top])
        if not top:
            self.deck_exhausted[r] = True  # R17b
            if self.discard[r].any():
                self._reshuffle(r)
        return card

    def _reshuffle(self, r: int) -> None:
        """R16: the whole discard pile becomes the draw deck, in the order the game's own
        generator draws (as the engine draws it)."""
        cards = shuffled(expand(self.discard[r].tolist()), self._generators[r])
        self.deck[r, :len(cards)] = cards[::-1]
        self.deck_size[r] = len(cards)
        self.reshuffles[r] += 1
        self.discard[r] = 0

    def _begin_destruction(self, rows: npt.NDArray[np.intp], mandalas: npt.NDArray[np.intp],
                           completers: npt.NDArray[np.intp]) -> None:
        sizes = self.fields[rows, mandalas].sum(2)  # (k, seat)
        first = np.where(sizes[:, 0] > sizes[:, 1], 0, np.where(sizes[:, 1] > sizes[:, 0], 1, 1 - completers))  # R11
        self.phase[rows] = PICK
        self.destroying[rows] = mandalas
        self.completed_by[rows] = completers
        self.first_picker[rows] = first
        self.to_move[rows] = first

    def _claim(self, rows: npt.NDArray[np.intp], colors: npt.NDArray[np.intp]) -> None:
        m, q = self.destroying[rows], self.to_move[rows]
        n = self.mountains[rows, m, colors]
        self.mountains[rows, m, colors] = 0
        no_field = self.fields[rows, m, q].sum(1) == 0
        a = np.flatnonzero(no_field)  # R13a: an empty field discards the claim
        self.discard[rows[a], colors[a]] += n[a]
        new = ~no_field & (self.river[rows, q, colors] == 0)
        b = np.flatnonzero(new)  # R13b: a new color takes the next river slot, the rest to the cup
        if len(b):
            rb, qb, cb = rows[b], q[b], colors[b]
            self.river_length[rb, qb] += 1
            self.river[rb, qb, cb] = self.river_length[rb, qb]
            self.cups[rb, qb, cb] += n[b] - 1
            self.river_filled[rb] |= self.river_length[rb, qb] == 6
        cc = np.flatnonzero(~no_field & ~new)  # R13c
        self.cups[rows[cc], q[cc], colors[cc]] += n[cc]
        left = self.mountains[rows, m].any(1)
        self.to_move[rows[left]] = 1 - q[left]
        done = ~left
        if done.any():
            self._finish_destruction(rows[done], m[done])

    def _finish_destruction(self, rows: npt.NDArray[np.intp], mandalas: npt.NDArray[np.intp]) -> None:
        self.discard[rows] += self.fields[rows, mandalas].sum(1)  # R14
        self.fields[rows, mandalas] = 0
        completers = self.completed_by[rows]
        self.destroying[rows] = self.completed_by[rows] = self.first_picker[rows] = -1
        exhausted, filled = self.deck_exhausted[rows], self.river_filled[rows]
        ending = exhausted | filled  # R17
        if ending.any():
            self._end(rows[ending], np.where(exhausted[ending], _DECK, _RIVER))
        go = ~ending
        rows, mandalas, completers = rows[go], mandalas[go], completers[go]
        slow = self.deck_size[rows] <= 2
        for r, m in zip(rows[slow].tolist(), mandalas[slow].tolist(), strict=True):  # R15, R16
            for _ in range(2):
                card = self._take(r)
                if card < 0:
                    break
                self.mountains[r, m, card] += 1
        fast = np.flatnonzero(~slow)
        rf, mf = rows[fast], mandalas[fast]
        top = self.deck_size[rf]
        for j in (1, 2):
            self.mountains[rf, mf, self.deck[rf, top - j]] += 1
        self.deck_size[rf] = top - 2
        self._begin_turn(rows, 1 - completers)

    def _begin_turn(self, rows: npt.NDArray[np.intp], seats: npt.NDArray[np.intp]) -> None:
        limit = self.turns[rows] >= TURN_LIMIT  # R19
        empty = ~limit & (self.hand_sizes[rows].sum(1) == 0)  # R18: no card left to either seat
        if limit.any() or empty.any():
            self._end(rows[limit], np.full(int(limit.sum()), _TURN_LIMIT))
            self._end(rows[empty], np.full(int(empty.sum()), _NO_MOVES))
            go = ~(limit | empty)
            rows, seats = rows[go], seats[go]
        self.phase[rows] = TURN
        self.current[rows] = self.to_move[rows] = seats

    def _end(self, rows: npt.NDArray[np.intp], reasons: npt.NDArray[np.intp]) -> None:
        """R20: leftovers go to the discard pile and score nothing; the game is over."""
        if not len(rows):
            return
        self.discard[rows] += self.hands[rows].sum(1) + self.mountains[rows].sum(1) + self.fields[rows].sum((1, 2))
        self.hands[rows] = self.mountains[rows] = 0
        self.fields[rows] = 0
        self.hand_sizes[rows] = 0
        self.phase[rows] = OVER
        self.to_move[rows] = -1
        self.end_reason[rows] = reasons

    # ------------------------------------------------------------------ the end

    def _ended(self, r: int) -> Ended:
        """Row ``r``'s finished game: the rewards by seat and the ``info`` of :mod:`.core`."""
        scores = (self.cups[r] * self.river[r]).sum(1).tolist()  # R21: a cup card scores its color's slot
        cup_sizes = self.cups[r].sum(1).tolist()
        info = result_info(END_REASONS[int(self.end_reason[r])], scores, cup_sizes, int(self.turns[r]))
        info["seat"] = None if self._opponent is None else int(self._learner[r])
        return r, rewards_of(scores, winner_of(scores, cup_sizes), self.reward_mode), info


__all__ = ["ArrayBatch", "BatchOpponent", "check_opponent"]
