"""An asyncio client for Mandala Arena: a bot author writes ``choose(view, legal)``, this does
the rest of the protocol (``protocol/PROTOCOL.md``).

::

    import asyncio
    from mandala_client import run_bot

    class FirstMove:
        def choose(self, view, legal):
            return legal[0]

    asyncio.run(run_bot(FirstMove(), url="ws://127.0.0.1:8080/ws", token="...", ladder=True))

The client connects and says ``hello``, decodes every frame with the protocol's own types,
answers each ``decision`` within its deadline (:class:`~mandala_client.games.Chooser`), plays
up to ``max_games`` games at once, and reconnects with backoff after a dropped connection (the
server resumes the running games, §13) — except after the close codes that say a retry would
fail again (4001 bad token, 4002 protocol version, 4009 replaced by another connection, 4011
token retired, 4012 TLS required). A bot whose token comes from a file (``token_file``) reads it
at each connection, so after a rotation (4011) it waits a few seconds for the file to hold the
new token and goes on with it: ``mandala bot rotate NAME --token-file FILE`` writes it there.

A ``wss://`` server's certificate is verified against the system's trust store and, for a
private certificate authority, ``ca_file``; one that does not verify stops the client with
the reason (:mod:`mandala_client.tls`).

What it does besides answering decisions, by mode: with ``ladder`` it sends ``seek`` after
every ``welcome`` (so again after a reconnect); with ``challenge`` it keeps one challenge to
that bot open while it has room for a game; with ``accept`` (the default) it accepts every
challenge; with ``games`` it stops once that many games are over. A bot the organizer removes
from the ladder plays on: it finishes its running games and keeps playing challenges, but
seeks no more until a ``ladder`` message says it was restored (the organizer's decision, not
a reason to disconnect). A bot may also define ``on_game_start(start)``, ``on_update(update)``,
``on_game_over(over)`` and ``on_ladder(status)``, plain or ``async``; they get the protocol's
messages and should be quick.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import random
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from importlib import metadata
from typing import Any, get_args

import aiohttp
import msgspec

from mandala import Move
from protocol.messages import (
    CLOSE_BAD_TOKEN,
    CLOSE_REPLACED,
    CLOSE_TLS_REQUIRED,
    CLOSE_TOKEN_RETIRED,
    CLOSE_UNSUPPORTED_VERSION,
    PROTOCOL_VERSION,
    Accept,
    Challenge,
    Challenged,
    ChallengeDeclined,
    ClientMessage,
    Decision,
    Decline,
    Error,
    ErrorCode,
    GameOver,
    GameStart,
    Hello,
    LadderStatus,
    OpponentAway,
    OpponentBack,
    PlayMove,
    Resign,
    Seek,
    ServerMessage,
    Unseek,
    Update,
    Welcome,
)

from .credentials import CredentialError, read_token_file
from .games import Chooser, Fallback, FinishedGame, GameState, call_hook
from .tls import client_context, explain
from .tolerant import relaxed, strict_type

log = logging.getLogger("mandala_client")

NO_RETRY: dict[int, str] = {
    CLOSE_BAD_TOKEN: "the server does not know this token",
    CLOSE_UNSUPPORTED_VERSION: f"the server does not speak protocol version {PROTOCOL_VERSION}",
    CLOSE_REPLACED: "another connection of this bot took over",
    CLOSE_TOKEN_RETIRED: "this token was rotated or revoked: connect with the bot's new token",
    CLOSE_TLS_REQUIRED: "the server takes tokens only by TLS: connect to its wss:// address",
}
"""Close codes after which reconnecting would fail again or fight the other connection (§15.3)."""

ROTATION_WAIT_S = 10.0
"""After 4011, how long a client whose token comes from a file waits for the new one there."""
ROTATION_POLL_S = 0.1

RETRY_AFTER_S = 1.0
"""Pause before challenging again after a decline, an offline opponent or a rate limit."""
MAX_RESEEKS = 3
"""Failed ladder qualifications in a row before the client gives up."""
PAIR_WAIT_S = 15.0
"""With ``games`` set: how long the client waits, its games done, for the return game of a
duplicate pair whose first game it played (the pair's two games cancel the deal's luck)."""
KEEP_FINISHED = 1000
"""Finished games kept in :attr:`Client.finished` (a bot may run for months)."""

_decoder = msgspec.json.Decoder(ServerMessage)  # type: ignore[arg-type]
_tolerant: msgspec.json.Decoder[Any] | None = None
"""Reads a frame that names a value a newer server added (PROTOCOL.md §16); made when needed."""
KNOWN_ERRORS = frozenset(get_args(ErrorCode))


def _read(data: str) -> tuple[Any, msgspec.ValidationError | None]:
    """The server's message in a frame; and, when only the tolerant types read it, why the
    strict ones did not. Raises ``msgspec.DecodeError`` when neither reads it."""
    global _tolerant
    try:
        return _decoder.decode(data), None
    except msgspec.ValidationError as e:
        if _tolerant is None:
            _tolerant = msgspec.json.Decoder(relaxed(ServerMessage))
        return _tolerant.decode(data), e
_encoder = msgspec.json.Encoder()


class ClientError(Exception):
    """The client cannot go on (a challenge to a bot that does not exist, a qualification
    failed again and again, no server reachable): retrying would not help."""


class ConnectionRejected(ClientError):
    """The server closed the connection with a code that forbids reconnecting (``code``)."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def _no_websocket(url: str, status: int, reason: str) -> str:
    """Why ``url`` cannot be played on, when the server answered it with HTTP ``status`` and no
    WebSocket: a path other than the arena's ``/ws`` is the usual cause (``ws://host:port``)."""
    text = f"no WebSocket at {url} (the server answered HTTP {status}: {reason}); not reconnecting"
    parts = urllib.parse.urlsplit(url)
    if status in (200, 404, 405) and not parts.path.endswith("/ws"):
        text += f"; the arena's WebSocket is at /ws: {urllib.parse.urlunsplit(parts._replace(path=parts.path.rstrip('/') + '/ws'))}"
    return text


def version() -> str:
    """The installed client distribution's version (``dev`` when run from a bare checkout)."""
    try:
        return metadata.version("mandala-arena-client")
    except metadata.PackageNotFoundError:
        return "dev"


def _software() -> str:
    return f"mandala_client/{version()} (python)"


class Client:
    """One bot on one server, reconnecting as needed. :meth:`run` plays until the games are
    done, :meth:`stop` is called, or a :class:`ClientError` ends it.

    ``bot`` needs ``choose(view, legal) -> move`` (plain or ``async``). Timing and fallbacks
    are :class:`~mandala_client.games.Chooser`'s: ``margin_ms`` (time kept back from each
    decision, default 20 % of it within 50–500 ms) and ``fallback`` (``"random"`` or
    ``"first"`` legal move). ``reconnect_delay_s`` doubles after each failed attempt up to
    ``max_reconnect_delay_s``; after ``max_failures`` attempts in a row without a ``welcome``
    the client gives up (``None``: never). ``token`` is the bot's token, or ``token_file`` the
    file that holds it (read again at each connection); ``ca_file`` the CA file of a private
    certificate authority that signed a ``wss://`` server's certificate. Raises
    :class:`~mandala_client.credentials.CredentialError` for a token file and
    :class:`~mandala_client.tls.TlsSetupError` for a CA file that cannot be read.
    """

    def __init__(
        self,
        bot: Any,
        *,
        url: str,
        token: str | None = None,
        token_file: str | None = None,
        ca_file: str | None = None,
        max_games: int = 1,
        ladder: bool = False,
        challenge: str | None = None,
        accept: bool = True,
        games: int | None = None,
        margin_ms: float | None = None,
        fallback: Fallback = "random",
        client_name: str | None = None,
        reconnect_delay_s: float = 0.5,
        max_reconnect_delay_s: float = 30.0,
        max_failures: int | None = 8,
        heartbeat_s: float | None = 30.0,
        session: aiohttp.ClientSession | None = None,
    ) -> None:
        if not 1 <= max_games <= 64:
            raise ValueError(f"max_games is 1 to 64, not {max_games}")
        if games is not None and games < 1:
            raise ValueError(f"games is at least 1 (or None: no limit), not {games}")
        if ladder and challenge:
            raise ValueError("ladder and challenge exclude each other")
        if (token is None) == (token_file is None):
            raise ValueError("give the bot's token, or the file that holds it (token_file), not both")
        self.bot = bot
        self.url = url
        self.token_file = token_file
        self.token = token if token is not None else read_token_file(token_file)  # type: ignore[arg-type]
        self._ssl = client_context(ca_file)
        self.max_games = max_games
        self.ladder = ladder
        self.challenge_opponent = challenge
        self.accept = accept
        self.games = games
        self.client_name = (client_name or f"{type(bot).__name__} via {_software()}")[:100]
        self.reconnect_delay_s = reconnect_delay_s
        self.max_reconnect_delay_s = max_reconnect_delay_s
        self.max_failures = max_failures
        self.heartbeat_s = heartbeat_s
        self._chooser = Chooser(bot, margin_ms, fallback)
        self._session = session

        self.name: str | None = None
        """The bot's name, once a ``welcome`` has said it."""
        self.running: dict[str, GameState] = {}
        self.finished: collections.deque[FinishedGame] = collections.deque(maxlen=KEEP_FINISHED)
        self.errors: list[Error] = []
        """Every ``error`` the server sent (the latest ``KEEP_FINISHED``)."""
        self.ladder_status: LadderStatus | None = None
        self.started = 0
        """Games begun on this client (a resumed game counts when this client first sees it)."""
        self.ended = 0
        """Games over (those ended while disconnected included)."""
        self.attempts = 0
        """Connections opened (or tried)."""
        self.welcomes = 0
        """Sessions the server accepted: 1 plus the successful reconnects."""
        self.connected = asyncio.Event()
        """Set while a session is open (between ``welcome`` and the connection's end)."""

        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._welcomed = False
        self._stopping = False
        self._stopped = asyncio.Event()
        self._session_error: Error | None = None
        self._fatal: ClientError | None = None
        self._again_now = False
        """Reconnect at once, not counted as a failure (a new token was found in the file)."""
        self._challenge_out = False
        self._unseek_sent = False
        self._seek_unanswered = False
        """A ``seek`` sent that no ``ladder`` answered yet (a refusal to try again is for it)."""
        self._accepting = 0
        """Challenges accepted whose game has not started yet: they count against ``max_games``."""
        self._reseeks = 0
        self._removed = False
        """Removed from the ladder by the organizer (as the server last said): no seeking."""
        self._open_pairs: set[str] = set()
        """Duplicate pairs whose first game started here and whose return game has not."""
        self._pair_wait: asyncio.TimerHandle | None = None
        self._timers: set[asyncio.TimerHandle] = set()
        self._tasks: set[asyncio.Future[Any]] = set()
        self._send_lock = asyncio.Lock()
        self._rng = random.Random()
        self._handlers: dict[type, Callable[[Any], Awaitable[None]]] = {
            Update: self._on_update, GameStart: self._on_game_start, GameOver: self._on_game_over,
            Welcome: self._on_welcome, Challenged: self._on_challenged, ChallengeDeclined: self._on_declined,
            Error: self._on_error, LadderStatus: self._on_ladder, OpponentAway: self._on_opponent,
            OpponentBack: self._on_opponent,
        }

    # ------------------------------------------------------------------ public control

    async def run(self) -> list[FinishedGame]:
        """Connect and play; returns the finished games (the latest ``KEEP_FINISHED``).

        Raises :class:`ConnectionRejected` on a close code that forbids retrying and
        :class:`ClientError` when going on makes no sense; a ``stop()`` returns normally.
        """
        session = self._session or aiohttp.ClientSession()
        failures = 0
        try:
            while not self._stopping:
                self.attempts += 1
                before = self.welcomes
                why = await self._session_once(session)
                if self._fatal is not None:
                    raise self._fatal
                if self._stopping:
                    break
                if self._again_now:
                    self._again_now = False
                    continue
                failures = 0 if self.welcomes > before else failures + 1
                if self.max_failures is not None and failures >= self.max_failures:
                    raise ClientError(f"cannot connect to {self.url} ({why}); gave up after {failures} attempts")
                delay = min(self.max_reconnect_delay_s, self.reconnect_delay_s * 2 ** max(0, failures - 1))
                delay *= 0.75 + 0.5 * self._rng.random()
                self._log(logging.WARNING, "%s (%s); reconnecting in %.1f s",
                          "connection lost" if failures == 0 else "could not connect", why, delay)
                try:
                    await asyncio.wait_for(self._stopped.wait(), delay)
                except TimeoutError:
                    pass
        finally:
            self._stopping = True
            for game in self.running.values():
                game.cancel()
            if self._session is None:
                await session.close()
        return list(self.finished)

    def stop(self) -> None:
        """Close the connection and make :meth:`run` return. Running games are not resigned:
        the server plays them on, and their clocks run out unless this bot comes back."""
        self._stopping = True
        self._stopped.set()
        self._close_soon()

    async def send(self, message: ClientMessage) -> bool:
        """Send any client message on the open session; ``False`` if none is open."""
        ws = self._ws
        if ws is None or ws.closed or (not self._welcomed and not isinstance(message, Hello)):
            return False
        async with self._send_lock:
            try:
                await ws.send_str(_encoder.encode(message).decode())
            except (ConnectionError, RuntimeError) as e:
                self._log(logging.DEBUG, "could not send %s: %s", type(message).__name__, e)
                return False
        return True

    async def challenge(self, opponent: str) -> bool:
        """Challenge ``opponent`` once (the ``challenge`` mode repeats this by itself)."""
        return await self.send(Challenge(opponent))

    async def resign(self, game_id: str) -> bool:
        return await self.send(Resign(game_id))

    async def seek(self) -> bool:
        self._seek_unanswered = True
        return await self.send(Seek())

    async def unseek(self) -> bool:
        return await self.send(Unseek())

    # ------------------------------------------------------------------ one connection

    async def _session_once(self, session: aiohttp.ClientSession) -> str:
        """Connect, play until the connection ends; why it ended, in words."""
        self._welcomed = False
        self._challenge_out = False
        self._unseek_sent = False
        self._seek_unanswered = False
        self._accepting = 0
        self._session_error = None
        self._reread_token()
        try:
            async with session.ws_connect(self.url, heartbeat=self.heartbeat_s, ssl=self._ssl) as ws:
                self._ws = ws
                if self._stopping:
                    return "stopped"
                await self.send(Hello(PROTOCOL_VERSION, self.token, self.max_games, self.client_name))
                heard: int | None = None
                while True:
                    frame = await ws.receive()
                    if frame.type is aiohttp.WSMsgType.TEXT:
                        await self._on_frame(frame.data, time.monotonic())
                    elif frame.type is aiohttp.WSMsgType.BINARY:
                        self._log(logging.WARNING, "ignored a binary frame")
                    elif frame.type is aiohttp.WSMsgType.ERROR:
                        return f"error: {ws.exception()}"
                    elif frame.type is aiohttp.WSMsgType.CLOSE:
                        heard = frame.data  # the server's code, even if the answer to it fails (TLS)
                        break
                    elif frame.type in (aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.CLOSED):
                        break
                # The close frame's code: over TLS the server may end the connection before this
                # client's answer to it is written, which aiohttp then reports as 1006.
                code = heard if heard is not None else ws.close_code
        except (TimeoutError, aiohttp.ClientError, OSError) as e:
            tls = explain(self.url, e)
            if tls is not None:  # retrying would meet the same certificate
                self._fatal = ClientError(tls)
            elif isinstance(e, aiohttp.WSServerHandshakeError) and e.status != 429 and e.status < 500:
                # No WebSocket there (the page of a wrong path: 200, 404) would come again at every
                # attempt; a 429 or a 5xx (a proxy while its node restarts) may pass, and is retried.
                self._fatal = ClientError(_no_websocket(self.url, e.status, e.message))
            if isinstance(e, aiohttp.ClientConnectorError) and tls is None:
                return f"cannot reach {e.host}:{e.port}: {e.os_error.strerror or e.os_error}"
            return f"{e.__class__.__name__}: {e}"
        finally:
            self._ws = None
            self._welcomed = False
            self.connected.clear()
            for timer in self._timers:
                timer.cancel()
            self._timers.clear()
        rotated = code in (CLOSE_TOKEN_RETIRED, CLOSE_BAD_TOKEN) and self.token_file and not self._stopping
        if rotated and await self._new_token(ROTATION_WAIT_S if code == CLOSE_TOKEN_RETIRED else 0.0):
            self._again_now = True
            self._log(logging.INFO, "closed with %d: reconnecting with the new token in %s", code, self.token_file)
            return f"closed with {code}"
        if code in NO_RETRY and not self._stopping:
            last = self._session_error.message if self._session_error else ""
            self._fatal = ConnectionRejected(
                f"closed with {code}: {NO_RETRY[code]}" + (f" ({last})" if last else "") + "; not reconnecting", code)
        return f"closed with {code}"

    def _reread_token(self) -> None:
        """A token file is read at each connection (a rotation may have written a new one)."""
        if self.token_file is None:
            return
        try:
            self.token = read_token_file(self.token_file)
        except CredentialError as e:
            self._log(logging.WARNING, "%s; trying the token read before", e)

    async def _new_token(self, wait_s: float) -> bool:
        """Whether the token file holds another token than the one just refused, waiting up to
        ``wait_s`` for it (the rotation's answer may not be written there yet)."""
        assert self.token_file is not None
        old = self.token
        deadline = time.monotonic() + wait_s
        while True:
            self._reread_token()
            if self.token != old:
                return True
            if time.monotonic() >= deadline or self._stopping:
                return False
            try:
                await asyncio.wait_for(self._stopped.wait(), ROTATION_POLL_S)
            except TimeoutError:
                pass

    async def _on_frame(self, data: str, received: float) -> None:
        try:
            msg, newer = _read(data)
        except msgspec.DecodeError as e:
            self._log(logging.WARNING, "ignored a frame the protocol does not define (%s): %.200s", e, data)
            return
        if newer is not None:
            self._log(logging.INFO, "read a frame with a value this client does not know (%s): a newer server", newer)
        try:
            await self._dispatch(msg, received)
        except ClientError as e:
            self._fatal = e
            self._close_soon()

    async def _dispatch(self, msg: Any, received: float) -> None:
        if isinstance(msg, Decision):
            self._on_decision(msg, received)
            return
        handler = self._handlers.get(strict_type(msg))
        if handler is not None:  # move_accepted, challenge_sent, pong: nothing to do
            await handler(msg)

    async def _on_update(self, msg: Update) -> None:
        if msg.game_id in self.running:
            await call_hook(self.bot, "on_update", msg)

    async def _on_declined(self, msg: ChallengeDeclined) -> None:
        self._log(logging.INFO, "challenge to %s declined (%s)", self.challenge_opponent, msg.reason)
        self._retry_challenge(RETRY_AFTER_S)

    async def _on_opponent(self, msg: OpponentAway | OpponentBack) -> None:
        if isinstance(msg, OpponentAway):
            left = "no decision of its pending" if msg.grace_ms is None else f"its time left: {msg.grace_ms} ms"
            self._log(logging.INFO, "game %s: the opponent is away (%s)", msg.game_id, left)
        else:
            self._log(logging.INFO, "game %s: the opponent is back", msg.game_id)

    # ------------------------------------------------------------------ session and modes

    @property
    def removed(self) -> bool:
        """Whether the organizer removed this bot from the ladder (it plays on, seeks no more)."""
        return self._removed

    async def _on_welcome(self, msg: Welcome) -> None:
        self.name = msg.bot
        self.welcomes += 1
        self._welcomed = True
        self.connected.set()
        self._log(logging.INFO, "connected to %s (decisions: %d ms, %d games to resume)",
                  self.url, msg.limits.decision_ms, len(msg.games))
        for game_id in [g for g in self.running if g not in msg.games]:
            game = self.running.pop(game_id)
            game.cancel()
            self._record(FinishedGame.of(game, None))
        if self._stop_if_done():
            return
        if self.ladder and self._want_more():
            # Even after a removal: a restore while this bot was away is told by no message,
            # so the answer to this seek (``ladder``, or ``error`` ``removed``) says where it stands.
            await self.seek()
        await self._maybe_challenge()

    async def _on_game_start(self, msg: GameStart) -> None:
        known = self.running.get(msg.game_id)
        if known is not None:
            self._log(logging.INFO, "game %s resumed", msg.game_id)
            await call_hook(self.bot, "on_game_start", msg)
            return
        game = GameState.of(msg)
        self.running[msg.game_id] = game
        self.started += 1
        if msg.pair_id is not None and not msg.resumed and self.games is not None:
            # A pair's first game opens it, its return game closes it; kept only to stop after
            # ``games``, so a pair whose return game the server dropped is not kept for months.
            self._open_pairs ^= {msg.pair_id}
        if msg.kind == "challenge" and self._accepting:
            self._accepting -= 1
        if game.opponent == self.challenge_opponent:
            self._challenge_out = False
        rated = "rated" if msg.rated else "unrated"
        self._log(logging.INFO, "game %s %s: seat %d against %s (%s, %s)", msg.game_id,
                  "resumed" if msg.resumed else "started", msg.seat, game.opponent, msg.kind, rated)
        await call_hook(self.bot, "on_game_start", msg)
        if self.ladder and not self._want_more() and not self._unseek_sent:
            self._unseek_sent = True
            await self.unseek()
        await self._maybe_challenge()

    async def _on_game_over(self, msg: GameOver) -> None:
        game = self.running.pop(msg.game_id, None)
        if game is None:
            return
        game.cancel()
        self._record(FinishedGame.of(game, msg.result))
        if msg.result.end_reason == "aborted" and game.pair_id is not None:
            self._open_pairs.discard(game.pair_id)  # no return game follows an aborted one
        await call_hook(self.bot, "on_game_over", msg)
        if not self._stop_if_done():
            await self._maybe_challenge()

    def _record(self, finished: FinishedGame) -> None:
        self.ended += 1
        self.finished.append(finished)
        level = logging.WARNING if finished.result is None else logging.INFO
        self._log(level, "game %s over: %s%s", finished.game_id, finished.describe(), self._progress())

    async def _on_challenged(self, msg: Challenged) -> None:
        # The server accepts whatever this bot already plays (PROTOCOL.md §5.4): the room is
        # counted here, games accepted but not started yet included.
        room = len(self.running) + self._accepting < self.max_games
        if self.accept and room and self._want_more(self._accepting):
            self._accepting += 1
            self._log(logging.INFO, "accepting the challenge of %s", msg.challenger)
            await self.send(Accept(msg.challenge_id))
        else:
            await self.send(Decline(msg.challenge_id))

    async def _on_error(self, msg: Error) -> None:
        self.errors.append(msg)
        self._session_error = msg
        del self.errors[:-KEEP_FINISHED]
        if msg.code == "removed":  # the answer to a seek while removed: not a fault of this bot
            self._on_removed(msg.message)
            return
        where = f" (game {msg.game_id}, request {msg.request_id})" if msg.game_id else ""
        rule = f" [{msg.rule}]" if msg.rule else ""
        self._log(logging.WARNING, "server error %s%s: %s%s", msg.code, rule, msg.message, where)
        if msg.code in ("unknown_bot", "challenge_self"):
            if self.challenge_opponent is not None:  # the mode cannot go on; a bot's own challenge() can
                raise ClientError(f"cannot challenge {self.challenge_opponent!r}: {msg.message}")
            return
        if (msg.code in ("bot_offline", "unknown_challenge", "storage_unavailable", "cluster_unavailable")
                and self._accepting and msg.game_id is None):
            self._accepting -= 1  # an accept that starts no game (its challenger left, it expired, …)
        # "Try again later" (PROTOCOL.md §5.3, §5.11, §20.1): a seek or a challenge refused so.
        delay = msg.retry_after or RETRY_AFTER_S
        if msg.code == "cluster_unavailable" or (msg.code == "rate_limited" and msg.limit == "seeks"):
            self._retry_seek(delay)
        if msg.code in ("bot_offline", "storage_unavailable", "cluster_unavailable") or (
                msg.code == "rate_limited" and msg.limit != "seeks"):
            self._retry_challenge(delay)
        if msg.code not in KNOWN_ERRORS:  # added by a newer server: a plain refusal (§16), tried again
            self._retry_seek(delay)
            self._retry_challenge(delay)

    async def _on_ladder(self, msg: LadderStatus) -> None:
        self.ladder_status = msg
        self._seek_unanswered = False
        self._log(logging.INFO, "ladder: %s", msg.message)
        await call_hook(self.bot, "on_ladder", msg)
        if msg.state == "removed":
            self._on_removed(msg.message)
            return
        if self._removed:
            self._removed = False
            if self.ladder and self._want_more() and not msg.seeking and msg.state in ("qualifying", "listed"):
                self._log(logging.INFO, "restored to the ladder by the organizer: seeking again")
                await self.seek()
        if msg.state == "listed":
            self._reseeks = 0
        elif msg.state == "failed" and self.ladder and self._want_more():
            self._reseeks += 1
            if self._reseeks > MAX_RESEEKS:
                raise ClientError(f"failed the ladder qualification {self._reseeks} times in a row: {msg.message}")
            await self.seek()

    def _on_removed(self, why: str) -> None:
        """The organizer's decision, not a failure: running games and challenges go on, the
        connection stays, only seeking stops (the server has stopped it already)."""
        if not self._removed:
            said = why if why.startswith("removed from the ladder") else f"removed from the ladder by the organizer: {why}"
            self._log(logging.WARNING, "%s; playing on (running games, challenges), no more seeking", said)
        self._removed = True

    def _want_more(self, pending: int = 0) -> bool:
        """Whether to begin another game (accept, challenge, seek), ``pending`` more being on
        their way already."""
        return not self._stopping and (self.games is None or self.started + pending < self.games)

    def _done(self) -> bool:
        return self.games is not None and self.ended >= self.games and not self.running

    def _stop_if_done(self) -> bool:
        """With ``games`` set and that many games over: stop, once the return game of every
        pair whose first game was played here is over too (waited for up to
        :data:`PAIR_WAIT_S`). Whether the games are done."""
        if not self._done():
            return False
        if not self._open_pairs:
            self.stop()
        elif self._pair_wait is None:
            self._log(logging.INFO, "waiting up to %g s for the return game of pair %s", PAIR_WAIT_S,
                      ", ".join(sorted(self._open_pairs)))

            def waited() -> None:
                self._timers.discard(handle)
                self._open_pairs.clear()
                self._stop_if_done()

            handle = self._pair_wait = asyncio.get_running_loop().call_later(PAIR_WAIT_S, waited)
            self._timers.add(handle)
        return True

    async def _maybe_challenge(self) -> None:
        """In challenge mode, keep one challenge open while there is room for another game."""
        if (self.challenge_opponent is None or self._challenge_out or not self._welcomed
                or not self._want_more() or len(self.running) >= self.max_games):
            return
        self._challenge_out = True
        await self.challenge(self.challenge_opponent)

    def _retry_challenge(self, delay: float) -> None:
        if not self._challenge_out:
            return

        def again() -> None:
            self._timers.discard(handle)
            self._challenge_out = False
            self._spawn(self._maybe_challenge())

        handle = asyncio.get_running_loop().call_later(delay, again)
        self._timers.add(handle)

    def _retry_seek(self, delay: float) -> None:
        """Send the refused ``seek`` again after ``delay`` seconds, if it still stands."""
        if not self._seek_unanswered or not self.ladder:
            return

        def again() -> None:
            self._timers.discard(handle)
            if self._seek_unanswered and self._want_more() and not self._removed:
                self._spawn(self.seek())

        handle = asyncio.get_running_loop().call_later(delay, again)
        self._timers.add(handle)

    def _progress(self) -> str:
        return "" if self.games is None else f" [{self.ended}/{self.games}]"

    def _close_soon(self) -> None:
        ws = self._ws
        if ws is not None and not ws.closed:
            self._spawn(ws.close())

    def _spawn(self, coro: Any) -> None:
        """Run ``coro`` on its own, keeping a reference so the loop does not drop it midway."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _log(self, level: int, text: str, *args: Any) -> None:
        log.log(level, "%s: " + text, self.name or "mandala-bot", *args)

    # ------------------------------------------------------------------ decisions

    def _on_decision(self, d: Decision, received: float) -> None:
        game = self.running.get(d.game_id)
        if game is None:  # a decision before its game_start: should not happen, but answer it
            game = self.running[d.game_id] = GameState(d.game_id, d.seat, "?", "?", False)
        if game.request_id == d.request_id:
            # Re-sent after a reconnect: the answer (if any) was lost with the old connection.
            if game.answer is not None:
                self._spawn(self._send_move(game, d.request_id, game.answer))
            return  # else the choose in flight answers on this connection
        game.cancel()
        game.request_id, game.answer = d.request_id, None
        game.task = asyncio.ensure_future(self._answer(game, d, received))

    async def _answer(self, game: GameState, d: Decision, received: float) -> None:
        move, why = await self._chooser.choose(d, received)
        if game.request_id != d.request_id:
            return
        game.answer = move
        game.moves += 1
        if why is not None:
            game.fallbacks += 1
            self._log(logging.WARNING, "game %s, request %d: %s; answered with a fallback move", d.game_id,
                      d.request_id, why)
        await self._send_move(game, d.request_id, move)

    async def _send_move(self, game: GameState, request_id: int, move: Move) -> None:
        if not await self.send(PlayMove(game.game_id, request_id, move)):
            self._log(logging.DEBUG, "game %s: move for request %d not sent (not connected)", game.game_id, request_id)


async def run_bot(
    bot: Any,
    *,
    url: str,
    token: str | None = None,
    token_file: str | None = None,
    ca_file: str | None = None,
    ladder: bool = False,
    challenge: str | None = None,
    accept: bool = True,
    games: int | None = None,
    max_games: int = 1,
    **options: Any,
) -> list[FinishedGame]:
    """Play ``bot`` on the server at ``url`` until ``games`` games are over (``None``: until
    cancelled); see :class:`Client` for ``options``. Returns the finished games."""
    client = Client(bot, url=url, token=token, token_file=token_file, ca_file=ca_file, ladder=ladder,
                    challenge=challenge, accept=accept, games=games, max_games=max_games, **options)
    return await client.run()
