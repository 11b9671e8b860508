"""Test kit for the server tests: a WebSocket client that decodes and validates every frame
the server sends as a ``protocol.messages.ServerMessage``, and a ``Harness`` around a real
server (real sockets, a temp SQLite file) that creates bots and games.

Tests do not sleep and hope: they wait for frames with a timeout and shrink the server's own
clocks (``decision_ms``, ``challenge_expiry_s``, ...) through its settings; the one sleep is
the ``retry_after`` the server itself asks for.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import random
import selectors
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import msgspec
from aiohttp import WSMsgType, web
from aiohttp.test_utils import TestClient

from mandala.moves import MOVES
from protocol.live import TOP, LiveBatch, LiveTopChanged
from protocol.messages import (
    PROTOCOL_VERSION,
    Decision,
    Error,
    GameOver,
    GameStart,
    LiveStandings,
    Pong,
    ServerMessage,
    Standing,
    Update,
    Welcome,
)
from server.arena import ARENA, Arena
from server.config import Settings

T = TypeVar("T")

ADMIN = "admin-secret-token"
RECV_TIMEOUT = 5.0


def required_url(env: str, what: str, started_by: str) -> str:
    """The URL of a server some tests need, from ``$env``; without it they are skipped with a
    message nobody can miss, or fail when ``CI=true`` (CI must run every leg)."""
    import pytest

    url = os.environ.get(env)
    if not url:
        why = f"{what} DID NOT RUN: ${env} is not set (run `make test`, which starts {started_by}, or point it at a server)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(why + "; CI=true requires it", pytrace=False)
        pytest.skip(why)
    return url


def free_port() -> int:
    """A TCP port on 127.0.0.1 free right now, for servers the tests start as processes."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def settings_for(db: Path | str, **overrides: Any) -> Settings:
    """Test settings: a known admin token, and a rate limit out of the way (these bots answer
    as fast as the loop runs; the default 20 messages/s would throttle them)."""
    values: dict[str, Any] = {"db": str(db), "admin_token": ADMIN, "heartbeat_s": 5.0,
                              "messages_per_second": 10000.0, "burst": 10000}
    values.update(overrides)
    return Settings(**values)


_decoder = msgspec.json.Decoder(ServerMessage)  # type: ignore[arg-type]
_ping_ids = itertools.count()


class Closed(Exception):
    """The server closed the WebSocket (``code`` is its close code)."""

    def __init__(self, code: int | None) -> None:
        super().__init__(f"closed with {code}")
        self.code = code


async def slow_websocket(host: str, port: int, path: str, limit: int = 1 << 16) -> tuple[asyncio.StreamReader,
                                                                                       asyncio.StreamWriter]:
    """A WebSocket opened by hand on a socket that takes 4 KB at a time, read through a
    stream that stops reading past ``2 × limit`` bytes: a client on a slow machine, or one
    that hangs (what it reads is up to the caller)."""
    import base64

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, (host, port))
    reader, writer = await asyncio.open_connection(sock=sock, limit=limit)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 101"), head
    return reader, writer


class LiveStream:
    """A viewer of ``/live``: the batches it got, their events one at a time, and the top of
    the standings as a viewer following them has it (``standings`` replaces it, each
    ``top_changed`` changes it, as PROTOCOL.md §18.7 says)."""

    _decode = msgspec.json.Decoder(LiveBatch).decode

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.batches: list[LiveBatch] = []
        self.raw: list[str] = []
        """Each batch's frame as sent."""
        self.top: list[Standing] = []
        self.total = 0
        self.paused = False
        self._events: list[Any] = []

    async def batch(self, timeout: float = RECV_TIMEOUT) -> LiveBatch:
        msg = await self.ws.receive(timeout=timeout)
        if msg.type is not WSMsgType.TEXT:
            raise Closed(self.ws.close_code)
        batch = self._decode(msg.data)
        self.raw.append(msg.data)
        self.batches.append(batch)
        for event in batch.messages:
            if isinstance(event, LiveStandings):
                assert event.offset == 0 and len(event.standings) == min(TOP, event.total)
                self.top, self.total, self.paused = list(event.standings), event.total, event.paused
            elif isinstance(event, LiveTopChanged):
                top = self.top[:event.rows] + [None] * (event.rows - len(self.top))
                for row in event.changed:
                    top[row.rank - 1] = row
                assert None not in top, f"a top_changed left rows unknown: {event}"
                self.top, self.total, self.paused = top, event.total, event.paused  # type: ignore[assignment]
        return batch

    async def event(self, timeout: float = RECV_TIMEOUT) -> Any:
        """The next event, from the batch already read or the next one."""
        while not self._events:
            self._events = list((await self.batch(timeout)).messages)
        return self._events.pop(0)

    async def next_of(self, kind: type[T], timeout: float = RECV_TIMEOUT) -> T:
        """The next event of type ``kind`` (those before it are passed over)."""
        while True:
            msg = await self.event(timeout)
            if isinstance(msg, kind):
                return msg

    async def close(self) -> None:
        await self.ws.close()


@dataclass
class WsClient:
    """One WebSocket connection. Every text frame received is decoded into the protocol's
    types (which validates it) and kept in ``frames``."""

    ws: aiohttp.ClientWebSocketResponse
    frames: list[Any] = field(default_factory=list)
    raw: list[str] = field(default_factory=list)

    async def recv(self, timeout: float = RECV_TIMEOUT) -> Any:
        """The next text frame, decoded; ``TimeoutError`` after ``timeout`` seconds. The
        deadline is the whole call's: the server's heartbeat pings, which the connection
        answers while reading, do not start it again (as ``ws.receive(timeout=…)`` would)."""
        async with asyncio.timeout(timeout):
            msg = await self.ws.receive()
        if msg.type is WSMsgType.CLOSE:
            raise Closed(msg.data)  # the code in the server's close frame
        if msg.type in (WSMsgType.CLOSING, WSMsgType.CLOSED):
            raise Closed(self.ws.close_code)
        assert msg.type is WSMsgType.TEXT, f"server sent a {msg.type} frame"
        decoded = _decoder.decode(msg.data)
        self.raw.append(msg.data)
        self.frames.append(decoded)
        return decoded

    async def expect(self, tp: type[T], timeout: float = RECV_TIMEOUT) -> T:
        """The next frame, which must be a ``tp``."""
        got = await self.recv(timeout)
        assert isinstance(got, tp), f"expected {tp.__name__}, got {got!r}"
        return got

    async def until(self, tp: type[T], timeout: float = RECV_TIMEOUT) -> T:
        """Skip frames until a ``tp`` arrives."""
        while True:
            got = await self.recv(timeout)
            if isinstance(got, tp):
                return got

    async def send(self, obj: Any) -> None:
        await self.ws.send_str(obj if isinstance(obj, str) else json.dumps(obj))

    async def send_move(self, decision: Decision, move: Any) -> None:
        await self.send({"type": "move", "game_id": decision.game_id, "request_id": decision.request_id,
                         "move": msgspec.to_builtins(move)})

    async def ping(self, timeout: float = RECV_TIMEOUT) -> list[Any]:
        """Round-trip a ping; returns the frames that arrived before its pong."""
        data = f"p{next(_ping_ids)}"
        await self.send({"type": "ping", "data": data})
        before = []
        while True:
            got = await self.recv(timeout)
            if isinstance(got, Pong) and got.data == data:
                return before
            before.append(got)

    async def error(self, timeout: float = RECV_TIMEOUT) -> Error:
        return await self.expect(Error, timeout)

    async def closed(self, timeout: float = RECV_TIMEOUT) -> int | None:
        """Wait for the server's close (frames before it are kept); its close code."""
        while True:
            try:
                await self.recv(timeout)
            except Closed as c:
                return c.code

    async def close(self) -> None:
        await self.ws.close()


class Harness:
    """A running server and helpers to drive it."""

    def __init__(self, client: TestClient) -> None:
        self.client = client
        self.tokens: dict[str, str] = {}
        """Each bot's token, by name, as created through :meth:`create_bot`."""

    @property
    def app(self) -> web.Application:
        return self.client.server.app  # type: ignore[return-value]

    @property
    def arena(self) -> Arena:
        return self.app[ARENA]

    async def create_bot(self, name: str) -> str:
        resp = await self.client.post("/api/bots", json={"name": name}, headers={"Authorization": f"Bearer {ADMIN}"})
        assert resp.status == 201, await resp.text()
        self.tokens[name] = (await resp.json())["token"]
        return self.tokens[name]

    async def ws(self) -> WsClient:
        return WsClient(await self.client.ws_connect("/ws"))

    async def connect(self, token: str | None, max_games: int = 1) -> WsClient:
        """A connection that said hello and got its ``welcome``."""
        c = await self.ws()
        hello: dict[str, Any] = {"type": "hello", "protocol": PROTOCOL_VERSION, "max_games": max_games}
        if token is not None:
            hello["token"] = token
        await c.send(hello)
        await c.expect(Welcome)
        return c

    async def bot(self, name: str, max_games: int = 1) -> WsClient:
        return await self.connect(await self.create_bot(name), max_games)

    async def start_game(self, players: list[str], **body: Any) -> str:
        resp = await self.client.post("/api/games", json={"players": players, **body},
                                      headers={"Authorization": f"Bearer {ADMIN}"})
        assert resp.status == 201, await resp.text()
        return (await resp.json())["game_id"]

    async def spectate(self, game_id: str) -> tuple[WsClient, Update]:
        """A spectator watching ``game_id``, and the ``update`` that answered its ``watch``."""
        spectator = await self.connect(None)
        await spectator.send({"type": "watch", "game_id": game_id})
        return spectator, await spectator.expect(Update)

    async def get_json(self, path: str, status: int = 200) -> Any:
        resp = await self.client.get(path)
        assert resp.status == status, await resp.text()
        assert resp.content_type == "application/json"
        return await resp.json()


Policy = Callable[[Decision], Any]


def standings_of(count: int, paused: bool = False, step: float = 0.5) -> LiveStandings:
    """A whole standings table of ``count`` listed bots (``bot-00000`` first), as a cluster's
    leader sends it to the other nodes: for the tests of what is served of a table whatever
    its size (the fit that computes one is tested in ``tests/ladder``)."""
    rows = []
    for i in range(count):
        rating = 2500.0 - i * step
        rows.append(Standing(rank=i + 1, bot=f"bot-{i:05d}", rating=rating, low=rating - 40.0, high=rating + 40.0,
                             elo=rating, games=40, wins=20, draws=0, losses=20, provisional=False, connected=False,
                             seeking=False, opponents=20, recent_games=0))
    return LiveStandings(paused=paused, standings=rows, total=count, offset=0)


def random_policy(seed: int) -> Policy:
    rng = random.Random(seed)
    return lambda d: rng.choice(d.legal)


def first_legal(d: Decision) -> Any:
    return d.legal[0]


async def play_out(client: WsClient, policy: Policy, games: int = 1, timeout: float = RECV_TIMEOUT) -> list[GameOver]:
    """Answer every decision with ``policy`` until ``games`` games are over."""
    overs: list[GameOver] = []
    while len(overs) < games:
        msg = await client.recv(timeout)
        if isinstance(msg, Decision):
            await client.send_move(msg, policy(msg))
        elif isinstance(msg, GameOver):
            overs.append(msg)
        elif isinstance(msg, Error):
            raise AssertionError(f"server refused a move: {msg}")
    return overs


async def play(client: WsClient, bot: Any) -> None:
    """Answer every decision with ``bot.choose`` (thinking off the event loop) until cancelled."""
    while True:
        msg = await client.recv(timeout=120)
        if isinstance(msg, Decision):
            move = await asyncio.to_thread(bot.choose, msg.view, msg.legal)
            await client.send_move(msg, move)


def illegal_move(d: Decision) -> dict[str, Any]:
    """A well-formed move that is not among the decision's legal moves."""
    legal = [msgspec.to_builtins(m) for m in d.legal]
    return next(m for m in (msgspec.to_builtins(x) for x in MOVES) if m not in legal)


@dataclass
class Misbehaved:
    """What :func:`misbehave` did: the illegal move it sent and the decisions it did it at."""

    sent: dict[str, Any] = field(default_factory=dict)
    illegal_at: int = -1
    stalled_at: int = -1


async def misbehave(client: WsClient, game_id: str, bad_frame: str) -> Misbehaved:
    """Play ``game_id`` badly: at the bot's 2nd decision an illegal move, then ``bad_frame %
    (game_id, request_id)`` (a frame that is no move), then a legal move; at its 4th decision
    no answer, so it loses on time; otherwise the first legal move."""
    done = Misbehaved()
    decisions = 0
    while True:
        msg = await client.recv(30)
        if isinstance(msg, GameOver):
            return done
        if not isinstance(msg, Decision):
            continue
        decisions += 1
        if decisions == 2:
            done.illegal_at = msg.request_id
            done.sent.update(illegal_move(msg))
            await client.send({"type": "move", "game_id": game_id, "request_id": msg.request_id, "move": done.sent})
            assert (await client.until(Error)).code == "illegal_move"
            await client.ws.send_str(bad_frame % (game_id, msg.request_id))
            assert (await client.until(Error)).code == "invalid_message"
            await client.send_move(msg, msg.legal[0])
        elif decisions == 4:
            done.stalled_at = msg.request_id
        else:
            await client.send_move(msg, msg.legal[0])


async def gather(*aws: Any, timeout: float = 30.0) -> list[Any]:
    return list(await asyncio.wait_for(asyncio.gather(*aws), timeout))


async def exit_of(proc: asyncio.subprocess.Process, timeout: float = 60.0) -> tuple[int, str]:
    """Wait for a subprocess (a bot run as a program) to end; its exit status and stderr (its
    log). One that has not ended within ``timeout`` seconds is killed and fails the test."""
    try:
        _, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        _, err = await proc.communicate()
        raise AssertionError(f"process {proc.pid} did not exit within {timeout:g} s:\n" + err.decode()) from None
    assert proc.returncode is not None
    return proc.returncode, err.decode()


# ---------------------------------------------------------------------- a server as a process

SERVE = "import sys; from mandala_cli.main import main; sys.exit(main(sys.argv[1:]))"
PROCESS_ADMIN = "process-test-admin"


class ServeProcess:
    """``mandala serve`` as a child process (so it can be killed with ``SIGKILL`` and
    restarted), logging to ``log``."""

    def __init__(self, db: str, port: int, config: Path, log: Path, *extra: str, ignore_hangup: bool = False) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = log
        env = {**os.environ, "MANDALA_ADMIN_TOKEN": PROCESS_ADMIN}
        env.pop("DATABASE_URL", None)
        env.pop("MANDALA_SPOOL", None)
        self.log = log.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVE, "serve", "--port", str(port), "--db", db, "--config", str(config), *extra],
            env=env, stdout=self.log, stderr=subprocess.STDOUT,
            # Under nohup, or not (whatever the test run's own SIGHUP, which a child inherits ignored).
            preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN if ignore_hangup else signal.SIG_DFL),
        )

    async def health(self, http: aiohttp.ClientSession) -> tuple[int, dict[str, Any]] | None:
        """``GET /health``'s status and body, or None while nothing listens."""
        try:
            async with http.get(self.url + "/health") as resp:
                return resp.status, await resp.json()
        except aiohttp.ClientConnectionError:
            return None

    async def ready(self, http: aiohttp.ClientSession, timeout: float = 30.0) -> None:
        try:
            await wait_until(lambda: self._healthy(http), timeout, "the server did not come up")
        except AssertionError as e:
            raise AssertionError(f"{e}; its log ends:\n{self.log_path.read_text()[-4000:]}") from None

    async def _healthy(self, http: aiohttp.ClientSession) -> bool:
        assert self.proc.poll() is None, f"the server exited:\n{self.log_path.read_text()[-3000:]}"
        got = await self.health(http)
        return got is not None and got[0] == 200

    async def create_bots(self, http: aiohttp.ClientSession, names: list[str]) -> dict[str, str]:
        tokens = {}
        for name in names:
            async with http.post(self.url + "/api/bots", json={"name": name},
                                 headers={"Authorization": f"Bearer {PROCESS_ADMIN}"}) as resp:
                assert resp.status == 201, await resp.text()
                tokens[name] = (await resp.json())["token"]
        return tokens

    async def game_between(self, http: aiohttp.ClientSession,
                           names: list[str]) -> tuple[list[aiohttp.ClientWebSocketResponse], str]:
        """Two new bots connected (their sockets, which the caller closes) and a game between
        them started by the organizer: its id."""
        tokens = await self.create_bots(http, names)
        ws = [await http.ws_connect(self.url.replace("http", "ws", 1) + "/ws") for _ in tokens]
        for conn, token in zip(ws, tokens.values(), strict=True):
            await conn.send_json({"type": "hello", "protocol": 1, "token": token})
            assert (await conn.receive_json(timeout=10))["type"] == "welcome"
        async with http.post(self.url + "/api/games", json={"players": names},
                             headers={"Authorization": f"Bearer {PROCESS_ADMIN}"}) as resp:
            assert resp.status == 201, await resp.text()
            return ws, (await resp.json())["game_id"]

    async def rated_games(self, http: aiohttp.ClientSession) -> int:
        """Rated games the standings count (each counts for both its bots)."""
        async with http.get(self.url + "/api/ladder") as resp:
            return sum(s["games"] for s in (await resp.json())["standings"]) // 2

    def kill(self, sig: int = signal.SIGKILL) -> int:
        """End the server with ``sig`` and wait for it; fail if a process it started (its
        standings' worker, the resource tracker beside it) outlives it by :data:`LEFTOVER_S`."""
        family = descendants(self.proc.pid)
        self.proc.send_signal(sig)
        try:
            code = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # the test fails, and leaves no server behind
            for pid in (self.proc.pid, *family):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            self.proc.wait()
            raise
        self.log.close()
        assert_all_gone(family, f"after signal {sig} to the server")
        return code

    def family(self) -> dict[int, str]:
        """Every process below the server now: its command lines by pid."""
        return descendants(self.proc.pid)


def children(pid: int) -> dict[int, str]:
    """The processes whose parent is ``pid``: their command lines, by pid (Linux: ``/proc``)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue  # ended meanwhile
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found[int(entry.name)] = cmdline.replace(b"\0", b" ").decode(errors="replace")
    return found


def descendants(pid: int) -> dict[int, str]:
    """Every process below ``pid``: its children, theirs (the standings' worker of a server), …"""
    found: dict[int, str] = {}
    todo = [pid]
    while todo:
        for child, cmd in children(todo.pop()).items():
            found[child] = cmd
            todo.append(child)
    return found


def gone(pid: int) -> bool:
    """Whether ``pid`` has ended (a zombie has ended too: only its entry waits for its parent, and
    init in a container may never reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


FITTING = ["resource_tracker", "spawn_main"]
"""The processes a server leading a ladder starts: the standings' worker (``spawn_main``) and the
resource tracker ``multiprocessing`` starts beside it."""


def fitting(family: dict[int, str]) -> list[str]:
    """Which of a server's processes (:meth:`ServeProcess.family`) are those of :data:`FITTING`."""
    return sorted(kind for cmd in family.values() for kind in FITTING if kind in cmd)


LEFTOVER_S = 10.0
"""How long the processes of an ended server may take to end in turn (in practice: at once)."""


def assert_all_gone(family: dict[int, str], when: str, timeout: float = LEFTOVER_S) -> None:
    """Poll until every process of ``family`` has ended; fail naming those left after ``timeout``
    seconds."""
    deadline = time.monotonic() + timeout
    while not all(gone(pid) for pid in family):
        left = {pid: cmd for pid, cmd in family.items() if not gone(pid)}
        assert time.monotonic() < deadline, f"{when}, {len(left)} process(es) left behind: {left}"
        time.sleep(0.05)


async def wait_until(check: Callable[[], Any], timeout: float, what: str, every: float = 0.05) -> Any:
    """Poll ``check`` (a function, or one returning an awaitable) until it returns something
    true, and return that; fail with ``what`` after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        got = check()
        if asyncio.iscoroutine(got):
            got = await got
        if got:
            return got
        assert loop.time() < deadline, what
        await asyncio.sleep(every)


@dataclass
class Seen:
    """What a set of ladder bots saw: the games they were told started and finished."""

    started: dict[str, GameStart] = field(default_factory=dict)
    over: dict[str, GameOver] = field(default_factory=dict)
    errors: list[Error] = field(default_factory=list)


async def ladder_bot(http: aiohttp.ClientSession, url: str, token: str, seed: int, seen: Seen,
                     reconnect: bool = False, max_games: int = 2, think: float = 0.0, seek: bool = True) -> None:
    """Seek (unless not ``seek``) and answer every decision with a random legal move, after
    ``think`` seconds; with ``reconnect``, connect again whenever the connection drops (until
    cancelled), else stop there."""
    rng = random.Random(seed)
    while True:
        try:
            async with http.ws_connect(url.replace("http", "ws", 1) + "/ws") as ws:
                await ws.send_json({"type": "hello", "protocol": PROTOCOL_VERSION, "token": token,
                                    "max_games": max_games})
                if seek:
                    await ws.send_json({"type": "seek"})
                async for frame in ws:
                    if frame.type is not aiohttp.WSMsgType.TEXT:
                        break
                    msg = _decoder.decode(frame.data)
                    if isinstance(msg, Decision):
                        if think:
                            await asyncio.sleep(think)  # a bot that takes its time to answer
                        move = msgspec.to_builtins(rng.choice(msg.legal))
                        await ws.send_json({"type": "move", "game_id": msg.game_id, "request_id": msg.request_id,
                                            "move": move})
                    elif isinstance(msg, GameStart):
                        seen.started.setdefault(msg.game_id, msg)
                    elif isinstance(msg, GameOver):
                        seen.over[msg.game_id] = msg
                    elif isinstance(msg, Error):
                        seen.errors.append(msg)
        except (aiohttp.ClientError, ConnectionError):
            pass
        if not reconnect:
            return
        await asyncio.sleep(0.1)  # the server is down or restarting: knock again shortly


def elo_replay(names: list[str], results: list[tuple[str, str, float]]) -> dict[str, tuple[float, int]]:
    """Each bot's (rating, rated games) after the rated ``results``, in order, through Elo."""
    from server.ratings import elo

    state = {n: (elo.EloSettings().initial, 0) for n in names}
    for a, b, score in results:
        (ra, ga), (rb, gb) = state[a], state[b]
        na, nb = elo.update((ra, rb), (ga, gb), score)
        state[a], state[b] = (na, ga + 1), (nb, gb + 1)
    return state


async def stored_games(store: Any) -> dict[str, Any]:
    """Every game in ``store``, with its record and telemetry (lists carry none: read the
    export a page at a time)."""
    from server.storage.base import GameFilter

    rows: dict[str, Any] = {}
    after: tuple[str, str] | None = None
    while True:
        page = await store.export_games(GameFilter(statuses=("running", "finished", "aborted")), after, 1000)
        rows.update((g.game_id, g) for g in page)
        if len(page) < 1000:
            return rows
        after = (page[-1].started, page[-1].game_id)


async def assert_ratings_replay(store: Any, bots: list[str]) -> dict[str, tuple[float, int]]:
    """Every bot's stored rating, rated-game count and history equal an Elo replay of the stored
    rated games in the order they finished; returns the replayed state."""
    import pytest

    rows = list((await stored_games(store)).values())
    results = await store.rated_results()
    assert len(results) == sum(1 for g in rows if g.rated and g.status == "finished")
    state = elo_replay(bots, results)
    standings = {s.bot: s for s in await store.standings() if s.bot in bots}
    for name in bots:
        rating, games = state[name]
        assert standings[name].rated_games == games
        assert standings[name].rating == pytest.approx(rating, abs=1e-9)
        assert len(await store.rating_history(name)) == games
    return state


def read_until(stream: Any, marker: bytes, timeout: float) -> bytes:
    """Read a process's pipe until ``marker`` appears (or fail after ``timeout`` seconds)."""
    seen = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(stream, selectors.EVENT_READ)
        while marker not in seen:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                raise AssertionError(f"no {marker!r} within {timeout} s; got: {seen.decode(errors='replace')}")
            chunk = os.read(stream.fileno(), 65536)
            if not chunk:
                raise AssertionError(f"the stream ended before {marker!r}; got: {seen.decode(errors='replace')}")
            seen += chunk
    return seen


BIN = Path(sys.executable).parent
"""Where this environment's commands are (``mandala``, ``mandala-bot``)."""


@contextlib.contextmanager
def mandala_serve(where: Path) -> Iterator[str]:
    """``mandala serve`` started as its users start it (the command, a process) on a free port,
    its SQLite file in ``where`` and its log in a file, not a pipe nobody reads; its base URL.
    Stopped at the end."""
    port = free_port()
    with open(where / "server.log", "wb") as errors:
        proc = subprocess.Popen([str(BIN / "mandala"), "serve", "--port", str(port), "--db", str(where / "x.db")],
                                stdout=subprocess.PIPE, stderr=errors)
    try:
        read_until(proc.stdout, b"listening on", 30)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(30)
        assert proc.stdout is not None
        proc.stdout.close()


def create_bot_at(base: str, name: str) -> str:
    """A new bot on the server at ``base`` (over HTTP, blocking); its token."""
    req = urllib.request.Request(f"{base}/api/bots", data=json.dumps({"name": name}).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(req, timeout=10) as resp:
        return str(json.load(resp)["token"])


async def mandala_bot(base: str, token: str, *args: str, pythonpath: Path | None = None) -> asyncio.subprocess.Process:
    """``mandala-bot`` as a process, connected to the server at ``base`` with ``token`` (in
    ``MANDALA_TOKEN``, as an author would keep it); ``pythonpath`` for bots of the test's own."""
    extra = {} if pythonpath is None else {"PYTHONPATH": str(pythonpath)}
    return await asyncio.create_subprocess_exec(
        str(BIN / "mandala-bot"), "--url", base.replace("http", "ws", 1) + "/ws", *args,
        env={**os.environ, "MANDALA_TOKEN": token, **extra},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)

