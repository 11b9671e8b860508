"""The standings' refresh paced by its own cost (``server/ladder/standings.py``): the wait
before a refresh, from the last one's recorded CPU, and a change that comes while a refresh is
held up still reaching the table.

The refresh is held up for real: it reads the stored ratings under the recorder's rating
lock, which the test holds meanwhile. Waiting costs no CPU, so the refresh held up does not
make the next one wait longer.
"""

from __future__ import annotations

from typing import Any

import pytest

from arena_testkit import Harness, wait_until
from server.ladder.standings import STANDINGS_DELAY_S, STANDINGS_PACE, refresh_wait


def test_the_wait_is_the_delay_or_the_pace_times_the_last_refresh() -> None:
    assert refresh_wait(100.0, None, 0.0) == STANDINGS_DELAY_S  # nothing refreshed yet
    # A refresh of 0.5 s of CPU that ended 0.1 s ago: the next starts PACE × 0.5 s after its end.
    assert refresh_wait(100.1, 100.0, 0.5) == pytest.approx(STANDINGS_PACE * 0.5 - 0.1)
    # A quick one: the coalescing delay.
    assert refresh_wait(100.0, 100.0, 0.001) == STANDINGS_DELAY_S
    # A slow one that ended long ago: no more wait than the delay.
    assert refresh_wait(100.0 + STANDINGS_PACE * 2.0 + 1.0, 100.0, 2.0) == STANDINGS_DELAY_S
    # However costly: refreshing takes at most 1 / PACE of a core.
    for cost in (0.1, 1.0, 10.0):
        assert cost / refresh_wait(50.0, 50.0, cost) <= 1.0 / STANDINGS_PACE + 1e-12


async def test_a_change_during_a_held_up_refresh_reaches_the_table(make_arena: Any) -> None:
    arena: Harness = await make_arena()
    ladder = arena.arena.ladder
    standings = ladder.standings
    for name in ("alice", "bob"):
        await arena.create_bot(name)
        ladder.places[name] = "listed"
    await ladder.refresh_standings()
    assert [(s.bot, s.seeking) for s in ladder.table.standings] == [("alice", False), ("bob", False)]
    first_end = standings.last_end
    assert first_end is not None and standings.last_cost > 0.0

    async with arena.arena.manager.recorder.rating_lock:
        ladder.changed()
        # The refresh has begun (its change taken) and waits for the lock.
        await wait_until(lambda: not standings._dirty, 10, "the refresh did not begin")
        ladder.seeking.add("alice")  # comes while the refresh reads the standings
        ladder.changed()
    await wait_until(lambda: [s.seeking for s in ladder.table.standings if s.bot == "alice"] == [True], 10,
                     "the change made during the refresh never reached the table")
    assert standings.refreshes >= 3 and standings.last_end is not None and standings.last_end > first_end
    # The wait before the next refresh follows the last one's recorded CPU (not the time it
    # was held up).
    assert refresh_wait(standings.last_end, standings.last_end, standings.last_cost) == max(
        STANDINGS_DELAY_S, STANDINGS_PACE * standings.last_cost)

