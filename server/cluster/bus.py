"""What arena nodes tell each other, over Redis pub/sub.

Every node subscribes to its own channel (``mandala:node:NAME``: frames for the bots it holds,
moves for the games it hosts) and to one channel all nodes share (``mandala:all``: ladder and
live events). Pub/sub, not streams: these messages are worth something only now — a frame
for a connection, a move for a clock that is running — and the node that hosts a game keeps
its whole state, so what a restart or an outage loses is asked again (a resume, a decision
sent anew) rather than replayed from a log. It is also what lila-ws does between lichess's
nodes.

A message is one msgspec struct of the union the bus was made with, sent as JSON inside an
:class:`Envelope` that names its sender. Game code posts without waiting (:meth:`ClusterBus.post`):
one task publishes what was posted, in the order it was posted, in one pipelined round trip
per batch, so a node's messages reach each other node in order (Redis delivers one
connection's publishes in order, across channels too). Messages posted one after another for
the same channel travel in one envelope: a node busy with games sends a few envelopes per
loop iteration rather than one per frame. A payload that does not decode is logged (once per
sender and reason, then counted) and dropped: nothing on Redis can crash a node.

Each node also keeps a key ``mandala:alive:NAME`` that expires unless refreshed, so every node
knows which nodes are alive (:meth:`ClusterBus.nodes`) without asking them.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import msgspec
import redis.asyncio as aioredis
from redis.exceptions import RedisError

from ..common.callbacks import call_safely, cancel_and_wait

log = logging.getLogger(__name__)

PREFIX = "mandala"
ALL = f"{PREFIX}:all"
ALIVE_S = 2.0
"""A node that has not refreshed its key for this long counts as gone."""

REDIS_CONNECTIONS = 64
"""Redis connections one node opens at most (one of them listens); more commands in flight
wait for one (Redis runs one command at a time: more connections would not be faster)."""
REDIS_WAIT_S = 5.0
"""How long a command waits for a free connection before it counts as Redis failing."""

RETRY_MIN_S = 0.05
RETRY_MAX_S = 1.0
"""Resubscribing after Redis was lost backs off from 50 ms, doubling up to this."""

M = TypeVar("M")

Command = Callable[[Any], object]
"""A Redis command to run in order with the posted messages: called with the pipeline."""

Outgoing = tuple[str, Any] | Command
"""A message (its channel and itself), or a command."""


_DATA_AGE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('SET', KEYS[1], now, 'NX')
return now - tonumber(redis.call('GET', KEYS[1]))
"""
"""How long (ms, Redis's clock) the cluster's keys have been on this Redis."""


def node_channel(node: str) -> str:
    return f"{PREFIX}:node:{node}"


def alive_key(node: str) -> str:
    return f"{PREFIX}:alive:{node}"


class ClusterUnavailable(Exception):
    """Redis cannot be reached (at start, or while running)."""


class Envelope(msgspec.Struct, Generic[M], frozen=True):
    """One publish on Redis: who sent it, and its messages, in order."""

    sender: str
    body: list[M]


class ClusterBus(Generic[M]):
    """One node's end of the bus. ``messages`` is the tagged union of structs it carries."""

    def __init__(self, url: str, node: str, messages: Any, alive_s: float = ALIVE_S) -> None:
        self.url = url
        self.node = node
        self.alive_s = alive_s
        # A bounded pool that makes a command wait for a free connection: a burst (every bot of
        # the node leaving at once) queues instead of failing with "Too many connections" once
        # more commands are in flight than the pool holds (redis-py's default pool since 8).
        pool = aioredis.BlockingConnectionPool.from_url(url, max_connections=REDIS_CONNECTIONS, timeout=REDIS_WAIT_S,
                                                        socket_connect_timeout=5, socket_timeout=5)
        self._redis = aioredis.Redis.from_pool(pool)
        self._data_age = self._redis.register_script(_DATA_AGE)
        self._decoder: msgspec.json.Decoder[Envelope[M]] = msgspec.json.Decoder(Envelope[messages])  # type: ignore[valid-type]
        self._encoder = msgspec.json.Encoder()
        self._handlers: list[Callable[[str, M], None]] = []
        self._dropped: Counter[str] = Counter()
        self._tasks: list[asyncio.Task[None]] = []
        self._outgoing: list[Outgoing] = []
        self._posted = 0
        self._sent = 0
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._kick = asyncio.Event()
        self.lost = 0
        """Posted messages that Redis did not take (it failed while they were sent)."""
        self.healthy = False
        """Whether this node hears the others now."""
        self.health_listeners: list[Callable[[bool], None]] = []
        self.presumed_dead_listeners: list[Callable[[], None]] = []
        """Told when this node finds its liveness key had expired: the others took it for
        dead (it was paused, or cut off from Redis, for longer than ``alive_s``)."""
        self._alive_set = False

    @property
    def redis(self) -> aioredis.Redis:
        """The node's Redis client, for the keys other cluster pieces keep."""
        return self._redis

    def subscribe(self, handler: Callable[[str, M], None]) -> None:
        """Call ``handler(sender, message)`` for every message this node receives."""
        self._handlers.append(handler)

    async def open(self) -> None:
        """Connect, announce this node alive and start listening; raises
        :class:`ClusterUnavailable` naming the URL if Redis does not answer."""
        try:
            await self._redis.ping()
            await self._refresh()
        except (RedisError, OSError) as e:
            await self._redis.aclose()
            raise ClusterUnavailable(f"cannot reach Redis at {self.url}: {e}") from None
        pubsub = await self._subscribed()
        self.healthy = True
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._listen(pubsub), name=f"bus-listen-{self.node}"),
            loop.create_task(self._keep_alive(), name=f"bus-alive-{self.node}"),
            loop.create_task(self._send_posted(), name=f"bus-send-{self.node}"),
        ]

    async def close(self) -> None:
        await cancel_and_wait(self._tasks)
        self._tasks = []
        self._sent = self._posted
        self._wake_waiters(ClusterUnavailable(f"node {self.node} left the cluster"))
        self._alive_set = False
        try:
            await self._redis.delete(alive_key(self.node))
        except (RedisError, OSError):
            pass  # it expires by itself
        await self._redis.aclose()
        self.healthy = False

    # ------------------------------------------------------------------ sending

    def post(self, node: str | None, message: M) -> None:
        """Queue ``message`` for one node (``None``: every node, this one included); it leaves
        in order with everything posted before it, without the caller waiting."""
        self._queue((ALL if node is None else node_channel(node), message))

    def post_command(self, command: Command) -> None:
        """Queue a Redis command (``command(pipeline)``) to run in order with the messages."""
        self._queue(command)

    async def send(self, node: str, message: M) -> None:
        """Publish ``message`` to one node (itself included) and wait until Redis took it;
        raises :class:`ClusterUnavailable` if it did not."""
        self.post(node, message)
        await self.sent()

    async def broadcast(self, message: M) -> None:
        """Publish ``message`` to every node, this one included, and wait until Redis took it."""
        self.post(None, message)
        await self.sent()

    async def sent(self) -> None:
        """Wait until everything posted so far is published."""
        if self._sent >= self._posted:
            return
        future = asyncio.get_running_loop().create_future()
        self._waiters.append((self._posted, future))
        await future

    def _queue(self, item: Outgoing) -> None:
        self._outgoing.append(item)
        self._posted += 1
        self._kick.set()

    async def _send_posted(self) -> None:
        """Publish what was posted, a batch per round trip, in order. A batch Redis fails on is
        lost (counted, logged; those waiting for it get :class:`ClusterUnavailable`): these
        messages are worth something only now, and the nodes recover by themselves."""
        while True:
            await self._kick.wait()
            self._kick.clear()
            while self._outgoing:
                batch, self._outgoing = self._outgoing, []
                pipe = self._redis.pipeline(transaction=False)
                run: list[Any] = []
                channel = ""
                for item in batch:
                    if isinstance(item, tuple) and item[0] == channel:
                        run.append(item[1])
                        continue
                    if run:
                        pipe.publish(channel, self._encoder.encode(Envelope(self.node, run)))
                        run, channel = [], ""
                    if isinstance(item, tuple):
                        channel, run = item[0], [item[1]]
                    else:
                        item(pipe)
                if run:
                    pipe.publish(channel, self._encoder.encode(Envelope(self.node, run)))
                error: ClusterUnavailable | None = None
                try:
                    await pipe.execute()
                except (RedisError, OSError) as e:
                    self.lost += len(batch)
                    log.warning("node %s: Redis did not take %d message(s): %s", self.node, len(batch), e)
                    error = ClusterUnavailable(f"Redis at {self.url}: {e}")
                self._sent += len(batch)
                self._wake_waiters(error)

    def _wake_waiters(self, error: ClusterUnavailable | None) -> None:
        done = [w for w in self._waiters if w[0] <= self._sent]
        self._waiters = [w for w in self._waiters if w[0] > self._sent]
        for _, future in done:
            if not future.done():
                if error is None:
                    future.set_result(None)
                else:
                    future.set_exception(error)

    # ------------------------------------------------------------------ membership

    async def data_age_s(self) -> float:
        """How long this Redis has held the cluster's keys (``mandala:born``): short after it
        restarted empty or was flushed, when living nodes may not have set their liveness
        keys again yet, so a missing key does not yet mean a dead node."""
        return int(await self._data_age(keys=[f"{PREFIX}:born"])) / 1000

    async def nodes(self) -> list[str]:
        """The nodes alive now (their key has not expired), sorted by name."""
        names = [key.decode().rsplit(":", 1)[1] async for key in self._redis.scan_iter(alive_key("*"))]
        return sorted(names)

    async def _refresh(self) -> None:
        was = await self._redis.set(alive_key(self.node), b"1", px=int(self.alive_s * 1000), get=True)
        if was is None and self._alive_set:
            for listener in list(self.presumed_dead_listeners):
                call_safely(listener, "a presumed-dead listener")
        self._alive_set = True

    async def _keep_alive(self) -> None:
        """Refresh this node's liveness key; a failure is logged once until a refresh works
        again (the loss of Redis itself is logged by the listener)."""
        failing = False
        while True:
            await asyncio.sleep(self.alive_s / 3)
            try:
                await self._refresh()
                failing = False
            except (RedisError, OSError) as e:
                if not failing:
                    log.warning("node %s could not refresh its liveness on Redis: %s (logged once until it can)",
                                self.node, e)
                failing = True

    # ------------------------------------------------------------------ receiving

    async def _subscribed(self) -> Any:
        pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
        await pubsub.subscribe(node_channel(self.node), ALL)
        return pubsub

    async def _listen(self, pubsub: Any) -> None:
        """Hand every message to the handlers; while Redis is lost, say so (``healthy``,
        ``health_listeners``) and subscribe again with backoff until it is back."""
        backoff = RETRY_MIN_S
        while True:
            try:
                if pubsub is None:
                    pubsub = await self._subscribed()
                    log.warning("node %s: Redis at %s is back", self.node, self.url)
                    self._set_healthy(True)
                    backoff = RETRY_MIN_S
                async for item in pubsub.listen():
                    if item.get("type") == "message":
                        self.deliver(item["data"])
            except (RedisError, OSError) as e:
                if self.healthy:
                    log.error("node %s lost Redis at %s: %s", self.node, self.url, e)
                    self._set_healthy(False)
                if pubsub is not None:
                    try:
                        await pubsub.aclose()
                    except (RedisError, OSError):
                        pass
                pubsub = None
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, RETRY_MAX_S)

    def _set_healthy(self, healthy: bool) -> None:
        self.healthy = healthy
        for listener in list(self.health_listeners):
            call_safely(listener, "a cluster health listener", healthy)

    def deliver(self, payload: bytes) -> None:
        """Decode one payload and hand it to the handlers; drop (and log) what does not decode."""
        try:
            envelope = self._decoder.decode(payload)
        except (msgspec.DecodeError, RecursionError) as e:
            self._drop("undecodable", f"{e} in {payload[:120]!r}")
            return
        for message in envelope.body:
            for handler in self._handlers:
                try:
                    handler(envelope.sender, message)
                except Exception:
                    log.exception("node %s: a handler failed on a message from %s", self.node, envelope.sender)

    def _drop(self, reason: str, detail: str) -> None:
        if not self._dropped[reason]:
            log.warning("node %s dropped a message on Redis (%s): %s; further ones are counted", self.node, reason,
                        detail)
        self._dropped[reason] += 1

    @property
    def backlog(self) -> int:
        """Messages posted and not yet handed to Redis."""
        return self._posted - self._sent

    @property
    def dropped(self) -> int:
        """Messages dropped because they did not decode."""
        return sum(self._dropped.values())
