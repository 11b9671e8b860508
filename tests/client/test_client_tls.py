"""The clients over TLS and with tokens they can keep secret: ``mandala-bot``, the ``mandala``
command, the Python client library and the Node.js bot against a server with TLS on (a
certificate authority made in the test), with the token from ``MANDALA_TOKEN``, a token file
or the command line (an old token beginning with ``-`` included), a rotation taken up from the
token file while a game runs, and certificates that do not verify."""

from __future__ import annotations

import asyncio
import os
import secrets
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from arena_testkit import ADMIN, BIN, WsClient, exit_of, first_legal, play_out, read_until, wait_until
from mandala import Move, View
from mandala_cli.main import SECRET_OPTIONS, build_parser
from mandala_client import Client, ClientError, ConnectionRejected, cli
from mandala_client.credentials import join_values
from protocol.messages import PROTOCOL_VERSION, Challenged, GameStart, Welcome
from server.connections.auth import hash_token
from test_client_ws import PlainBot, finish, start
from test_javascript_bot import node, node_command  # noqa: F401 - the fixture
from tls_kit import Ca, TlsArena, serve_tls, tls_arena

AUTH = {"Authorization": f"Bearer {ADMIN}"}


@pytest.fixture
def ca(tmp_path: Path) -> Ca:
    return Ca(tmp_path / "ca")


@pytest.fixture
async def server(ca: Ca, tmp_path: Path) -> AsyncIterator[TlsArena]:
    served = await tls_arena(tmp_path / "arena.db", ca.issue("server"), decision_ms=30_000)
    yield served
    await served.close()


async def create_bot(server: TlsArena, ca: Ca, name: str) -> str:
    async with aiohttp.ClientSession() as http, \
            http.post(server.url + "/api/bots", json={"name": name}, headers=AUTH, ssl=ca.client_context()) as resp:
        assert resp.status == 201
        return str((await resp.json())["token"])


async def opponent(server: TlsArena, ca: Ca, http: aiohttp.ClientSession, name: str) -> WsClient:
    """A bot over WSS that accepts the next challenge and plays it out with its first legal moves."""
    client = WsClient(await http.ws_connect(server.ws_url, ssl=ca.client_context()))
    await client.send({"type": "hello", "protocol": PROTOCOL_VERSION, "token": await create_bot(server, ca, name)})
    await client.expect(Welcome)
    return client


async def accept_and_play(client: WsClient, games: int = 1) -> None:
    for _ in range(games):
        offer = await client.until(Challenged, timeout=30)
        await client.send({"type": "accept", "challenge_id": offer.challenge_id})
        await client.until(GameStart)
        await play_out(client, first_legal, timeout=30)


async def run(*command: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(*command, env={**os.environ, **(env or {})},
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


# ------------------------------------------------------------------ over wss


async def test_mandala_bot_plays_over_wss_with_the_ca_file_and_the_token_from_the_environment(
        server: TlsArena, ca: Ca) -> None:
    async with aiohttp.ClientSession() as http:
        bob = await opponent(server, ca, http, "bob")
        token = await create_bot(server, ca, "alice")
        proc = await asyncio.create_subprocess_exec(
            str(BIN / "mandala-bot"), "--url", server.ws_url, "--bot", "greedy", "--challenge", "bob", "--games", "1",
            env={**os.environ, "MANDALA_TOKEN": token, "MANDALA_CA_FILE": str(ca.file)},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        await accept_and_play(bob)
        code, log = await exit_of(proc)
    assert code == 0, log
    assert f"connected to {server.ws_url}" in log and "[1/1]" in log and token not in log


async def test_the_mandala_command_takes_https_with_the_ca_file(server: TlsArena, ca: Ca, tmp_path: Path) -> None:
    token_file = tmp_path / "alice.token"
    code, out, err = await run(str(BIN / "mandala"), "bot", "create", "alice", "--server", server.url,
                               "--ca-file", str(ca.file), "--token-file", str(token_file),
                               env={"MANDALA_ADMIN_TOKEN": ADMIN})
    assert code == 0, err
    token = token_file.read_text().strip()
    assert token.startswith("mdl_") and token not in out and f"Its token is in {token_file}" in out
    assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
    code, _, err = await run(str(BIN / "mandala"), "bot", "create", "bob", "--server", server.url,
                             env={"MANDALA_ADMIN_TOKEN": ADMIN})
    assert code == 1
    assert err.strip() == (f"mandala bot create: error: cannot connect to {server.url}: the server's certificate does "
                           "not verify: unable to get local issuer certificate. If the server's certificate comes "
                           "from a private certificate authority, give its CA file with --ca-file or $MANDALA_CA_FILE")


async def test_a_certificate_that_does_not_verify_stops_every_client_with_the_url_and_the_reason(
        ca: Ca, tmp_path: Path, make_arena: Any) -> None:
    plain = await make_arena()
    expired = await tls_arena(tmp_path / "expired.db", ca.issue("expired", expired=True))
    elsewhere = await tls_arena(tmp_path / "elsewhere.db", ca.issue("elsewhere", names=("arena.example",)))
    good = await tls_arena(tmp_path / "good.db", ca.issue("good"))
    try:
        cases = [(expired.ws_url, str(ca.file), "the server's certificate does not verify: certificate has expired"),
                 (elsewhere.ws_url, str(ca.file), "the server's certificate does not verify: "
                                                  "IP address mismatch, certificate is not valid for '127.0.0.1'."),
                 (good.ws_url, None, "the server's certificate does not verify: unable to get local issuer certificate"),
                 (f"wss://127.0.0.1:{plain.client.port}/ws", str(ca.file), "the TLS handshake failed: ")]
        for url, ca_file, why in cases:
            client = Client(PlainBot(), url=url, token="mdl_" + "x" * 43, ca_file=ca_file, reconnect_delay_s=0.01)
            with pytest.raises(ClientError) as stopped:
                await asyncio.wait_for(client.run(), 30)
            assert str(stopped.value).startswith(f"cannot connect to {url}: {why}"), stopped.value
            assert client.attempts == 1  # not retried: the same certificate would be met again
        assert "Does the server serve TLS? One without it is reached at ws:// or http://" in str(stopped.value)
        code, _, err = await run(str(BIN / "mandala-bot"), "--url", expired.ws_url, "--ca-file", str(ca.file),
                                 "--bot", "random", env={"MANDALA_TOKEN": "mdl_" + "x" * 43})
        assert code == 1 and f"cannot connect to {expired.ws_url}: the server's certificate does not verify: " \
                              "certificate has expired" in err, err
        code, _, err = await run(str(BIN / "mandala-bot"), "--url", good.ws_url, "--ca-file", str(tmp_path / "none.pem"),
                                 "--bot", "random", env={"MANDALA_TOKEN": "mdl_" + "x" * 43})
        assert code == 2 and f"--ca-file {tmp_path / 'none.pem'}: no such file" in err
    finally:
        for served in (expired, elsewhere, good):
            await served.close()


# ------------------------------------------------------------------ tokens a bot author can keep


class Holding(PlainBot):
    """Holds its first decision until ``release`` is set (the game's clock is long), so the
    token is rotated while it thinks."""

    def __init__(self) -> None:
        super().__init__(3)
        self.holding = asyncio.Event()
        self.release = asyncio.Event()

    async def choose(self, view: View, legal: list[Move]) -> Move:  # type: ignore[override]
        if not self.release.is_set():
            self.holding.set()
            await self.release.wait()
        return self.rng.choice(legal)


async def test_a_rotation_written_to_the_token_file_is_taken_up_while_a_game_runs(
        server: TlsArena, ca: Ca, tmp_path: Path) -> None:
    token_file = tmp_path / "alice.token"
    code, _, err = await run(str(BIN / "mandala"), "bot", "create", "alice", "--server", server.url,
                             "--token-file", str(token_file), env={"MANDALA_ADMIN_TOKEN": ADMIN,
                                                                   "MANDALA_CA_FILE": str(ca.file)})
    assert code == 0, err
    old = token_file.read_text().strip()
    async with aiohttp.ClientSession() as http:
        bob = await opponent(server, ca, http, "bob")
        bot = Holding()
        alice = Client(bot, url=server.ws_url, token_file=str(token_file), ca_file=str(ca.file), challenge="bob",
                       games=1)
        task = await start(alice)
        offer = await bob.until(Challenged)
        await bob.send({"type": "accept", "challenge_id": offer.challenge_id})
        done = asyncio.create_task(play_out(bob, first_legal, timeout=30))
        await asyncio.wait_for(bot.holding.wait(), 10)
        # The bot's author rotates the token: with the one in the file, the new one written there.
        code, out, err = await run(str(BIN / "mandala"), "bot", "rotate", "alice", "--server", server.url,
                                   "--ca-file", str(ca.file), "--token-file", str(token_file))
        assert code == 0, err
        new = token_file.read_text().strip()
        assert new != old and new.startswith("mdl_") and new not in out and old not in out + err
        await wait_until(lambda: alice.welcomes == 2, 15, "the client did not come back with the new token")
        bot.release.set()
        (games,) = await finish(task)
        await done
    assert len(games) == 1 and games[0].result is not None and games[0].result.end_reason != "timeout"
    assert alice.welcomes == 2 and alice.token == new
    async with aiohttp.ClientSession() as http:
        stale = WsClient(await http.ws_connect(server.ws_url, ssl=ca.client_context()))
        await stale.send({"type": "hello", "protocol": PROTOCOL_VERSION, "token": old})
        assert await stale.closed() == 4001


async def test_a_thousand_issued_tokens_and_an_old_one_beginning_with_a_dash_work_on_the_command_lines(
        make_arena: Any) -> None:
    arena = await make_arena()
    sem = asyncio.Semaphore(50)

    async def issued(name: str) -> tuple[str, str]:
        async with sem:
            return name, await arena.create_bot(name)

    tokens = dict(await asyncio.gather(*(issued(f"bot{i:04d}") for i in range(1000))))
    assert len(set(tokens.values())) == 1000
    mandala_bot, mandala = cli.build_parser(), build_parser()
    for token in tokens.values():  # as README shows them, and in the other spelling
        for words in (["--token", token], [f"--token={token}"]):
            assert mandala_bot.parse_args(join_values([*words, "--bot", "greedy", "--ladder"], ("--token",))).token == token
            assert mandala.parse_args(join_values(["bot", "rotate", "x", *words], SECRET_OPTIONS)).token == token

    async def says_hello(name: str, token: str) -> None:
        async with sem:
            client = await arena.ws()
            await client.send({"type": "hello", "protocol": PROTOCOL_VERSION, "token": token})
            assert (await client.expect(Welcome)).bot == name
            await client.close()

    await asyncio.gather(*(says_hello(n, t) for n, t in tokens.items()))
    # A token issued before the prefix may begin with "-": the real command lines take it.
    legacy = "-" + secrets.token_urlsafe(32)[1:]
    await arena.arena.storage.create_bot("legacy", hash_token(legacy), "2026-01-01T00:00:00.000Z")
    base = str(arena.client.make_url("")).rstrip("/")
    bob = await arena.bot("bob")
    proc = await asyncio.create_subprocess_exec(
        str(BIN / "mandala-bot"), "--url", base.replace("http", "ws", 1) + "/ws", "--token", legacy, "--bot",
        "greedy", "--challenge", "bob", "--games", "1", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    await accept_and_play(bob)
    code, log = await exit_of(proc)
    assert code == 0 and "[1/1]" in log, log
    code, out, err = await run(str(BIN / "mandala"), "bot", "rotate", "legacy", "--server", base, "--token", legacy)
    assert code == 0, err
    fresh = out.strip().splitlines()[-1]
    assert fresh.startswith("mdl_")
    await arena.connect(fresh)


async def test_token_options_and_files_are_read_as_documented(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("MANDALA_TOKEN", raising=False)
    token_file = tmp_path / "t"
    token_file.write_text("  mdl_abc \n")
    for args, why in ((["--token-file", str(tmp_path / "none"), "--bot", "random"], "cannot read it"),
                      (["--token-file", str(tmp_path), "--bot", "random"], "cannot read it"),
                      (["--token", "t", "--token-file", str(token_file), "--bot", "random"], "not allowed with"),
                      (["--url", "http://x/ws", "--token", "t", "--bot", "random"], "a ws:// or wss:// address")):
        with pytest.raises(SystemExit) as done:
            cli.main(args)
        assert done.value.code == 2 and why in capsys.readouterr().err, args
    (tmp_path / "two").write_text("mdl_a mdl_b\n")
    with pytest.raises(SystemExit):
        cli.main(["--token-file", str(tmp_path / "two"), "--bot", "random"])
    assert "not a token" in capsys.readouterr().err
    client = Client(PlainBot(), url="ws://127.0.0.1:1/ws", token_file=str(token_file))
    assert client.token == "mdl_abc"
    with pytest.raises(ValueError, match="not both"):
        Client(PlainBot(), url="ws://127.0.0.1:1/ws", token="a", token_file=str(token_file))
    assert join_values(["--token", "-x", "--", "--token", "-y"], ("--token",)) == ["--token=-x", "--", "--token", "-y"]


def test_a_bot_name_beginning_with_a_dash_is_taken_by_the_options_that_name_bots() -> None:
    """``-dash`` is a valid bot name: ``mandala export --bot -dash`` and the like are read as
    written (argparse took ``-dash`` for an option, and the command failed)."""
    from mandala_cli.main import NAME_OPTIONS

    mandala = build_parser()
    words = join_values(["export", "--bot", "-dash", "-o", "x.jsonl"], (*SECRET_OPTIONS, *NAME_OPTIONS))
    assert mandala.parse_args(words).bot == "-dash"
    words = join_values(["tournament", "create", "--name", "cup", "--format", "gauntlet", "--bots", "-dash,ann",
                         "--bot-under-test", "-dash"], (*SECRET_OPTIONS, *NAME_OPTIONS))
    created = mandala.parse_args(words)
    assert (created.bots, created.bot_under_test) == ("-dash,ann", "-dash")
    assert cli.build_parser().parse_args(join_values(["--bot", "greedy", "--challenge", "-dash"],
                                                     ("--token", "--challenge"))).challenge == "-dash"


# ------------------------------------------------------------------ the Node.js bot


async def test_the_js_bot_plays_over_wss_with_the_ca_file_and_stops_on_a_bad_certificate(
        node: str, server: TlsArena, ca: Ca, tmp_path: Path) -> None:  # noqa: F811
    token_file = tmp_path / "js.token"
    token_file.write_text(await create_bot(server, ca, "js-bot") + "\n")
    async with aiohttp.ClientSession() as http:
        bob = await opponent(server, ca, http, "bob")
        proc = await asyncio.create_subprocess_exec(
            *node_command(node), "--url", server.ws_url, "--token-file", str(token_file), "--ca-file", str(ca.file),
            "--challenge", "bob", "--games", "1", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        await accept_and_play(bob)
        code, log = await exit_of(proc)
    assert code == 0 and "connected as js-bot" in log and "[1/1]" in log, log
    # Without the CA file: stopped at once, the URL and the reason said.
    proc = await asyncio.create_subprocess_exec(
        *node_command(node), "--url", server.ws_url, "--token-file", str(token_file),
        env={k: v for k, v in os.environ.items() if k not in ("MANDALA_CA_FILE", "NODE_EXTRA_CA_CERTS")},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    code, log = await exit_of(proc, 30)
    assert code == 1, log
    assert f"cannot connect to {server.ws_url}: TLS: " in log and "(UNABLE_TO_" in log, log  # Node's words
    assert "give its CA file with --ca-file or MANDALA_CA_FILE" in log
    assert log.count("connecting to") == 1


async def test_the_js_bot_takes_up_a_rotation_from_its_token_file(node: str, make_arena: Any,  # noqa: F811
                                                                  tmp_path: Path) -> None:
    arena = await make_arena(decision_ms=30_000)
    base = str(arena.client.make_url("")).rstrip("/")
    token_file = tmp_path / "js.token"
    token_file.write_text(await arena.create_bot("js-bot") + "\n")
    bob = await arena.bot("bob")
    proc = await asyncio.create_subprocess_exec(
        *node_command(node), "--url", base.replace("http", "ws", 1) + "/ws", "--token-file", str(token_file),
        "--challenge", "bob", "--games", "1", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    offer = await bob.until(Challenged, timeout=30)
    await bob.send({"type": "accept", "challenge_id": offer.challenge_id})
    await bob.until(GameStart)
    code, _, err = await run(str(BIN / "mandala"), "bot", "rotate", "js-bot", "--server", base, "--token-file",
                             str(token_file))
    assert code == 0, err
    await play_out(bob, first_legal, timeout=30)
    code, log = await exit_of(proc)
    assert code == 0 and "token retired: reconnecting with the new one" in log and "[1/1]" in log, log
    assert log.count("connected as js-bot") == 2


async def test_the_js_bot_takes_an_old_token_beginning_with_a_dash(node: str, make_arena: Any) -> None:  # noqa: F811
    arena = await make_arena()
    legacy = "-" + secrets.token_urlsafe(32)[1:]
    await arena.arena.storage.create_bot("legacy-js", hash_token(legacy), "2026-01-01T00:00:00.000Z")
    bob = await arena.bot("bob")
    base = str(arena.client.make_url("")).rstrip("/")
    proc = await asyncio.create_subprocess_exec(
        *node_command(node), "--url", base.replace("http", "ws", 1) + "/ws", "--token", legacy, "--challenge", "bob",
        "--games", "1", stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    await accept_and_play(bob)
    code, log = await exit_of(proc)
    assert code == 0 and "connected as legacy-js" in log and "[1/1]" in log, log


async def test_over_wss_the_client_hears_the_servers_close_code_and_does_not_reconnect(ca: Ca, tmp_path: Path) -> None:
    """§15.3: no reconnecting after 4001 (a bad token) or 4009 (replaced). Over TLS, ``mandala
    serve`` (uvloop) ends the connection right after its close frame, before the client's answer
    to it is written, which aiohttp reports as 1006: the client goes by the frame's code."""
    proc, port = serve_tls(ca, tmp_path)
    url = f"wss://127.0.0.1:{port}/ws"
    try:
        await asyncio.to_thread(read_until, proc.stdout, b"listening on", 30)
        bad = Client(PlainBot(), url=url, token="mdl_not-a-token", ca_file=str(ca.file), reconnect_delay_s=0.01)
        with pytest.raises(ConnectionRejected) as rejected:
            await asyncio.wait_for(bad.run(), 30)
        assert rejected.value.code == 4001 and bad.attempts == 1
        async with aiohttp.ClientSession() as http, \
                http.post(f"https://127.0.0.1:{port}/api/bots", json={"name": "twice"}, headers=AUTH,
                          ssl=ca.client_context()) as resp:
            token = str((await resp.json())["token"])
        first = Client(PlainBot(), url=url, token=token, ca_file=str(ca.file), reconnect_delay_s=0.01)
        running = asyncio.create_task(first.run())
        await asyncio.wait_for(first.connected.wait(), 30)
        second = Client(PlainBot(), url=url, token=token, ca_file=str(ca.file))
        other = asyncio.create_task(second.run())
        with pytest.raises(ConnectionRejected) as replaced:
            await asyncio.wait_for(running, 30)
        assert replaced.value.code == 4009 and first.attempts == 1  # it did not come back to fight for the bot
        second.stop()
        await asyncio.wait_for(other, 30)
    finally:
        proc.terminate()
        await asyncio.to_thread(proc.wait, 30)
        assert proc.stdout is not None
        proc.stdout.close()
