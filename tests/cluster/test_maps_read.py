"""The cluster's maps on Redis read while the cluster moves on, over a real Redis and
PostgreSQL: a node reads them at start and when Redis is back, and what the bus brings while
an answer is on its way is newer than the answer.

- The running games (``mandala:games``, ``RemoteGames.load``): a game that ended meanwhile does
  not come back as running there; a game this node took over meanwhile is not sent back to its
  former host; a game whose host's liveness key has lapsed (Redis restarted empty, a node back
  from a pause) is still known.
- The bots' ``max_games`` (``mandala:capacity``, ``ClusterBots.load``): one changed meanwhile
  is not set back to what the map held.

And a game whose end Redis did not take (its message lost, its entry left in the map) is ended
on the other nodes all the same, and taken out of the map when Redis is back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

import server.cluster.node
from arena_testkit import Harness, LiveStream, wait_until
from cluster_kit import is_now
from conftest import MakeCluster
from protocol.messages import LiveGames
from server.cluster.bots import CAPACITY
from server.cluster.bus import alive_key
from server.cluster.node import ClusterNode
from server.cluster.remote_games import GAMES
from test_cluster_games import bots_on


def cluster_of(node: Harness) -> ClusterNode:
    cluster = node.arena.cluster
    assert cluster is not None
    return cluster


def after_reading(cluster: ClusterNode, key: str, meanwhile: Callable[[], Awaitable[None]]) -> None:
    """``cluster``'s next read of the hash ``key`` is answered, then ``meanwhile`` runs before
    the reader gets the answer."""
    redis = cluster.bus.redis
    hgetall = redis.hgetall

    async def read(name: str) -> Any:
        entries = await hgetall(name)
        if name == key:
            redis.hgetall = hgetall  # type: ignore[method-assign]
            await meanwhile()
        return entries

    redis.hgetall = read  # type: ignore[method-assign,assignment]


def hold_liveness(cluster: ClusterNode) -> asyncio.Event:
    """``cluster`` refreshes its liveness key only once the event returned is set: a pause,
    as far as the others can tell."""
    refresh, let = cluster.bus._refresh, asyncio.Event()

    async def refresh_once_let() -> None:
        await let.wait()
        await refresh()

    cluster.bus._refresh = refresh_once_let  # type: ignore[method-assign]
    return let


async def running_on_live(node: Harness) -> list[str]:
    """The running games ``/live`` on ``node`` lists."""
    live = LiveStream(await node.client.ws_connect("/live"))
    try:
        return [g.game_id for g in (await live.next_of(LiveGames)).running]
    finally:
        await live.close()


async def a_game_heard_of(make_cluster: MakeCluster, host: int) -> tuple[Harness, Harness, str]:
    """Nodes n1 and n2; alice and bob, connected to node ``host`` (0: n1, 1: n2), play a game
    there, which the other node has heard of. Returns n1, n2 and the game's id."""
    nodes = await make_cluster(2)
    await bots_on(nodes, {"alice": host, "bob": host})
    game_id = await nodes[host].start_game(["alice", "bob"])
    other = cluster_of(nodes[1 - host])
    await wait_until(lambda: game_id in other.games, 5, "the other node never heard of the game")
    return nodes[0], nodes[1], game_id


async def test_a_game_that_ends_while_a_node_reads_the_games_map_is_not_taken_there_for_running(
        make_cluster: MakeCluster) -> None:
    n1, n2, game_id = await a_game_heard_of(make_cluster, 0)
    c2 = cluster_of(n2)

    async def game_ends() -> None:
        """The map read still holds the game; n1 ends it (its entry leaves the map as its
        ``game_ended`` goes out), and n2 hears the end (n1 answers ``hear_out`` after all it
        published before) before the read's answer reaches it."""
        n1.arena.manager.running[game_id].abort()
        await wait_until(lambda: is_now(c2.bus.redis.hexists(GAMES, game_id), False), 5, "n1 did not end the game")
        await c2.remote_games.hear_out()
        assert c2.remote_games.summary_of(game_id) is not None

    after_reading(c2, GAMES, game_ends)
    assert await c2.remote_games.load() == []  # as when Redis is back
    assert game_id not in c2.games
    ended = c2.remote_games.summary_of(game_id)
    assert ended is not None and ended.status == "aborted"
    assert await running_on_live(n2) == []


async def test_a_node_reading_the_games_map_while_a_hosts_liveness_key_lapsed_keeps_its_games(
        make_cluster: MakeCluster) -> None:
    """n1's key is gone (a Redis restarted empty, or n1 paused) as n2 reads the map: n1's game is
    known on n2 as it was, and n2's sweep, not the read, decides whether n1 is gone."""
    n1, n2, game_id = await a_game_heard_of(make_cluster, 0)
    c1, c2 = cluster_of(n1), cluster_of(n2)
    let = hold_liveness(c1)
    try:
        await c2.bus.redis.delete(alive_key("n1"))
        assert "n1" not in await c2.bus.nodes()
        await c2.remote_games.load()
        began = c2.games.get(game_id)
        assert began is not None and began.host == "n1"
    finally:
        let.set()
    assert await running_on_live(n2) == [game_id]
    await wait_until(lambda: is_now(c2.bus.nodes(), ["n1", "n2"]), 5, "n1 did not come back")


async def test_a_game_taken_over_while_its_new_host_reads_the_games_map_stays_on_it(
        make_cluster: MakeCluster) -> None:
    """n1 leads and reads the map, which has n2's game at its first epoch; before the answer
    reaches n1, n2 is taken for dead and n1 takes the game over: the old entry must not send
    the game back to n2."""
    n1, n2, game_id = await a_game_heard_of(make_cluster, 1)
    c1, c2 = cluster_of(n1), cluster_of(n2)
    let = hold_liveness(c2)

    async def taken_over() -> None:
        await c1.bus.redis.delete(alive_key("n2"))
        await wait_until(lambda: game_id in n1.arena.manager.running, 10, "n1 did not take the game over")

    after_reading(c1, GAMES, taken_over)
    try:
        await c1.remote_games.load()
        assert game_id not in c1.games and c1.remote_games.host_of(game_id) is None
        assert n1.arena.manager.running[game_id].epoch == 1
    finally:
        let.set()
    await wait_until(lambda: is_now(c1.bus.nodes(), ["n1", "n2"]), 5, "n2 did not come back")


async def test_a_bots_max_games_changed_while_a_node_reads_the_capacity_map_is_not_set_back(
        make_cluster: MakeCluster) -> None:
    """alice connects to n2 again with room for 3 games at a time while n1 (the ladder's leader,
    which pairs by it) reads the map that still says 1."""
    n1, n2 = await make_cluster(2)
    clients = await bots_on([n1, n2], {"alice": 1})
    c1 = cluster_of(n1)
    await wait_until(lambda: c1.bots.capacity.get("alice") == 1, 5, "n1 never heard alice's max_games")

    async def reconnects() -> None:
        clients["alice"] = await n2.connect(n1.tokens["alice"], 3)
        await wait_until(lambda: c1.bots.capacity.get("alice") == 3, 5, "n1 did not hear alice's new max_games")

    after_reading(c1, CAPACITY, reconnects)
    await c1.bots.load()
    assert c1.bots.capacity["alice"] == 3
    assert await c1.bus.redis.hget(CAPACITY, "alice") == b"3"


async def test_a_game_whose_end_redis_did_not_take_is_ended_on_the_other_nodes_all_the_same(
        make_cluster: MakeCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """n1's game ends, but the message that says so (and takes it out of ``mandala:games``) is
    lost, as with a batch Redis fails on. n2 asks n1 now and then which games it runs, finds
    this one gone, and ends it as storage has it; n1 takes it out of the map when Redis is back."""
    monkeypatch.setattr(server.cluster.node, "HEAR_OUT_S", 0.5)
    n1, n2, game_id = await a_game_heard_of(make_cluster, 0)
    c1, c2 = cluster_of(n1), cluster_of(n2)
    game_ended = c1.remote_games.game_ended
    monkeypatch.setattr(c1.remote_games, "game_ended",
                        lambda room: None if room.id == game_id else game_ended(room))  # its batch lost
    n1.arena.manager.running[game_id].abort()
    await n1.arena.manager.flush()
    assert game_id in c2.games and n2.arena.manager.running_count("alice") == 1
    await wait_until(lambda: game_id not in c2.games, 5, "n2 never found the game over")
    ended = c2.remote_games.summary_of(game_id)
    assert ended is not None and ended.status == "aborted" and n2.arena.manager.running_count("alice") == 0
    assert await running_on_live(n2) == []
    assert await c1.bus.redis.hexists(GAMES, game_id)
    await c1._rejoin()  # as when Redis is back
    await c1.remote_games.published()
    assert not await c1.bus.redis.hexists(GAMES, game_id)
