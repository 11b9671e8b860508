"""One WebSocket session: who it is, what it watches, its rate limit, and its outbox.

Game code calls :meth:`Connection.send` synchronously and never awaits a socket: frames go to
the connection's :class:`~server.connections.outbox.Outbox`, which writes them in order, all the frames
of one loop iteration at once. A slow reader therefore cannot stall a game, and a close
requested after some frames (e.g. ``unsupported_version`` then 4002) is sent after them.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any

import msgspec
from aiohttp import web

from protocol.messages import CLOSE_FLOOD, Error, ErrorCode

from ..config import Settings
from .outbox import Outbox
from .pacing import Audience, Feed
from .peers import AddressBudget, arrived_by_tls, client_address, client_key, token_allowed
from .ratelimit import TokenBucket

log = logging.getLogger(__name__)

_encoder = msgspec.json.Encoder()
_ids = itertools.count(1)


def encode(msg: Any) -> bytes:
    """One message as the payload of a frame (UTF-8 JSON): encode a frame several receivers
    get once, and send them the bytes."""
    return _encoder.encode(msg)


class Connection:
    """A client session on ``/ws``; ``bot`` is set once a ``hello`` with a token succeeded."""

    reachable = True
    """A connection to this node is always reachable (one on another node may not be)."""

    def __init__(self, ws: web.WebSocketResponse, settings: Settings, request: web.Request, audience: Audience,
                 shared: AddressBudget | None = None) -> None:
        self.id = next(_ids)
        self.ws = ws
        self.peer = client_address(request, settings)
        self.tls = arrived_by_tls(request, settings)
        """Whether it came by TLS (here, or to a trusted proxy)."""
        self.token_allowed = token_allowed(request, settings)
        """Whether a ``hello`` with a token may be taken on it (``require_tls``)."""
        self.settings = settings
        self.authenticated = False
        self.bot: str | None = None
        self.token_hash: str | None = None
        """The hash of the token it said hello with (a rotation closes it: ``Presence.retire``)."""
        self.max_games = 1
        self.watching: set[str] = set()
        self.place: Any = None
        """In a cluster, the bot's attachment recorded on Redis (to remove it at the close)."""
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._bucket = TokenBucket(settings.messages_per_second, settings.burst, loop.time())
        self._shared = shared
        """The buckets all of a client address's connections share (``messages_per_second_per_ip``)."""
        self._refused_in_row = 0
        self.flooded = False
        """Closed for ``flood`` (kept sending while rate limited)."""
        self.outbox = Outbox(ws, request.transport, settings.send_queue_max, f"connection {self.id} ({self.peer})")
        self._audience = audience
        self._feed: Feed | None = None

    def __repr__(self) -> str:
        return f"<Connection {self.id} bot={self.bot!r} peer={self.peer}>"

    @property
    def closing(self) -> bool:
        return self.outbox.closing

    # ------------------------------------------------------------------ sending

    def send(self, msg: Any) -> None:
        """Send a message (a struct, or a frame already encoded by :func:`encode`)."""
        self.outbox.send(msg if isinstance(msg, bytes) else _encoder.encode(msg))

    def send_watched(self, game_id: str, frame: bytes) -> None:
        """A frame of a game this connection watches: written at the audience's pace
        (``server/connections/pacing.py``), with the others of the same tick."""
        if self._feed is None:
            self._feed = Feed(self.outbox)
        self._audience.send(self._feed, game_id, frame)

    def error(self, code: ErrorCode, message: str, **fields: Any) -> None:
        self.send(Error(code, message, **fields))

    def close(self, code: int, reason: str) -> None:
        """Close after the frames already queued; later sends are dropped."""
        self.outbox.close(code, reason)

    async def shutdown(self) -> None:
        """Once the reader is done: let a close we asked for finish, else drop what is left."""
        await self.outbox.shutdown()

    # ------------------------------------------------------------------ rate limit

    def admit(self) -> bool:
        """Charge one incoming frame to the bucket. On refusal send ``rate_limited`` (or, past
        the flood limit, ``flood`` and close 4008) and return False: the frame is not processed.
        A frame the connection's own bucket admits is charged to its address's too, so that one
        connection flooding spends no more of its neighbours' budget than its own limit."""
        now = self._loop.time()
        retry = self._bucket.take(now)
        limit = "messages"
        if retry is None and self._shared is not None:
            retry = self._shared.take(self.peer, now)
            limit = "address"
        if retry is None:
            self._refused_in_row = 0
            return True
        self._refused_in_row += 1
        s = self.settings
        if self._refused_in_row > s.flood_limit:
            log.info("%s kept sending while rate limited: closing it (4008)", self.outbox.name)
            self.flooded = True
            self.error("flood", "kept sending while rate limited: closing")
            self.close(CLOSE_FLOOD, "flood")
        elif limit == "messages":
            self.error("rate_limited", f"more than {s.messages_per_second:g} messages a second (burst {s.burst})",
                       limit=limit, retry_after=round(retry, 3))
        else:
            self.error("rate_limited", f"more than {s.messages_per_second_per_ip:g} messages a second from "
                       f"{client_key(self.peer)}, all its connections together (burst {s.burst_per_ip})",
                       limit=limit, retry_after=round(retry, 3))
        return False
