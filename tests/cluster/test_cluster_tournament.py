"""A tournament in a cluster: the organizer creates and starts it on a node that does not lead,
bots connected to different nodes play it, the leader runs it and each of its games is hosted
by the node of one of its seats, and every node answers its progress and pushes it to
``/live``."""

from __future__ import annotations

import asyncio
import json

import aiohttp

from arena_testkit import ADMIN, Seen, ladder_bot, wait_until
from conftest import MakeCluster
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
