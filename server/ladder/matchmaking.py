"""Who plays whom next on the ladder: pairing over time, not over one instant.

Pure (no I/O, no clock: the caller says how long each bot has waited), so the ladder's
promises are tested directly, on simulated bots of different speeds
(``tests/ladder/test_matchmaking.py``). A ladder pairing is a duplicate pair: two games.

The rules, for the *active* bots (listed, connected, seeking) of which some are *free* (a slot
open now):

1. **The share cap.** A bot that has another active opponent is never paired with ``b`` if
   ``b`` already has more of its ladder games than all its other opponents together:
   ``met(a, b) <= met(a, others)`` before the pairing. So no opponent ever takes more than half
   of a bot's ladder games plus one pair, however fast or slow the bots are. The pair that has
   met least among the active bots always passes the cap, so there is always a pairing to make
   when everyone is free.
2. **No pair runs ahead.** A bot is never paired with ``b`` if it has already played ``b``
   ``lead`` games (two pairs) more than its least-met active opponent: then it waits for that
   one however long it takes. So every two active bots meet, whatever their speeds, before
   either has played ``(lead/2 + 1)·(k − 1)`` pairs. The opponents it waits for are those that
   have played about as many ladder games as it has (no more than ``lead·(k − 1)`` fewer, which
   is as far behind as this rule lets a slow bot fall): a newcomer, or a bot back after a long
   absence, has met nobody, and waiting for it to catch up would hold every pair still for
   hundreds of games. Rule 3 has everyone meet it first meanwhile.
3. **Met least first.** Within that, a free bot accepts an opponent it has met no more than
   its least-met active opponent (free or busy). If that one is busy, the bot waits for it, up
   to ``wait_s``; after that it takes any free opponent rules 1 and 2 allow. So fast bots do
   not lock in with each other while the slow ones play.
4. **Among those**, the pair that met least goes first; then the pair whose busier bot
   started fewer ladder games lately (so a slow bot that comes free is paired before fast
   ones that just finished); ties prefer close ratings (a gap of ``spread`` Elo makes a
   pairing e times less likely, never impossible) and, last, not the same opponent twice in
   a row.

A games-per-hour limit (:class:`RecentGames`) is applied by the caller: a bot at its limit is
not a seeker, and is not active either (nobody waits for it).
"""

from __future__ import annotations

import math
import random
from collections import deque
from collections.abc import Collection, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Seeker:
    """A bot that may start a ladder pair now."""

    name: str
    rating: float
    last_opponent: str | None = None
    waited: float = 0.0
    """Seconds it has been free without a pairing."""
    recent: int = 0
    """Ladder games it started lately (within the limit's window)."""


class Meetings:
    """Ladder games between each two bots (a duplicate pair counts two), kept per bot so that
    a look-up is two dictionary reads and a bot's opponents are at hand."""

    def __init__(self) -> None:
        self._of: dict[str, dict[str, int]] = {}
        self._total: dict[str, int] = {}

    def add(self, a: str, b: str, games: int = 1) -> None:
        for x, y in ((a, b), (b, a)):
            row = self._of.get(x)
            if row is None:
                row = self._of[x] = {}
            row[y] = row.get(y, 0) + games
            self._total[x] = self._total.get(x, 0) + games

    def met(self, a: str, b: str) -> int:
        row = self._of.get(a)
        return 0 if row is None else row.get(b, 0)

    def of(self, a: str) -> dict[str, int]:
        """``a``'s games against each opponent it has met (do not change it)."""
        return self._of.get(a, _NONE)

    def total(self, a: str) -> int:
        return self._total.get(a, 0)

    def clear(self) -> None:
        self._of.clear()
        self._total.clear()


_NONE: dict[str, int] = {}


def weight(a: Seeker, b: Seeker, spread: float) -> float:
    """How much more likely ``a`` meets ``b`` than a bot ``spread`` Elo further away (×e)."""
    return math.exp(-abs(a.rating - b.rating) / spread)


def within_cap(meetings: Meetings, a: str, b: str, active: Collection[str]) -> bool:
    """Rule 1 from ``a``'s side: ``b`` would not take more than half of ``a``'s games."""
    if not any(c != a and c != b for c in active):
        return True  # no one else to play: two bots on a ladder play each other
    met = meetings.met(a, b)
    return met <= meetings.total(a) - met


LEAD = 4
"""Rule 2's default: games (two pairs) a pair may run ahead of a bot's least-met opponent."""


def pair_round(free: Sequence[Seeker], busy: Collection[str], meetings: Meetings, rng: random.Random,
               spread: float = 200.0, wait_s: float = 5.0, lead: int = LEAD) -> list[tuple[str, str]]:
    """The pairs to start now among the ``free`` seekers, each in at most one; ``busy`` are
    the active bots without a free slot (they count for rules 1 to 3).

    Quadratic in the seekers (every two free bots are weighed), which is what the switch to
    the large ladder's policy bounds (``server/ladder/large.py``)."""
    active = {s.name for s in free} | set(busy)
    others = len(active) > 2  # within_cap's "another active opponent", for a and b both active
    rows = {a.name: meetings.of(a.name) for a in free}
    totals = {c: meetings.total(c) for c in active}
    total = {a.name: totals[a.name] for a in free}
    behind = lead * (len(active) - 1)  # rule 2 waits for no opponent further behind in games
    least: dict[str, int] = {}
    floor: dict[str, float] = {}
    for a in free:
        row, t = rows[a.name], total[a.name]
        counts = [row.get(c, 0) for c in active if c != a.name]
        floor[a.name] = min((row.get(c, 0) for c in active if c != a.name and totals[c] >= t - behind),
                            default=math.inf)
        least[a.name] = min((m for m in counts if not others or m <= t - m), default=0)  # rule 1's opponents
    candidates = []
    for i, a in enumerate(free):
        row_a, total_a, least_a, floor_a = rows[a.name], total[a.name], least[a.name], floor[a.name]
        a_out = _waited_out(a, wait_s)
        for b in free[i + 1:]:
            met = row_a.get(b.name, 0)
            if others and (met > total_a - met or met > total[b.name] - met):
                continue  # rule 1, from either side
            if met >= floor_a + lead or met >= floor[b.name] + lead:
                continue
            if not ((met <= least_a or a_out) and (met <= least[b.name] or _waited_out(b, wait_s))):
                continue
            rematch = a.last_opponent == b.name or b.last_opponent == a.name
            # An exponential race: the smallest of E/w, E ~ Exp(1), is b with probability ∝ w.
            race = math.log(rng.expovariate(1.0) or 1e-300) - math.log(weight(a, b, spread))
            candidates.append((met, max(a.recent, b.recent), race + (1e6 if rematch else 0.0), a.name, b.name))
    candidates.sort()
    taken: set[str] = set()
    pairs = []
    for _, _, _, a_name, b_name in candidates:
        if a_name not in taken and b_name not in taken:
            taken |= {a_name, b_name}
            pairs.append((a_name, b_name))
    return pairs


def _waited_out(s: Seeker, wait_s: float) -> bool:
    return s.waited >= wait_s - 1e-9  # a pairing run at the moment a wait ends sees it over


def next_wait_end(free: Sequence[Seeker], wait_s: float) -> float | None:
    """Seconds until the first free seeker's wait runs out (for the caller to pair again then)."""
    left = [wait_s - s.waited for s in free if not _waited_out(s, wait_s)]
    return min(left) if left else None


class RecentGames:
    """Ladder games each bot started within the last ``window`` seconds (times are the
    caller's clock), for a games-per-hour limit and for rule 4's preference."""

    def __init__(self, window: float = 3600.0) -> None:
        self.window = window
        self._starts: dict[str, deque[float]] = {}

    def add(self, bot: str, at: float, games: int = 1) -> None:
        self._starts.setdefault(bot, deque()).extend([at] * games)

    def count(self, bot: str, now: float) -> int:
        starts = self._starts.get(bot)
        if starts is None:
            return 0
        while starts and starts[0] <= now - self.window:
            starts.popleft()
        if not starts:
            del self._starts[bot]
            return 0
        return len(starts)

    def may_start(self, bot: str, now: float, limit: int | None, games: int = 2) -> bool:
        """Whether ``bot`` may start ``games`` more (a duplicate pair) under ``limit``."""
        return limit is None or self.count(bot, now) + games <= limit

    def clear(self) -> None:
        self._starts.clear()
