"""Where the ladder switches from everyone-meets-everyone (``matchmaking.pair_round``) to the
large ladder's policy (``large.py``), on a real server: ``pairing_large_from`` active bots."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from test_ladder import AUTH

from arena_testkit import Harness, WsClient, gather, wait_until
from protocol.messages import LadderStatus


async def seeking_bots(arena: Harness, count: int, max_games: Sequence[int] = ()) -> list[WsClient]:
    """``count`` listed bots, bot00, bot01, …, connected and seeking on a paused ladder, each
    playing ``max_games[i]`` games at a time (one if not given); their connections."""
    assert (await arena.client.post("/api/ladder/pause", headers=AUTH)).status == 200
    ladder = arena.arena.ladder

    async def one(i: int) -> WsClient:
        name = f"bot{i:02d}"
        await arena.create_bot(name)
        await arena.arena.storage.set_ladder(name, "listed")
        ladder.places[name] = "listed"
        client = await arena.connect(arena.tokens[name], max_games[i] if i < len(max_games) else 1)
        await client.send({"type": "seek"})
        status = await client.until(LadderStatus)
        assert (status.state, status.seeking) == ("listed", True)
        return client

    return await gather(*(one(i) for i in range(count)))


@pytest.mark.parametrize("count, large", [(15, False), (16, True)])
async def test_the_large_policy_pairs_from_pairing_large_from_active_bots(make_arena: Any, count: int,
                                                                          large: bool) -> None:
    arena: Harness = await make_arena(pairing_large_from=16, pairing_interval_s=0.05)
    await seeking_bots(arena, count)
    ladder = arena.arena.ladder
    assert (await arena.client.post("/api/ladder/resume", headers=AUTH)).status == 200
    await wait_until(lambda: len(arena.arena.manager.running) == count // 2, 10, "the bots were not paired")
    assert {room.kind for room in arena.arena.manager.running.values()} == {"ladder"}
    # The large policy tells its field of every pair it starts; everyone-meets-everyone does not.
    assert int(ladder.field.pairs.sum()) == (2 * (count // 2) if large else 0)
    assert sum(ladder.meetings.total(f"bot{i:02d}") for i in range(count)) == 4 * (count // 2)
