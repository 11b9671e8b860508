"""A node that stops cleanly (``ClusterNode.leave``) releases its games, stored as running on it,
for another node to take over once it is gone. When that node leads, it takes over the games of
nodes that are gone and those stored as its own that it does not run: it must not take back,
while it goes, the games it has just released."""

from __future__ import annotations

import asyncio

from arena_testkit import Decision, wait_until
from conftest import MakeCluster
from server.cluster.node import ClusterNode
from test_cluster_games import bots_on


async def test_the_leader_that_stops_does_not_take_back_the_games_it_released(make_cluster: MakeCluster) -> None:
    n1, n2 = await make_cluster(2)
    cluster = n1.arena.cluster
    assert isinstance(cluster, ClusterNode)
    await wait_until(lambda: cluster.leading, 10, "n1 never took the pairing lease")
    bots = await bots_on([n1, n2], {"alice": 0, "bob": 1})
    game_id = await n1.start_game(["alice", "bob"], first_player=0)
    await bots["alice"].until(Decision)

    async def takes_over() -> bool:  # Redis is old enough for a missing key to mean a dead node
        return await cluster.bus.data_age_s() >= cluster.bus.alive_s * 1.5

    await wait_until(takes_over, 10, "Redis never got old enough to take games over")
    cluster.leave()  # as the server's shutdown does, before its connections close
    assert game_id not in n1.arena.manager.running
    await cluster.takeover.sweep(await cluster._sweep())  # a tick while the node goes
    await asyncio.gather(*cluster.takeover._tasks)
    assert game_id not in n1.arena.manager.running and not cluster.takeover.taking
    row = await n1.arena.storage.get_game(game_id)
    assert row is not None and (row.status, row.host, row.epoch) == ("running", "n1", 0)
