"""A bot that flaps (seeks and unseeks, or seeks and leaves, a thousand times a minute) is held
to ``seeks_per_minute``, per bot whatever its connection, over a real socket: each message over
the limit gets a typed ``rate_limited`` error with ``retry_after`` and reaches nothing."""

from __future__ import annotations

from typing import Any

from test_ladder import AUTH

from arena_testkit import Harness, wait_until
from protocol.messages import Error, LadderStatus

LIMIT = 5
LOUD = {"seeks_per_minute": LIMIT, "messages_per_second": 100_000.0, "burst": 100_000}
"""The connection's own message bucket out of the way: only the seek limit refuses here."""


async def test_a_bot_that_seeks_a_thousand_times_a_minute_is_refused_and_changes_nothing(make_arena: Any) -> None:
    arena: Harness = await make_arena(**LOUD)
    assert (await arena.client.post("/api/ladder/pause", headers=AUTH)).status == 200  # no game starts
    ladder = arena.arena.ladder
    heard: list[str] = []
    seek, unseek = ladder.seek, ladder.unseek
    ladder.seek = lambda bot: (heard.append("seek"), seek(bot))[1]  # type: ignore[method-assign]
    ladder.unseek = lambda bot: (heard.append("unseek"), unseek(bot))[1]  # type: ignore[method-assign]

    client = await arena.bot("flapper")
    for i in range(1000):
        await client.send({"type": "seek" if i % 2 == 0 else "unseek"})
    replies = [await client.recv() for _ in range(1000)]
    statuses = [r for r in replies if isinstance(r, LadderStatus)]
    errors = [r for r in replies if isinstance(r, Error)]
    assert [s.seeking for s in statuses] == [True, False, True, False, True]
    assert replies[:LIMIT] == statuses and len(errors) == 1000 - LIMIT
    assert {(e.code, e.limit) for e in errors} == {("rate_limited", "seeks")}
    assert all(e.retry_after is not None and 0.0 < e.retry_after <= 60.0 for e in errors)
    assert heard == ["seek", "unseek", "seek", "unseek", "seek"]  # the refused ones reached nothing
    assert ladder.seeking == {"flapper"}  # the last accepted message was a seek; the refused unseeks changed nothing

    # Leaving and coming back does not start the count again.
    await client.close()
    await wait_until(lambda: "flapper" not in ladder.seeking, 10, "leaving did not end the seek")
    client = await arena.connect(arena.tokens["flapper"])
    await client.send({"type": "seek"})
    err = await client.error()
    assert (err.code, err.limit) == ("rate_limited", "seeks") and "flapper" not in ladder.seeking
    assert len(heard) == LIMIT

    # Once the minute has passed (here: the window made empty), seeking works again.
    ladder.seek_limit.window = 0.0
    await client.send({"type": "seek"})
    status = await client.expect(LadderStatus)
    assert status.seeking and ladder.seeking == {"flapper"}


async def test_the_limit_is_each_bots_own(make_arena: Any) -> None:
    arena: Harness = await make_arena(**LOUD)
    assert (await arena.client.post("/api/ladder/pause", headers=AUTH)).status == 200
    flapper, calm = await arena.bot("flapper"), await arena.bot("calm")
    for i in range(LIMIT + 1):
        await flapper.send({"type": "seek" if i % 2 == 0 else "unseek"})
    assert isinstance([await flapper.recv() for _ in range(LIMIT + 1)][-1], Error)
    await calm.send({"type": "seek"})
    assert (await calm.expect(LadderStatus)).seeking
    assert arena.arena.ladder.seeking == {"calm", "flapper"}
