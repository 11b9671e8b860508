"""One ladder for the whole cluster, over a real Redis and PostgreSQL: bots of different speeds
connected to different nodes qualify and meet each other, each game hosted by the node of one
of its seats (never by the leader when no seat is there), every node answers the standings
alike and they equal an Elo replay of the stored games, and the organizer's controls work from
any node."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp

from arena_testkit import (
    ADMIN,
    Harness,
    Seen,
    assert_ratings_replay,
    gather,
    ladder_bot,
    play_out,
    random_policy,
    stored_games,
    wait_until,
)
from conftest import MakeCluster
from server.storage.postgres import PostgresStorage
from test_cluster_games import bots_on

BOTS = {"alpha": 0, "bravo": 1, "charlie": 2, "delta": 1}
THINK = {"alpha": 0.0, "bravo": 0.02, "charlie": 0.0, "delta": 0.005}


async def ladder(node: Harness) -> dict[str, Any]:
    return await node.get_json("/api/ladder")


async def test_bots_on_three_nodes_share_one_ladder(make_cluster: MakeCluster, pg_url: str, pg_schema: str) -> None:
    nodes = await make_cluster(3, decision_ms=2000, pairing_wait_s=0.5)
    leader = nodes[0].arena.cluster
    assert leader is not None
    await wait_until(lambda: leader.leading, 10, "n1 never took the pairing lease")
    await wait_until(lambda: all(n.arena.cluster and n.arena.cluster.leader == "n1" for n in nodes), 5,
                     "not every node learned who leads")
    tokens = {name: await nodes[0].create_bot(name) for name in BOTS}
    seen = Seen()
    async with aiohttp.ClientSession() as http:
        tasks = [
            asyncio.create_task(ladder_bot(http, str(nodes[i].client.make_url("")).rstrip("/"), tokens[name], seed,
                                           seen, think=THINK[name]))
            for seed, (name, i) in enumerate(BOTS.items())
        ]

        async def everyone_met_everyone() -> bool:
            table = (await ladder(nodes[2]))["standings"]
            return len(table) == 4 and all(s["opponents"] == 3 for s in table)

        try:
            await wait_until(everyone_met_everyone, 60, "the bots did not all meet each other", every=0.2)
            # The organizer acts from a node that does not lead: the leader carries it out.
            headers = {"Authorization": f"Bearer {ADMIN}"}
            resp = await nodes[2].client.delete("/api/ladder/bots/delta", headers=headers)
            assert resp.status == 200, await resp.text()
            assert await resp.json() == {"bot": "delta", "state": "removed"}
            resp = await nodes[1].client.delete("/api/ladder/bots/delta", headers=headers)
            assert resp.status == 409 and (await resp.json())["error"]["code"] == "already_removed"
            assert "delta" not in [s["bot"] for s in (await ladder(nodes[0]))["standings"]]
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
    assert not seen.errors, seen.errors
    # Once the last games are over and stored, every node reads the same standings,
    # and they equal a replay of the stored games.
    await wait_until(lambda: not any(n.arena.manager.running for n in nodes), 15, "the last ladder games did not end")
    for n in nodes:
        await n.arena.manager.flush()
    await nodes[0].arena.ladder.refresh_standings()
    reference = await ladder(nodes[0])

    async def all_alike() -> bool:
        return all([await ladder(n) == reference for n in nodes[1:]])

    await wait_until(all_alike, 5, "the nodes' standings differ")
    assert {s["bot"] for s in reference["standings"]} == {"alpha", "bravo", "charlie"}
    store = PostgresStorage(pg_url, schema=pg_schema, max_size=2)
    await store.open()
    try:
        state = await assert_ratings_replay(store, list(BOTS))
        games = list((await stored_games(store)).values())
    finally:
        await store.close()
    # Every game was hosted by the node of one of its seats (the house bot has none: a
    # qualification game runs on its bot's node), so the leader n1 hosted only games of alpha;
    # bravo and delta, both on n2, met there.
    node_of = {name: f"n{i + 1}" for name, i in BOTS.items()}
    assert {g.kind for g in games} == {"qualification", "ladder"}
    for g in games:
        assert g.host in {node_of[p] for p in g.players if p in node_of}, (g.game_id, g.players, g.host)
    assert {g.host for g in games} == {"n1", "n2", "n3"}
    assert all(g.host == "n2" for g in games if set(g.players) == {"bravo", "delta"})
    for s in reference["standings"]:
        assert (s["elo"], s["games"]) == (round(state[s["bot"]][0], 1), state[s["bot"]][1])
        # The leader's totals, kept as it hears each rated game stored on whichever node
        # hosted it, count every stored rated game once.
        assert s["wins"] + s["draws"] + s["losses"] == s["games"], s


async def test_a_control_sent_to_a_node_that_does_not_lead_is_refused_not_carried_out(make_cluster: MakeCluster) -> None:
    """A node's word of the leader can be stale (a lease lost and taken, not yet heard of): here
    n1 believes n2 leads, which holds no lease. n2 must not carry out the organizer's control n1
    forwards, as the leader's memory would never see what it stored: the organizer is told to
    try again."""
    n1, n2 = await make_cluster(2)
    c1 = n1.arena.cluster
    assert c1 is not None
    await wait_until(lambda: c1.leading, 10, "n1 never led")
    c1.leadership.leader = "n2"  # stale
    answer = await c1.leadership.call_leader("pause", None)
    assert (answer.status, answer.body["error"]) == (503, "cluster_unavailable")
    assert await n2.arena.storage.get_setting("paused") != "1" and not n2.arena.ladder.paused


async def test_a_leader_that_takes_the_lease_anew_hears_every_nodes_seeks_again(make_cluster: MakeCluster) -> None:
    """A leader that lost the pairing lease and took it again (a Redis outage does that) leads a
    ladder that knows no seeker; its ``leader_is`` names a new term, so the other nodes send
    their bots' seeks again. Before, they heard the same leader and sent nothing, and their
    bots stayed connected and seeking without ever being paired."""
    n1, n2 = await make_cluster(2)
    c1, c2 = n1.arena.cluster, n2.arena.cluster
    assert c1 is not None and c2 is not None
    await wait_until(lambda: c1.leading and c2.leader == "n1", 10, "n1 never led")
    resp = await n1.client.post("/api/ladder/pause", headers={"Authorization": f"Bearer {ADMIN}"})
    assert resp.status == 200  # paused: bob's seek stands and starts no qualification game
    bob = (await bots_on([n1, n2], {"bob": 1}))["bob"]
    await bob.send({"type": "seek"})
    await wait_until(lambda: "bob" in n1.arena.ladder.seeking, 5, "the leader never heard bob seek")
    term = c2.leadership.leader_term
    c1.leadership._lost()  # the lease lost and taken again, as across a Redis outage
    c1.leadership._gained()
    await wait_until(lambda: n1.arena.ladder.leading and c2.leadership.leader_term != term, 5,
                     "n1 did not lead again, or n2 did not hear its new term")
    await wait_until(lambda: "bob" in n1.arena.ladder.seeking, 5, "bob's seek was not sent to the new lead")


async def test_a_game_whose_host_is_gone_is_read_without_asking_it(make_cluster: MakeCluster) -> None:
    """A game last hosted by a node that is no longer alive is answered from what this node
    heard of it, at once: a dead host answers nobody, and asking it cost each read of the game
    the whole wait for an answer (2 s) while the node stayed down."""
    n1, n2 = await make_cluster(2)
    bots = await bots_on([n1, n2], {"alice": 1, "bob": 1})
    game_id = await n2.start_game(["alice", "bob"])
    await gather(play_out(bots["alice"], random_policy(1)), play_out(bots["bob"], random_policy(2)))
    c1 = n1.arena.cluster
    assert c1 is not None
    remote = c1.remote_games
    await wait_until(lambda: remote.host_of(game_id) == "n2", 5, "n1 never heard of the game")
    await n2.client.close()  # n2 stops: the next sweep finds it gone
    await wait_until(lambda: remote._alive is not None and "n2" not in remote._alive, 10, "n1 never found n2 gone")
    asked: list[str] = []
    ask = remote._ask

    async def ask_noted(node: str | None, gid: str, view: bool = False) -> Any:
        asked.append(gid)
        return await ask(node, gid, view)

    remote._ask = ask_noted  # type: ignore[method-assign]
    body = await n1.get_json(f"/api/games/{game_id}")
    assert body["game_id"] == game_id and body["status"] == "finished" and asked == []
