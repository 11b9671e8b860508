"""Which node holds each bot's live connection, for the whole cluster.

One Redis hash, ``mandala:where``, maps a bot to ``SEQ NODE CONN``: the node and connection id
that hold it, and the sequence number of that attachment (``INCR mandala:attach_seq``).
Every attachment and detachment is also broadcast on the bus, so each node keeps a copy of
the map and reads it without asking Redis. A newer attachment wins: a node holding a bot
whose newer attachment it hears of closes its own connection (4009, as on one node),
whatever order the messages arrive in. A detachment removes the entry only if it is still
the one it attached (compare and delete, in one script), so a late goodbye never removes
the connection that replaced it. Entries of a node that died are swept by the living.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

import msgspec
from redis.exceptions import RedisError

from .bus import PREFIX, ClusterBus, ClusterUnavailable

log = logging.getLogger(__name__)

WHERE = f"{PREFIX}:where"
SEQ = f"{PREFIX}:attach_seq"

_ATTACH = """
local seq = redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[1], ARGV[1], seq .. ' ' .. ARGV[2] .. ' ' .. ARGV[3])
return seq
"""
"""Number and record an attachment in one step, so the map always holds the newest."""

_DETACH = """
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
    return redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0
"""


class Attached(msgspec.Struct, tag="attached", frozen=True):
    """``bot`` is now connected to ``node`` as connection ``conn`` (attachment ``seq``)."""

    bot: str
    node: str
    conn: int
    seq: int


class Detached(msgspec.Struct, tag="detached", frozen=True):
    """``bot``'s connection ``conn`` on ``node`` (attachment ``seq``) is gone."""

    bot: str
    node: str
    conn: int
    seq: int


PresenceMessage = Attached | Detached


class Place(msgspec.Struct, frozen=True):
    """Where a bot is connected: its attachment's sequence number, node and connection id."""

    seq: int
    node: str
    conn: int

    def encode(self) -> str:
        return f"{self.seq} {self.node} {self.conn}"

    @classmethod
    def decode(cls, text: str) -> Place:
        seq, node, conn = text.split(" ")
        return cls(int(seq), node, int(conn))


def text_of(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _ignore(*_: Any) -> None:
    pass


class ClusterPresence:
    """This node's view of where every bot is connected. ``replaced(bot, conn)`` is called when
    a newer attachment elsewhere (or here) supersedes connection ``conn`` of this node;
    ``arrived(bot)`` when a bot is now connected to another node, ``left(bot)`` when a bot
    that was connected to another node is connected nowhere."""

    def __init__(self, bus: ClusterBus[Any], replaced: Callable[[str, int], None],
                 arrived: Callable[[str], None] = _ignore, left: Callable[[str], None] = _ignore) -> None:
        self.bus = bus
        self.node = bus.node
        self._redis = bus.redis
        self._replaced = replaced
        self._arrived = arrived
        self._left = left
        self._places: dict[str, Place] = {}
        self._attach = self._redis.register_script(_ATTACH)
        self._detach = self._redis.register_script(_DETACH)
        bus.subscribe(self._heard)

    async def load(self) -> None:
        """Read the whole map (at start, and after Redis was lost: what was known before is
        dropped, since a Redis that restarted numbers attachments afresh); broadcasts keep it
        up to date after that."""
        self._places.clear()
        for bot, text in (await self._redis.hgetall(WHERE)).items():
            self._learn(text_of(bot), Place.decode(text_of(text)))

    def elsewhere(self) -> dict[str, Place]:
        """The bots connected to other nodes, and where."""
        return {bot: place for bot, place in self._places.items() if place.node != self.node}

    def place(self, bot: str) -> Place | None:
        return self._places.get(bot)

    def forget_node(self, node: str, known: Mapping[str, Place]) -> list[str]:
        """Forget the bots connected to ``node`` (it is gone), here only; returns them. Only
        the places in ``known``, what was known when ``node`` was found gone: a bot it
        attached since (back from a pause, it announces its bots again) stays."""
        gone = [bot for bot, place in self._places.items() if place.node == node and known.get(bot) == place]
        for bot in gone:
            del self._places[bot]
        return gone

    def where(self, bot: str) -> str | None:
        """The node holding ``bot``'s live connection, as far as this node has heard."""
        place = self._places.get(bot)
        return place.node if place is not None else None

    async def attach(self, bot: str, conn: int) -> Place:
        """Record that ``bot`` is connected here as ``conn``; the older connection, wherever it
        is, is told to close. Raises :class:`ClusterUnavailable` if Redis fails."""
        try:
            seq = int(await self._attach(keys=[WHERE, SEQ], args=[bot, self.node, conn]))
        except (RedisError, OSError) as e:
            raise ClusterUnavailable(f"Redis at {self.bus.url}: {e}") from None
        place = Place(seq, self.node, conn)
        self._learn(bot, place)
        await self.bus.broadcast(Attached(bot, self.node, conn, seq))
        return place

    async def detach(self, bot: str, place: Place) -> None:
        """``bot``'s connection ``place`` closed: forget it, unless a newer one replaced it."""
        try:
            await self._detach(keys=[WHERE], args=[bot, place.encode()])
        except (RedisError, OSError) as e:
            raise ClusterUnavailable(f"Redis at {self.bus.url}: {e}") from None
        self._forget(bot, place.seq)
        await self.bus.broadcast(Detached(bot, place.node, place.conn, place.seq))

    async def forget_own(self, here: Mapping[str, int] | None = None) -> list[str]:
        """Forget (everywhere) the bots the map holds on this node but on no connection here
        (``here``: each bot connected here, by its connection's id); returns them. At start,
        those of a previous life, which a restart quicker than its liveness key's expiry left;
        when Redis is back, those that left while it was lost (their goodbye failed)."""
        here = here or {}
        gone = [(bot, place) for bot, place in self._places.items()
                if place.node == self.node and here.get(bot) != place.conn]
        for bot, place in gone:
            await self.detach(bot, place)
        return [bot for bot, _ in gone]

    async def sweep(self) -> list[str]:
        """Forget the bots of nodes that are no longer alive; returns those bots. The map is read
        before the nodes alive: a node back from a pause refreshes its liveness before it
        attaches its bots again, so an attachment read here is never newer than the answer."""
        where = await self._redis.hgetall(WHERE)
        alive = set(await self.bus.nodes())
        gone: list[str] = []
        for key, text in where.items():
            bot, place = text_of(key), Place.decode(text_of(text))
            if place.node not in alive:
                await self._detach(keys=[WHERE], args=[bot, text])
                self._forget(bot, place.seq)
                gone.append(bot)
        return gone

    # ------------------------------------------------------------------ what the bus brings

    def _heard(self, sender: str, message: Any) -> None:
        if isinstance(message, Attached):
            if self._learn(message.bot, Place(message.seq, message.node, message.conn)) and message.node != self.node:
                self._arrived(message.bot)
        elif (isinstance(message, Detached) and self._forget(message.bot, message.seq)
              and message.node != self.node):
            self._left(message.bot)

    def _learn(self, bot: str, place: Place) -> bool:
        """Record ``place`` if it is newer than what is known; whether it was."""
        known = self._places.get(bot)
        if known is not None and known.seq >= place.seq:
            if known.seq > place.seq and place.node == self.node and (known.node, known.conn) != (place.node, place.conn):
                # Ours arrived late: a newer one is elsewhere. Not when the newer one is this very
                # connection attached again (its node announces its bots anew when Redis is back,
                # maybe while the bot's hello is still being recorded).
                self._replaced(bot, place.conn)
            return False
        self._places[bot] = place
        if known is not None and known.node == self.node and known.conn != place.conn:
            self._replaced(bot, known.conn)
        return True

    def _forget(self, bot: str, seq: int) -> bool:
        """Forget the bot's attachment ``seq`` if it is still the known one; whether it was."""
        known = self._places.get(bot)
        if known is not None and known.seq == seq:
            del self._places[bot]
            return True
        return False
