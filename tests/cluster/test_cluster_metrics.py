"""``GET /metrics`` on each node of a cluster, over a real Redis and PostgreSQL: one node says it
leads the ladder and every node names it, the bus is up, and the games of a challenge across
nodes are counted once, by the node that hosts them."""

from __future__ import annotations

from arena_testkit import Harness, gather, play_out, random_policy, wait_until
from conftest import MakeCluster
from protocol.messages import Challenged, GameOver, GameStart, MoveAccepted
from test_cluster_games import bots_on
from test_metrics import Samples, scrape, value


async def total(nodes: list[Harness], name: str, **labels: str) -> float:
    return sum([value((await scrape(n))[0], name, **labels) for n in nodes])


async def test_each_node_tells_its_part_and_who_leads(make_cluster: MakeCluster) -> None:
    nodes = await make_cluster(2, metrics_max_age_s=0)
    bots = await bots_on(nodes, {"ann": 0, "bob": 1})
    scraped: list[Samples] = [(await scrape(n))[0] for n in nodes]
    assert [value(s, "mandala_ladder_leading") for s in scraped] == [1.0, 0.0]
    assert [value(s, "mandala_cluster_node_info", node=f"n{i + 1}", leader="n1") for i, s in enumerate(scraped)] == [
        1.0, 1.0]
    assert [value(s, "mandala_cluster_redis_up") for s in scraped] == [1.0, 1.0]
    assert [value(s, "mandala_bots_connected") for s in scraped] == [1.0, 1.0]
    assert all(("mandala_cluster_bus_backlog", ()) in s for s in scraped)

    await bots["ann"].send({"type": "challenge", "opponent": "bob"})
    challenged = await bots["bob"].until(Challenged)
    await bots["bob"].send({"type": "accept", "challenge_id": challenged.challenge_id})
    start = await bots["ann"].until(GameStart)
    await gather(play_out(bots["ann"], random_policy(1)), play_out(bots["bob"], random_policy(2)))
    hosts = [n for n in nodes if start.game_id in n.arena.manager.finished]
    assert len(hosts) == 1
    frames = bots["ann"].frames + bots["bob"].frames
    assert await total(nodes, "mandala_games_started_total", kind="challenge") == 1.0
    over = next(f for f in frames if isinstance(f, GameOver))
    assert await total(nodes, "mandala_games_finished_total", kind="challenge", reason=over.result.end_reason) == 1.0
    host = (await scrape(hosts[0]))[0]
    assert value(host, "mandala_move_accepted_seconds_count") == sum(isinstance(f, MoveAccepted) for f in frames)
    await wait_until(lambda: _backlog(nodes), 5, "a node's bus kept a backlog")


async def _backlog(nodes: list[Harness]) -> bool:
    return await total(nodes, "mandala_cluster_bus_backlog") == 0.0
