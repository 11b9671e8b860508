"""Pairing on a large ladder: near opponents, the most telling games, within bounds.

Today's rules (``matchmaking.pair_round``) let every bot meet every other before any pair runs
ahead. That is right for a few dozen bots and impossible for thousands: a bot would play all
of them before its first rematch, a newcomer would wait for all of them, and weighing every
two free bots costs a pass the square of the seekers. From ``pairing_large_from`` active bots
on (``server/config.py``), the ladder pairs by this policy instead. Pure like
``matchmaking.py`` (no I/O, no clock): the caller says how long each seeker has waited, and
tells the :class:`Field` which pairs started and how their games ended.

**What a game tells.** Each bot has a fitted rating μ and its standard error σ (the
standings' Bradley–Terry fit, :meth:`Field.update`). A game between ``a`` and ``b`` is expected
to shrink the variance ``V = σa² + σb²`` of their difference (in natural-log strength) to
``V / (1 + V·I)``, where ``I = p(1 − p)`` is the game's Fisher information and ``p`` the
predicted score (the logistic of the difference, widened by ``V``): the *gain* is
``V²·I / (1 + V·I)``, largest where the result is least certain (close ratings, or bots the fit
knows little of).

**Who meets whom.** The free seekers are put in the order of one draw from the fit (each bot
at μ + σ·z, z standard normal, drawn afresh each pass) and neighbours in that order are paired,
from the bottom. Two bots are neighbours in such a draw about as often as the fit is unsure of
their order, so the games go where the standings are least certain (Thompson sampling); a bot
the fit knows little of is drawn far from its μ and meets a spread of opponents. A neighbour
pair is played now only if its gain is at least :data:`ACCEPT` of what a game against an equal
opponent would give; otherwise both wait for a better opponent to come free, at most
``wait_s``. Nearest-only pairing is not the aim: the fit needs results between distant bots
to tie its scale together, and its prior pulls a chain of near-50 % results towards the middle.
Simulated (``bench/ladder_sim.py``: 300 bots, strengths N(1500, 200)), pairing every bot with
its true nearest neighbours ranked them *worse* than random pairing after 20 games each
(Kendall τ 0.65 against 0.68). A random band every second pair ranked worse than every fourth
to sixteenth, which were within the simulation's noise of each other (among 1,000 bots, four
seeds: τ 0.701, 0.710 and 0.711 after 20 games, random pairing 0.694): every eighth it is.
As each pair has two bots, about a quarter of the games are across the ladder.

Each pass takes every free seeker at once, in slices (:meth:`Field.pairing` yields the pairs
of each slice), so the loop serves games in between. First the *initiators*, longest waiting
first, each taking the free seeker nearest to its target rating that the rules allow:

- *overdue*: a seeker that has waited ``wait_s`` targets its own rating, at any distance;
- *placement*: a newcomer (no ladder game yet, on a ladder with at least :data:`PLACE_MIN`
  fitted bots) is placed by a binary search over the ratings' quantiles. Its bracket starts
  as the whole ladder; each pair is played against a bot in the middle half of the bracket
  (until the newcomer's wait runs out) and moves the bracket's bottom to its middle (the
  newcomer scored more than half), its top (less) or both halfway in (exactly half). It is
  placed when the bracket holds :data:`BRACKET` bots or after ``⌈log2(A / BRACKET)⌉`` pairs
  that delivered a result (``A`` the fitted bots when it came: 11 pairs among 10,000), and is
  ranked at the bracket's middle until the next fit. Its next pair waits for its last result;
- *join*: while the comparison graph (who has played whom) has several components, a bot
  outside the largest takes an opponent from another component;
- *explore*: every :data:`EXPLORE_EVERY`-th pair of a bot is against the bot nearest to a
  uniformly random quantile of the ratings (a random rating band).

Then the others (*near*), by the draw, as above.

Bounds, whatever the bots' speeds:

- **The share cap.** ``a`` meets ``b`` again only if afterwards ``b`` has at most
  1/:data:`SHARE` of ``a``'s ladder games and ``a`` of ``b``'s (counted from each pair's start,
  as ``Meetings`` does): no opponent ever has more than ``max(2, games/8)`` of a bot's games.
- **No starvation.** The longest-waiting overdue seeker is paired in every pass where another
  free seeker passes the cap with it (a placing newcomer: a fitted one).
- **Connected.** The join rule; and every eighth pair of each bot across the ladder.
- **Newcomers placed** within ``⌈log2(A / BRACKET)⌉`` pairs.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np
from numpy.random import default_rng

from .matchmaking import Meetings

LN10_400 = math.log(10.0) / 400.0
"""Natural-log strength per Elo point."""
BRACKET = 8
"""Bots a newcomer's placement bracket narrows down to."""
ACCEPT = 0.8
"""The least part of an equal opponent's gain a pairing must give before the bot's wait is
over: about 170 Elo apart between two well-known bots, more for bots the fit knows little of."""
SHARE = 8
"""No opponent takes more than 1/SHARE of a bot's ladder games (beyond their first pair)."""
EXPLORE_EVERY = 8
"""Every EXPLORE_EVERY-th pair of a bot is against a random rating band."""
PLACE_MIN = 32
"""Fitted bots a ladder needs before its newcomers are placed by binary search (below, a
newcomer is paired as any other bot: the ratings are not yet worth searching)."""
PRIOR_SIGMA = 350.0
"""σ (Elo) of a bot the fit has not rated yet."""
SLICE = 512
"""Seekers handled between two yields of a pass."""
SCAN = 64
"""Seekers an initiator that is not overdue looks at, outwards from its target."""
INITIATORS = 32
"""Initiators handled between two yields (each looks at up to SCAN seekers, or more if overdue)."""

WAIT_SLACK = 1e-9
"""A pass run at the moment a wait ends sees it over (as ``matchmaking._waited_out``)."""

Why = Literal["near", "wait", "place", "join", "explore"]
NEAR, WAIT, PLACE, JOIN, EXPLORE = range(5)
"""What a seeker does in a pass: walks (rule 2), or initiates (rule 1) for one of four reasons."""
WHY: tuple[Why, ...] = ("near", "wait", "place", "join", "explore")


class Pairing(NamedTuple):
    """A pair the pass chose: ``a`` is the bot it was chosen for, ``why`` the rule."""

    a: str
    b: str
    why: Why
    at: float = -1.0
    """For a placement: the quantile of the ratings it is played at."""


@dataclass
class Placement:
    """A newcomer's binary search: its bracket of rating quantiles, and the pair under way."""

    pairs_left: int
    lo: float = 0.0
    hi: float = 1.0
    opponent: str | None = None
    at: float = 0.5
    results: int = 0

    @property
    def middle(self) -> float:
        return (self.lo + self.hi) / 2.0


def allowed(meetings: Meetings, a: str, b: str) -> bool:
    """The share cap from both sides: after the pair (two games), ``b`` has at most one
    SHARE-th of ``a``'s games and ``a`` of ``b``'s, or this is their first pair."""
    met = meetings.of(a).get(b, 0)
    if met == 0:
        return True
    after = SHARE * (met + 2)
    return after <= meetings.total(a) + 2 and after <= meetings.total(b) + 2


def placement_pairs(fitted: int) -> int:
    """Pairs a newcomer's binary search takes at most among ``fitted`` bots."""
    return max(1, math.ceil(math.log2(max(fitted, 1) / BRACKET)))


class Field:
    """What the large-ladder policy knows of each bot between passes, kept up to date by
    the caller (:meth:`update`, :meth:`played`, :meth:`started`, :meth:`result`,
    :meth:`ended`) so that a pass costs what its seekers cost, not what the whole ladder does.
    Bots are numbered as they turn up; per-bot numbers are arrays, read a pass at a time."""

    def __init__(self, center: float = 1500.0) -> None:
        self.center = center
        self.index: dict[str, int] = {}
        self.names: list[str] = []
        self.mu = np.zeros(0)
        """Each bot's rating (Elo): the fit's, or its placement's until the next fit."""
        self.var = np.zeros(0)
        """Its variance, in natural-log strength squared."""
        self.fitted = np.zeros(0, dtype=bool)
        """Whether the last fit rated the bot on games (not on the prior alone)."""
        self.pairs = np.zeros(0, dtype=np.int64)
        """Its ladder pairs: every EXPLORE_EVERY-th explores."""
        self.played = np.zeros(0, dtype=bool)
        """Whether it has played (or started) a ladder pair: it is in the comparison graph."""
        self.placing_ = np.zeros(0, dtype=bool)
        self._parent = np.zeros(0, dtype=np.intp)
        """The comparison graph's components, as a union-find forest (union by size)."""
        self._size = np.zeros(0, dtype=np.int64)
        self.components = 0
        """Components of the comparison graph (among the bots that have played)."""
        self._largest = -1
        self.placing: dict[str, Placement] = {}
        self._sorted: list[float] | None = None
        self._sorted_array = np.zeros(0)

    # ------------------------------------------------------------------ what the caller says

    def _id(self, bot: str) -> int:
        i = self.index.get(bot)
        if i is None:
            i = self.index[bot] = len(self.names)
            self.names.append(bot)
            if i >= len(self.mu):
                grow = max(64, 2 * len(self.mu))
                self.mu, self.var = np.resize(self.mu, grow), np.resize(self.var, grow)
                self.fitted, self.pairs = np.resize(self.fitted, grow), np.resize(self.pairs, grow)
                self.played, self.placing_ = np.resize(self.played, grow), np.resize(self.placing_, grow)
                self._parent, self._size = np.resize(self._parent, grow), np.resize(self._size, grow)
            self.mu[i] = self.center
            self.var[i] = (PRIOR_SIGMA * LN10_400) ** 2
            self.fitted[i] = self.played[i] = self.placing_[i] = False
            self.pairs[i] = 0
            self._parent[i] = i
            self._size[i] = 1
        return i

    def update(self, fits: Iterable[tuple[str, float, float, int]]) -> None:
        """The standings' fit: ``(bot, rating, σ, rated games)`` in Elo. A placing bot keeps
        its bracket (its rating is not used until it is placed)."""
        for bot, rating, sigma, games in fits:
            i = self._id(bot)
            if self.placing_[i]:
                continue
            self.mu[i] = rating
            self.var[i] = (sigma * LN10_400) ** 2
            self.fitted[i] = games > 0
        self._sorted = None

    def played_before(self, a: str, b: str, games: int) -> None:
        """``a`` and ``b`` played ``games`` ladder games before this field was kept (at start,
        from the stored totals): for the comparison graph and each bot's count of pairs."""
        i, j = self._id(a), self._id(b)
        self.pairs[i] += games // 2
        self.pairs[j] += games // 2
        self._union(i, j)

    def started(self, p: Pairing) -> None:
        """A pair the pass chose has started."""
        i, j = self._id(p.a), self._id(p.b)
        self.pairs[i] += 1
        self.pairs[j] += 1
        self._union(i, j)
        if p.why == "place":
            place = self.placing[p.a]
            place.opponent, place.at, place.results = p.b, p.at, 0

    def result(self, a: str, b: str, score_a: float) -> None:
        """A rated game between ``a`` and ``b`` ended with ``a`` scoring ``score_a``."""
        for bot, other, score in ((a, b, score_a), (b, a, 1.0 - score_a)):
            place = self.placing.get(bot)
            if place is None or place.opponent != other:
                continue
            width = place.hi - place.lo
            if score > 0.5:
                place.lo = max(place.lo, place.at)
            elif score < 0.5:
                place.hi = min(place.hi, place.at)
            else:
                place.lo, place.hi = max(place.lo, place.at - width / 4), min(place.hi, place.at + width / 4)
            place.results += 1
            if place.results == 2:
                self.ended(bot, other)

    def ended(self, a: str, b: str) -> None:
        """The pair of ``a`` and ``b`` is over (both games, or given up)."""
        for bot, other in ((a, b), (b, a)):
            place = self.placing.get(bot)
            if place is None or place.opponent != other:
                continue
            place.opponent = None
            if place.results:
                place.pairs_left -= 1
            if place.pairs_left <= 0 or (place.hi - place.lo) * len(self._placed()) <= BRACKET:
                i = self.index[bot]
                self.mu[i] = self._at_quantile(self._placed(), place.middle)
                self.placing_[i] = False
                del self.placing[bot]
                self._sorted = None

    def reset(self) -> None:
        """The ratings were reset: everyone starts again."""
        self.index.clear()
        self.names.clear()
        self._parent = np.zeros(0, dtype=np.intp)
        self._size = np.zeros(0, dtype=np.int64)
        self.mu = np.zeros(0)
        self.var = np.zeros(0)
        self.fitted = np.zeros(0, dtype=bool)
        self.pairs = np.zeros(0, dtype=np.int64)
        self.played = np.zeros(0, dtype=bool)
        self.placing_ = np.zeros(0, dtype=bool)
        self.components, self._largest = 0, -1
        self.placing.clear()
        self._sorted = None

    # ------------------------------------------------------------------ the pass

    def pairing(self, free: Sequence[str], waited: Sequence[float], meetings: Meetings, rng: random.Random,
                wait_s: float) -> Iterator[list[Pairing]]:
        """The pairs to start now among the ``free`` seekers (``waited[k]`` seconds each), a
        slice at a time; each seeker in at most one. Report each pair that starts to
        :meth:`started` (one that does not, the bots having changed meanwhile, is dropped)."""
        n = len(free)
        index = self.index
        ids: list[int] = []
        for k, bot in enumerate(free):
            i = index.get(bot)
            ids.append(self._id(bot) if i is None else i)
            if k % SLICE == SLICE - 1:
                yield []
        fid = np.array(ids, dtype=np.intp)
        placed = self._placed()
        noise = default_rng(rng.getrandbits(64))
        wait = np.fromiter(waited, dtype=float, count=n)
        mu = self.mu[fid]
        kind = np.where(wait >= wait_s - WAIT_SLACK, WAIT, NEAR).astype(np.int8)
        kind[self.pairs[fid] % EXPLORE_EVERY == EXPLORE_EVERY - 1] = EXPLORE
        want = mu.copy()
        if placed:
            explore = np.flatnonzero(kind == EXPLORE)
            band = (noise.random(len(explore)) * len(placed)).astype(np.intp)
            want[explore] = self._sorted_array[band]
        if self.components > 1:
            outside = self.played[fid] & (self._roots(fid) != self._find(self._largest))
            kind[outside] = JOIN
            want[outside] = mu[outside]
        yield []
        skip = np.zeros(n, dtype=bool)
        if len(placed) >= PLACE_MIN:
            for k in np.flatnonzero(~self.played[fid] & ~self.placing_[fid]).tolist():
                if meetings.total(free[k]) == 0:
                    self.placing[free[k]] = Placement(placement_pairs(len(placed)))
                    self.placing_[fid[k]] = True
        for k in np.flatnonzero(self.placing_[fid]).tolist():
            place = self.placing[free[k]]
            if place.opponent is not None:
                skip[k] = True  # its result decides its next pair: it waits for it
            else:
                kind[k] = PLACE
                want[k] = self._at_quantile(placed, place.middle)
        # The partners (all but the placing), in rating order, ties at random.
        order = np.lexsort((noise.random(n), mu))
        order = order[(kind[order] != PLACE) & ~skip[order]]
        yield []
        step = _Pass(free, wait, kind, want, fid, order.tolist(), mu[order].tolist(), skip.tolist(), meetings, wait_s)
        yield []
        # The overdue first, longest waiting first; then the explorers that are not, paired
        # among themselves at random (each other's random band: many explore at once after a
        # restart); then the other initiators, and the explorers left, longest waiting first.
        overdue = wait >= wait_s - WAIT_SLACK
        first = np.flatnonzero((kind != NEAR) & ~skip & overdue)
        yield from self._initiators(step, first[np.argsort(-wait[first], kind="stable")].tolist(), placed)
        explorers = noise.permutation(np.flatnonzero((kind == EXPLORE) & ~skip & ~overdue)).tolist()
        for start in range(0, len(explorers), 2 * SLICE):
            yield self._explore_together(step, explorers[start:start + 2 * SLICE])
        rest = np.flatnonzero((kind != NEAR) & ~skip & ~overdue)
        yield from self._initiators(step, rest[np.argsort(-wait[rest], kind="stable")].tolist(), placed)
        yield []
        walkers = order[(kind[order] == NEAR) & ~np.array(step.taken, dtype=bool)[order]]
        yield from self._match(step, walkers, noise)

    def _initiators(self, step: _Pass, initiators: list[int], placed: list[float]) -> Iterator[list[Pairing]]:
        out: list[Pairing] = []
        for count, k in enumerate(initiators):
            if not step.taken[k]:
                p = self._initiate(step, k, placed)
                if p is not None:
                    out.append(p)
            if count % INITIATORS == INITIATORS - 1:
                yield out
                out = []
        yield out

    def _explore_together(self, step: _Pass, explorers: list[int]) -> list[Pairing]:
        """Explorers (in random order) paired two by two where the share cap allows."""
        out: list[Pairing] = []
        free, taken, meetings = step.free, step.taken, step.meetings
        for k, m in zip(explorers[::2], explorers[1::2], strict=False):
            if not taken[k] and not taken[m] and allowed(meetings, free[k], free[m]):
                taken[k] = taken[m] = True
                out.append(Pairing(free[k], free[m], "explore"))
        return out

    def _initiate(self, step: _Pass, k: int, placed: list[float]) -> Pairing | None:
        """Rule 1: the untaken partner nearest to the initiator's target that the rules allow."""
        bot, kind, want = step.free[k], int(step.kind[k]), float(step.want[k])
        overdue = bool(step.waited[k] >= step.wait_s - WAIT_SLACK)
        place = self.placing.get(bot) if kind == PLACE else None
        mine = self._find(int(step.fid[k])) if kind == JOIN else -1
        lo_rank = hi_rank = 0.0
        if place is not None:
            half = (place.hi - place.lo) * len(placed) / 4.0
            lo_rank, hi_rank = place.middle * len(placed) - half, place.middle * len(placed) + half
        order, ratings, taken = step.order, step.ratings, step.taken
        left = bisect.bisect_left(ratings, want) - 1
        right = left + 1
        looked = 0
        while left >= 0 or right < len(order):
            if right >= len(order) or (left >= 0 and want - ratings[left] <= ratings[right] - want):
                pos, left = left, left - 1
            else:
                pos, right = right, right + 1
            looked += 1
            if looked > SCAN and not overdue:
                return None
            m = order[pos]
            if m == k or taken[m]:
                continue
            other, j = step.free[m], int(step.fid[m])
            if place is not None:
                if not self.fitted[j]:
                    continue
                if not overdue and not lo_rank <= bisect.bisect_left(placed, ratings[pos]) <= hi_rank:
                    return None  # the nearest free bots are outside its bracket's middle: it waits
            if kind == JOIN and self._find(j) == mine:
                continue
            if allowed(step.meetings, bot, other):
                taken[k] = taken[m] = True
                if place is not None:
                    return Pairing(bot, other, "place", place.middle)
                return Pairing(bot, other, WHY[kind])
        return None

    def _match(self, step: _Pass, walkers: np.ndarray[Any, np.dtype[np.intp]],
               noise: np.random.Generator) -> Iterator[list[Pairing]]:
        """Rule 2: the walkers in the order of one draw from the fit (each at μ + σ·z), paired
        with their neighbour in that order, from the bottom, where the game is worth playing
        now and the share cap allows (a walker left over waits)."""
        n = len(walkers)
        if n < 2:
            return
        ids = step.fid[walkers]
        v = self.var[ids]
        drawn = self.mu[ids] + np.sqrt(v) / LN10_400 * noise.standard_normal(n)
        order = np.argsort(drawn, kind="stable")
        ids, v = ids[order], v[order]
        x = self.mu[ids] * LN10_400
        var = v[:-1] + v[1:]
        p = 1.0 / (1.0 + np.exp((x[:-1] - x[1:]) / np.sqrt(1.0 + np.pi * var / 8.0)))
        info = p * (1.0 - p)
        worth = var * var * info / (1.0 + var * info) >= ACCEPT * var * var * 0.25 / (1.0 + var * 0.25)
        # From the bottom, a neighbour pair is taken unless the one below it was: in each run
        # of pairs worth playing, every other one.
        at = np.arange(n - 1)
        runs = np.maximum.accumulate(np.where(worth & ~np.r_[False, worth[:-1]], at, -1))
        take = np.flatnonzero(worth & ((at - runs) % 2 == 0))
        lower, upper = walkers[order[take]].tolist(), walkers[order[take + 1]].tolist()
        yield []
        free, taken = step.free, step.taken
        of, total = step.meetings.of, step.meetings.total
        for start in range(0, len(lower), SLICE):
            out: list[Pairing] = []
            for k, m in zip(lower[start:start + SLICE], upper[start:start + SLICE], strict=True):
                a, b = free[k], free[m]
                met = of(a).get(b, 0)  # the share cap, as ``allowed``
                if met == 0 or (SHARE * (met + 2) <= total(a) + 2 and SHARE * (met + 2) <= total(b) + 2):
                    taken[k] = taken[m] = True
                    out.append(Pairing(a, b, "near"))
            yield out

    # ------------------------------------------------------------------ helpers

    def _placed(self) -> list[float]:
        """The ratings of the fitted bots, sorted (what quantiles are taken of)."""
        if self._sorted is None:
            count = len(self.names)
            self._sorted_array = np.sort(self.mu[:count][self.fitted[:count] & ~self.placing_[:count]])
            self._sorted = self._sorted_array.tolist()
        return self._sorted

    def _roots(self, ids: np.ndarray[Any, np.dtype[np.intp]]) -> np.ndarray[Any, np.dtype[np.intp]]:
        """The component of each of ``ids`` (pointer jumping, a few array steps)."""
        parent = self._parent
        roots = parent[ids]
        while True:
            up = parent[roots]
            if np.array_equal(up, roots):
                return roots
            roots = up

    def _at_quantile(self, placed: list[float], q: float) -> float:
        if not placed:
            return self.center
        return placed[min(len(placed) - 1, int(q * len(placed)))]

    def _find(self, i: int) -> int:
        parent = self._parent
        root = i
        while parent[root] != root:
            root = parent[root]
        while parent[i] != root:
            parent[i], i = root, parent[i]
        return root

    def _union(self, i: int, j: int) -> None:
        size, parent = self._size, self._parent
        for x in (i, j):
            if not self.played[x]:  # its first pair: a component of its own, about to be joined
                self.played[x] = True
                self.components += 1
        ri, rj = self._find(i), self._find(j)
        if ri != rj:
            if size[ri] < size[rj]:
                ri, rj = rj, ri
            parent[rj] = ri
            size[ri] += size[rj]
            self.components -= 1
        largest = self._find(self._largest) if self._largest >= 0 else -1
        self._largest = ri if largest < 0 or size[largest] < size[ri] else largest


class _Pass:
    """One pass's seekers, by their place ``k`` in ``free``: arrays where they are read all at
    once, lists where one at a time."""

    __slots__ = ("free", "waited", "kind", "want", "fid", "order", "ratings", "taken", "meetings", "wait_s")

    def __init__(self, free: Sequence[str], waited: np.ndarray[Any, np.dtype[np.float64]],
                 kind: np.ndarray[Any, np.dtype[np.int8]], want: np.ndarray[Any, np.dtype[np.float64]],
                 fid: np.ndarray[Any, np.dtype[np.intp]], order: list[int], ratings: list[float], skip: list[bool],
                 meetings: Meetings, wait_s: float) -> None:
        self.free, self.waited, self.kind, self.want, self.fid = free, waited, kind, want, fid
        self.order = order
        """The partners (all but placing seekers) in rating order."""
        self.ratings = ratings
        """Their ratings, in that order."""
        self.taken = skip
        """Seekers already paired this pass (or left out of it)."""
        self.meetings, self.wait_s = meetings, wait_s
