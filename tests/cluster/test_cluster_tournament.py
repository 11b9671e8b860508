"""A tournament in a cluster: the organizer creates and starts it on a node that does not lead,
bots connected to different nodes play it, the leader runs it and each of its games is hosted
by the node of one of its seats, and every node answers its progress and pushes it to
``/live``."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import aiohttp
import pytest

from arena_testkit import ADMIN, Seen, gather, ladder_bot, play_out, random_policy, wait_until
from conftest import MakeCluster
from protocol.messages import GameStart
from server.storage.postgres import PostgresStorage

AUTH = {"Authorization": f"Bearer {ADMIN}"}
BOTS = {"alpha": 0, "bravo": 1, "charlie": 2}


async def test_a_tournament_created_on_a_follower_runs_on_the_nodes_of_its_bots(
        make_cluster: MakeCluster, pg_url: str, pg_schema: str) -> None:
    nodes = await make_cluster(3)
    leader = nodes[0].arena.cluster
    assert leader is not None
    await wait_until(lambda: leader.leading, 10, "n1 never took the pairing lease")
    tokens = {name: await nodes[0].create_bot(name) for name in BOTS}
    seen = Seen()
    async with aiohttp.ClientSession() as http:
        live = await http.ws_connect(str(nodes[2].client.make_url("/live")))
        tasks = [asyncio.create_task(ladder_bot(http, str(nodes[i].client.make_url("")).rstrip("/"), tokens[name], i,
                                                seen, seek=False))
                 for name, i in BOTS.items()]
        try:
            body = {"name": "cup", "format": "round_robin", "participants": list(BOTS), "games_per_pairing": 2}
            resp = await nodes[1].client.post("/api/tournaments", json=body, headers=AUTH)
            assert resp.status == 201, await resp.text()
            tid = (await resp.json())["tournament_id"]
            resp = await nodes[2].client.post(f"/api/tournaments/{tid}/start", headers=AUTH)
            assert resp.status == 200 and (await resp.json())["state"] == "running"

            async def done() -> bool:
                return (await nodes[2].get_json(f"/api/tournaments/{tid}"))["state"] == "finished"

            await wait_until(done, 60, "the tournament did not finish", every=0.2)
            # The viewer of node 3 saw the tournament's progress, pushed by the leader.
            played = set()
            while 6 not in played:
                for msg in json.loads((await live.receive(timeout=10)).data)["messages"]:
                    if msg["type"] == "tournament" and msg["tournament"]["tournament_id"] == tid:
                        played.add(msg["tournament"]["progress"]["played"])
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await live.close()
    tournament_games = [g for g, start in seen.started.items() if start.tournament_id == tid]
    assert len(tournament_games) == 6
    store = PostgresStorage(pg_url, schema=pg_schema, max_size=2)
    await store.open()
    try:
        rows = await store.tournament_games(tid)
    finally:
        await store.close()
    assert sorted(g.game_id for g in rows) == sorted(tournament_games)
    # Each game ran on the node of one of its seats: bravo's and charlie's (n2, n3) never on
    # the leader n1, which hosted only games of alpha, connected to it.
    node_of = {name: f"n{i + 1}" for name, i in BOTS.items()}
    for g in rows:
        assert g.status == "finished" and g.host in {node_of[p] for p in g.players}, (g.players, g.host)
    assert {g.host for g in rows if set(g.players) == {"bravo", "charlie"}} <= {"n2", "n3"}
    for node in nodes:
        results = await node.get_json(f"/api/tournaments/{tid}/results")
        assert results["played"] == 6 and sum(r["games"] for r in results["ranking"]) == 12



async def test_a_game_elsewhere_that_ends_while_a_new_leaders_director_looks_it_up_is_counted_once(
        make_cluster: MakeCluster, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """n1 leads and stops; n2 leads next, and its director finds the tournament's game running on
    n3, where its bots are. It reads from storage how that game stands; the game ends, and n2
    hears it, before the answer comes. The director's step must not fail on the slot it no longer
    waits for (nor free a slot that runs another game by then)."""
    n1, n2, n3 = await make_cluster(3)
    c1, c2 = n1.arena.cluster, n2.arena.cluster
    assert c1 is not None and c2 is not None
    await wait_until(lambda: c1.leading, 10, "n1 never took the pairing lease")
    tokens = {name: await n1.create_bot(name) for name in ("bravo", "charlie")}
    director, storage = n2.arena.tournaments, n2.arena.storage
    get_game, held = storage.get_game, []

    async def held_until_its_end_is_heard(game_id: str) -> Any:
        for run in director.runs.values():
            for slot, elsewhere in list(run.elsewhere.items()):
                if elsewhere == game_id:
                    held.append(game_id)
                    await wait_until(lambda: run.elsewhere.get(slot) != game_id, 30,  # noqa: B023
                                     "the game's end was not heard")
        return await get_game(game_id)

    monkeypatch.setattr(storage, "get_game", held_until_its_end_is_heard)
    # The bots, on n3, do not move until n2 leads: the game runs on meanwhile (30 s a decision).
    bravo, charlie = [await n3.connect(token) for token in tokens.values()]
    body = {"name": "cup", "format": "round_robin", "participants": list(tokens), "games_per_pairing": 2,
            "decision_ms": 30_000}
    resp = await n2.client.post("/api/tournaments", json=body, headers=AUTH)
    assert resp.status == 201, await resp.text()
    tid = (await resp.json())["tournament_id"]
    resp = await n2.client.post(f"/api/tournaments/{tid}/start", headers=AUTH)
    assert resp.status == 200
    await bravo.until(GameStart)
    # n3 hosts the game and must not lead: it stops competing for the lease, so that n2, not
    # whichever of the two asks first, leads once n1 is gone.
    n3_lease = [t for t in asyncio.all_tasks() if t.get_name() == "lease-n3"]
    assert len(n3_lease) == 1
    n3_lease[0].cancel()
    await n1.client.close()  # n1 stops: n2 leads next
    await wait_until(lambda: any(run.elsewhere for run in director.runs.values()), 15,
                     "n2 did not take the tournament over with its game on n3")
    director.wake(stored=True)  # the director reads the stored states, and the game's
    await gather(play_out(bravo, random_policy(1), games=2), play_out(charlie, random_policy(2), games=2), timeout=60)

    async def done() -> bool:
        return (await n2.get_json(f"/api/tournaments/{tid}"))["state"] == "finished"

    await wait_until(done, 30, "the tournament did not finish", every=0.2)
    assert held
    assert [r.getMessage() for r in caplog.records if r.name.startswith("server.tournaments")
            and r.levelno >= logging.ERROR] == []
    results = await n3.get_json(f"/api/tournaments/{tid}/results")
    assert results["played"] == 2 and sum(r["games"] for r in results["ranking"]) == 4


async def test_a_game_that_ends_while_a_node_reads_the_tournament_is_counted_once(
        make_cluster: MakeCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """A node of a cluster reads a tournament's view from storage (its games run on the nodes
    of their bots). The stored games are read; before the answer comes, the running game ends
    (stored, then announced over). The view counts that game, as running or as played, never
    as neither."""
    n1, n2 = await make_cluster(2)
    c1 = n1.arena.cluster
    assert c1 is not None
    await wait_until(lambda: c1.leading, 10, "n1 never took the pairing lease")
    tokens = {name: await n1.create_bot(name) for name in ("ann", "ben")}
    ann, _ben = [await n2.connect(token) for token in tokens.values()]  # they never move
    body = {"name": "cup", "format": "round_robin", "participants": list(tokens), "decision_ms": 30_000}
    resp = await n1.client.post("/api/tournaments", json=body, headers=AUTH)
    assert resp.status == 201, await resp.text()
    tid = (await resp.json())["tournament_id"]
    assert (await n1.client.post(f"/api/tournaments/{tid}/start", headers=AUTH)).status == 200
    start = await ann.until(GameStart)
    manager, storage = n2.arena.manager, n2.arena.storage
    tournament_games = storage.tournament_games

    async def it_ends_meanwhile(*args: Any, **kwargs: Any) -> Any:
        monkeypatch.setattr(storage, "tournament_games", tournament_games)
        rows = await tournament_games(*args, **kwargs)
        manager.running[start.game_id].resign(0)
        await manager.flush()
        return rows

    monkeypatch.setattr(storage, "tournament_games", it_ends_meanwhile)
    view = await n2.get_json(f"/api/tournaments/{tid}")
    assert view["progress"]["played"] + view["progress"]["running"] == 1
    assert start.game_id not in manager.running
    view = await n2.get_json(f"/api/tournaments/{tid}")
    assert view["progress"]["played"] == 1  # and the pairing's second game may run by now


async def test_a_node_that_loses_the_lease_while_loading_the_ladder_does_not_run_the_tournaments(
        make_cluster: MakeCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    n1, _n2 = await make_cluster(2)
    cluster = n1.arena.cluster
    assert cluster is not None
    await wait_until(lambda: cluster.leading, 10, "n1 never took the pairing lease")
    ladder, director = n1.arena.ladder, n1.arena.tournaments
    lead, lease_task = ladder.lead, cluster._tasks[0]

    async def lease_lost_meanwhile() -> None:
        loading = asyncio.create_task(lead())
        await asyncio.sleep(0)  # the load has begun: it waits for storage
        lease_task.cancel()  # the lease stops: given up, as when Redis does not answer in time
        await asyncio.gather(lease_task, return_exceptions=True)
        await loading

    monkeypatch.setattr(ladder, "lead", lease_lost_meanwhile)
    await cluster.leadership._lead()
    assert not cluster.leadership.lease.held
    assert not ladder.leading and not director.leading and director._task is None
