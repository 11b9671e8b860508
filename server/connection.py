"""One WebSocket session: who it is, what it watches, its rate limit, and an ordered outbox.

Game code calls :meth:`Connection.send` synchronously and never awaits a socket: frames go
into a queue that one writer task drains in order. A slow reader therefore cannot stall a
game, and a close requested after some frames (e.g. ``unsupported_version`` then 4002) is
sent after them.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any

import msgspec
from aiohttp import web

from protocol.messages import CLOSE_FLOOD, Error, ErrorCode

from .config import Settings
from .ratelimit import TokenBucket

log = logging.getLogger(__name__)

_encoder = msgspec.json.Encoder()
_ids = itertools.count(1)

class _Close(msgspec.Struct, frozen=True):
    code: int
    reason: str


def encode(msg: Any) -> str:
    """One message as the text of a frame."""
    return _encoder.encode(msg).decode("utf-8")


class Connection:
    """A client session on ``/ws``; ``bot`` is set once a ``hello`` with a token succeeded."""

    def __init__(self, ws: web.WebSocketResponse, settings: Settings, request: web.Request) -> None:
        self.id = next(_ids)
        self.ws = ws
        self.peer = request.remote
        self._transport = request.transport
        self.settings = settings
        self.authenticated = False
        self.bot: str | None = None
        self.max_games = 1
        self.watching: set[str] = set()
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._bucket = TokenBucket(settings.messages_per_second, settings.burst, loop.time())
        self._refused_in_row = 0
        self._outbox: asyncio.Queue[str | _Close] = asyncio.Queue()
        self._closing = False
        self._writer = loop.create_task(self._write_loop(), name=f"ws-writer-{self.id}")

    def __repr__(self) -> str:
        return f"<Connection {self.id} bot={self.bot!r} peer={self.peer}>"

    @property
    def closing(self) -> bool:
        return self._closing or self.ws.closed

    # ------------------------------------------------------------------ sending

    def send(self, msg: Any) -> None:
        """Queue a message (a struct, or a frame already encoded by :func:`encode`)."""
        if self.closing:
            return
        if self._outbox.qsize() >= self.settings.send_queue_max:
            self._drop()
            return
        self._outbox.put_nowait(msg if isinstance(msg, str) else encode(msg))

    def error(self, code: ErrorCode, message: str, **fields: Any) -> None:
        self.send(Error(code, message, **fields))

    def close(self, code: int, reason: str) -> None:
        """Close after the frames already queued; later sends are dropped."""
        if self.closing:
            return
        self._closing = True
        self._outbox.put_nowait(_Close(code, reason))

    def _drop(self) -> None:
        """Cut a client that does not read its frames. A close frame would queue behind the
        unread ones, so the TCP connection is aborted instead (the client sees 1006)."""
        log.warning("%r does not read its frames (%d queued): dropping it", self, self._outbox.qsize())
        self._closing = True
        self._writer.cancel()
        while not self._outbox.empty():
            self._outbox.get_nowait()
        if self._transport is not None:
            self._transport.abort()

    async def _write_loop(self) -> None:
        try:
            while True:
                item = await self._outbox.get()
                if isinstance(item, _Close):
                    await self.ws.close(code=item.code, message=item.reason.encode("utf-8"))
                    return
                await self.ws.send_str(item)
        except (ConnectionError, RuntimeError):
            pass  # the peer is gone; the reader notices and cleans up
        except Exception:
            log.exception("writer of %r failed", self)

    async def shutdown(self) -> None:
        """Stop the writer once the reader is done: let a close we asked for finish its
        handshake (aiohttp bounds it by its close timeout), otherwise cancel it."""
        if not self._closing:
            self._closing = True
            self._writer.cancel()
        try:
            await self._writer
        except asyncio.CancelledError:
            if not self._writer.cancelled():
                raise
        except Exception:
            log.exception("writer of %r failed", self)

    # ------------------------------------------------------------------ rate limit

    def admit(self) -> bool:
        """Charge one incoming frame to the bucket. On refusal send ``rate_limited`` (or, past
        the flood limit, ``flood`` and close 4008) and return False: the frame is not processed."""
        retry = self._bucket.take(self._loop.time())
        if retry is None:
            self._refused_in_row = 0
            return True
        self._refused_in_row += 1
        if self._refused_in_row > self.settings.flood_limit:
            self.error("flood", "kept sending while rate limited: closing")
            self.close(CLOSE_FLOOD, "flood")
        else:
            self.error(
                "rate_limited",
                f"more than {self.settings.messages_per_second:g} messages a second (burst {self.settings.burst})",
                limit="messages",
                retry_after=round(retry, 3),
            )
        return False
