"""Redis lost while nodes run (a Redis of this test's own, stopped and started again): a game
whose seats one node holds plays on; a game across nodes ends as aborted for the seat on its
host, and the seat on the other node is closed with 4010; nothing new starts across nodes
(``cluster_unavailable``); when Redis is back the nodes find each other by themselves.
Also: a message on Redis that does not decode is dropped and the node plays on."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import redis.asyncio as aioredis

from arena_testkit import Closed, Decision, GameOver, free_port, gather, play_out, random_policy, wait_until
from conftest import MakeCluster
from protocol.messages import CLOSE_GAME_HOST_LOST, Challenged, ChallengeSent, Error, GameStart
from server.cluster.bus import node_channel
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
