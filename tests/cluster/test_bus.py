"""The bus between nodes, over a real Redis: typed messages to one node or to all, payloads
that do not decode, Redis unreachable at start and lost while running, which nodes are alive."""

from __future__ import annotations

import logging
import os
import subprocess
import uuid
from pathlib import Path

import msgspec
import pytest
import redis.asyncio as aioredis

from arena_testkit import free_port, wait_until
from server.cluster.bus import ClusterBus, ClusterUnavailable, node_channel

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "test-redis.sh"


class Hello(msgspec.Struct, tag="hello", frozen=True):
    text: str


class Count(msgspec.Struct, tag="count", frozen=True):
    n: int


Message = Hello | Count


class Node:
    """A bus and what it heard: (sender, message) in order."""

    def __init__(self, url: str, name: str | None = None, alive_s: float = 3.0) -> None:
        self.name = name or f"n-{uuid.uuid4().hex[:8]}"
        self.bus: ClusterBus[Message] = ClusterBus(url, self.name, Message, alive_s=alive_s)
        self.heard: list[tuple[str, Message]] = []
        self.bus.subscribe(lambda sender, msg: self.heard.append((sender, msg)))

    async def __aenter__(self) -> Node:
        await self.bus.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.bus.close()


async def test_typed_messages_reach_one_node_or_every_node(redis_url: str) -> None:
    async with Node(redis_url) as a, Node(redis_url) as b:
        await a.bus.send(b.name, Count(7))
        await wait_until(lambda: b.heard, 5, "b never heard a's message")
        assert b.heard == [(a.name, Count(7))] and a.heard == []
        await b.bus.broadcast(Hello("all"))
        await wait_until(lambda: len(a.heard) == 1 and len(b.heard) == 2, 5, "the broadcast did not reach both")
        assert a.heard == [(b.name, Hello("all"))] and b.heard[1] == (b.name, Hello("all"))


async def test_a_payload_that_does_not_decode_is_logged_dropped_and_the_node_listens_on(
        redis_url: str, caplog: pytest.LogCaptureFixture) -> None:
    async with Node(redis_url) as b:
        raw = aioredis.Redis.from_url(redis_url)
        try:
            with caplog.at_level(logging.WARNING, logger="server.cluster.bus"):
                for junk in (b"not json", b'{"sender": "x", "body": {"type": "nope"}}', b"[1, 2]",
                             b'{"sender": "x", "body": {"type": "count", "n": "seven"}}', b"\xff\xfe"):
                    await raw.publish(node_channel(b.name), junk)
                await raw.publish(node_channel(b.name), b'{"sender": "x", "body": [{"type": "count", "n": 3}]}')
                await wait_until(lambda: b.heard, 5, "the good message after the junk never arrived")
        finally:
            await raw.aclose()
        assert b.heard == [("x", Count(3))]
        assert b.bus.dropped == 5 and b.bus.healthy
        warnings = [r for r in caplog.records if "dropped a message" in r.getMessage()]
        assert len(warnings) == 1  # logged once, then counted


async def test_redis_unreachable_at_start_is_named() -> None:
    url = f"redis://127.0.0.1:{free_port()}/0"
    bus: ClusterBus[Message] = ClusterBus(url, "lonely", Message)
    with pytest.raises(ClusterUnavailable, match=f"cannot reach Redis at {url}"):
        await bus.open()


async def test_the_nodes_alive_and_one_that_stopped_refreshing_is_gone(redis_url: str) -> None:
    async with Node(redis_url, alive_s=0.3) as a, Node(redis_url) as b:
        assert {a.name, b.name} <= set(await b.bus.nodes())
        a.bus._tasks[1].cancel()  # a stops refreshing, as a node killed with -9 would
        await wait_until(lambda: _absent(b, a.name), 5, "a dead node was still listed")
        assert b.name in await b.bus.nodes()


async def _absent(node: Node, name: str) -> bool:
    return name not in await node.bus.nodes()


async def test_a_lost_redis_is_noticed_and_the_bus_recovers_by_itself(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "MANDALA_REDIS_DIR": str(tmp_path / "redis"), "MANDALA_REDIS_PORT": str(port)}

    def script(action: str) -> str:
        done = subprocess.run([str(SCRIPT), action], env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    url = script("start")
    try:
        async with Node(url) as a, Node(url) as b:
            changes: list[bool] = []
            b.bus.health_listeners.append(changes.append)
            script("stop")
            await wait_until(lambda: not b.bus.healthy, 10, "b never noticed that Redis was gone")
            with pytest.raises(ClusterUnavailable):
                await a.bus.send(b.name, Count(1))
            script("start")
            await wait_until(lambda: b.bus.healthy and a.bus.healthy, 10, "the bus did not come back")
            await a.bus.send(b.name, Count(2))
            await wait_until(lambda: b.heard, 5, "no message after Redis came back")
            assert b.heard == [(a.name, Count(2))] and changes == [False, True]
    finally:
        script("stop")
