"""Fair ladder time: a games-per-hour limit stops a bot that has played its share, and pairing
prefers the bot with fewer recent games; the standings rank by the rating their interval is of."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from test_ladder import FAST, qualify, standings

from arena_testkit import Harness, gather, play_out, random_policy, wait_until
from server.ladder.matchmaking import Meetings, RecentGames, Seeker, pair_round
from server.ratings import bradley_terry


def test_recent_games_count_within_the_window_only() -> None:
    recent = RecentGames(window=3600.0)
    recent.add("fast", 0.0, 2)
    recent.add("fast", 100.0, 2)
    assert recent.count("fast", 100.0) == 4 and recent.count("slow", 100.0) == 0
    assert recent.may_start("fast", 100.0, 6) and not recent.may_start("fast", 100.0, 5)
    assert recent.may_start("fast", 100.0, None)
    assert recent.count("fast", 3600.0) == 2  # the first pair is an hour old: out of the window
    assert recent.may_start("fast", 3600.0, 4) and recent.count("fast", 3700.0) == 0


def test_among_pairs_that_met_as_often_the_one_with_fewer_recent_games_goes_first() -> None:
    meetings = Meetings()
    free = [Seeker("fast1", 1500, recent=40), Seeker("fast2", 1500, recent=40),
            Seeker("slow1", 1500, recent=2), Seeker("slow2", 1500, recent=4)]
    for seed in range(20):  # whatever the random race, the recent counts decide
        pairs = pair_round(free, [], meetings, random.Random(seed), wait_s=0.0)
        assert pairs[0] == ("slow1", "slow2")


async def test_a_bot_at_its_games_per_hour_limit_is_not_paired(make_arena: Any) -> None:
    arena: Harness = await make_arena(ladder_games_per_hour=4, **FAST)
    alice, bob = await gather(qualify(arena, "alice", 1), qualify(arena, "bob", 2))
    # Two duplicate pairs (four games each) reach the limit; both bots still seek.
    await gather(play_out(alice, random_policy(3), games=4), play_out(bob, random_policy(4), games=4))
    ladder = arena.arena.ladder
    assert ladder.seeking == {"alice", "bob"}
    ladder.pair_now()
    assert not arena.arena.manager.running  # at the limit: no new pair
    table = await standings(arena)
    assert {b: (s["games"], s["recent_games"]) for b, s in table.items()} == {"alice": (4, 4), "bob": (4, 4)}
    # An hour later (the window moved on) they are paired again.
    ladder.recent.window = 0.0
    ladder.pair_now()
    assert len(arena.arena.manager.running) == 1


async def test_standings_are_ranked_by_the_rating_their_interval_belongs_to(make_arena: Any) -> None:
    arena: Harness = await make_arena(**FAST)
    names = ("alice", "bob", "carol")
    clients = await gather(*(qualify(arena, name, i) for i, name in enumerate(names)))
    players = [asyncio.create_task(play_out(c, random_policy(10 + i), games=1000)) for i, c in enumerate(clients)]
    ladder = arena.arena.ladder
    try:
        await wait_until(lambda: ladder.tally.total() >= 8, 60, "the ladder did not play")
    finally:
        for task in players:
            task.cancel()
    table = list((await standings(arena)).values())
    assert [row["rank"] for row in table] == [1, 2, 3]
    assert [row["rating"] for row in table] == sorted((row["rating"] for row in table), reverse=True)
    fits = bradley_terry.fit_tally(ladder.tally.rows(), names, sum(row["elo"] for row in table) / 3)
    for row in table:
        assert row["low"] <= row["rating"] <= row["high"]
        assert row["rating"] == pytest.approx(fits[row["bot"]].rating, abs=0.11)  # the centre's Elo is rounded here
