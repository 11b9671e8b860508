"""The frames on their way to one WebSocket peer, written once per loop iteration.

Game code never awaits a socket: :meth:`Outbox.send` only appends an encoded frame. At the
end of the loop iteration every frame sent to the peer meanwhile leaves in one
``transport.write`` (a decision sends ``move_accepted`` and ``update`` to one seat, ``update``
and ``decision`` to the other: two writes, not four), with no task or queue per peer.

A peer that does not read fills its socket and then the transport's buffer; past
``HIGH_WATER`` bytes there, frames wait here instead, and a peer with more than ``limit``
frames waiting is cut (its TCP connection aborted: a close frame would queue behind the
unread ones, so it sees 1006). A close asked for after some frames is sent after them.

The frames are text frames built here (RFC 6455 §5.2: a server's frames are not masked),
because aiohttp writes one frame per call; the socket is opened without compression, so
every frame is a plain one. aiohttp still answers pings and closes on the same transport,
between whole frames.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from typing import cast

from aiohttp import web

log = logging.getLogger(__name__)

CLOSE_GOING_AWAY = 1001
SHUTDOWN_WAIT_S = 5.0
"""How long a stopping server waits for its sockets' closes to finish (:meth:`Outbox.shutdown`)
before it goes on without them: a peer gone silent must not hold the stop."""
"""RFC 6455's close code for a server that shuts down."""
HIGH_WATER = 256 * 1024
"""Bytes the transport may hold unsent before frames wait in the outbox instead."""
RETRY_S = 0.05
"""How often an outbox waiting for its peer to read tries again."""
AUDIENCE_LOW_WATER = 64 * 1024
"""Bytes the transport may hold unsent for the audience to be written to: above it the peer is
behind, and the audience skips it forward instead of queueing (``server/connections/pacing.py``)."""

_TEXT_FIN = 0x81
_SHORT_HEADERS = tuple(bytes((_TEXT_FIN, length)) for length in range(126))


def text_frame_header(length: int) -> bytes:
    """The header of an unmasked, final text frame carrying ``length`` bytes."""
    if length < 126:
        return _SHORT_HEADERS[length]
    if length < 65536:
        return struct.pack("!BBH", _TEXT_FIN, 126, length)
    return struct.pack("!BBQ", _TEXT_FIN, 127, length)


class Outbox:
    """Frames for one peer; see the module's docstring. ``name`` is for the log."""

    def __init__(self, ws: web.WebSocketResponse, transport: asyncio.BaseTransport | None, limit: int,
                 name: str) -> None:
        self.ws = ws
        self.limit = limit
        self.name = name
        # uvloop's transports do not subclass asyncio's; any transport of a WebSocket writes.
        self._transport = cast("asyncio.Transport | None", transport)
        self._loop = asyncio.get_running_loop()
        self._frames: list[bytes] = []
        """Each waiting frame as two items: its header, then its payload."""
        self._scheduled = False
        self._closing = False
        self._close: tuple[int, str] | None = None
        self._done: asyncio.Future[None] = self._loop.create_future()
        self._closer: asyncio.Task[None] | None = None

    @property
    def closing(self) -> bool:
        """A close was asked for (or the peer was cut): nothing more is sent."""
        return self._closing or self.ws.closed

    @property
    def transport(self) -> asyncio.Transport | None:
        """The peer's TCP transport (tests constrain its socket to make a slow network)."""
        return self._transport

    @property
    def waiting(self) -> int:
        """Frames not yet handed to the transport."""
        return len(self._frames) // 2

    def send(self, frame: bytes) -> bool:
        """Queue a frame's payload (UTF-8 JSON); False if it is dropped (closing, or the peer
        was cut for not reading)."""
        if self._closing:
            return False  # a peer that closed is found out at the flush
        frames = self._frames
        if len(frames) >= 2 * self.limit:
            log.warning("%s does not read its frames (%d waiting): dropping it", self.name, self.waiting)
            self.cut()
            return False
        frames.append(text_frame_header(len(frame)))
        frames.append(frame)
        if not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self._flush)
        return True

    def ready(self) -> bool:
        """Nothing waits for this peer and its socket keeps up: what is written now goes out."""
        transport = self._transport
        return (not self._frames and not self.closing and transport is not None and not transport.is_closing()
                and transport.get_write_buffer_size() <= AUDIENCE_LOW_WATER)

    def write_now(self, frames: list[bytes]) -> None:
        """Write ``frames`` at once, in one write (after :meth:`ready` said the peer keeps up)."""
        if self._transport is None:
            return
        chunks: list[bytes] = []
        for frame in frames:
            chunks.append(text_frame_header(len(frame)))
            chunks.append(frame)
        self._transport.write(b"".join(chunks))

    def close(self, code: int, reason: str) -> None:
        """Close after the frames already queued; later sends are dropped."""
        if self.closing:
            return
        self._closing = True
        self._close = (code, reason)
        if not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._scheduled = False
        transport = self._transport
        if self._done.done() or transport is None or transport.is_closing():
            self._frames.clear()
            self._finish()
            return
        if self._frames:
            if transport.get_write_buffer_size() > HIGH_WATER:  # the peer is not reading
                self._scheduled = True
                self._loop.call_later(RETRY_S, self._flush)
                return
            transport.write(b"".join(self._frames))
            self._frames.clear()
        if self._close is not None and self._closer is None:
            code, reason = self._close
            self._closer = self._loop.create_task(self._send_close(code, reason), name=f"close-{self.name}")

    async def _send_close(self, code: int, reason: str) -> None:
        try:
            await self.ws.close(code=code, message=reason.encode("utf-8"))
        except (ConnectionError, RuntimeError):
            pass  # the peer is gone already
        except Exception:
            log.exception("closing %s failed", self.name)
        finally:
            self._finish()

    def cut(self) -> None:
        """Abort the TCP connection without a close frame (the peer sees 1006)."""
        self._closing = True
        self._frames.clear()
        if self._transport is not None:
            self._transport.abort()
        self._finish()

    def _finish(self) -> None:
        if not self._done.done():
            self._done.set_result(None)

    async def shutdown(self) -> None:
        """Once the peer is done: let a close that was asked for finish its handshake
        (aiohttp bounds it by its close timeout); otherwise drop what is left."""
        if self._close is None:
            self._closing = True
            self._frames.clear()
            self._finish()
        await self._done
