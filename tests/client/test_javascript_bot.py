"""The JavaScript bot, ``clients/javascript/mandala-bot.mjs``, run by Node against a real server:
challenges, several games at once, reconnecting, the ladder, refusals and its command line; and
against a scripted server, for the answers a real one gives only in rare moments (a refusal "for
now", two challenges at once, a close that is never answered). Nothing sleeps and hopes: each
test waits for what the bot logs or sends. The bot uses Node's built-in WebSocket client
(``--experimental-websocket`` before Node 22).

Without Node >= 20.10 on PATH these tests are skipped with a loud reason; with ``CI=true`` they
fail instead, since CI must run them.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import shutil
import signal
import socket
import subprocess
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, get_args

import pytest
from aiohttp import web

import mandala
from arena_testkit import ADMIN, Harness, WsClient, exit_of, random_policy, wait_until
from mandala_cli import demo_cmd
from protocol.messages import Challenged, Decision, Error, ErrorCode, GameOver, Update
from server.connections.connection import Connection
from test_client_answers import WELCOME as CLIENT_WELCOME
from test_client_answers import challenged, error

ROOT = Path(__file__).resolve().parents[2]
BOT_JS = ROOT / "clients" / "javascript" / "mandala-bot.mjs"
NODE_MIN = (20, 10)
LINES_MAX = 420
RULES_END = {"river", "deck", "no_moves", "turn_limit"}
GAME_TIMEOUT = 60.0


@pytest.fixture(scope="module")
def node() -> str:
    """The ``node`` executable, at least version 20.10."""
    exe = shutil.which("node")
    why = None
    if exe is None:
        why = "NODE.JS NOT FOUND: the JavaScript bot's tests did not run (install Node >= 20.10 and put `node` on PATH)"
    else:
        version = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
        found = re.match(r"v(\d+)\.(\d+)\.", version)
        if found is None or (int(found.group(1)), int(found.group(2))) < NODE_MIN:
            why = f"NODE.JS {version or '(unknown version)'} IS TOO OLD: the JavaScript bot's tests need Node >= 20.10"
    if why is not None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(why + "; CI=true requires it", pytrace=False)
        pytest.skip(why)
    assert exe is not None
    return exe


def node_command(node: str) -> list[str]:
    """How to run the bot: Node before 22 needs ``--experimental-websocket`` for its WebSocket."""
    command = demo_cmd.node_command(node, BOT_JS)
    assert command is not None
    return command


# ------------------------------------------------------------------ against the real server


def ws_url(arena: Harness) -> str:
    return str(arena.client.make_url("/ws")).replace("http://", "ws://", 1)


async def run_js(node: str, *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *node_command(node), *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def start_js(node: str, arena: Harness, token: str, *args: str) -> asyncio.subprocess.Process:
    return await run_js(node, "--url", ws_url(arena), "--token", token, *args)


async def opponent(client: WsClient, games: int, seed: int,
                   on_update: Callable[[Update], Awaitable[None]] | None = None) -> list[GameOver]:
    """A Python bot that accepts every challenge and plays random legal moves until ``games``
    games are over."""
    policy = random_policy(seed)
    overs: list[GameOver] = []
    while len(overs) < games:
        msg = await client.recv(GAME_TIMEOUT)
        if isinstance(msg, Challenged):
            await client.send({"type": "accept", "challenge_id": msg.challenge_id})
        elif isinstance(msg, Decision):
            await client.send_move(msg, policy(msg))
        elif isinstance(msg, Update) and on_update is not None:
            await on_update(msg)
        elif isinstance(msg, GameOver):
            overs.append(msg)
        elif isinstance(msg, Error):
            raise AssertionError(f"the server refused the Python opponent: {msg}")
    return overs


@pytest.fixture
def errors_to(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """Every ``error`` message the server sends, by the name of the bot it goes to."""
    sent: dict[str, list[Any]] = {}
    original = Connection.send

    def spy(self: Connection, msg: Any) -> None:
        if isinstance(msg, Error):
            sent.setdefault(self.bot or "", []).append(msg)
        original(self, msg)

    monkeypatch.setattr(Connection, "send", spy)
    return sent


async def js_and_python(make_arena: Any, node: str, py_name: str, *args: str,
                        max_games: int = 1) -> tuple[Harness, WsClient, asyncio.subprocess.Process]:
    """A server, a connected Python bot ``py_name`` and the JavaScript bot ``js-bot`` started
    with ``args``."""
    arena: Harness = await make_arena()
    py = await arena.bot(py_name, max_games=max_games)
    proc = await start_js(node, arena, await arena.create_bot("js-bot"), *args)
    return arena, py, proc


async def connected(proc: asyncio.subprocess.Process) -> None:
    """Wait until the bot says it is connected."""
    assert proc.stderr is not None
    seen = b""
    while b"connected as js-bot" not in seen:
        line = await asyncio.wait_for(proc.stderr.readline(), GAME_TIMEOUT)
        assert line, f"the JavaScript bot stopped before connecting (status {await proc.wait()}):\n{seen.decode()}"
        seen += line


async def played(arena: Harness, proc: asyncio.subprocess.Process, overs: list[GameOver],
                 errors_to: dict[str, list[Any]], unacknowledged: int = 0) -> str:
    """The bot exited 0 with not one message refused; the server stored each game as finished
    by the rules, and its record replays to the same result; the bot's log line for it counts
    the bot's moves in that record (up to ``unacknowledged`` moves whose ``move_accepted`` a
    dropped connection lost) and no refusal. Returns the bot's log (stderr)."""
    code, log = await exit_of(proc)
    assert code == 0, log
    assert errors_to.get("js-bot", []) == []
    for over in overs:
        assert over.result.end_reason in RULES_END, over.result
        game = await arena.get_json(f"/api/games/{over.game_id}")
        assert game["status"] == "finished" and "js-bot" in game["players"]
        record = await arena.get_json(f"/api/games/{over.game_id}/record")
        replayed = mandala.replay(record)
        assert (replayed.end_reason, list(replayed.scores())) == (over.result.end_reason, list(over.result.scores))
        js_seat = game["players"].index("js-bot")
        js_moves = sum(1 for m in record["moves"] if m["player"] == js_seat)
        line = re.search(rf"game {re.escape(over.game_id)} over: (won|lost|draw) \d+-\d+ \((\w+)\)"
                         rf" against \S+, (\d+) moves, (\d+) refused", log)
        assert line is not None, log
        assert line.group(2) == over.result.end_reason
        assert js_moves - unacknowledged <= int(line.group(3)) <= js_moves and int(line.group(4)) == 0, line.group(0)
    return log


async def test_js_bot_challenges_and_plays_complete_games(
        make_arena: Any, node: str, errors_to: dict[str, list[Any]]) -> None:
    arena, py, proc = await js_and_python(make_arena, node, "py-opp", "--challenge", "py-opp", "--games", "3")
    overs = await opponent(py, 3, seed=11)
    log = await played(arena, proc, overs, errors_to)
    assert log.count(" started: ") == 3 and log.count(" over: ") == 3
    assert "error" not in log and "done: 3 games played" in log


async def test_js_bot_accepts_challenges_and_plays_two_games_at_once(
        make_arena: Any, node: str, errors_to: dict[str, list[Any]]) -> None:
    arena, py, proc = await js_and_python(make_arena, node, "py-challenger", "--games", "2", "--max-games", "2",
                                          max_games=2)
    await connected(proc)
    for _ in range(2):
        await py.send({"type": "challenge", "opponent": "js-bot"})
    overs = await opponent(py, 2, seed=12)
    log = await played(arena, proc, overs, errors_to)
    assert log.count("accepting the challenge of py-challenger") == 2


async def test_js_bot_reconnects_after_a_dropped_connection(
        make_arena: Any, node: str, errors_to: dict[str, list[Any]]) -> None:
    arena, py, proc = await js_and_python(make_arena, node, "py-opp", "--challenge", "py-opp", "--games", "2")
    dropped: list[int] = []

    async def drop_once(update: Update) -> None:
        if not dropped and update.ply >= 8:
            conn = arena.arena.presence.get("js-bot")
            assert conn is not None
            dropped.append(update.ply)
            conn.outbox.cut()  # the TCP connection dies: no close frame (the bot sees 1006)

    overs = await opponent(py, 2, seed=13, on_update=drop_once)
    log = await played(arena, proc, overs, errors_to, unacknowledged=1)
    assert dropped and "connection closed (1006); reconnecting in" in log
    assert log.count("connecting to ") == 2 and re.search(r"game \S+ resumed", log)


@pytest.mark.parametrize("games", [4, 3])
async def test_js_bots_qualify_on_the_ladder_and_play_a_rated_pair(
        make_arena: Any, node: str, errors_to: dict[str, list[Any]], games: int) -> None:
    """Two JavaScript bots with --ladder: each plays its two qualification games against the
    house bot, is listed, and then both play one rated duplicate pair. With --games 3 they
    still play the pair's return game before stopping."""
    arena: Harness = await make_arena(pairing_interval_s=0.05)
    tokens = [await arena.create_bot(name) for name in ("js-a", "js-b")]
    procs = [await start_js(node, arena, token, "--ladder", "--games", str(games)) for token in tokens]
    results = [await exit_of(proc) for proc in procs]
    for name, (code, log) in zip(("js-a", "js-b"), results, strict=True):
        assert code == 0, log
        assert errors_to.get(name, []) == []
        assert "ladder: qualifying" in log and "ladder: listed" in log
        assert log.count("(qualification, unrated)") == 2 and log.count("(ladder, rated)") == 2, log
        assert log.count(" refused [") == 4 and f"0 refused [4/{games}]" in log and "done: 4 games played" in log
        assert ("for the return game of pair" in log) == (games == 3)
        profile = await arena.get_json(f"/api/bots/{name}")
        assert profile["state"] == "listed"
    games = await arena.get_json("/api/games?status=finished")
    assert len(games) == 6  # two qualification games each, and one pair between them
    for game in games:
        assert game["result"]["end_reason"] in RULES_END, game
        replayed = mandala.replay(await arena.get_json(f"/api/games/{game['game_id']}/record"))
        assert replayed.end_reason == game["result"]["end_reason"]
    rated = [g for g in games if g["kind"] == "ladder"]
    assert len(rated) == 2 and rated[0]["pair_id"] == rated[1]["pair_id"] and all(g["rated"] for g in rated)
    assert sorted(rated[0]["players"]) == ["js-a", "js-b"] and rated[0]["players"] == rated[1]["players"][::-1]


async def said(proc: asyncio.subprocess.Process, marker: str) -> str:
    """Read the bot's log until a line holds ``marker``; the lines read."""
    assert proc.stderr is not None
    seen = ""
    while marker not in seen:
        line = await asyncio.wait_for(proc.stderr.readline(), GAME_TIMEOUT)
        assert line, f"the JavaScript bot stopped (status {await proc.wait()}) before saying {marker!r}:\n{seen}"
        seen += line.decode()
    return seen


async def test_js_bot_removed_from_the_ladder_plays_on_and_seeks_again_once_restored(
        make_arena: Any, node: str) -> None:
    arena: Harness = await make_arena(pairing_interval_s=0.05)
    admin = {"Authorization": f"Bearer {ADMIN}"}
    token = await arena.create_bot("js-bot")
    assert (await arena.client.delete("/api/ladder/bots/js-bot", headers=admin)).status == 200
    py = await arena.bot("py-opp")
    proc = await start_js(node, arena, token, "--ladder")
    # Its seek is refused with `removed`: it says so and stays connected.
    log = await said(proc, "no more seeking")
    assert "removed from the ladder by the organizer" in log and "stopping" not in log
    await py.send({"type": "challenge", "opponent": "js-bot"})
    (over,) = await opponent(py, 1, seed=14)
    assert over.result.end_reason in RULES_END, over.result
    assert proc.returncode is None and arena.arena.presence.is_connected("js-bot")
    assert "js-bot" not in arena.arena.ladder.seeking
    resp = await arena.client.post("/api/ladder/bots/js-bot/restore", headers=admin)
    assert resp.status == 200, await resp.text()
    log += await said(proc, "restored to the ladder by the organizer: seeking again")
    await wait_until(lambda: "js-bot" in arena.arena.ladder.seeking, 10, "the restored bot did not seek")
    proc.send_signal(signal.SIGINT)
    code, rest = await exit_of(proc)
    assert code == 130 and "interrupted; closing" in rest, log + rest


async def test_js_bot_does_not_reconnect_after_bad_token_or_replacement(make_arena: Any, node: str) -> None:
    arena: Harness = await make_arena()
    proc = await start_js(node, arena, "-no-such-token")  # tokens may begin with "-"
    code, log = await exit_of(proc)
    assert code == 1 and "connection closed (4001 bad token)" in log and "not reconnecting" in log
    assert log.count("connecting to ") == 1

    token = await arena.create_bot("js-bot")
    proc = await start_js(node, arena, token)
    await connected(proc)
    await arena.connect(token)  # the same bot elsewhere: the bot's connection is replaced
    code, log = await exit_of(proc)
    assert code == 1 and "connection closed (4009" in log and "not reconnecting" in log
    assert "connecting to " not in log  # no second attempt


async def test_js_bot_keeps_its_token_when_the_token_file_cannot_be_read_at_a_reconnect(
        make_arena: Any, node: str, tmp_path: Path) -> None:
    arena: Harness = await make_arena()
    token_file = tmp_path / "js-bot.token"
    token_file.write_text(await arena.create_bot("js-bot") + "\n")
    proc = await run_js(node, "--url", ws_url(arena), "--token-file", str(token_file))
    await connected(proc)
    token_file.unlink()
    conn = arena.arena.presence.get("js-bot")
    assert conn is not None
    conn.outbox.cut()
    log = await said(proc, "connected as js-bot")  # again, with the token it had
    assert f"no such file or directory, open '{token_file}'; trying the token read before" in log, log
    proc.send_signal(signal.SIGINT)
    code, rest = await exit_of(proc)
    assert code == 130, log + rest


def test_js_bot_refuses_a_bad_command_line(node: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "MANDALA_TOKEN"}
    for args, says in [([], "no token"), (["--token", "t", "--ladder", "--challenge", "x"], "exclude"),
                       (["--token", "t", "--games", "0"], "--games must be a positive integer"),
                       (["--token", "t", "--url", "127.0.0.1:8080/ws"], "--url must be a ws:// or wss:// URL"),
                       (["--token", "t", "--url", "localhost:8080/ws"], "--url must be a ws:// or wss:// URL"),
                       (["--token", "t", "--url", "ws://127.0.0.1:8080/ws#x"], "(no #)")]:
        done = subprocess.run([*node_command(node), *args], capture_output=True, text=True, timeout=30, env=env)
        assert done.returncode == 2 and says in done.stderr, done.stderr


# ------------------------------------------------------------------ against a scripted server

WELCOME = {**CLIENT_WELCOME, "bot": "js-bot"}
CLOSE: dict[str, Any] = {"close": 1011}
"""In a scripted answer: close the connection, with a code after which the bot reconnects."""
Answer = Callable[[int, dict[str, Any]], list[dict[str, Any]]]
Received = list[tuple[float, dict[str, Any]]]


class Scripted:
    """A WebSocket server on a real socket that answers ``welcome`` to each ``hello`` and, to
    each frame, the frames ``answer(connection, frame)`` returns (:data:`CLOSE` closes the
    connection). ``received[n]`` holds what connection ``n`` sent, each frame with the loop time
    it came. With ``answer_close`` false it never answers the bot's close frame."""

    def __init__(self, answer: Answer, answer_close: bool) -> None:
        self.answer = answer
        self.answer_close = answer_close
        self.received: list[Received] = []
        self.released = asyncio.Event()
        """Set at the end: the connections whose close was not answered end then."""

    async def ws(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoclose=self.answer_close)
        await ws.prepare(request)
        connection, received = len(self.received), []
        self.received.append(received)
        async for frame in ws:
            message = json.loads(frame.data)
            received.append((asyncio.get_running_loop().time(), message))
            for reply in ([WELCOME] if message["type"] == "hello" else []) + self.answer(connection, message):
                if reply is CLOSE:
                    await ws.close(code=CLOSE["close"], message=b"scripted")
                    return ws
                await ws.send_json(reply)
        if not self.answer_close:
            await self.released.wait()
        return ws

    def sent(self, kind: str, connection: int = 0) -> Received:
        """The frames of type ``kind`` the bot sent on ``connection``, with the time each came."""
        frames = self.received[connection] if connection < len(self.received) else []
        return [(at, m) for at, m in frames if m["type"] == kind]


@asynccontextmanager
async def scripted(node: str, answer: Answer, *args: str,
                   answer_close: bool = True) -> AsyncIterator[tuple[Scripted, asyncio.subprocess.Process]]:
    """A scripted server and the JavaScript bot started against it with ``args``; at the end the
    bot is killed if it still runs, and its log printed (pytest shows it for a failed test)."""
    server = Scripted(answer, answer_close)
    app = web.Application()
    app.router.add_get("/ws", server.ws)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    url = f"ws://127.0.0.1:{runner.addresses[0][1]}/ws"
    proc = await run_js(node, "--url", url, "--token", "mdl_scripted", *args)
    try:
        yield server, proc
    finally:
        if proc.returncode is None:
            proc.kill()
        print((await proc.communicate())[1].decode())
        server.released.set()
        await runner.cleanup()


async def until(proc: asyncio.subprocess.Process, check: Callable[[], Any], what: str) -> Any:
    """Wait for ``check()`` to be true while the bot runs."""
    def running_and() -> Any:
        assert proc.returncode is None, f"the JavaScript bot stopped (status {proc.returncode}): {what}"
        return check()

    return await wait_until(running_and, 20, what)


async def frames(server: Scripted, proc: asyncio.subprocess.Process, kind: str, count: int,
                 connection: int = 0) -> Received:
    """Wait until the bot sent ``count`` frames of type ``kind`` on ``connection``; those frames."""
    await until(proc, lambda: len(server.sent(kind, connection)) >= count,
                f"the bot did not send {count} {kind} on connection {connection}")
    return server.sent(kind, connection)[:count]


REFUSED_FOR_NOW = [
    (("--ladder",), "seek", error("cluster_unavailable")),
    (("--ladder",), "seek", error("rate_limited", limit="seeks", retry_after=0.05)),
    (("--ladder",), "seek", error("ladder_resting", retry_after=0.05)),  # a code a newer server may add
    (("--challenge", "bob"), "challenge", error("cluster_unavailable")),
    (("--challenge", "bob"), "challenge", error("rate_limited", limit="challenges", retry_after=0.05)),
    (("--challenge", "bob"), "challenge", error("bot_offline")),
    (("--challenge", "bob"), "challenge", error("storage_unavailable", retry_after=0.05)),
    (("--challenge", "bob"), "challenge", error("opponent_resting")),
]


@pytest.mark.parametrize(("args", "kind", "refusal"), REFUSED_FOR_NOW,
                         ids=[f"{kind}-{refusal['code']}" for _, kind, refusal in REFUSED_FOR_NOW])
async def test_js_bot_sends_a_seek_or_challenge_refused_for_now_again(
        node: str, args: tuple[str, ...], kind: str, refusal: dict[str, Any]) -> None:
    """PROTOCOL.md §5.3, §5.11, §20.1 and §16: a refusal "for now", and one whose code the bot
    does not know, are tried again after ``retry_after`` seconds, or 1 s without one."""
    async with scripted(node, lambda _, m: [refusal] if m["type"] == kind else [], *args) as (server, proc):
        times = [at for at, _ in await frames(server, proc, kind, 3)]
    wait = refusal["retry_after"] or 1.0
    assert all(later - sooner >= wait - 0.01 for sooner, later in itertools.pairwise(times)), times
    assert len(server.received) == 1


async def test_js_bot_forgets_the_retries_of_a_connection_that_ended(node: str) -> None:
    """A challenge refused for now on a connection that then ends is not retried on the next
    one, which challenges anew: one challenge stays out, not one more per connection."""
    first_wait, wait = 1.5, 3.0  # the first connection's retry would come during the second's wait

    def answer(connection: int, message: dict[str, Any]) -> list[dict[str, Any]]:
        if message["type"] != "challenge":
            return []
        return [error("bot_offline", retry_after=first_wait), CLOSE] if connection == 0 else [
            error("bot_offline", retry_after=wait)]

    async with scripted(node, answer, "--challenge", "bob") as (server, proc):
        (first, _), (second, _) = await frames(server, proc, "challenge", 2, connection=1)
    assert second - first >= wait - 0.01, second - first


@pytest.mark.parametrize("args", [("--max-games", "1"), ("--games", "1", "--max-games", "2")])
async def test_js_bot_accepts_only_the_challenges_it_has_room_for(node: str, args: tuple[str, ...]) -> None:
    """PROTOCOL.md §5.4: the server starts every accepted game, whatever the bot plays already,
    so the bot counts its room itself, accepts whose game has not started yet included."""
    two = [challenged("c1", "ann"), challenged("c2", "ben")]
    async with scripted(node, lambda _, m: two if m["type"] == "hello" else [], *args) as (server, proc):
        await until(proc, lambda: len(server.sent("accept") + server.sent("decline")) == 2, "not both answered")
    assert [m["challenge_id"] for _, m in server.sent("accept")] == ["c1"]
    assert [m["challenge_id"] for _, m in server.sent("decline")] == ["c2"]


async def test_js_bot_interrupted_while_waiting_to_reconnect_exits_at_once(node: str) -> None:
    """SIGTERM between two connection attempts (on Node 20 a failed one leaves its socket
    CONNECTING): the bot exits 130 and connects no more."""
    with socket.socket() as refusing:
        refusing.bind(("127.0.0.1", 0))  # bound but not listening: every connection is refused
        proc = await run_js(node, "--url", f"ws://127.0.0.1:{refusing.getsockname()[1]}/ws", "--token", "mdl_t")
        log = await said(proc, "reconnecting in")
        proc.send_signal(signal.SIGTERM)
        code, rest = await exit_of(proc, 10)
    assert code == 130 and "interrupted; closing" in rest, log + rest
    assert (log + rest).count("connecting to ") == 1, log + rest


async def test_js_bot_stops_even_when_the_server_never_answers_its_close(node: str) -> None:
    async with scripted(node, lambda _, __: [], answer_close=False) as (_, proc):
        log = await said(proc, "connected as js-bot")
        proc.send_signal(signal.SIGTERM)
        code, rest = await exit_of(proc, 10)
    assert code == 130 and "interrupted; closing" in rest, log + rest


async def test_js_bot_stops_at_once_on_an_address_that_answers_with_no_websocket(make_arena: Any, node: str) -> None:
    """``ws://HOST:PORT`` (the page's address, without ``/ws``) answers the upgrade with a page:
    the bot says so, names the arena's path and does not retry, as the Python client does."""
    arena: Harness = await make_arena()
    base = ws_url(arena).removesuffix("/ws")
    for url, status, hint in ((base, 200, f"; the arena's WebSocket is at /ws: {base}/ws"),
                              (base + "/socket", 404, f"; the arena's WebSocket is at /ws: {base}/socket/ws")):
        proc = await run_js(node, "--url", url, "--token", "t")
        code, log = await exit_of(proc)
        assert code == 1 and f"no WebSocket at {url} (the server answered HTTP {status}); not reconnecting{hint}" in log
        assert log.count("connecting to ") == 1, log


def test_the_bot_is_one_small_file_on_the_built_in_websocket() -> None:
    text = BOT_JS.read_text(encoding="utf-8")
    assert len(text.splitlines()) < LINES_MAX
    imports = [line for line in text.splitlines() if line.startswith("import ")]
    assert imports and all(re.fullmatch(r"import \{ [\w ,]+ \} from 'node:\w+';", line) for line in imports)
    assert "import" not in text.replace("\n".join(imports), "")  # Node's own modules: nothing to install
    assert "new WebSocket(" in text


def test_the_bot_knows_the_error_codes_of_its_protocol_version() -> None:
    """The codes it treats as known are exactly version 1's (§14): any other is a newer server's
    plain refusal (§16), which it tries again."""
    text = BOT_JS.read_text(encoding="utf-8")
    listed = re.search(r"const KNOWN_ERRORS = new Set\(\((.*?)\)\.split", text, re.S)
    assert listed is not None
    codes = "".join(re.findall(r"'([^']*)'", listed.group(1))).split(" ")
    assert sorted(codes) == sorted(get_args(ErrorCode))


def test_the_bot_says_how_to_get_a_websocket_on_a_node_without_one(node: str) -> None:
    done = subprocess.run([node, "--no-experimental-websocket", str(BOT_JS), "--token", "t"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and "--experimental-websocket" in done.stderr and "Node >= 22" in done.stderr
