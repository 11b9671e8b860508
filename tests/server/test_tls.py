"""TLS on one node (``mandala serve --tls-cert --tls-key``): HTTPS and WSS on one port, with a
certificate authority made in the test; and what goes wrong: a plain request or ``ws://``
upgrade to the TLS port, a TLS handshake to a plain port, a client that stalls in its
handshake (closed in time, counted against its address), connections that finish their
handshakes and say nothing (counted until closed, closed once idle), certificate and key files
that cannot be used at start, and ``--require-tls``."""

from __future__ import annotations

import asyncio
import logging
import signal
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from arena_testkit import ADMIN, RECV_TIMEOUT, WsClient, play_out, random_policy, read_until, wait_until
from mandala_cli.main import main
from protocol.messages import PROTOCOL_VERSION, Error, Pong, Welcome
from server.config import load_settings
from tls_kit import Ca, Tap, TlsArena, serve_tls, tls_arena

AUTH = {"Authorization": f"Bearer {ADMIN}"}


@pytest.fixture
def ca(tmp_path: Path) -> Ca:
    return Ca(tmp_path / "ca")


@pytest.fixture
async def tls_server(ca: Ca, tmp_path: Path) -> AsyncIterator[TlsArena]:
    server = await tls_arena(tmp_path / "arena.db", ca.issue("server"))
    yield server
    await server.close()


async def hello(http: aiohttp.ClientSession, url: str, token: str | None, **ws: Any) -> WsClient:
    client = WsClient(await http.ws_connect(url, **ws))
    message: dict[str, Any] = {"type": "hello", "protocol": PROTOCOL_VERSION}
    if token is not None:
        message["token"] = token
    await client.send(message)
    return client


async def test_https_and_wss_on_one_port_play_a_game(tls_server: TlsArena, ca: Ca,
                                                    caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    context = ca.client_context()
    async with aiohttp.ClientSession() as http:
        async with http.get(tls_server.url + "/health", ssl=context) as resp:
            assert resp.status == 200 and (await resp.json())["status"] == "ok"
        tokens = []
        for name in ("alice", "bob"):
            async with http.post(tls_server.url + "/api/bots", json={"name": name}, headers=AUTH, ssl=context) as resp:
                assert resp.status == 201
                tokens.append((await resp.json())["token"])
        alice, bob = [await hello(http, tls_server.ws_url, t, ssl=context) for t in tokens]
        assert (await alice.expect(Welcome)).bot == "alice" and (await bob.expect(Welcome)).bot == "bob"
        async with http.post(tls_server.url + "/api/games", json={"players": ["alice", "bob"]}, headers=AUTH,
                             ssl=context) as resp:
            assert resp.status == 201
        overs = await asyncio.gather(play_out(alice, random_policy(1)), play_out(bob, random_policy(2)))
        assert overs[0][0].result == overs[1][0].result
        assert all(conn.tls for conn in tls_server.arena.presence.connections)
    assert "bot alice connected (127.0.0.1, TLS, client None)" in caplog.text


async def test_the_wire_of_a_tls_session_carries_no_token_and_no_view(tls_server: TlsArena, ca: Ca,
                                                                      make_arena: Any) -> None:
    """Bots created and a game played through a tap on the path: over HTTPS and WSS the tap
    sees neither a token (in the answers that issue them) nor a view; the same over plain HTTP
    and WS, through the same kind of tap, shows both (the tap sees everything)."""

    async def through_tap(port: int, secure: bool) -> tuple[bytes, list[str]]:
        context: ssl.SSLContext | bool = ca.client_context() if secure else True
        http_scheme, ws_scheme = ("https", "wss") if secure else ("http", "ws")
        async with Tap(port) as tap, aiohttp.ClientSession() as http:
            base = f"{http_scheme}://127.0.0.1:{tap.port}"
            tokens, clients = [], []
            for name in (f"{ws_scheme}-alice", f"{ws_scheme}-bob"):
                async with http.post(base + "/api/bots", json={"name": name}, headers=AUTH, ssl=context) as resp:
                    tokens.append((await resp.json())["token"])
                client = await hello(http, f"{ws_scheme}://127.0.0.1:{tap.port}/ws", tokens[-1], ssl=context)
                await client.expect(Welcome)
                clients.append(client)
            async with http.post(base + "/api/games", json={"players": [f"{ws_scheme}-alice", f"{ws_scheme}-bob"]},
                                 headers=AUTH, ssl=context) as resp:
                assert resp.status == 201
            await asyncio.gather(play_out(clients[0], random_policy(5)), play_out(clients[1], random_policy(6)))
            assert any('"view"' in raw for raw in clients[0].raw)
            return bytes(tap.captured), tokens

    wire, tokens = await through_tap(tls_server.site.port, secure=True)
    assert len(wire) > 10_000
    assert not any(t.encode() in wire for t in tokens) and ADMIN.encode() not in wire
    assert b'"view"' not in wire and b'"legal"' not in wire and b"/api/bots" not in wire
    plain = await make_arena()
    wire, tokens = await through_tap(plain.client.port, secure=False)
    assert all(t.encode() in wire for t in tokens) and b'"view"' in wire and ADMIN.encode() in wire  # what TLS hid


async def test_plain_http_and_ws_on_the_tls_port_get_nothing_and_it_serves_on(
        tls_server: TlsArena, ca: Ca, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    port = tls_server.site.port
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert await asyncio.wait_for(reader.read(), RECV_TIMEOUT) == b""  # no HTTP answer, the connection closed
    writer.close()
    async with aiohttp.ClientSession() as http:
        with pytest.raises(aiohttp.ClientError):
            await http.ws_connect(f"ws://127.0.0.1:{port}/ws")
        async with http.get(tls_server.url + "/health", ssl=ca.client_context()) as resp:
            assert resp.status == 200
    assert "a plain HTTP request from 127.0.0.1 on the TLS port: closed (use https:// and wss://)" in caplog.text


async def test_a_tls_handshake_to_a_plain_port_fails_at_once(make_arena: Any, ca: Ca) -> None:
    arena = await make_arena()
    port = arena.client.port
    async with aiohttp.ClientSession() as http:
        with pytest.raises(aiohttp.ClientSSLError) as failed:
            await http.get(f"https://127.0.0.1:{port}/health", ssl=ca.client_context())
    assert "WRONG_VERSION_NUMBER" in str(failed.value) or "wrong version number" in str(failed.value)
    assert (await arena.get_json("/health"))["status"] == "ok"  # the plain server serves on


async def test_a_stalled_handshake_is_closed_in_time_and_counted_against_its_address(
        ca: Ca, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    server = await tls_arena(tmp_path / "arena.db", ca.issue("server"), tls_handshake_timeout_s=1.0,
                             connections_per_ip=2, connections_per_ip_exempt=[])
    try:
        port = server.site.port
        stalled = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]  # say nothing
        await wait_until(lambda: server.arena.addresses.open.get("127.0.0.1") == 2, RECV_TIMEOUT,
                         "the two stalled handshakes are not counted")
        # A third connection from the same address is closed before any handshake.
        with pytest.raises((ssl.SSLError, ConnectionError)):
            _, w = await asyncio.open_connection("127.0.0.1", port, ssl=ca.client_context())
            w.close()
        for reader, writer in stalled:  # closed by the server within its timeout
            assert await asyncio.wait_for(reader.read(), 10) == b""
            writer.close()
        await wait_until(lambda: "127.0.0.1" not in server.arena.addresses.open, RECV_TIMEOUT,
                         "the stalled handshakes are still counted")
        async with aiohttp.ClientSession() as http, \
                http.get(server.url + "/health", ssl=ca.client_context()) as resp:
            assert resp.status == 200
    finally:
        await server.close()
    assert caplog.text.count("TLS handshake with 127.0.0.1 not finished within 1 s: closed") == 2


async def test_a_tls_connection_counts_against_its_address_until_it_closes_and_idle_ones_are_closed(
        ca: Ca, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Three connections an address may hold. A bot's WSS connection is one of them, two
    connections that finish their handshakes and then say nothing are the others, and a fourth
    is closed before its handshake. The silent two are closed once idle for ``idle_timeout_s``
    (they were held for good, their count given back at the handshake's end), and their counts
    come back with them; the bot plays on."""
    server = await tls_arena(tmp_path / "arena.db", ca.issue("server"), connections_per_ip=3,
                             connections_per_ip_exempt=[], idle_timeout_s=1.0)
    context = ca.client_context()
    held = server.arena.addresses.open
    try:
        async with aiohttp.ClientSession() as http, \
                http.post(server.url + "/api/bots", json={"name": "alice"}, headers=AUTH, ssl=context) as resp:
            token = (await resp.json())["token"]
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(force_close=True)) as http:
            alice = await hello(http, server.ws_url, token, ssl=context)
            assert (await alice.expect(Welcome)).bot == "alice"
            await wait_until(lambda: held == {"127.0.0.1": 1}, RECV_TIMEOUT,  # the WebSocket counts once,
                             "the WebSocket is not counted once")  # the API's connection is closed
            silent = [await asyncio.open_connection("127.0.0.1", server.site.port, ssl=context,
                                                    server_hostname="localhost") for _ in range(2)]
            assert held == {"127.0.0.1": 3}
            with pytest.raises((ssl.SSLError, ConnectionError)):  # the fourth: closed before its handshake
                _, w = await asyncio.open_connection("127.0.0.1", server.site.port, ssl=context,
                                                     server_hostname="localhost")
                w.close()
            for reader, writer in silent:  # closed by the server once idle for 1 s
                assert await asyncio.wait_for(reader.read(), 10) == b""
                writer.close()
            await wait_until(lambda: held == {"127.0.0.1": 1}, RECV_TIMEOUT, "the silent connections are still counted")
            await alice.send({"type": "ping", "data": "still here"})
            assert (await alice.expect(Pong)).data == "still here"  # a WebSocket is never idle so
            await alice.ws.close()
        await wait_until(lambda: held == {}, RECV_TIMEOUT, "the closed WebSocket is still counted")
    finally:
        await server.close()


async def test_mandala_serve_takes_its_certificate_from_the_environment_serves_tls_and_stops_cleanly(
        ca: Ca, tmp_path: Path) -> None:
    proc, port = serve_tls(ca, tmp_path)
    try:
        banner = await asyncio.to_thread(read_until, proc.stdout, b"listening on", 30)
        assert f"listening on https://127.0.0.1:{port}  (WebSocket: wss://127.0.0.1:{port}/ws)".encode() in banner
        async with aiohttp.ClientSession() as http:
            await wait_until(lambda: _answers(http, f"https://127.0.0.1:{port}/health", ca.client_context()), 10,
                             "no answer over HTTPS")
            spectator = await hello(http, f"wss://127.0.0.1:{port}/ws", None, ssl=ca.client_context())
            assert (await spectator.expect(Welcome)).bot is None
            proc.send_signal(signal.SIGTERM)
            assert await spectator.closed() == 1001  # the shutdown of any node: "server shutting down"
        assert await asyncio.to_thread(proc.wait, 30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


async def _answers(http: aiohttp.ClientSession, url: str, context: ssl.SSLContext) -> bool:
    try:
        async with http.get(url, ssl=context) as resp:
            return resp.status == 200
    except aiohttp.ClientError:
        return False


def test_the_tls_settings_come_from_the_config_file_and_the_environment(ca: Ca, tmp_path: Path) -> None:
    issued = ca.issue("server")
    config = tmp_path / "arena.toml"
    config.write_text(f'tls_cert = "{issued.cert}"\ntls_key = "{issued.key}"\nrequire_tls = true\n'
                      "tls_handshake_timeout_s = 3.0\n")
    settings = load_settings(config, environ={})
    assert (settings.tls_cert, settings.tls_key, settings.require_tls, settings.tls_handshake_timeout_s) == (
        str(issued.cert), str(issued.key), True, 3.0)
    moved = load_settings(config, environ={"MANDALA_TLS_CERT": "/elsewhere.pem", "MANDALA_TLS_KEY": "/elsewhere.key"})
    assert (moved.tls_cert, moved.tls_key) == ("/elsewhere.pem", "/elsewhere.key")


def test_a_certificate_or_key_that_cannot_be_used_stops_the_start_naming_the_file(
        ca: Ca, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good, other = ca.issue("server"), ca.issue("other")
    db = str(tmp_path / "never.db")
    missing = tmp_path / "missing.key"
    cases: list[tuple[list[str], str]] = [
        (["--tls-cert", str(good.cert), "--tls-key", str(missing)], f"--tls-key {missing}: cannot read it: "),
        (["--tls-cert", str(good.cert), "--tls-key", str(tmp_path)], f"--tls-key {tmp_path}: cannot read it: "),
        (["--tls-cert", str(good.key), "--tls-key", str(good.key)], f"--tls-cert {good.key}: not a PEM certificate"),
        (["--tls-cert", str(good.cert), "--tls-key", str(other.key)],
         f"--tls-key {other.key}: not the PEM private key of the certificate in --tls-cert {good.cert}"),
        (["--tls-cert", str(good.cert)], "--tls-cert needs --tls-key too"),
        (["--tls-cert", str(good.cert), "--tls-key", "server.key"],  # relative: the working directory's
         f"--tls-key server.key (that is {Path.cwd() / 'server.key'}): cannot read it: "),
    ]
    for flags, said in cases:
        assert main(["serve", "--db", db, *flags]) == 2
        err = capsys.readouterr().err
        assert err.startswith("mandala serve: ") and said in err, err
    assert not Path(db).exists()


async def test_require_tls_refuses_a_token_that_did_not_come_by_tls_except_from_loopback(
        make_arena: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    arena = await make_arena(require_tls=True, trust_forwarded_for=True)
    token = await arena.create_bot("alice")  # from loopback: allowed
    far = {"X-Forwarded-For": "203.0.113.9"}
    # A remote client through a proxy that did not say https: refused, with the address logged.
    plain = WsClient(await arena.client.ws_connect("/ws", headers=far))
    await plain.send({"type": "hello", "protocol": PROTOCOL_VERSION, "token": token})
    err = await plain.expect(Error)
    assert err.code == "tls_required" and "wss://" in err.message and "rotate it" in err.message
    assert await plain.closed() == 4012
    assert "a hello with a token from 203.0.113.9 without TLS refused (require_tls)" in caplog.text
    assert token not in caplog.text
    # A spectator needs no TLS; the same bot by TLS to the proxy, or from loopback, is taken.
    spectator = WsClient(await arena.client.ws_connect("/ws", headers=far))
    await spectator.send({"type": "hello", "protocol": PROTOCOL_VERSION})
    assert (await spectator.expect(Welcome)).bot is None
    secure = WsClient(await arena.client.ws_connect("/ws", headers={**far, "X-Forwarded-Proto": "https"}))
    await secure.send({"type": "hello", "protocol": PROTOCOL_VERSION, "token": token})
    assert (await secure.expect(Welcome)).bot == "alice"
    await secure.close()
    await arena.connect(token)
    # A proxy's header can only be believed from a trusted proxy: the last value counts.
    forged = WsClient(await arena.client.ws_connect("/ws", headers={**far, "X-Forwarded-Proto": "https, http"}))
    await forged.send({"type": "hello", "protocol": PROTOCOL_VERSION, "token": token})
    assert (await forged.expect(Error)).code == "tls_required"
    # HTTP: what carries or issues a token.
    for method, path, headers in [("POST", "/api/bots", far), ("POST", "/api/bots", {**far, **AUTH}),
                                  ("POST", "/api/bots/alice/token", {**far, "Authorization": f"Bearer {token}"}),
                                  ("DELETE", "/api/bots/alice/token", {**far, **AUTH}),
                                  ("POST", "/api/ladder/pause", {**far, **AUTH})]:
        resp = await arena.client.request(method, path, json={"name": "bob"}, headers=headers)
        assert resp.status == 403 and (await resp.json())["error"]["code"] == "tls_required", (method, path)
    resp = await arena.client.post("/api/bots", json={"name": "bob"},
                                   headers={**far, **AUTH, "X-Forwarded-Proto": "https"})
    assert resp.status == 201
    assert (await arena.client.get("/api/bots", headers=far)).status == 200  # nothing secret: served
    assert token not in caplog.text and ADMIN not in caplog.text


async def test_require_tls_takes_a_direct_tls_connection(ca: Ca, tmp_path: Path) -> None:
    server = await tls_arena(tmp_path / "arena.db", ca.issue("server"), require_tls=True, trust_forwarded_for=True)
    try:
        context = ca.client_context()
        far = {"X-Forwarded-For": "203.0.113.9"}  # as if from afar: the connection itself is TLS
        async with aiohttp.ClientSession() as http:
            async with http.post(server.url + "/api/bots", json={"name": "alice"}, headers={**far, **AUTH},
                                 ssl=context) as resp:
                assert resp.status == 201
                token = (await resp.json())["token"]
            client = WsClient(await http.ws_connect(server.ws_url, ssl=context, headers=far))
            await client.send({"type": "hello", "protocol": PROTOCOL_VERSION, "token": token})
            assert (await client.expect(Welcome)).bot == "alice"
            await client.close()
    finally:
        await server.close()
