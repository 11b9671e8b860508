"""The large ladder's policy (``server/ladder/large.py``): its promises, as properties of the pure
pairing code over simulated ladders of bots of known strengths and different speeds.

The simulation is event by event, as in ``test_matchmaking.py``: a pair (two games) keeps both
bots busy for twice the slower bot's game time; pairing runs whenever a bot frees or a wait runs
out; each game's result is drawn from the bots' strengths (logistic, with draws), and the
field learns the ratings every few games as the standings' fit would give them (here the true
strengths with a σ that shrinks with the games played, so the test is about pairing, not fitting).
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass
from dataclasses import field as default

import pytest

from server.config import ConfigError, load_settings
from server.ladder.large import (
    BRACKET,
    EXPLORE_EVERY,
    SHARE,
    SLICE,
    WAIT_SLACK,
    Field,
    Pairing,
    allowed,
    placement_pairs,
)
from server.ladder.matchmaking import Meetings

WAIT_S = 5.0


@dataclass
class Sim:
    """A simulated ladder: ``speed[bot]`` is how long a game takes that bot."""

    strength: dict[str, float]
    speed: dict[str, float]
    rng: random.Random
    field: Field = default(default_factory=Field)
    meetings: Meetings = default(default_factory=Meetings)
    busy_until: dict[str, float] = default(default_factory=dict)
    free_since: dict[str, float] = default(default_factory=dict)
    ends: list[tuple[float, str, str]] = default(default_factory=list)
    log: list[tuple[float, Pairing, int, int]] = default(default_factory=list)
    """Each pair started: when, the pairing, and how many pairs each bot had started before."""
    started: dict[str, int] = default(default_factory=dict)
    told: dict[str, int] = default(default_factory=dict)
    """The games each bot had when the field last heard its rating."""
    known: list[int] = default(default_factory=list)
    """For each pair in ``log``: the fewer games the field had heard of its two bots with."""
    games: dict[str, int] = default(default_factory=dict)
    seeking: set[str] = default(default_factory=set)
    longest_wait: float = 0.0
    now: float = 0.0

    def join(self, bots: dict[str, tuple[float, float]]) -> None:
        """Bots (strength, speed) that start seeking now."""
        for bot, (strength, speed) in bots.items():
            self.strength[bot], self.speed[bot] = strength, speed
            self.busy_until[bot] = self.now
            self.free_since[bot] = self.now
            self.started[bot] = self.games[bot] = 0
            self.seeking.add(bot)

    def tell_ratings(self) -> None:
        """The fit, as the field hears it: bots with games at their strength, ±400/√games."""
        self.field.update((b, self.strength[b], 400.0 / math.sqrt(self.games[b] + 2), self.games[b])
                          for b in self.seeking if self.games[b])
        self.told = {b: self.games[b] for b in self.seeking}

    def pass_now(self) -> list[Pairing]:
        free = [b for b in sorted(self.seeking) if self.busy_until[b] <= self.now]
        waited = [self.now - self.free_since[b] for b in free]
        before = {b: w for b, w in zip(free, waited, strict=True)}
        pairs = [p for batch in self.field.pairing(free, waited, self.meetings, self.rng, WAIT_S) for p in batch]
        for p in pairs:
            assert p.a in before and p.b in before and p.a != p.b
            assert allowed(self.meetings, p.a, p.b), p
            if p.why == "place":  # a newcomer is placed against bots the fit has rated, never a placing one
                assert self.field.fitted[self.field.index[p.b]] and p.b not in self.field.placing, p
            self.log.append((self.now, p, self.started[p.a], self.started[p.b]))
            self.known.append(min(self.told.get(p.a, 0), self.told.get(p.b, 0)))
            self.field.started(p)
            self.meetings.add(p.a, p.b, 2)
            self.started[p.a] += 1
            self.started[p.b] += 1
            length = 2 * max(self.speed[p.a], self.speed[p.b])
            self.busy_until[p.a] = self.busy_until[p.b] = self.now + length
            self.ends.append((self.now + length, p.a, p.b))
            for bot in (p.a, p.b):
                self.longest_wait = max(self.longest_wait, before[bot])
        paired = {n for p in pairs for n in (p.a, p.b)}
        self.unpaired = [(b, w) for b, w in before.items() if b not in paired]
        return pairs

    def play(self, a: str, b: str) -> float:
        d = (self.strength[a] - self.strength[b]) * math.log(10) / 400
        win, draw = 1 / (1 + math.exp(-d)), 0.1
        u = self.rng.random()
        return 0.5 if u < draw else 1.0 if u < draw + (1 - draw) * win else 0.0

    def step(self) -> list[Pairing]:
        """Pair who can be paired now, then move on to the next event."""
        pairs = self.pass_now()
        events = [u for u in self.busy_until.values() if u > self.now]
        waits = [WAIT_S - w for _, w in self.unpaired if w < WAIT_S - WAIT_SLACK]
        if waits:
            events.append(self.now + min(waits))
        nxt = min(events) if events else self.now + WAIT_S
        for end in [e for e in self.ends if e[0] <= nxt]:
            self.ends.remove(end)
            _, a, b = end
            for first, second in ((a, b), (b, a)):
                self.field.result(first, second, self.play(first, second))
            self.field.ended(a, b)
            self.games[a] += 2
            self.games[b] += 2
            for bot in (a, b):
                self.free_since[bot] = end[0]
        if int(nxt / 30) != int(self.now / 30):
            self.tell_ratings()  # the standings refresh now and then
        self.now = nxt
        return pairs


def make_sim(n: int, seed: int, spread: float = 300.0) -> Sim:
    rng = random.Random(seed)
    sim = Sim({}, {}, rng)
    sim.join({f"b{i:03d}": (rng.gauss(1500, spread), rng.uniform(0.5, 8.0)) for i in range(n)})
    return sim


def components(meetings: Meetings, bots: list[str]) -> int:
    """Components of the comparison graph over ``bots`` (who has met whom)."""
    seen: set[str] = set()
    count = 0
    for bot in bots:
        if bot in seen:
            continue
        count += 1
        todo = [bot]
        seen.add(bot)
        while todo:
            for other, met in meetings.of(todo.pop()).items():
                if met > 0 and other not in seen:
                    seen.add(other)
                    todo.append(other)
    return count


@pytest.mark.parametrize("n, seed", [(40, 1), (120, 2), (300, 3)])
def test_share_cap_connected_graph_and_no_bot_starves(n: int, seed: int) -> None:
    """With bots of speeds that differ sixteenfold: no opponent ever has more than
    max(2, games/SHARE) of a bot's games; the comparison graph is connected; the longest a
    free bot waits is bounded; and every bot keeps playing."""
    sim = make_sim(n, seed)
    bots = sorted(sim.seeking)
    while min(sim.started.values()) < 12:
        sim.step()
        for p in sim.log[-n:]:
            for x, y in ((p[1].a, p[1].b), (p[1].b, p[1].a)):
                assert sim.meetings.met(x, y) <= max(2, sim.meetings.total(x) // SHARE), (x, y)
    assert components(sim.meetings, bots) == 1
    # A free bot waits for a telling opponent at most WAIT_S, then takes any the cap allows;
    # the slowest bot's pair (16 s here) bounds how long until one comes free.
    assert sim.longest_wait <= WAIT_S + 2 * max(sim.speed.values())
    for bot in bots:
        share = max(sim.meetings.of(bot).values()) / sim.meetings.total(bot)
        assert share <= max(2 / sim.meetings.total(bot), 1 / SHARE)


def test_the_longest_waiting_bot_takes_any_opponent_the_cap_allows() -> None:
    """In every pass: a free bot that has waited WAIT_S is left unpaired only if no other free
    bot passes the share cap with it (the longest-waiting goes first)."""
    sim = make_sim(60, 4)
    for _ in range(3000):
        sim.step()
        overdue = sorted(((w, b) for b, w in sim.unpaired if w >= WAIT_S - WAIT_SLACK), reverse=True)
        if overdue:
            _, longest = overdue[0]
            others = [b for b, _ in sim.unpaired if b != longest]
            assert not [b for b in others if allowed(sim.meetings, longest, b)], (sim.now, longest)


def test_every_eighth_pair_of_a_bot_is_not_chosen_by_rating() -> None:
    """Each bot's pairs number EXPLORE_EVERY, 2·EXPLORE_EVERY, … are against a random rating
    band (or with a bot that waited too long, or joins the graph): never a 'near' pair."""
    sim = make_sim(80, 5)
    while min(sim.started.values()) < 4 * EXPLORE_EVERY:
        sim.step()
    due = 0
    for _, p, before_a, before_b in sim.log:
        if before_a % EXPLORE_EVERY == EXPLORE_EVERY - 1 or before_b % EXPLORE_EVERY == EXPLORE_EVERY - 1:
            assert p.why != "near", p
            due += 1
    assert due >= 80 * 3


def test_near_pairs_are_near() -> None:
    """A 'near' pair is worth playing: between bots the fit knows (σ 70 Elo or less here),
    within 185 Elo (ACCEPT's bound at that σ); and near pairs are far nearer than random ones."""
    sim = make_sim(200, 6, spread=400.0)
    while min(sim.started.values()) < 20:
        sim.step()
    pairs = list(zip(sim.log, sim.known, strict=True))
    known = [abs(sim.strength[p.a] - sim.strength[p.b]) for (_, p, _, _), told in pairs if p.why == "near" and told >= 30]
    assert known and max(known) < 185
    near = [abs(sim.strength[p.a] - sim.strength[p.b]) for (_, p, _, _), told in pairs if p.why == "near" and told >= 10]
    spread = [abs(sim.strength[a] - sim.strength[b]) for a, b in itertools.combinations(sorted(sim.seeking), 2)]
    assert sum(near) / len(near) < 0.25 * sum(spread) / len(spread)


def test_join_pairs_cross_components() -> None:
    """While the comparison graph has several components, a bot outside the largest takes an
    opponent from another: the first pairs of a fresh ladder join it up at once."""
    sim = make_sim(64, 10)
    seen = Meetings()
    joins = 0
    while min(sim.started.values()) < 3:
        start = len(sim.log)
        sim.step()
        for _, p, _, _ in sim.log[start:]:
            if p.why == "join":
                joins += 1
                assert components(seen, [p.a, p.b]) == 2 or not seen.total(p.a) or not seen.total(p.b)
        for _, p, _, _ in sim.log[start:]:
            seen.add(p.a, p.b, 2)
    assert joins and components(sim.meetings, sorted(sim.seeking)) == 1


def test_newcomers_are_placed_within_the_bound_by_binary_search() -> None:
    """On an established ladder, each newcomer plays at most ⌈log2(A / BRACKET)⌉ placement
    pairs (each against a bot in the middle half of its bracket), then is ranked; its
    placement lands near its true strength."""
    sim = make_sim(160, 7)
    while min(sim.games.values()) < 16:
        sim.step()
    sim.tell_ratings()
    fitted = len(sim.field._placed())
    bound = placement_pairs(fitted)
    assert bound == math.ceil(math.log2(fitted / BRACKET))
    rng = random.Random(8)
    newcomers = {f"new{i}": (rng.gauss(1500, 300), rng.uniform(0.5, 8.0)) for i in range(12)}
    sim.join(newcomers)
    start = len(sim.log)
    while any(b in sim.field.placing or sim.started[b] == 0 for b in newcomers):
        sim.step()
        assert sim.now < 10_000, "placement never ended"
    placements = {b: [p for _, p, _, _ in sim.log[start:] if p.why == "place" and p.a == b] for b in newcomers}
    for bot, pairs in placements.items():
        assert 1 <= len(pairs) <= bound, (bot, len(pairs))
    # Where each landed against where it belongs (its true strength's quantile among the rest).
    others = sorted(sim.strength[b] for b in sim.strength if b not in newcomers)
    errors = []
    for bot in newcomers:
        i = sim.field.index[bot]
        placed = sum(1 for s in others if s < sim.field.mu[i]) / len(others)
        true = sum(1 for s in others if s < sim.strength[bot]) / len(others)
        errors.append(abs(placed - true))
    assert sum(errors) / len(errors) < 0.15, errors


def test_a_placing_newcomer_waits_for_its_result() -> None:
    """A newcomer's next placement pair depends on its last one's result: while that pair is
    under way the newcomer is not paired again, whatever slots it has."""
    sim = make_sim(100, 9)
    while min(sim.games.values()) < 10:
        sim.step()
    sim.tell_ratings()
    sim.join({"new": (1700.0, 1.0)})
    pairs = sim.pass_now()
    first = [p for p in pairs if "new" in (p.a, p.b)]
    assert [p.why for p in first] == ["place"] and sim.field.placing["new"].opponent is not None
    sim.busy_until["new"] = sim.now  # a free slot again, its pair still under way
    assert not [p for p in sim.pass_now() if "new" in (p.a, p.b)]


def test_the_switch_to_the_large_policy_is_a_bounded_setting() -> None:
    assert load_settings().pairing_large_from == 32
    assert load_settings(overrides={"pairing_large_from": 16}).pairing_large_from == 16
    for bad in (15, 65):
        with pytest.raises(ConfigError):
            load_settings(overrides={"pairing_large_from": bad})


def test_the_share_cap_lets_a_first_pair_through_and_a_rematch_once_both_played_enough() -> None:
    meetings = Meetings()
    assert allowed(meetings, "a", "b")  # never met: always
    meetings.add("a", "b", 2)
    for i in range(13):  # a and b each play 13 more pairs elsewhere: 28 games each
        meetings.add("a", f"x{i}", 2)
        meetings.add("b", f"y{i}", 2)
    assert not allowed(meetings, "a", "b")  # 4 of 30 would be more than an eighth
    meetings.add("a", "x0", 2)
    assert not allowed(meetings, "a", "b")  # a could (4 of 32), b not yet
    meetings.add("b", "y0", 2)
    assert allowed(meetings, "a", "b") and allowed(meetings, "b", "a")


def test_a_thundering_herd_of_10000_seekers_is_paired_in_bounded_steps_and_none_starves() -> None:
    """After a restart every bot of an established ladder of 10,000 seeks at once (the ratings
    and the meetings known from the stored totals). The pass hands its pairs over in steps of
    at most SLICE pairs, with a step for at most SLICE seekers looked at (what the server runs
    between two turns of its loop, ``run_in_slices``), never all at once; and pass after pass,
    as their waits grow, every seeker is paired."""
    n = 10_000
    rng = random.Random(7)
    bots = [f"b{i:05d}" for i in range(n)]
    field, meetings = Field(), Meetings()
    strength = {b: rng.gauss(1500, 250) for b in bots}
    for i, b in enumerate(bots):  # each bot has met a few others: a ladder a few games old
        for other in (bots[(i + 1) % n], bots[rng.randrange(n)]):
            if other != b:
                meetings.add(b, other, 2)
                field.played_before(b, other, 2)
    field.update((b, strength[b], 60.0, meetings.total(b)) for b in bots)
    free, waited, passes = list(bots), [0.0] * n, 0
    paired: set[str] = set()
    while free:
        passes += 1
        steps = list(field.pairing(free, waited, meetings, rng, WAIT_S))
        if passes == 1:
            assert len(steps) >= n // SLICE  # the herd's pass is many steps, not one
        assert max(len(step) for step in steps) <= SLICE
        for p in (p for step in steps for p in step):
            assert p.a not in paired and p.b not in paired and allowed(meetings, p.a, p.b)
            paired.update((p.a, p.b))
            field.started(p)
            meetings.add(p.a, p.b, 2)
        if passes == 1:
            assert len(paired) >= 0.9 * n  # most of the herd is paired at once
        free = [b for b in free if b not in paired]
        waited = [WAIT_S] * len(free)  # the rest wait until they take the nearest the cap allows
        assert passes <= 3, f"{len(free)} seekers still unpaired after {passes} passes"
