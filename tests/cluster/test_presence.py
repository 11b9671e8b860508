"""Where each bot is connected, across nodes, over a real Redis: every node learns it, a newer
connection elsewhere replaces the older one, a late goodbye never removes its successor, late
word of a connection's older attachment does not close it, and the bots of a node that died
are forgotten."""

from __future__ import annotations

import uuid
from types import TracebackType

import msgspec
import redis.asyncio as aioredis

from arena_testkit import gather, wait_until
from server.cluster.bus import ALL, ClusterBus, Envelope
from server.cluster.presence import WHERE, Attached, ClusterPresence, PresenceMessage


class Node:
    """A bus, its presence, and the connections it was told to close."""

    def __init__(self, url: str, alive_s: float = 3.0) -> None:
        self.name = f"n-{uuid.uuid4().hex[:8]}"
        self.bus: ClusterBus[PresenceMessage] = ClusterBus(url, self.name, PresenceMessage, alive_s=alive_s)
        self.replaced: list[tuple[str, int]] = []
        self.presence = ClusterPresence(self.bus, lambda bot, conn: self.replaced.append((bot, conn)))

    async def __aenter__(self) -> Node:
        await self.bus.open()
        await self.presence.load()
        return self

    async def __aexit__(self, kind: type[BaseException] | None, e: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.bus.close()


def bot_name() -> str:
    return f"bot-{uuid.uuid4().hex[:8]}"


async def stored(url: str, bot: str) -> str | None:
    r = aioredis.Redis.from_url(url)
    try:
        value = await r.hget(WHERE, bot)
        return value.decode() if value is not None else None
    finally:
        await r.aclose()


async def test_every_node_learns_where_a_bot_is_and_a_newer_connection_replaces_the_older(redis_url: str) -> None:
    bot = bot_name()
    async with Node(redis_url) as a, Node(redis_url) as b:
        first = await a.presence.attach(bot, 1)
        await wait_until(lambda: b.presence.where(bot) == a.name, 5, "b never learnt that the bot is on a")
        second = await b.presence.attach(bot, 7)  # the same token connects to b
        assert second.seq > first.seq
        await wait_until(lambda: a.replaced, 5, "a was not told to close the older connection")
        assert a.replaced == [(bot, 1)] and b.replaced == []
        assert a.presence.where(bot) == b.presence.where(bot) == b.name
        # a's goodbye for the replaced connection comes late: it must not remove b's
        await a.presence.detach(bot, first)
        assert await stored(redis_url, bot) == second.encode()
        await b.presence.detach(bot, second)
        await wait_until(lambda: a.presence.where(bot) is None, 5, "a still thinks the bot is connected")
        assert await stored(redis_url, bot) is None and b.presence.where(bot) is None


async def test_late_word_of_a_connections_older_attachment_does_not_close_it(redis_url: str) -> None:
    """A node attaches one connection twice when it announces its bots anew (Redis is back)
    while that bot's hello is still being recorded. Word of the older attachment that arrives
    after the newer one is stale, but the newer one is the same connection: nothing is closed."""
    bot, marker = bot_name(), bot_name()
    async with Node(redis_url) as a, Node(redis_url) as b:
        first = await a.presence.attach(bot, 4)
        second = await a.presence.attach(bot, 4)
        assert second.seq > first.seq
        await wait_until(lambda: b.presence.place(bot) == second, 5, "b never learnt the newer attachment")
        r = aioredis.Redis.from_url(redis_url)
        try:  # the older attachment's word again, as a broadcast held up would bring it; then a marker
            for word in (Attached(bot, a.name, 4, first.seq), Attached(marker, b.name, 9, second.seq + 100)):
                await r.publish(ALL, msgspec.json.encode(Envelope(sender=a.name, body=[word])))
        finally:
            await r.aclose()
        await wait_until(lambda: a.presence.where(marker) == b.presence.where(marker) == b.name, 5,
                         "the word did not reach both nodes")
        assert a.replaced == [] and b.replaced == []
        assert a.presence.place(bot) == b.presence.place(bot) == second


async def test_a_node_starting_late_reads_the_map(redis_url: str) -> None:
    bot = bot_name()
    async with Node(redis_url) as a:
        await a.presence.attach(bot, 3)
        async with Node(redis_url) as late:
            assert late.presence.where(bot) == a.name


async def test_the_bots_of_a_node_that_died_are_forgotten(redis_url: str) -> None:
    bot = bot_name()
    async with Node(redis_url, alive_s=0.3) as a, Node(redis_url) as b:
        await a.presence.attach(bot, 5)
        await wait_until(lambda: b.presence.where(bot) == a.name, 5, "b never learnt where the bot is")
        a.bus._tasks[1].cancel()  # a stops refreshing its liveness, as a node killed with -9 would
        swept: list[str] = []  # other tests' dead nodes may be swept too: Redis is shared

        async def swept_ours() -> bool:
            swept.extend(await b.presence.sweep())
            return bot in swept

        await wait_until(swept_ours, 5, "the dead node's bot was never swept")
        assert b.presence.where(bot) is None and await stored(redis_url, bot) is None


async def test_a_thousand_bots_leaving_at_once_are_all_forgotten(redis_url: str) -> None:
    """A node's bots all disconnect at once (a load client stops, a proxy restarts): each
    goodbye waits its turn for one of the node's Redis connections rather than failing when
    more are in flight than its pool holds."""
    bots = [bot_name() for _ in range(1000)]
    async with Node(redis_url) as a:
        places = []
        for start in range(0, len(bots), 50):
            places += await gather(*(a.presence.attach(bot, i) for i, bot in enumerate(bots[start:start + 50])))
        await gather(*(a.presence.detach(bot, place) for bot, place in zip(bots, places, strict=True)))
        assert all(a.presence.where(bot) is None for bot in bots)
        r = aioredis.Redis.from_url(redis_url)
        try:
            assert await r.hmget(WHERE, bots) == [None] * len(bots)
        finally:
            await r.aclose()
