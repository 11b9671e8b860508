"""Pairing (``server.ladder.matchmaking``): the ladder's promises, as properties of the pure
pairing code over simulated ladders of bots of different speeds.

The simulation is event by event: a pairing (two games) keeps both bots busy for twice the
slower bot's game time; a bot that finishes is free and waits; pairing runs whenever a bot
frees or a wait runs out, as the server's loop does.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from server.ladder.matchmaking import LEAD, Meetings, Seeker, next_wait_end, pair_round, within_cap

names = st.lists(st.text("abcdefgh", min_size=1, max_size=3), min_size=0, max_size=12, unique=True)


@given(names, st.integers(0, 2**32), st.data())
def test_with_everyone_free_each_is_paired_at_most_once_and_all_but_one_are(
        ns: list[str], seed: int, data: st.DataObject) -> None:
    rng = random.Random(seed)
    meetings = Meetings()
    for a, b in itertools.combinations(ns, 2):
        meetings.add(a, b, 2 * data.draw(st.integers(0, 3)))
    seekers = [Seeker(n, data.draw(st.floats(1000, 2000)), data.draw(st.sampled_from([None, *ns])), 99.0)
               for n in ns]
    pairs = pair_round(seekers, [], meetings, rng)
    paired = [n for p in pairs for n in p]
    assert len(paired) == len(set(paired)) and all(a != b for a, b in pairs)
    assert set(paired) <= set(ns)
    assert pairs or len(ns) < 2  # the least-met pair always passes the share cap
    for a, b in pairs:
        assert within_cap(meetings, a, b, ns) and within_cap(meetings, b, a, ns)


@dataclass
class Ladder:
    """A simulated ladder: ``speed[bot]`` is how long a game takes that bot."""

    speed: dict[str, float]
    wait_s: float
    rng: random.Random
    rating: dict[str, float] = field(default_factory=dict)
    meetings: Meetings = field(default_factory=Meetings)
    busy_until: dict[str, float] = field(default_factory=dict)
    free_since: dict[str, float] = field(default_factory=dict)
    last: dict[str, str] = field(default_factory=dict)
    pairings: list[tuple[float, str, str]] = field(default_factory=list)
    first_met: dict[frozenset[str], tuple[int, int]] = field(default_factory=dict)
    """When each pair first met: how many pairs each of the two had played before."""
    now: float = 0.0

    def __post_init__(self) -> None:
        for bot in self.speed:
            self.busy_until[bot] = 0.0
            self.free_since[bot] = 0.0
            self.rating.setdefault(bot, 1500.0)

    def step(self) -> None:
        """Pair who can be paired now, then move on to the next event."""
        free = [b for b in self.speed if self.busy_until[b] <= self.now]
        busy = [b for b in self.speed if self.busy_until[b] > self.now]
        seekers = [Seeker(b, self.rating[b], self.last.get(b), self.now - self.free_since[b]) for b in free]
        pairs = pair_round(seekers, busy, self.meetings, self.rng, wait_s=self.wait_s)
        for a, b in pairs:
            assert within_cap(self.meetings, a, b, self.speed) and within_cap(self.meetings, b, a, self.speed)
            if not self.meetings.met(a, b):
                self.first_met[frozenset((a, b))] = (self.meetings.total(a) // 2, self.meetings.total(b) // 2)
            self.meetings.add(a, b, 2)
            self.busy_until[a] = self.busy_until[b] = self.now + 2 * max(self.speed[a], self.speed[b])
            self.last[a], self.last[b] = b, a
            self.pairings.append((self.now, a, b))
        still_free = [s for s in seekers if s.name not in {n for p in pairs for n in p}]
        events = [u for u in self.busy_until.values() if u > self.now]
        wait = next_wait_end(still_free, self.wait_s)
        if wait is not None:
            events.append(self.now + wait)
        nxt = min(events)
        for bot, until in self.busy_until.items():
            if self.now < until <= nxt:
                self.free_since[bot] = until
        self.now = nxt

    def share(self, bot: str) -> float:
        """The largest part of ``bot``'s games played against one opponent."""
        total = self.meetings.total(bot)
        return max(self.meetings.met(bot, o) for o in self.speed if o != bot) / total if total else 0.0


speeds = st.lists(st.floats(0.2, 12.0), min_size=3, max_size=7)


@settings(max_examples=150, deadline=None)
@given(speeds, st.floats(0.0, 10.0), st.integers(0, 2**32))
def test_every_pair_meets_and_no_opponent_takes_over_half(speed_list: list[float], wait_s: float, seed: int) -> None:
    """With k >= 3 bots of any speeds and any wait: no bot ever has more than half its games
    against one opponent plus one pair; every two bots meet before either has played
    (LEAD/2 + 1)·(k − 1) pairs; and every bot keeps playing."""
    bots = [f"b{i}" for i in range(len(speed_list))]
    ladder = Ladder(dict(zip(bots, speed_list, strict=True)), wait_s, random.Random(seed))
    k = len(bots)
    while min(ladder.meetings.total(b) for b in bots) < 2 * 4 * k:
        ladder.step()
        for a, b in itertools.permutations(bots, 2):
            met = ladder.meetings.met(a, b)
            assert met <= ladder.meetings.total(a) - met + 2, (a, b, ladder.pairings)
    bound = (LEAD // 2 + 1) * (k - 1)
    for a, b in itertools.combinations(bots, 2):
        assert ladder.meetings.met(a, b) > 0, f"{a} and {b} never met: {ladder.pairings}"
        assert max(ladder.first_met[frozenset((a, b))]) < bound, (a, b, ladder.first_met, ladder.pairings)


def test_two_fast_and_two_slow_bots_do_not_lock_in() -> None:
    """The case that used to lock in: two instant bots and two that take 30 times longer."""
    ladder = Ladder({"fast1": 0.2, "fast2": 0.2, "slow1": 6.0, "slow2": 6.0}, 5.0, random.Random(1))
    while ladder.now < 600:
        ladder.step()
    for a, b in itertools.combinations(ladder.speed, 2):
        assert ladder.meetings.met(a, b) >= 10, (a, b, ladder.meetings.met(a, b))
    for bot in ladder.speed:
        assert ladder.share(bot) <= 0.5 + 2 / ladder.meetings.total(bot)


def test_a_waiting_bot_takes_a_free_opponent_once_its_wait_is_over() -> None:
    meetings = Meetings()
    meetings.add("a", "b", 2)
    meetings.add("a", "d", 2)
    meetings.add("b", "c", 2)
    fresh = [Seeker("a", 1500, None, 1.0), Seeker("b", 1500, None, 1.0)]
    # a has never met c (busy): it waits for c rather than replay b …
    assert pair_round(fresh, ["c", "d"], meetings, random.Random(1), wait_s=5.0) == []
    # … until its wait is over.
    done = [Seeker("a", 1500, None, 5.0), Seeker("b", 1500, None, 5.0)]
    assert pair_round(done, ["c", "d"], meetings, random.Random(1), wait_s=5.0) == [("a", "b")]


def test_close_ratings_are_preferred_among_equally_met_pairs() -> None:
    rng = random.Random(3)
    seekers = [Seeker("p1", 1200), Seeker("p2", 1300), Seeker("p6", 1900), Seeker("p7", 2000)]
    firsts: dict[frozenset[str], int] = {}
    for _ in range(2000):
        (a, b), _ = pair_round(seekers, [], Meetings(), rng)
        firsts[frozenset((a, b))] = firsts.get(frozenset((a, b)), 0) + 1
    near, far = firsts.get(frozenset(("p1", "p2")), 0), firsts.get(frozenset(("p1", "p6")), 0)
    assert near > 10 * max(far, 1) and far > 0  # preferred, never impossible


def test_no_same_opponent_twice_in_a_row_when_another_as_little_met_is_free() -> None:
    rng = random.Random(4)
    meetings = Meetings()
    meetings.add("a", "b", 2)
    meetings.add("c", "d", 2)
    meetings.add("a", "c", 2)
    meetings.add("b", "d", 2)
    for _ in range(200):
        seekers = [Seeker("a", 1500, "b"), Seeker("b", 1500, "a"), Seeker("c", 1500, "d"), Seeker("d", 1500, "c")]
        pairs = {frozenset(p) for p in pair_round(seekers, [], meetings, rng)}
        assert pairs == {frozenset("ad"), frozenset("bc")}


def test_a_newcomer_does_not_hold_a_ladder_with_a_history_still() -> None:
    """Rule 2 waits for opponents about as far along as the bot: a newcomer to bots that have
    met 20 times each is met first by everyone (rule 3), while the others keep playing each
    other instead of waiting for it to catch up for hundreds of games."""
    meetings = Meetings()
    for a, b in itertools.combinations("ABC", 2):
        meetings.add(a, b, 20)
    free = [Seeker(n, 1500, None, 999.0) for n in "ABC"]
    assert pair_round(free, ["D"], meetings, random.Random(1), wait_s=5.0) != []
    # Over time, on a simulated ladder where the newcomer is thirty times slower than the rest.
    ladder = Ladder({"A": 0.2, "B": 0.2, "C": 0.2, "D": 6.0}, 5.0, random.Random(2), meetings=meetings)
    while ladder.now < 300:
        ladder.step()
    among = sum(1 for _, a, b in ladder.pairings if "D" not in (a, b))
    assert among >= 40  # the others played on, after waiting for the newcomer (rule 3) each time
    assert all(ladder.meetings.met("D", o) >= 6 for o in "ABC")  # and everyone met the newcomer
