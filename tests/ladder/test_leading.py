"""A node taking the lead of the ladder (``Ladder.lead``, as a cluster's node does when it wins
the pairing lease) reads the ladder's state from storage while bots go on seeking: a seek heard
meanwhile is judged on the stored places, not on the stale ones it knew (a listed bot does not
qualify again, a removed one does not seek); and a lead lost and won again while it loads runs
one pairing loop, not two. The tournaments' director (``Director.lead``) likewise runs one loop."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from test_ladder import FAST

from arena_testkit import Harness, WsClient, wait_until
from protocol.messages import LadderStatus


async def last_status(client: WsClient) -> LadderStatus:
    """The last ``ladder_status`` the bot was sent before now (a ping's pong comes after it)."""
    await client.ping()
    return [f for f in client.frames if isinstance(f, LadderStatus)][-1]


async def test_seeks_heard_while_a_new_leader_reads_the_places_are_judged_on_the_stored_ones(
        make_arena: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    arena: Harness = await make_arena(**FAST)
    ladder, storage, manager = arena.arena.ladder, arena.arena.storage, arena.arena.manager
    clients = {name: await arena.bot(name) for name in ("lisa", "rita", "nina")}
    # Another node led meanwhile: it listed lisa and removed rita; this node still knows both as new.
    await storage.set_ladder("lisa", "listed")
    await storage.set_ladder("rita", "removed")
    assert ladder.place("lisa") == ladder.place("rita") == "new"
    ladder.follow()
    list_bots = storage.list_bots

    async def seeks_arrive_meanwhile() -> Any:
        bots = await list_bots()
        for name in clients:  # as the other nodes forward them on hearing this node leads
            ladder.seek(name)
        return bots

    monkeypatch.setattr(storage, "list_bots", seeks_arrive_meanwhile)
    await ladder.lead()
    assert ladder.seeking == {"lisa", "nina"} and set(ladder.qualification.bots) == {"nina"}
    lisa, rita = await last_status(clients["lisa"]), await last_status(clients["rita"])
    assert (lisa.state, lisa.seeking) == ("listed", True)
    assert (rita.state, rita.seeking) == ("removed", False)
    ladder.pair_now()
    assert [room.kind for room in manager.games_of("nina")] == ["qualification"]
    assert manager.games_of("lisa") == [] and manager.games_of("rita") == []


async def test_a_lead_lost_and_won_again_while_loading_runs_one_pairing_loop(
        make_arena: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    arena: Harness = await make_arena(**FAST)
    ladder, storage = arena.arena.ladder, arena.arena.storage
    list_bots, reads, go_on = storage.list_bots, [], asyncio.Event()

    async def first_read_held() -> Any:
        reads.append(1)
        if len(reads) == 1:
            await go_on.wait()
        return await list_bots()

    monkeypatch.setattr(storage, "list_bots", first_read_held)
    first = asyncio.create_task(ladder.lead())
    await wait_until(lambda: reads, 5, "the lead did not read the bots")
    ladder.follow()  # the lease lost: another node leads
    await ladder.lead()  # and won again, while the first lead is still reading
    go_on.set()
    await first
    loops = [t for t in asyncio.all_tasks() if t.get_name() == "ladder-pairing" and not t.done()]
    assert ladder.leading and loops == [ladder._loop_task]


async def test_a_directors_lead_lost_and_won_again_while_loading_runs_one_loop(
        make_arena: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    arena: Harness = await make_arena(**FAST)
    director, storage = arena.arena.tournaments, arena.arena.storage
    list_tournaments, reads, go_on = storage.list_tournaments, [], asyncio.Event()

    async def first_read_held(*args: Any) -> Any:
        reads.append(1)
        if len(reads) == 1:
            await go_on.wait()
        return await list_tournaments(*args)

    monkeypatch.setattr(storage, "list_tournaments", first_read_held)
    first = asyncio.create_task(director.lead())
    await wait_until(lambda: reads, 5, "the lead did not read the tournaments")
    director.follow()
    await director.lead()
    go_on.set()
    await first
    loops = [t for t in asyncio.all_tasks() if t.get_name() == "tournaments" and not t.done()]
    assert director.leading and loops == [director._task]
