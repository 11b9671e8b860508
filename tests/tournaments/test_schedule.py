"""The schedule's promises, over random fields: each pairing's own duplicate deals, every bot
meeting the right opponents, Swiss rounds without rematches while one can be avoided."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.tournaments import TournamentDefinition
from server.tournaments.schedule import deal_of, initial_schedule, next_swiss_round, planned_games, round_robin

names = st.integers(min_value=2, max_value=12).map(lambda n: [f"b{i}" for i in range(n)])
halves = st.integers(min_value=1, max_value=3)


@given(names, halves)
def test_round_robin_every_ordered_pair_plays_every_deal_once(bots: list[str], per: int) -> None:
    d = TournamentDefinition(name="t", format="round_robin", participants=bots, games_per_pairing=2 * per)
    schedule = initial_schedule(d)
    assert len(schedule) == planned_games(d)
    games = Counter((a, b, deal) for _, a, b, deal in schedule)
    assert set(games.values()) == {1}
    assert set(games) == {(a, b, k) for a in bots for b in bots if a != b for k in range(per)}
    for r in round_robin(bots):  # within a round, nobody plays twice
        seated = [x for pair in r for x in pair]
        assert len(seated) == len(set(seated)) >= len(bots) - 1


@given(names, halves)
def test_a_gauntlet_meets_the_bot_under_test_with_each_other_bot(bots: list[str], per: int) -> None:
    d = TournamentDefinition(name="t", format="gauntlet", participants=bots, games_per_pairing=2 * per,
                             bot_under_test=bots[-1])
    schedule = initial_schedule(d)
    assert len(schedule) == planned_games(d)
    assert all(bots[-1] in (a, b) for _, a, b, _ in schedule)
    assert Counter(b if a == bots[-1] else a for _, a, b, _ in schedule) == {x: 2 * per for x in bots[:-1]}


@settings(max_examples=50)
@given(names)
def test_swiss_rounds_avoid_rematches_and_bye_each_bot_at_most_once(bots: list[str]) -> None:
    # Up to about half as many rounds as bots a pairing without rematches always exists (Dirac).
    rounds = max(1, (len(bots) - 2) // 2)
    d = TournamentDefinition(name="t", format="swiss", participants=bots, games_per_pairing=2, rounds=rounds)
    schedule = initial_schedule(d)
    scores = {b: (0.0, 0) for b in bots}
    while max(e[0] for e in schedule) < rounds:
        for _, a, b, _ in schedule:  # any results will do: the first seat wins
            scores[a] = (scores[a][0] + 1, scores[a][1] + 1)
            scores[b] = (scores[b][0], scores[b][1] + 1)
        schedule += next_swiss_round(d, schedule, scores)
    assert len(schedule) == planned_games(d)
    pairs = Counter(frozenset((a, b)) for _, a, b, _ in schedule)
    assert set(pairs.values()) == {2}  # each pairing played once (two games), never again
    byes = Counter(b for r in range(1, rounds + 1) for b in bots
                   if b not in {x for e in schedule if e[0] == r for x in e[1:3]})
    assert all(n <= 1 for n in byes.values())


def test_each_pairing_has_deals_of_its_own_fixed_by_the_seed() -> None:
    """A pair's two games share their deal, seats swapped; no two pairings share one (a bot is
    told a game's deal in its record, and would know it against its next opponent)."""
    assert deal_of(5, [1, "ann", "ben", 0]) == deal_of(5, [3, "ben", "ANN", 0])  # both seat orders, any round
    assert deal_of(5, [1, "ann", "ben", 0]) != deal_of(6, [1, "ann", "ben", 0])
    field = ["ann", "ben", "cat", "dan", "eve"]
    dealt = [deal_of(5, [1, a, b, n]) for i, a in enumerate(field) for b in field[i + 1:] for n in range(4)]
    assert len({d.reshuffle_seed for d in dealt}) == len(dealt) == 40


@settings(max_examples=50)
@given(names, halves, st.sampled_from(["round_robin", "gauntlet", "swiss"]))
def test_the_two_slots_of_each_deal_are_the_ones_a_held_record_waits_for(bots: list[str], per: int, fmt: str) -> None:
    """A tournament game's record is held while the other slot of its deal is to be played
    (``server/games/holds.py``), and that rule finds the slots of a deal without reading the
    schedule: slots 2k and 2k + 1, the same deal with the seats swapped, and no other slot on
    it. So in every format each deal's two games are listed at those slots, Swiss rounds
    appended included."""
    from server.games.holds import deal_slots

    d = TournamentDefinition(name="t", format=fmt, participants=bots, games_per_pairing=2 * per,  # type: ignore[arg-type]
                             bot_under_test=bots[0] if fmt == "gauntlet" else None,
                             rounds=min(2, len(bots) - 1) if fmt == "swiss" else None)
    schedule = initial_schedule(d)
    if fmt == "swiss" and (d.rounds or 0) > 1:
        schedule += next_swiss_round(d, schedule, {b: (0.0, 0) for b in bots})
    deals = [deal_of(7, entry) for entry in schedule]
    for slot, (_, a, b, _) in enumerate(schedule):
        twins = deal_slots(slot)
        assert slot in twins and twins[1] - twins[0] == 1 and twins[1] < len(schedule)
        other = twins[1] if slot == twins[0] else twins[0]
        assert deals[other] == deals[slot] and schedule[other][1:3] == [b, a]
        assert [s for s, deal in enumerate(deals) if deal == deals[slot]] == list(twins)


def test_a_swiss_rematch_plays_deals_of_its_own() -> None:
    """Two bots meet in every round of a Swiss (a rematch is all there is): each round plays
    new deals, since the records of the earlier rounds' games are public and tell theirs."""
    d = TournamentDefinition(name="t", format="swiss", participants=["ann", "ben"], games_per_pairing=4, rounds=3)
    schedule = initial_schedule(d)
    for _ in range(2):
        schedule += next_swiss_round(d, schedule, {"ann": (1.0, 2), "ben": (1.0, 2)})
    assert [e[0] for e in schedule] == [1] * 4 + [2] * 4 + [3] * 4
    assert [e[3] for e in schedule] == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    deals = [deal_of(9, e) for e in schedule]
    assert len({d.reshuffle_seed for d in deals}) == 6 and all(deals[2 * k] == deals[2 * k + 1] for k in range(6))
