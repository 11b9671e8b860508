"""A role only one node may hold at a time (the ladder's pairing leader), as a lease in Redis.

The holder's name sits in ``mandala:lease:ROLE`` with an expiry of ``ttl_s``. Every node
tries to take the key (``SET … NX PX``) every third of ``ttl_s``; the holder renews it with
a script that extends the expiry only while the key still names it. A holder that has not
renewed for ``ttl_s - margin`` (Redis slow or lost, the process paused) gives the role up
on its own, before the key can expire and another node take it, so two nodes never act as
holder at once. A holder that dies is replaced within ``ttl_s`` plus one attempt.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from ..common.callbacks import call_safely
from .bus import PREFIX

log = logging.getLogger(__name__)

_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
"""


def lease_key(role: str) -> str:
    return f"{PREFIX}:lease:{role}"


class Lease:
    """This node's part in who holds ``role``: :meth:`run` until cancelled; ``gained`` and
    ``lost`` are called as this node takes and gives up the role."""

    def __init__(self, redis: aioredis.Redis, role: str, node: str, ttl_s: float = 3.0,
                 gained: Callable[[], None] | None = None, lost: Callable[[], None] | None = None) -> None:
        self.key = lease_key(role)
        self.role = role
        self.node = node
        self.ttl_s = ttl_s
        self.margin_s = ttl_s / 6
        self._redis = redis
        self._renew = redis.register_script(_RENEW)
        self._release = redis.register_script(_RELEASE)
        self._gained = gained
        self._lost = lost
        self.held = False
        self._valid_until = 0.0

    async def run(self) -> None:
        """Take, keep and give up the role, forever (cancel to stop; the role is released)."""
        loop = asyncio.get_running_loop()
        try:
            while True:
                await self._step(loop)
                await asyncio.sleep(self.ttl_s / 3)
        finally:
            if self.held:
                self._drop("stopping")
                try:
                    await asyncio.shield(self._release(keys=[self.key], args=[self.node]))
                except (RedisError, OSError):
                    pass  # it expires by itself

    async def _step(self, loop: asyncio.AbstractEventLoop) -> None:
        asked = loop.time()
        try:
            if self.held:
                ok = bool(await self._renew(keys=[self.key], args=[self.node, int(self.ttl_s * 1000)]))
            else:
                ok = bool(await self._redis.set(self.key, self.node, nx=True, px=int(self.ttl_s * 1000)))
        except (RedisError, OSError) as e:
            if self.held and loop.time() >= self._valid_until:
                self._drop(f"Redis failed: {e}")
            return
        if ok:
            # The expiry counts from when Redis saw the command, which was after ``asked``.
            self._valid_until = asked + self.ttl_s - self.margin_s
            if not self.held:
                self.held = True
                log.warning("node %s holds %s", self.node, self.role)
                call_safely(self._gained, f"the callback on gaining {self.role}")
        elif self.held:
            self._drop("another node holds it")

    def valid(self) -> bool:
        """Whether this node may act as the holder now (checked before each act)."""
        return self.held and asyncio.get_running_loop().time() < self._valid_until

    def _drop(self, why: str) -> None:
        self.held = False
        log.warning("node %s gave up %s: %s", self.node, self.role, why)
        call_safely(self._lost, f"the callback on losing {self.role}")
