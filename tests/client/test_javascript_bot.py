"""The JavaScript bot, ``clients/javascript/mandala-bot.mjs``, run by Node against a real server:
challenges, several games at once, reconnecting, the ladder, refusals and its command line.
The bot uses Node's built-in WebSocket client (``--experimental-websocket`` before Node 22).

Without Node >= 20.10 on PATH these tests are skipped with a loud reason; with ``CI=true`` they
fail instead, since CI must run them.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

import mandala
from arena_testkit import ADMIN, Harness, WsClient, exit_of, random_policy, wait_until
from mandala_cli import demo_cmd
from protocol.messages import Challenged, Decision, Error, GameOver, Update
from server.connections.connection import Connection

ROOT = Path(__file__).resolve().parents[2]
BOT_JS = ROOT / "clients" / "javascript" / "mandala-bot.mjs"
NODE_MIN = (20, 10)
LINES_MAX = 300
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


async def start_js(node: str, arena: Harness, token: str, *args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *node_command(node), "--url", ws_url(arena), "--token", token, *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


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


def test_js_bot_refuses_a_bad_command_line(node: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "MANDALA_TOKEN"}
    for args, says in [([], "no token"), (["--token", "t", "--ladder", "--challenge", "x"], "exclude"),
                       (["--token", "t", "--games", "0"], "--games must be a positive integer")]:
        done = subprocess.run([*node_command(node), *args], capture_output=True, text=True, timeout=30, env=env)
        assert done.returncode == 2 and says in done.stderr, done.stderr


def test_the_bot_is_one_small_file_on_the_built_in_websocket() -> None:
    text = BOT_JS.read_text(encoding="utf-8")
    assert len(text.splitlines()) < LINES_MAX
    imports = [line for line in text.splitlines() if line.startswith("import ")]
    assert imports and all(re.fullmatch(r"import \{ [\w ,]+ \} from 'node:\w+';", line) for line in imports)
    assert "import" not in text.replace("\n".join(imports), "")  # Node's own modules: nothing to install
    assert "new WebSocket(" in text


def test_the_bot_says_how_to_get_a_websocket_on_a_node_without_one(node: str) -> None:
    done = subprocess.run([node, "--no-experimental-websocket", str(BOT_JS), "--token", "t"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 1 and "--experimental-websocket" in done.stderr and "Node >= 22" in done.stderr
