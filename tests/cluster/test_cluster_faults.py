"""Redis lost while nodes run (a Redis of this test's own, stopped and started again): a game
whose seats one node holds plays on; a game across nodes ends as aborted for the seat on its
host, and the seat on the other node is closed with 4010; nothing new starts across nodes
(``cluster_unavailable``); when Redis is back the nodes find each other by themselves.
Also: a node taken for dead that comes back while another sweeps keeps its bots known there, a
bot that leaves while its node attaches its bots again is not left attached, nor one whose
goodbye failed while Redis was lost, and a message on Redis that does not decode is dropped and
the node plays on."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError

from arena_testkit import Closed, Decision, GameOver, free_port, gather, play_out, random_policy, wait_until
from conftest import MakeCluster
from protocol.messages import CLOSE_GAME_HOST_LOST, Challenged, ChallengeSent, Error, GameStart
from server.cluster.bus import alive_key, node_channel
from server.cluster.presence import WHERE
from test_cluster_games import bots_on, check_record, connected_everywhere

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "test-redis.sh"


class OwnRedis:
    """A Redis server for one test, which the test may stop and start."""

    def __init__(self, tmp_path: Path) -> None:
        self.env = {**os.environ, "MANDALA_REDIS_DIR": str(tmp_path / "redis"), "MANDALA_REDIS_PORT": str(free_port())}

    def __call__(self, action: str) -> str:
        done = subprocess.run([str(SCRIPT), action], env=self.env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()


async def test_redis_lost_and_back(make_cluster: MakeCluster, tmp_path: Path) -> None:
    redis = OwnRedis(tmp_path)
    url = redis("start")
    try:
        n1, n2 = await make_cluster(2, redis=url)
        bots = await bots_on([n1, n2], {"alice": 0, "bob": 1, "carol": 0, "dave": 0})
        across = await n1.start_game(["alice", "bob"], first_player=0)
        here = await n1.start_game(["carol", "dave"], first_player=0)
        await bots["alice"].until(Decision)
        await bots["bob"].until(GameStart)
        redis("stop")
        # The seat on the host hears the game aborted; the seat elsewhere is closed with 4010.
        over = await bots["alice"].until(GameOver)
        assert over.game_id == across and over.result.end_reason == "aborted"
        try:
            while True:
                await bots["bob"].recv()
        except Closed as e:
            assert e.code == CLOSE_GAME_HOST_LOST
        row = await n1.get_json(f"/api/games/{across}")
        assert row["status"] == "aborted"
        # Nothing new starts across nodes meanwhile.
        await bots["alice"].send({"type": "challenge", "opponent": "bob"})
        assert (await bots["alice"].until(Error)).code == "cluster_unavailable"
        # The game whose seats n1 holds both plays to its end.
        overs = await gather(play_out(bots["carol"], random_policy(1)), play_out(bots["dave"], random_policy(2)))
        assert overs[0][0].game_id == here and overs[0] == overs[1]
        check_record(overs[0][0])
        redis("start")
        await wait_until(lambda: n1.arena.cluster.healthy and n2.arena.cluster.healthy, 10,  # type: ignore[union-attr]
                         "the nodes did not find Redis again")
        bob = await n2.connect(n1.tokens["bob"])
        await connected_everywhere([n1, n2], "alice", "bob")
        await bots["alice"].send({"type": "challenge", "opponent": "bob"})
        sent = await bots["alice"].until(ChallengeSent)
        assert (await bob.until(Challenged)).challenge_id == sent.challenge_id
    finally:
        redis("stop")


@pytest.mark.parametrize("late", [0, 1], ids=["node-sweep", "map-sweep"])
async def test_a_node_back_from_the_dead_while_another_sweeps_keeps_its_bots(make_cluster: MakeCluster,
                                                                              late: int) -> None:
    """n1's liveness key expired (a pause past its life), so n2's sweep finds n1 gone: it forgets
    n1's bots (here), then clears them from the map on Redis, asking again who is alive. While
    n2 waits for one of those answers (``late``: the first, or the map's), n1 finds out, comes
    back and attaches its bots again: n2 must forget neither here nor on Redis what n1 attached
    since, or no node would hear of those bots again."""
    n1, n2 = await make_cluster(2)
    bots = await bots_on([n1, n2], {"alice": 0, "bob": 1})
    c1, c2 = n1.arena.cluster, n2.arena.cluster
    assert c1 is not None and c2 is not None
    before = c2.presence.place("alice")
    # n1 is paused as far as its liveness goes: it refreshes its key only once let.
    refresh, let = c1.bus._refresh, asyncio.Event()

    async def refresh_once_let() -> None:
        await let.wait()
        await refresh()

    c1.bus._refresh = refresh_once_let  # type: ignore[method-assign]
    real_nodes = c2.bus.nodes
    asked: list[list[str]] = []

    async def nodes() -> list[str]:
        """The bus's answer (without n1, while it is paused); the ``late``-th is given only
        after n1 was let refresh, found its key gone and attached its bots again."""
        if not asked:
            await c1.bus.redis.delete(alive_key("n1"))  # its key expired
        alive = await real_nodes()
        if len(asked) == late:
            let.set()
            await wait_until(lambda: c2.presence.place("alice") not in (None, before), 5,
                             "n1 did not attach alice again")
        asked.append(alive)
        return alive

    async def known_on_n1() -> bool:
        """n2 has alice on n1 by an attachment made since, and so has the map on Redis."""
        again = c2.presence.place("alice")
        return (again is not None and again.node == "n1" and again != before
                and n2.arena.presence.is_connected("alice")
                and await c2.bus.redis.hget(WHERE, "alice") == again.encode().encode())

    c2.bus.nodes = nodes  # type: ignore[method-assign]
    # The sweep that had the old answers is over once the next tick asks again.
    await wait_until(lambda: len(asked) >= late + 2, 10, "n2 did not sweep again")
    assert all(a == ["n2"] for a in asked[:late + 1])
    # A machine busy enough to starve n1's refresh past its key's life makes n1 gone again, and
    # back again; what n2 forgot on the old answers it would never learn again.
    await wait_until(known_on_n1, 5, "n2 or Redis forgot alice on n1")
    await bots["bob"].send({"type": "challenge", "opponent": "alice"})
    sent = await bots["bob"].until(ChallengeSent)
    assert (await bots["alice"].until(Challenged)).challenge_id == sent.challenge_id


async def test_a_message_on_redis_that_does_not_decode_is_dropped(make_cluster: MakeCluster, redis_url: str) -> None:
    n1, n2 = await make_cluster(2)
    bots = await bots_on([n1, n2], {"alice": 0, "bob": 1})
    r = aioredis.Redis.from_url(redis_url)
    try:
        for junk in (b"not json", b'{"sender": "x", "body": {"type": "to_bot", "bot": 7}}', b"[]"):
            await r.publish(node_channel("n2"), junk)
    finally:
        await r.aclose()
    cluster = n2.arena.cluster
    assert cluster is not None
    await wait_until(lambda: cluster.bus.dropped == 3, 5, "the junk was not dropped")
    await n1.start_game(["alice", "bob"])
    overs = await gather(play_out(bots["alice"], random_policy(1)), play_out(bots["bob"], random_policy(2)))
    assert overs[0] == overs[1]


async def test_a_bot_that_leaves_while_its_node_rejoins_is_not_attached_again(
        make_cluster: MakeCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """Redis is back and n1 attaches its bots again, one at a time; xena's connection closes (its
    goodbye is sent) before her turn comes. n1 must not leave her attached, on Redis and so on
    every node, to a connection that is gone."""
    n1, n2 = await make_cluster(2)
    bots = await bots_on([n1, n2], {"xena": 0, "yuri": 0, "zack": 1})
    cluster = n1.arena.cluster
    assert cluster is not None
    attached, closed = cluster.bots.attached, []

    async def she_leaves_first(bot: str, conn: Any) -> Any:
        if bot == "xena":
            closed.append(bot)
            await bots["xena"].close()
            await wait_until(lambda: n1.arena.presence.get_local("xena") is None, 5, "xena's connection did not close")
        return await attached(bot, conn)

    monkeypatch.setattr(cluster.bots, "attached", she_leaves_first)
    await cluster._rejoin()  # as when Redis is back
    assert closed == ["xena"]
    assert await cluster.bus.redis.hget(WHERE, "xena") is None
    await wait_until(lambda: not n2.arena.presence.is_connected("xena"), 5, "n2 still has xena connected")
    assert n2.arena.presence.is_connected("yuri")


async def test_a_bot_that_left_while_redis_was_lost_is_forgotten_when_it_is_back(
        make_cluster: MakeCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """xena's connection on n1 closes while n1 cannot reach Redis: her goodbye fails, and the map
    (and n2) still have her connected there. When Redis is back, n1 forgets her everywhere."""
    n1, n2 = await make_cluster(2)
    bots = await bots_on([n1, n2], {"xena": 0, "yuri": 0, "zack": 1})
    cluster = n1.arena.cluster
    assert cluster is not None
    detach, failed = cluster.presence._detach, []

    async def redis_lost(*args: Any, **kwargs: Any) -> Any:
        failed.append(kwargs.get("args"))
        raise RedisConnectionError("Connection reset by peer")

    monkeypatch.setattr(cluster.presence, "_detach", redis_lost)
    await bots["xena"].close()
    await wait_until(lambda: failed, 5, "xena's goodbye was not tried")
    assert await cluster.bus.redis.hget(WHERE, "xena") is not None and n2.arena.presence.is_connected("xena")
    monkeypatch.setattr(cluster.presence, "_detach", detach)
    await cluster._rejoin()  # as when Redis is back
    assert await cluster.bus.redis.hget(WHERE, "xena") is None
    await wait_until(lambda: not n2.arena.presence.is_connected("xena"), 5, "n2 still has xena connected")
    assert n2.arena.presence.is_connected("yuri") and await cluster.bus.redis.hget(WHERE, "yuri") is not None
