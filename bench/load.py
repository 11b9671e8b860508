"""``make load``: the decision path under load, against the bare WebSocket ceiling, in one run.

Starts a real ``mandala serve`` on a fresh database and drives P pairs of bots through the
protocol for D seconds (challenge games; the bots answer the first legal move at once, or
after ``--think`` seconds). Then, in the same run, starts a bare aiohttp WebSocket server that
only decodes each JSON frame and encodes it back (the *ceiling*: what any Python server on
this machine pays per round-trip) and drives the same number of connections against it. Each
server is pinned to core 0 and this load client to core 1 where there are two.

Prints one JSON line per run, then a table: decisions/s, server CPU µs per decision, p50/p99
from ``move`` to ``move_accepted`` and to the next ``decision``, server RSS per live game, and
the ratio of server CPU per decision to the ceiling's CPU per round-trip.

With ``--viewers V`` and/or ``--spectators S`` the arena runs twice in the same run, without
and with an audience: V viewers of ``/live`` (of ``--live-path``: ``/live?games=all`` for
every game) and S spectators each watching a running game (another one when it ends), all on
bare sockets that read everything and parse nothing, so that one load core can hold
thousands. The table then sets the two runs side by side, with the bytes each viewer received
a second.

With ``--tls`` the arena runs twice in the same run, over plain WebSockets and over WSS (a
certificate made for the run with ``openssl``, ``mandala serve --tls-cert --tls-key``): the
bots connect before the measurement, so the difference is what TLS costs the decision path
(each frame encrypted and decrypted), not the handshakes.

With ``--scrape N`` one arena runs the load for ``2 × --rounds`` windows of ``--seconds``,
alternately without and with a scraper that reads ``GET /metrics`` N times a second (as
Prometheus would, with the admin token); one server for all of them, so that what differs
between windows is the scraper (and the machine's noise, spread over both kinds). The table
sets the means of the two kinds of window side by side.

    python bench/load.py [--pairs 100] [--seconds 10] [--think 0] [--repo DIR]
                         [--viewers 1000 --spectators 200] [--live-path /live] [--tls]
                         [--scrape 100 --rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import random
import resource
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from functools import partial
from pathlib import Path
from typing import Any, cast

import aiohttp
import msgspec

from mandala_cli.serve_cmd import event_loop

SERVE = "import sys; from mandala_cli.main import main; sys.exit(main(sys.argv[1:]))"
CEILING = """
import json, sys
from aiohttp import web, WSMsgType
async def ws(request):
    sock = web.WebSocketResponse(max_msg_size=1 << 20)
    await sock.prepare(request)
    async for msg in sock:
        if msg.type is WSMsgType.TEXT:
            await sock.send_str(json.dumps(json.loads(msg.data)))
    return sock
app = web.Application()
app.router.add_get("/ws", ws)
app.router.add_get("/health", lambda r: web.json_response({"status": "ok"}))
web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), print=None, access_log=None)
"""
ADMIN = "load-admin"
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


class Stats:
    def __init__(self) -> None:
        self.measuring = False
        self.decisions = 0
        self.games = 0
        self.to_accepted: list[float] = []
        self.to_decision: list[float] = []
        self.errors: dict[str, int] = {}
        self.playing: set[str] = set()
        """Games that asked a decision while measuring."""
        self.running: dict[str, None] = {}
        """Games running now (for spectators to watch)."""
        self.audience_bytes = 0
        self.viewer_bytes = 0
        """Of ``audience_bytes``, what the viewers of ``/live`` received."""
        self.audience_lost = 0
        self.audience_rss_kb = 0.0
        self.scrapes = 0
        """Scrapes of ``/metrics`` answered while measuring."""
        self.to_over: list[float] = []
        """A challenger's last frame of a game to its ``game_over``: what storing the game's end
        takes (``game_over`` is sent once the game is durable)."""


class Frame(msgspec.Struct):
    """The fields of a server frame the load's bots read (the rest is skipped unparsed)."""

    type: str
    game_id: str | None = None
    request_id: int | None = None
    challenge_id: str | None = None
    code: str | None = None
    legal: list[msgspec.Raw] | None = None


_frame = msgspec.json.Decoder(Frame)
_MOVE = '{"type":"move","game_id":"%s","request_id":%d,"move":%s}'


async def bot(http: aiohttp.ClientSession, url: str, token: str, opponent: str | None, think: float,
              stats: Stats, welcomed: asyncio.Event | None = None) -> None:
    """One bot: the challenger challenges again after each game; the other accepts (and sets
    ``welcomed`` once the server said welcome). It reads only what it needs so that one load
    core can drive more than one server core."""
    sent: float | None = None
    last = 0.0
    challenge = json.dumps({"type": "challenge", "opponent": opponent})
    async with http.ws_connect(url.replace("http", "ws", 1) + "/ws", max_msg_size=1 << 20) as ws:
        await ws.send_json({"type": "hello", "protocol": 1, "token": token, "max_games": 1})
        if opponent:
            if think:  # games start spread over one think time, as real bots' would, not in step
                await asyncio.sleep(random.uniform(0, think))
            await ws.send_str(challenge)
        async for message in ws:
            now = time.perf_counter()
            msg = _frame.decode(message.data)
            kind = msg.type
            if kind == "decision":
                stats.running[msg.game_id or ""] = None
                if stats.measuring:
                    stats.playing.add(msg.game_id or "")
                if sent is not None and stats.measuring:
                    stats.to_decision.append(now - sent)
                if think:
                    await asyncio.sleep(think)
                assert msg.legal is not None
                sent = time.perf_counter()
                await ws.send_str(_MOVE % (msg.game_id, msg.request_id, bytes(msg.legal[0]).decode()))
            elif kind == "move_accepted":
                if stats.measuring and sent is not None:
                    stats.decisions += 1
                    stats.to_accepted.append(now - sent)
            elif kind == "welcome" and welcomed is not None:
                welcomed.set()
            elif kind == "challenged":
                await ws.send_json({"type": "accept", "challenge_id": msg.challenge_id})
            elif opponent and kind in ("game_over", "challenge_declined"):
                if kind == "game_over" and stats.measuring:
                    stats.to_over.append(now - last)
                stats.running.pop(msg.game_id or "", None)
                sent = None
                stats.games += stats.measuring and kind == "game_over"
                await ws.send_str(challenge)
            elif kind == "game_over":
                sent = None
            elif kind == "error":
                stats.errors[msg.code or "?"] = stats.errors.get(msg.code or "?", 0) + 1
            last = now


class Sink(asyncio.Protocol):
    """A WebSocket client that reads every byte the server sends and parses none of it (after
    the handshake): an audience member that costs the load core next to nothing. ``ended``
    is set when a ``game_over`` passes (for a spectator, to watch another game)."""

    def __init__(self, path: str, hello: list[bytes], stats: Stats) -> None:
        self.path = path
        self.viewer = path.startswith("/live")
        self.hello = hello
        self.stats = stats
        self.upgraded = asyncio.get_running_loop().create_future()
        self.ended = asyncio.Event()
        self.transport: asyncio.Transport | None = None
        self._head = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)
        key = base64.b64encode(os.urandom(16)).decode()
        self.transport.write(f"GET {self.path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
                             f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
                             .encode())

    def data_received(self, data: bytes) -> None:
        if not self.upgraded.done():
            self._head += data
            if b"\r\n\r\n" not in self._head:
                return
            head, _, data = self._head.partition(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 101"):
                self.upgraded.set_exception(RuntimeError(head.split(b"\r\n")[0].decode()))
                return
            self.upgraded.set_result(None)
            for frame in self.hello:
                self.send(frame)
        if self.stats.measuring:
            self.stats.audience_bytes += len(data)
            if self.viewer:
                self.stats.viewer_bytes += len(data)
        if b'"game_over"' in data:
            self.ended.set()

    def send(self, payload: bytes) -> None:
        """One masked text frame (a client's frames are masked, RFC 6455 §5.3)."""
        assert self.transport is not None and len(payload) < 126
        mask = os.urandom(4)
        self.transport.write(bytes((0x81, 0x80 | len(payload))) + mask
                             + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.upgraded.done():
            self.upgraded.set_exception(ConnectionError("closed before the upgrade"))
        if self.stats.measuring:  # dropped by the server while the load ran
            self.stats.audience_lost += 1


async def sink(port: int, path: str, stats: Stats, hello: list[bytes] | None = None) -> Sink:
    loop = asyncio.get_running_loop()
    _, protocol = await loop.create_connection(lambda: Sink(path, hello or [], stats), "127.0.0.1", port)
    await protocol.upgraded
    return protocol


async def viewer(port: int, stats: Stats, path: str = "/live") -> None:
    """A viewer of ``path`` (``/live``, or ``/live?games=all``) for as long as the run lasts."""
    member = await sink(port, path, stats)
    try:
        await asyncio.Future()
    finally:
        assert member.transport is not None
        member.transport.close()


async def spectator(port: int, stats: Stats) -> None:
    """A spectator watching a running game, and another one whenever it ends."""
    hello = b'{"type":"hello","protocol":1}'
    member = await sink(port, "/ws", stats, [hello])
    try:
        while True:
            while not stats.running:
                await asyncio.sleep(0.05)
            member.ended.clear()
            member.send(b'{"type":"watch","game_id":"%s"}' % random.choice(list(stats.running)).encode())
            await member.ended.wait()
    finally:
        assert member.transport is not None
        member.transport.close()


async def echo_client(http: aiohttp.ClientSession, url: str, stats: Stats) -> None:
    """Round-trips of a decision-sized JSON frame against the ceiling server."""
    body = json.dumps({"type": "move", "game_id": "abcdefgh", "request_id": 12,
                       "move": {"type": "field", "color": "red", "count": 2}})
    async with http.ws_connect(url.replace("http", "ws", 1) + "/ws") as ws:
        while True:
            sent = time.perf_counter()
            await ws.send_str(body)
            await ws.receive()
            if stats.measuring:
                stats.decisions += 1
                stats.to_accepted.append(time.perf_counter() - sent)


class Scrape(asyncio.Protocol):
    """One keep-alive HTTP/1.1 connection asking ``GET /metrics``: it writes the request's bytes
    and reads each answer by its ``Content-Length``, parsing nothing else. aiohttp's client takes
    about 0.3 ms of the load core a request; the bots share that core, and a scraper that slows
    them makes the server's batches smaller, which shows as server CPU a decision the scrapes
    did not cost (3-4 % with 100 aiohttp scrapes a second aimed at another server)."""

    def __init__(self, request: bytes) -> None:
        self.request = request
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.answered: asyncio.Future[int] | None = None
        """The status of the answer awaited, once it has all come."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def ask(self) -> asyncio.Future[int]:
        assert self.transport is not None
        self.answered = asyncio.get_running_loop().create_future()
        self.transport.write(self.request)
        return self.answered

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        head = bytes(self.buffer[:end]).lower()
        length = int(head.split(b"content-length:", 1)[1].split(b"\r\n", 1)[0])
        if len(self.buffer) < end + 4 + length:
            return
        del self.buffer[:end + 4 + length]
        if self.answered is not None and not self.answered.done():
            self.answered.set_result(int(head[9:12]))

    def connection_lost(self, exc: Exception | None) -> None:
        if self.answered is not None and not self.answered.done():
            self.answered.set_exception(ConnectionError("the server closed a scraper's connection"))


async def scraper(port: int, per_s: float, stats: Stats) -> None:
    """Read ``/metrics`` ``per_s`` times a second, on a fixed schedule: each scrape starts at its
    time whether the one before has its answer yet or not (up to 100 at once, each on a
    connection of its own), so a loaded server is asked as often as an idle one."""
    loop = asyncio.get_running_loop()
    request = f"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {ADMIN}\r\n\r\n".encode()
    idle: list[Scrape] = []
    opened: list[Scrape] = []
    every, at = 1.0 / per_s, loop.time()
    flying: set[asyncio.Task[None]] = set()

    async def scrape() -> None:
        if idle:
            conn = idle.pop()
        else:
            _, conn = await loop.create_connection(lambda: Scrape(request), "127.0.0.1", port)
            opened.append(conn)
        status = await conn.ask()
        assert status == 200, status
        idle.append(conn)
        if stats.measuring:
            stats.scrapes += 1

    try:
        while True:
            if len(flying) < 100:
                task = asyncio.create_task(scrape())
                flying.add(task)
                task.add_done_callback(flying.discard)
            at += every
            await asyncio.sleep(max(0.0, at - loop.time()))
    finally:
        for task in flying:
            task.cancel()
        for conn in opened:
            if conn.transport is not None:
                conn.transport.close()


async def wait_healthy(http: aiohttp.ClientSession, url: str) -> None:
    for _ in range(600):
        try:
            async with http.get(url + "/health") as resp:
                if resp.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.05)
    raise RuntimeError(f"{url} did not come up")


async def create_bots(http: aiohttp.ClientSession, url: str, n: int) -> list[str]:
    """Bots ``b0`` … ``b{n-1}``; their tokens."""
    tokens = []
    for i in range(n):
        async with http.post(url + "/api/bots", json={"name": f"b{i}"}, headers={"Authorization": f"Bearer {ADMIN}"}) as resp:
            tokens.append((await resp.json())["token"])
    return tokens


async def drive(url: str, pid: int | list[int], tasks_for: Any, seconds: float, live_games: int,
                tls: ssl.SSLContext | None = None) -> dict[str, Any]:
    """Start the load, warm up, measure for ``seconds``: CPU (of every server process in
    ``pid``), counts, latencies, memory. ``tls``: how the clients verify an https:// server."""
    pids = pid if isinstance(pid, list) else [pid]
    stats = Stats()
    connector = aiohttp.TCPConnector(limit=0, ssl=tls if tls is not None else True)
    async with aiohttp.ClientSession(connector=connector) as http:
        await wait_healthy(http, url)
        idle_rss = sum(rss_bytes(p) for p in pids)
        tasks = await tasks_for(http, stats)
        await asyncio.sleep(max(2.0, seconds / 5))  # warm up
        cpu0, t0, own0 = sum(cpu_seconds(p) for p in pids), time.perf_counter(), time.process_time()
        stats.measuring = True
        await asyncio.sleep(seconds)
        stats.measuring = False
        cpu, elapsed = sum(cpu_seconds(p) for p in pids) - cpu0, time.perf_counter() - t0
        own = time.process_time() - own0
        load = os.getloadavg()[0]
        rss = sum(rss_bytes(p) for p in pids)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    n = max(stats.decisions, 1)
    return {
        "per_s": round(stats.decisions / elapsed, 1),
        "games_per_s": round(stats.games / elapsed, 1),
        "games_playing": len(stats.playing),
        "errors": stats.errors,
        "cpu_us": round(cpu / n * 1e6, 1),
        "p50_ms": round(pct(stats.to_accepted, 0.50) * 1000, 2),
        "p99_ms": round(pct(stats.to_accepted, 0.99) * 1000, 2),
        "p50_next_ms": round(pct(stats.to_decision, 0.50) * 1000, 2) if stats.to_decision else None,
        "p99_next_ms": round(pct(stats.to_decision, 0.99) * 1000, 2) if stats.to_decision else None,
        "rss_per_game_kb": round((rss - idle_rss) / live_games / 1024, 1) if live_games else None,
        "audience_kb_per_s": round(stats.audience_bytes / elapsed / 1024, 1),
        "viewers_kb_per_s": round(stats.viewer_bytes / elapsed / 1024, 1),
        "audience_lost": stats.audience_lost,
        "rss_per_member_kb": round(stats.audience_rss_kb, 1),
        "scrapes_per_s": round(stats.scrapes / elapsed, 1),
        "load_1min": round(load, 2),
        "client_cpu": round(own / elapsed, 2),  # the load client's core: near 1.0, its own delays are in the latencies
    }


def pinned(cmd: list[str], core: int) -> list[str]:
    return ["taskset", "-c", str(core), *cmd] if (os.cpu_count() or 1) > 1 else cmd


def anywhere(cmd: list[str]) -> list[str]:
    """``cmd`` free to run on every core: a child inherits this process's core otherwise (the
    load client is pinned to core 1)."""
    cores = os.cpu_count() or 1
    return ["taskset", "-c", f"0-{cores - 1}", *cmd] if cores > 1 else cmd


async def join_audience(args: argparse.Namespace, pid: int, stats: Stats) -> list[asyncio.Task[None]]:
    """Connect the viewers and the spectators (a few hundred at a time), noting what the
    server's memory grew by per member."""
    rss = rss_bytes(pid)
    tasks: list[asyncio.Task[None]] = []
    members = [partial(viewer, path=args.live_path)] * args.viewers + [spectator] * args.spectators
    for start in range(0, len(members), 250):
        chunk = [asyncio.create_task(member(args.port, stats)) for member in members[start:start + 250]]
        tasks += chunk
        await asyncio.sleep(0.2)  # let this chunk upgrade before the next
    await asyncio.sleep(1.0)
    stats.audience_rss_kb = (rss_bytes(pid) - rss) / max(1, len(members)) / 1024
    return tasks


def certificate(tmp: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, made with ``openssl``."""
    cert, key = tmp / "load.pem", tmp / "load.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-days", "2", "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return cert, key


async def run_arena(args: argparse.Namespace, tmp: Path, audience: bool = False, tls: bool = False,
                    measure: Callable[..., Coroutine[Any, Any, Any]] | None = None, settings: str = "") -> Any:
    config = tmp / "load.toml"
    config.write_text(f"messages_per_second = 1000000.0\nburst = 1000000\nregistrations_per_hour = 100000\n"
                      f"send_queue_max = 100000\ndecision_ms = {max(5000, int(args.think * 1000) + 5000)}\n"
                      + settings)
    repo = args.repo.resolve()
    env = {**os.environ, "MANDALA_ADMIN_TOKEN": ADMIN, "PYTHONPATH": f"{repo}:{repo}/clients/python"}
    secure: list[str] = []
    context = None
    if tls:
        cert, key = certificate(tmp)
        secure = ["--tls-cert", str(cert), "--tls-key", str(key)]
        context = ssl.create_default_context(cafile=str(cert))
    server = subprocess.Popen(pinned([sys.executable, "-c", SERVE, "serve", "--port", str(args.port), "--db",
                                      str(tmp / "load.db"), "--config", str(config), *secure], 0),
                              env=env, cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"{'https' if tls else 'http'}://127.0.0.1:{args.port}"

    async def start(http: aiohttp.ClientSession, stats: Stats) -> list[asyncio.Task[None]]:
        tokens = await create_bots(http, url, 2 * args.pairs)
        welcomed = [asyncio.Event() for _ in range(args.pairs)]
        tasks = [asyncio.create_task(bot(http, url, tokens[2 * i + 1], None, args.think, stats, welcomed[i]))
                 for i in range(args.pairs)]
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in welcomed)), 120)  # challenged bots are there
        tasks += [asyncio.create_task(bot(http, url, tokens[2 * i], f"b{2 * i + 1}", args.think, stats))
                  for i in range(args.pairs)]
        if audience:
            tasks += await join_audience(args, server.pid, stats)
        return tasks

    try:
        if measure is not None:
            return await measure(url, server.pid, start, args.seconds, args.pairs)
        return await drive(url, server.pid, start, args.seconds, args.pairs, context)
    finally:
        server.terminate()
        server.wait()


async def run_ceiling(args: argparse.Namespace) -> dict[str, Any]:
    port = args.port + 1
    server = subprocess.Popen(pinned([sys.executable, "-c", CEILING, str(port)], 0),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"

    async def start(http: aiohttp.ClientSession, stats: Stats) -> list[asyncio.Task[None]]:
        return [asyncio.create_task(echo_client(http, url, stats)) for _ in range(2 * args.pairs)]

    try:
        return await drive(url, server.pid, start, args.seconds, 0)
    finally:
        server.terminate()
        server.wait()


def arguments(description: str, pairs: int, port: int,
              more: Callable[[argparse.ArgumentParser], None] | None = None) -> argparse.Namespace:
    """The options both load scripts take (and ``more``, a script's own); this process is
    pinned to core 1 (the server to 0)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--pairs", type=int, default=pairs, help=f"pairs of bots playing at once (default {pairs})")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long to measure (default 10)")
    parser.add_argument("--think", type=float, default=0.0, help="seconds each bot thinks per move (default 0)")
    parser.add_argument("--port", type=int, default=port)
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="run the server from this checkout (compare two versions in one run)")
    if more is not None:
        more(parser)
    args = parser.parse_args()
    if (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})
    return args


def run(coro: Coroutine[Any, Any, dict[str, Any]]) -> dict[str, Any]:
    """Run the load on the loop the server uses too (uvloop where installed)."""
    with asyncio.Runner(loop_factory=lambda: event_loop()[0]) as runner:
        return runner.run(coro)


def arena_run(args: argparse.Namespace, audience: bool = False, tls: bool = False) -> dict[str, Any]:
    """The arena's figures, on a database in a temporary folder (with the audience of
    ``--viewers`` and ``--spectators`` if ``audience``; over WSS if ``tls``)."""
    with tempfile.TemporaryDirectory() as tmp:
        return run(run_arena(args, Path(tmp), audience, tls))


async def alternate_scraper(args: argparse.Namespace, url: str, pid: int, tasks_for: Any, seconds: float,
                            live_games: int) -> list[tuple[bool, dict[str, Any]]]:
    """Start the load, warm up, then measure ``2 × args.rounds`` windows of ``seconds``, every
    other one with the scraper on: each window's figures, and whether it was scraped."""
    stats = Stats()
    windows: list[tuple[bool, dict[str, Any]]] = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
        await wait_healthy(http, url)
        tasks = await tasks_for(http, stats)
        await asyncio.sleep(max(2.0, seconds / 5))
        for i in range(2 * args.rounds):
            scraped = i % 2 == 1
            scraping = asyncio.create_task(scraper(args.port, args.scrape, stats)) if scraped else None
            await asyncio.sleep(0.5)  # the scraper under way before the window opens
            decisions, accepted, scrapes = stats.decisions, len(stats.to_accepted), stats.scrapes
            cpu0, t0 = cpu_seconds(pid), time.perf_counter()
            stats.measuring = True
            await asyncio.sleep(seconds)
            stats.measuring = False
            cpu, elapsed = cpu_seconds(pid) - cpu0, time.perf_counter() - t0
            n = max(stats.decisions - decisions, 1)
            latencies = stats.to_accepted[accepted:]
            windows.append((scraped, {
                "per_s": round((stats.decisions - decisions) / elapsed, 1),
                "cpu_us": round(cpu / n * 1e6, 1),
                "p50_ms": round(pct(latencies, 0.50) * 1000, 2),
                "p99_ms": round(pct(latencies, 0.99) * 1000, 2),
                "scrapes_per_s": round((stats.scrapes - scrapes) / elapsed, 1),
                "server_cpu": round(cpu / elapsed, 3),
            }))
            if scraping is not None:
                scraping.cancel()
                await asyncio.gather(scraping, return_exceptions=True)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return windows


def audience_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--viewers", type=int, default=0, help="viewers of /live in the second run (default 0)")
    parser.add_argument("--spectators", type=int, default=0,
                        help="spectators watching running games in the second run (default 0)")
    parser.add_argument("--live-path", default="/live",
                        help="what the viewers open (default /live; /live?games=all for every game)")
    parser.add_argument("--tls", action="store_true",
                        help="run the arena over plain WebSockets, then over WSS, and compare (needs openssl)")
    parser.add_argument("--scrape", type=float, default=0,
                        help="scrapes of /metrics a second in every other window (default 0: no scraper)")
    parser.add_argument("--rounds", type=int, default=2,
                        help="with --scrape: windows without and with the scraper, each (default 2)")


def main() -> None:
    args = arguments(__doc__.split("\n\n")[0], pairs=100, port=8120, more=audience_options)
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # thousands of sockets, here and in the server
    if args.tls:
        compare_tls(args)
        return
    if args.viewers or args.spectators:
        compare_audience(args)
        return
    if args.scrape:
        compare_scraped(args)
        return
    arena = arena_run(args)
    ceiling = run(run_ceiling(args))
    ratio = round(arena["cpu_us"] / ceiling["cpu_us"], 2) if ceiling["cpu_us"] else None
    line = {"pairs": args.pairs, "seconds": args.seconds, "think": args.think, "repo": str(args.repo.resolve()),
            "arena": arena, "ceiling": ceiling, "cpu_ratio": ratio}
    print(json.dumps(line), flush=True)
    rows = [
        ("decisions/s (ceiling: round-trips/s)", arena["per_s"], ceiling["per_s"]),
        ("server CPU µs per decision (round-trip)", arena["cpu_us"], ceiling["cpu_us"]),
        ("p50 move → move_accepted, ms (echo)", arena["p50_ms"], ceiling["p50_ms"]),
        ("p99 move → move_accepted, ms (echo)", arena["p99_ms"], ceiling["p99_ms"]),
        ("p50 move → next decision, ms", arena["p50_next_ms"], "-"),
        ("p99 move → next decision, ms", arena["p99_next_ms"], "-"),
        ("server RSS per live game, KB", arena["rss_per_game_kb"], "-"),
        ("CPU per decision / ceiling CPU per round-trip", ratio, "-"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'':{width}}  {'arena':>10}  {'ceiling':>10}")
    for name, a, c in rows:
        print(f"{name:{width}}  {a!s:>10}  {c!s:>10}")


def compare_tls(args: argparse.Namespace) -> None:
    """The same load over plain WebSockets, then over WSS; one JSON line each, then a table."""
    plain = arena_run(args)
    secure = arena_run(args, tls=True)
    for name, figures in (("ws", plain), ("wss", secure)):
        print(json.dumps({"pairs": args.pairs, "seconds": args.seconds, "think": args.think, "transport": name,
                          "repo": str(args.repo.resolve()), "arena": figures}), flush=True)
    rows = [
        ("decisions/s", "per_s"),
        ("server CPU µs per decision", "cpu_us"),
        ("p50 move → move_accepted, ms", "p50_ms"),
        ("p99 move → move_accepted, ms", "p99_ms"),
        ("p50 move → next decision, ms", "p50_next_ms"),
        ("p99 move → next decision, ms", "p99_next_ms"),
        ("server RSS per live game, KB", "rss_per_game_kb"),
        ("load client's CPU (1.0: its core is full)", "client_cpu"),
    ]
    side_by_side(rows, ("ws://", plain), ("wss://", secure))


def side_by_side(rows: list[tuple[str, str]], before: tuple[str, dict[str, Any]],
                 after: tuple[str, dict[str, Any]]) -> None:
    """Two runs' figures in columns, with the second's ratio to the first where both are numbers."""
    (label_a, a_run), (label_b, b_run) = before, after
    width = max(len(r[0]) for r in rows)
    wa, wb = max(10, len(label_a)), max(10, len(label_b))
    print(f"{'':{width}}  {label_a:>{wa}}  {label_b:>{wb}}  {'ratio':>6}")
    for name, key in rows:
        a, b = a_run[key], b_run[key]
        ratio = f"{b / a:.2f}" if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a else "-"
        print(f"{name:{width}}  {a!s:>{wa}}  {b!s:>{wb}}  {ratio:>6}")


def compare_audience(args: argparse.Namespace) -> None:
    """The same load without, then with, the audience; one JSON line each, then a table."""
    quiet = arena_run(args)
    watched = arena_run(args, audience=True)
    quiet["viewer_bytes_per_s"] = None
    watched["viewer_bytes_per_s"] = round(watched["viewers_kb_per_s"] * 1024 / args.viewers) if args.viewers else None
    for name, figures in (("none", quiet), ("audience", watched)):
        print(json.dumps({"pairs": args.pairs, "seconds": args.seconds, "think": args.think, "audience": name,
                          "viewers": args.viewers if figures is watched else 0,
                          "spectators": args.spectators if figures is watched else 0, "live_path": args.live_path,
                          "repo": str(args.repo.resolve()), "arena": figures}), flush=True)
    label = f"{args.viewers} viewers + {args.spectators} spectators"
    rows = [
        ("decisions/s", "per_s"),
        ("games finished/s", "games_per_s"),
        ("server CPU µs per decision", "cpu_us"),
        ("p50 move → move_accepted, ms", "p50_ms"),
        ("p99 move → move_accepted, ms", "p99_ms"),
        ("p99 move → next decision, ms", "p99_next_ms"),
        ("audience received, KB/s", "audience_kb_per_s"),
        ("each viewer received, bytes/s", "viewer_bytes_per_s"),
        ("audience connections lost", "audience_lost"),
        ("server RSS per audience member, KB", "rss_per_member_kb"),
        ("load client's CPU (1.0: its core is full)", "client_cpu"),
    ]
    side_by_side(rows, ("no audience", quiet), (label, watched))


def compare_scraped(args: argparse.Namespace) -> None:
    """One arena, the load's windows alternately without and with a scraper of ``/metrics``;
    one JSON line a window, then the means side by side."""
    with tempfile.TemporaryDirectory() as tmp:
        windows = run(run_arena(args, Path(tmp), measure=partial(alternate_scraper, args)))
    for scraped, figures in windows:
        print(json.dumps({"pairs": args.pairs, "seconds": args.seconds, "think": args.think,
                          "scrape_per_s": args.scrape if scraped else 0, "repo": str(args.repo.resolve()),
                          "arena": figures}), flush=True)
    rows = [
        ("decisions/s", "per_s"),
        ("server CPU µs per decision", "cpu_us"),
        ("p50 move → move_accepted, ms", "p50_ms"),
        ("p99 move → move_accepted, ms", "p99_ms"),
        ("scrapes answered/s", "scrapes_per_s"),
        ("server's CPU (1.0: its core is full)", "server_cpu"),
    ]
    label = f"{args.scrape:g} scrapes/s"
    width = max(len(r[0]) for r in rows)
    print(f"means of {args.rounds} windows of {args.seconds:g} s each, alternately, on one server")
    print(f"{'':{width}}  {'no scraper':>12}  {label:>14}  {'ratio':>6}")
    means: dict[str, tuple[float, ...]] = {}
    for name, key in rows:
        a, b = means[key] = tuple(sum(f[key] for s, f in windows if s == scraped) / args.rounds
                                  for scraped in (False, True))
        ratio = f"{b / a:.3f}" if a else "-"
        print(f"{name:{width}}  {a:>12.2f}  {b:>14.2f}  {ratio:>6}")
    # The scraped windows' server CPU beyond what their decisions cost at the unscraped windows'
    # price, a scrape: the figure that carries over to a machine where the decisions cost more or less.
    per_s, cpu_us, scrapes = means["per_s"][1], means["cpu_us"], means["scrapes_per_s"][1]
    if scrapes:
        print(f"server CPU per scrape, µs: {(cpu_us[1] - cpu_us[0]) * per_s / scrapes:.0f}")


if __name__ == "__main__":
    main()
