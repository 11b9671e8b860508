"""Pairing rounds (``server.ladder.matchmaking``): the promises of the ladder's matchmaking,
over many random rounds."""

from __future__ import annotations

import itertools
import random
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from server.ladder.matchmaking import Seeker, pair_round

names = st.lists(st.text("abcdefgh", min_size=1, max_size=3), min_size=0, max_size=12, unique=True)


@given(names, st.integers(0, 2**32), st.data())
def test_each_seeker_is_paired_at_most_once_and_all_but_one_are_paired(ns: list[str], seed: int, data: st.DataObject) -> None:
    seekers = [Seeker(n, data.draw(st.floats(1000, 2000)), data.draw(st.sampled_from([None, *ns]))) for n in ns]
    pairs = pair_round(seekers, random.Random(seed))
    paired = [n for p in pairs for n in p]
    assert len(paired) == len(set(paired)) and all(a != b for a, b in pairs)
    assert set(paired) <= set(ns)
    assert len(paired) == len(ns) - len(ns) % 2  # nobody is left waiting who could play


def test_no_immediate_rematch_while_someone_else_is_free() -> None:
    rng = random.Random(1)
    for _ in range(500):
        seekers = [Seeker("a", 1500, "b"), Seeker("b", 1500, "a"), Seeker("c", 1900, None), Seeker("d", 1100, None)]
        pairs = {frozenset(p) for p in pair_round(seekers, rng)}
        assert frozenset("ab") not in pairs


def test_a_rematch_when_no_one_else_is_there() -> None:
    pairs = pair_round([Seeker("a", 1500, "b"), Seeker("b", 1500, "a")], random.Random(2))
    assert [set(p) for p in pairs] == [{"a", "b"}]


def test_close_ratings_are_preferred_but_everyone_meets_everyone() -> None:
    rng = random.Random(3)
    ratings = {"p1": 1200, "p2": 1300, "p3": 1500, "p4": 1600, "p5": 1800, "p6": 1900}
    met: Counter[frozenset[str]] = Counter()
    last: dict[str, str] = {}
    for _ in range(3000):
        seekers = [Seeker(n, r, last.get(n)) for n, r in ratings.items()]
        for a, b in pair_round(seekers, rng):
            met[frozenset((a, b))] += 1
            last[a], last[b] = b, a
    every = [frozenset(p) for p in itertools.combinations(ratings, 2)]
    assert all(met[p] > 0 for p in every)
    # Neighbours 100 apart meet much more often than the ends 700 apart (everyone plays every
    # round here, so the ends must meet someone: the preference shows as a ratio, not a ban).
    assert met[frozenset(("p1", "p2"))] > 2 * met[frozenset(("p1", "p6"))]
