"""The WebSocket endpoint ``/ws``: read frames, parse them, dispatch them, answer errors.

A frame is decoded straight into its message struct. One that fails is parsed again in two
stages so every fault gets its own error code: JSON → any value (``bad_json``,
``not_object``, ``unknown_type``), then ``msgspec.convert`` into the message types
(``invalid_message``, with msgspec's path to the bad field). Every path is wrapped: nothing a
client sends can raise out of the handler, and no frame is processed once a close is queued.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import msgspec
from aiohttp import WSMessage, WSMsgType, web

from protocol.messages import (
    CLIENT_TYPES,
    CLOSE_BAD_TOKEN,
    CLOSE_HELLO_TIMEOUT,
    CLOSE_REPLACED,
    CLOSE_TLS_REQUIRED,
    CLOSE_TRY_AGAIN_LATER,
    CLOSE_UNSUPPORTED_VERSION,
    PROTOCOL_VERSION,
    REQUEST_ID_MAX,
    Accept,
    Challenge,
    ClientMessage,
    Decline,
    Hello,
    Ping,
    PlayMove,
    Pong,
    Resign,
    Seek,
    SetCapacity,
    Unseek,
    Unwatch,
    Watch,
    Welcome,
)

from ..arena import ARENA, Arena
from ..common.logs import about
from ..common.refusal import Refusal
from ..config import HARD_FRAME_CAP, max_msg_size
from ..connections.auth import hash_token
from ..connections.connection import Connection
from .api import connection_slot, why_not_json

log = logging.getLogger(__name__)

_any_json = msgspec.json.Decoder()
_typed = msgspec.json.Decoder(ClientMessage)


def parse(text: str) -> ClientMessage:
    """One client message from a text frame; raises :class:`Refusal` naming what is wrong.

    A well-formed message is decoded straight into its struct in one pass; only a frame
    that fails is looked at again, to say which of the errors above it is.
    """
    try:
        return _typed.decode(text)
    except (msgspec.DecodeError, RecursionError):
        return _diagnose(text)


def _diagnose(text: str) -> ClientMessage:
    """Parse in two stages, so each fault gets its own code (see the module's docstring)."""
    try:
        obj: Any = _any_json.decode(text)
    except (msgspec.DecodeError, RecursionError) as e:
        raise Refusal("bad_json", f"not JSON: {why_not_json(text, e)}") from None
    if not isinstance(obj, dict):
        raise Refusal("not_object", f"a message is a JSON object, not {type(obj).__name__}")
    kind = obj.get("type")
    if not isinstance(kind, str) or kind not in CLIENT_TYPES:
        raise Refusal("unknown_type", f"unknown message type {kind!r}; known: {', '.join(sorted(CLIENT_TYPES))}")
    try:
        return msgspec.convert(obj, ClientMessage)  # type: ignore[arg-type]
    except (msgspec.ValidationError, RecursionError) as e:
        game_id = obj.get("game_id")
        request_id = obj.get("request_id")
        raise Refusal(
            "invalid_message",
            f"invalid {kind}: {e}",
            game_id=game_id if isinstance(game_id, str) else None,
            request_id=request_id if type(request_id) is int and 0 <= request_id <= REQUEST_ID_MAX else None,
        ) from None


def frame_too_large(text: str, limit: int) -> bool:
    """Whether a text frame is above ``limit`` bytes of UTF-8 (cheap for ASCII frames)."""
    if len(text) > limit:
        return True
    return len(text) * 4 > limit and len(text.encode("utf-8")) > limit


class Session:
    """What one connection has said so far, and the dispatch of its messages."""

    def __init__(self, arena: Arena, conn: Connection) -> None:
        self.arena = arena
        self.conn = conn
        self.hello_timer: asyncio.TimerHandle | None = None

    def hello_timeout(self) -> None:
        if not self.conn.authenticated:
            self.conn.close(CLOSE_HELLO_TIMEOUT, "hello timeout")

    async def on_frame(self, msg: WSMessage) -> None:
        """Handle one frame; every refusal or failure becomes one ``error`` frame.

        Every frame is charged to the rate limit except a bot's first answer to each of its
        pending decisions: the server itself paces those, one per decision it sends, so
        a bot that answers at once never loses a game to the rate limit. A frame over the
        limit is not processed at all: only its ``rate_limited`` is sent.
        """
        conn = self.conn
        if conn.closing:
            return
        try:
            message = self.read(msg)
        except Refusal as r:
            if not self.admitted():
                return
            self.refused(r)
            if conn.bot is not None:
                text = msg.data if isinstance(msg.data, str) else f"(a binary frame of {len(msg.data)} bytes)"
                self.arena.manager.bad_frame(conn.bot, r, text)
            return
        if message is None:
            return
        if not self.paced(message) and not self.admitted():
            return
        try:
            if type(message) is PlayMove and conn.bot is not None:  # the hot path, straight to its game
                self.arena.manager.play(conn.bot, message.game_id, message.request_id, message.move)
            else:
                await self.dispatch(message)
        except Refusal as r:
            self.refused(r)
        except Exception:
            log.exception("handling a frame from %r failed", conn, extra=about(bot=conn.bot))
            conn.error("internal_error", "the server failed on this message; the failure was logged")

    def refused(self, r: Refusal) -> None:
        """Answer a refusal with its ``error``, and tell the ladder, where a refusal during
        qualification fails the bot."""
        self.conn.send(r.to_error())
        self._tell_ladder(r)

    def admitted(self) -> bool:
        """Charge the frame to the rate limit (:meth:`Connection.admit`, which answers a refusal
        itself); a connection closed for ``flood`` is a protocol break the ladder hears of."""
        conn = self.conn
        if conn.admit():
            return True
        if conn.flooded:
            self._tell_ladder(Refusal("flood", "kept sending while rate limited: closed"))
        return False

    def _tell_ladder(self, r: Refusal) -> None:
        if self.conn.bot is not None:
            self.arena.ladder.refused(self.conn.bot, r)
            if self.arena.cluster is not None:
                self.arena.cluster.refused(self.conn.bot, r)

    def read(self, msg: WSMessage) -> ClientMessage | None:
        """The message in a frame (``None`` for control frames); raises :class:`Refusal`."""
        if msg.type is WSMsgType.TEXT:
            if frame_too_large(msg.data, self.arena.settings.max_frame_bytes):
                raise Refusal("frame_too_large", f"frames are at most {self.arena.settings.max_frame_bytes} bytes")
            return parse(msg.data)
        if msg.type is WSMsgType.BINARY:
            raise Refusal("binary_frame", "send JSON in text frames, not binary ones")
        return None

    def paced(self, m: ClientMessage) -> bool:
        """Whether ``m`` is the bot's first answer to a pending decision (not charged)."""
        bot = self.conn.bot
        return type(m) is PlayMove and bot is not None and self.arena.manager.paces(bot, m.game_id, m.request_id)

    async def dispatch(self, m: ClientMessage) -> None:
        conn, arena = self.conn, self.arena
        if isinstance(m, Hello):
            if conn.authenticated:
                raise Refusal("already_authenticated", "this connection said hello already")
            await self.hello(m)
            return
        if not conn.authenticated:
            raise Refusal("not_authenticated", "the first message must be hello")
        if isinstance(m, Ping):
            conn.send(Pong(m.data))
        elif isinstance(m, Watch):
            if arena.cluster is not None and arena.manager.lookup(m.game_id) is None:
                await arena.cluster.learn_game(m.game_id)  # one started a moment ago elsewhere
            arena.manager.watch(conn, m.game_id)
        elif isinstance(m, Unwatch):
            arena.manager.unwatch(conn, m.game_id)
        elif conn.bot is None:
            raise Refusal("spectator", f"a spectator may watch, unwatch and ping, not {type(m).__struct_config__.tag}",
                          game_id=getattr(m, "game_id", None), request_id=getattr(m, "request_id", None))
        elif isinstance(m, PlayMove):
            arena.manager.play(conn.bot, m.game_id, m.request_id, m.move)
        elif isinstance(m, Challenge):
            await arena.challenges.challenge(conn.bot, m.opponent)
        elif isinstance(m, Accept):
            arena.challenges.accept(conn.bot, m.challenge_id)
        elif isinstance(m, Decline):
            arena.challenges.decline(conn.bot, m.challenge_id)
        elif isinstance(m, Resign):
            arena.manager.resign(conn.bot, m.game_id)
        elif isinstance(m, SetCapacity):
            conn.max_games = min(m.max_games, arena.settings.max_games)
            if arena.cluster is not None:
                arena.cluster.capacity_changed(conn.bot, conn.max_games)
            arena.ladder.wake()
        elif isinstance(m, (Seek, Unseek)):
            self.seek(conn.bot, isinstance(m, Seek))
        else:  # pragma: no cover - every ClientMessage is handled above
            raise Refusal("unknown_type", f"unhandled message {m!r}")

    def seek(self, bot: str, seeking: bool) -> None:
        """The ladder hears a seek where it runs: here, or on the cluster's pairing leader,
        once the seek limit has let it through."""
        arena = self.arena
        arena.ladder.admit_seek(bot)
        if arena.cluster is not None:
            arena.cluster.seek(bot, seeking)
        elif seeking:
            arena.ladder.seek(bot)
        else:
            arena.ladder.unseek(bot)

    async def hello(self, m: Hello) -> None:
        conn, arena = self.conn, self.arena
        if m.protocol != PROTOCOL_VERSION:
            conn.error("unsupported_version", f"this server speaks protocol {PROTOCOL_VERSION}, not {m.protocol}")
            conn.close(CLOSE_UNSUPPORTED_VERSION, "unsupported version")
            return
        if m.token is None:
            self._authenticated()
            conn.send(Welcome(PROTOCOL_VERSION, None, arena.limits, []))
            return
        if not conn.token_allowed:
            log.warning("a hello with a token from %s without TLS refused (require_tls)", conn.peer)
            conn.error("tls_required", "this server takes tokens only by TLS: connect to wss://; this token crossed "
                                       "the network unencrypted, so rotate it (POST /api/bots/{name}/token)")
            conn.close(CLOSE_TLS_REQUIRED, "tls required")
            return
        token_hash = hash_token(m.token)
        while True:  # a token retired while it was looked up is looked up again (Presence.retire)
            retirements = arena.presence.retirements
            try:
                row = await arena.storage.bot_by_token_hash(token_hash)
            except Exception as e:  # storage fails: the bot tries again soon, not after the hello's 10 s
                recorder = arena.manager.recorder
                recorder.faults.note("checking a hello's token", e)
                conn.error("storage_unavailable", "the server cannot read its bots right now: connect again "
                                                  "in a moment", retry_after=recorder.retry_after)
                conn.close(CLOSE_TRY_AGAIN_LATER, "storage unavailable")
                return
            if arena.presence.retirements == retirements:
                break
        if row is None:
            log.info("a hello with a token no bot has (unknown, rotated or revoked) from %s", conn.peer)
            if m.token != m.token.strip():  # read with its file's newline: say so, whoever's it is
                conn.error("bad_token", "no bot has this token: it has white space around it (the newline of its "
                                        "file?), which no token holds; send the token alone")
            else:
                conn.error("bad_token", "no bot has this token")
            conn.close(CLOSE_BAD_TOKEN, "bad token")
            return
        if conn.closing:
            return
        self._authenticated()
        conn.bot = row.name
        conn.token_hash = token_hash
        conn.max_games = min(m.max_games, arena.settings.max_games)
        old = arena.presence.attach(row.name, conn)
        if old is not None:
            old.close(CLOSE_REPLACED, "replaced by a new connection")
        conn.send(Welcome(PROTOCOL_VERSION, row.name, arena.limits, arena.manager.game_ids_of(row.name)))
        if arena.cluster is not None:
            # Recorded for the cluster after ``welcome``: the nodes hosting the bot's games
            # resume them here as soon as they hear of it.
            conn.place = await arena.cluster.attached(row.name, conn)
            if arena.presence.get_local(row.name) is not conn:
                return  # replaced while it was recorded
        log.info("bot %s connected (%s%s, client %r)", row.name, conn.peer, ", TLS" if conn.tls else "", m.client,
                 extra=about(bot=row.name))
        arena.manager.bot_arrived(row.name)
        arena.ladder.bot_arrived(row.name)
        arena.tournaments.wake()

    def _authenticated(self) -> None:
        self.conn.authenticated = True
        if self.hello_timer is not None:
            self.hello_timer.cancel()

    def closed(self) -> None:
        """The socket is gone: leave watched games; if this was the bot's live connection,
        tell its opponents and drop its challenges."""
        if self.hello_timer is not None:
            self.hello_timer.cancel()
        arena, conn = self.arena, self.conn
        arena.presence.closed(conn)
        arena.manager.connection_closed(conn)
        if conn.bot is not None and arena.presence.detach(conn.bot, conn):
            log.info("bot %s disconnected", conn.bot, extra=about(bot=conn.bot))
            if arena.cluster is not None and arena.cluster.detached(conn.bot, conn.place):
                return  # it is connected to another node now
            arena.manager.bot_left(conn.bot)
            arena.challenges.bot_left(conn.bot)
            arena.ladder.bot_left(conn.bot)


async def websocket_handler(request: web.Request) -> web.WebSocketResponse:
    """``GET /ws``: one session from upgrade to close."""
    arena = request.app[ARENA]
    settings = arena.settings
    with connection_slot(request):
        ws = web.WebSocketResponse(heartbeat=settings.heartbeat_s, max_msg_size=max_msg_size(HARD_FRAME_CAP),
                                    compress=False)
        await ws.prepare(request)
        return await _session(arena, ws, request)


async def _session(arena: Arena, ws: web.WebSocketResponse, request: web.Request) -> web.WebSocketResponse:
    settings = arena.settings
    conn = Connection(ws, settings, request, arena.audience, arena.frames)
    arena.presence.opened(conn)
    session = Session(arena, conn)
    session.hello_timer = asyncio.get_running_loop().call_later(settings.hello_timeout_s, session.hello_timeout)
    try:
        async for msg in ws:
            await session.on_frame(msg)
    except Exception:
        log.exception("connection %r failed", conn, extra=about(bot=conn.bot))
    finally:
        try:
            session.closed()
        except Exception:
            log.exception("cleaning up %r failed", conn, extra=about(bot=conn.bot))
        await conn.shutdown()
    return ws
