"""The pairing leader's lease, over a real Redis: one holder at a time, a holder that dies
without a word is replaced within 5 s, a holder that loses its key gives the role up."""

from __future__ import annotations

import asyncio
import uuid

import redis.asyncio as aioredis

from arena_testkit import wait_until
from server.cluster.lease import Lease, lease_key


class Member:
    """One node's lease on a role, and the times it gained and lost it."""

    def __init__(self, url: str, role: str, name: str) -> None:
        self.redis = aioredis.Redis.from_url(url)
        self.events: list[tuple[str, float]] = []
        loop = asyncio.get_running_loop()
        self.lease = Lease(self.redis, role, name, ttl_s=3.0,
                           gained=lambda: self.events.append(("gained", loop.time())),
                           lost=lambda: self.events.append(("lost", loop.time())))
        self.task = loop.create_task(self.lease.run())

    async def stop(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        await self.redis.aclose()


async def test_one_holder_and_a_dead_one_is_replaced_within_five_seconds(redis_url: str) -> None:
    role = f"pairing-{uuid.uuid4().hex[:8]}"
    a, b = Member(redis_url, role, "a"), Member(redis_url, role, "b")
    try:
        await wait_until(lambda: a.lease.held or b.lease.held, 5, "nobody took the role")
        await asyncio.sleep(1.5)  # several renewals: the holder keeps it, the other never gets it
        holder, other = (a, b) if a.lease.held else (b, a)
        assert holder.lease.valid() and not other.lease.held and other.events == []

        async def no_goodbye(*args: object, **kwargs: object) -> int:
            return 0

        holder.lease._release = no_goodbye  # type: ignore[method-assign,assignment]  # killed with -9
        died = asyncio.get_running_loop().time()
        holder.task.cancel()
        await asyncio.gather(holder.task, return_exceptions=True)
        await wait_until(lambda: other.lease.held, 6, "nobody took over from the dead holder")
        took = other.events[0][1] - died
        assert other.events[0][0] == "gained" and took <= 5.0
        assert await other.redis.get(lease_key(role)) == other.lease.node.encode()
    finally:
        await a.stop()
        await b.stop()


async def test_a_holder_whose_key_is_gone_gives_the_role_up(redis_url: str) -> None:
    role = f"pairing-{uuid.uuid4().hex[:8]}"
    a = Member(redis_url, role, "a")
    try:
        await wait_until(lambda: a.lease.held, 5, "a never took the role")
        await a.redis.set(lease_key(role), "usurper", px=10_000)  # its key expired and was taken meanwhile
        await wait_until(lambda: not a.lease.held, 5, "a kept acting as the holder")
        assert [kind for kind, _ in a.events] == ["gained", "lost"] and not a.lease.valid()
    finally:
        await a.stop()


async def test_stopping_releases_the_role_at_once(redis_url: str) -> None:
    role = f"pairing-{uuid.uuid4().hex[:8]}"
    a = Member(redis_url, role, "a")
    await wait_until(lambda: a.lease.held, 5, "a never took the role")
    probe = aioredis.Redis.from_url(redis_url)
    try:
        await a.stop()
        assert await probe.get(lease_key(role)) is None
    finally:
        await probe.aclose()
