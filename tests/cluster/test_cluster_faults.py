"""Redis lost while nodes run (a Redis of this test's own, stopped and started again): a game
whose seats one node holds plays on; a game across nodes ends as aborted for the seat on its
host, and the seat on the other node is closed with 4010; nothing new starts across nodes
(``cluster_unavailable``); when Redis is back the nodes find each other by themselves.
Also: a node taken for dead that comes back while another sweeps keeps its bots known there, and
a message on Redis that does not decode is dropped and the node plays on."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import redis.asyncio as aioredis

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
    real_nodes = c2.bus.nodes
    asked: list[list[str]] = []

    async def nodes() -> list[str]:
        """The bus's answer, but one without n1 the first ``late + 1`` times, the last of them
        given only once n1 came back."""
        if len(asked) > late:
            asked.append(await real_nodes())
            return asked[-1]
        alive = asked[-1] if asked else ["n1"]
        while "n1" in alive:  # n1 may refresh its key between the two commands: expire it again
            await c1.bus.redis.delete(alive_key("n1"))
            alive = await real_nodes()
        if len(asked) == late:
            await wait_until(lambda: c2.presence.place("alice") not in (None, before), 5,
                             "n1 did not attach alice again")
        asked.append(alive)
        return alive

    c2.bus.nodes = nodes  # type: ignore[method-assign]
    # The sweep that had the old answers is over once the next tick asks again.
    await wait_until(lambda: len(asked) >= late + 2, 10, "n2 did not sweep again")
    assert asked[0] == ["n2"] and "n1" in asked[-1]
    again = c2.presence.place("alice")
    assert again is not None and again.node == "n1" and again != before
    assert n2.arena.presence.is_connected("alice")
    assert (await c2.bus.redis.hget(WHERE, "alice")) == again.encode().encode()
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
