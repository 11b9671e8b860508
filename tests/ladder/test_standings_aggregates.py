"""The standings from per-pair totals (``server/ladder/tally.py``) are the standings from every
game: the same Bradley–Terry fit, the same wins, draws, losses and opponents, on random
histories; and the ladder reads the totals storage keeps, not the games."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from test_ladder import FAST, qualify

from arena_testkit import Harness, gather, play_out, random_policy
from server.ladder import fitting
from server.ladder.tally import Tally
from server.ratings import bradley_terry

NAMES = ["Ann", "bob", "cat", "dan", "Émile", "zed"]

histories = st.lists(
    st.tuples(st.sampled_from(NAMES), st.sampled_from(NAMES), st.sampled_from([1.0, 0.5, 0.0])).filter(
        lambda r: r[0] != r[1]),
    max_size=300,
)


@given(histories, st.lists(st.sampled_from(NAMES), unique=True))
@settings(max_examples=150, deadline=None)
def test_a_fit_of_the_totals_is_the_fit_of_the_games(results: list[tuple[str, str, float]], players: list[str]) -> None:
    direct = bradley_terry.fit(results, players, 1487.5)
    totals = bradley_terry.fit_tally(Tally.of(results).rows(), players, 1487.5)
    assert direct.keys() == totals.keys()
    for bot, fit in direct.items():
        other = totals[bot]
        assert fit.games == other.games
        assert abs(fit.rating - other.rating) < 1e-9 and abs(fit.low - other.low) < 1e-9, bot
        assert abs(fit.high - other.high) < 1e-9, bot


@given(histories)
@settings(max_examples=150, deadline=None)
def test_the_totals_count_each_bots_wins_draws_losses_and_opponents(results: list[tuple[str, str, float]]) -> None:
    wdl, met = Tally.of(results).per_bot()
    want: dict[str, Counter[str]] = {}
    opponents: dict[str, set[str]] = {}
    for a, b, score in results:
        for bot, s, other in ((a, score, b), (b, 1.0 - score, a)):
            want.setdefault(bot, Counter())["win" if s == 1.0 else "draw" if s == 0.5 else "loss"] += 1
            opponents.setdefault(bot, set()).add(other)
    assert {b: tuple(v) for b, v in wdl.items()} == {
        b: (c["win"], c["draw"], c["loss"]) for b, c in want.items()}
    assert met == opponents
    assert Tally.of(results).total() == len(results)


async def test_the_ladder_starts_from_the_stored_totals_and_keeps_them(make_arena: Any) -> None:
    arena: Harness = await make_arena(ladder_games_per_hour=4, **FAST)  # two pairs, then no more
    alice, bob = await gather(qualify(arena, "alice", 1), qualify(arena, "bob", 2))
    await gather(play_out(alice, random_policy(3), games=4), play_out(bob, random_policy(4), games=4))
    ladder, storage = arena.arena.ladder, arena.arena.storage
    await arena.arena.manager.flush()
    stored = await storage.pair_tallies()
    results = await storage.rated_results()
    assert len(results) == 4 and stored == {p: tuple(c) for p, c in Tally.of(results).counts.items()}
    assert {p: tuple(c) for p, c in ladder.tally.counts.items()} == stored
    # A new leader reads the totals, not the games.
    ladder.follow()
    ladder.tally = Tally()
    await ladder.lead()
    assert {p: tuple(c) for p, c in ladder.tally.counts.items()} == stored
    table = await ladder.refresh_standings()
    assert sum(s.wins + s.draws + s.losses for s in table.standings) == 8


async def test_the_fitting_worker_gives_the_fit_of_the_totals() -> None:
    """``fit_standings`` packs the totals into arrays in a thread, fits them in the worker
    process and unpacks the ratings: the same fits, in the same order, as ``fit_tally`` here,
    with bots listed without games and bots that turn up only in the totals."""
    rng = random.Random(5)
    names = [f"bot{k}" for k in range(40)]
    results = [(*rng.sample(names, 2), rng.choice([1.0, 0.5, 0.0])) for _ in range(600)]
    rows = Tally.of(results).rows()
    players = ["idle", *names[::2]]
    got = await fitting.fit_standings(rows, players, 1487.5)
    want = bradley_terry.fit_tally(rows, players, 1487.5)
    assert list(got) == list(want)
    for bot, fit in want.items():  # the worker's BLAS runs on one thread: sums in another order
        other = got[bot]
        assert other.games == fit.games, bot
        assert max(abs(other.rating - fit.rating), abs(other.low - fit.low), abs(other.high - fit.high)) < 1e-9, bot
    assert got["idle"].games == 0
