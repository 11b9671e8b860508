"""``mandala serve --log-format json``: a real server's log, read line by line as it wrote it, is one
JSON object a line with its time, level, logger and message, the node on every line, the
request (or ``/ws`` connection) a line was logged for, and the game or bot it is about; and no
token, a bot's or the admin's, right or wrong, appears in it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import aiohttp

from arena_testkit import SERVE, free_port, wait_until
from protocol.messages import PROTOCOL_VERSION

ADMIN = "json-logs-admin-secret"
FIELDS = {"time", "level", "logger", "message", "node"}


async def hello(http: aiohttp.ClientSession, url: str, token: str) -> aiohttp.ClientWebSocketResponse:
    ws = await http.ws_connect(url.replace("http", "ws", 1) + "/ws")
    await ws.send_json({"type": "hello", "protocol": PROTOCOL_VERSION, "token": token})
    return ws


async def answer_until_over(ws: aiohttp.ClientWebSocketResponse) -> dict[str, Any]:
    """Answer each decision with its first legal move; the ``game_over``."""
    async for frame in ws:
        msg = json.loads(frame.data)
        if msg["type"] == "decision":
            await ws.send_json({"type": "move", "game_id": msg["game_id"], "request_id": msg["request_id"],
                                "move": msg["legal"][0]})
        elif msg["type"] == "game_over":
            return msg
    raise AssertionError("the connection closed before the game was over")


async def test_a_json_log_line_by_line(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "MANDALA_ADMIN_TOKEN": ADMIN, "MANDALA_LOG_FORMAT": "json"}
    env.pop("DATABASE_URL", None)
    log = tmp_path / "server.log"
    with open(log, "wb") as stderr, open(tmp_path / "stdout", "wb") as stdout:
        server = subprocess.Popen(
            [sys.executable, "-c", SERVE, "serve", "--port", str(port), "--db", str(tmp_path / "arena.db"),
             "--log-level", "debug", "--node", "logs-node", "--trust-forwarded-for"],
            env=env, stdout=stdout, stderr=stderr)
    tokens: dict[str, str] = {}
    try:
        async with aiohttp.ClientSession() as http:
            async def up() -> bool:
                assert server.poll() is None, log.read_text()
                try:
                    async with http.get(url + "/health", headers={"X-Request-Id": "trace-42"}) as resp:
                        assert resp.headers["X-Request-Id"] == "trace-42"  # a proxy's id, kept
                        return resp.status == 200
                except aiohttp.ClientConnectionError:
                    return False

            await wait_until(up, 30, "the server did not come up")
            async with http.get(url + "/health", headers={"X-Request-Id": "not an id!"}) as resp:
                made = resp.headers["X-Request-Id"]
                assert len(made) == 16 and made != "not an id!"
            for name in ("ann", "bob"):
                async with http.post(url + "/api/bots", json={"name": name},
                                     headers={"Authorization": f"Bearer {ADMIN}"}) as resp:
                    assert resp.status == 201
                    tokens[name] = (await resp.json())["token"]
            wrong_admin = "wrong-admin-token-0123456789"
            async with http.post(url + "/api/bots", json={"name": "eve"},
                                 headers={"Authorization": f"Bearer {wrong_admin}"}) as resp:
                assert resp.status == 403
            async with http.get(url + "/metrics", headers={"Authorization": f"Bearer {ADMIN}"}) as resp:
                assert resp.status == 200 and len(resp.headers["X-Request-Id"]) == 16
            async with http.get(url + "/metrics", headers={"Authorization": f"Bearer {wrong_admin}"}) as resp:
                assert resp.status == 403
            wrong_bot = "wrong-bot-token-abcdefghijklmnopqrstuvwxyz0"
            # A token a client puts in a URL, its own or a page's it came from, which the access
            # line quotes: blanked there.
            async with http.get(url + f"/api/bots/ann?token={tokens['ann']}",
                                headers={"Referer": f"{url}/?t={tokens['bob']}"}) as resp:
                assert resp.status in (200, 400)
            async with http.get(url + f"/api/games?access_token={wrong_bot}") as resp:
                assert resp.status == 400
            refused = await hello(http, url, wrong_bot)
            assert json.loads((await refused.receive()).data)["code"] == "bad_token"
            await refused.close()

            ann, bob = await hello(http, url, tokens["ann"]), await hello(http, url, tokens["bob"])
            for ws in (ann, bob):
                assert json.loads((await ws.receive()).data)["type"] == "welcome"
            async with http.post(url + "/api/games", json={"players": ["ann", "bob"]},
                                 headers={"Authorization": f"Bearer {ADMIN}"}) as resp:
                game_id = (await resp.json())["game_id"]
            overs = await asyncio.gather(answer_until_over(ann), answer_until_over(bob))
            assert {o["game_id"] for o in overs} == {game_id}
            await ann.close()
            await bob.close()

            def said(text: str) -> bool:
                return text in log.read_text()

            await wait_until(lambda: said("bot ann disconnected") and said("bot bob disconnected"), 10,
                             "the server did not log the bots leaving")
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(30)
    assert server.returncode == 0

    text = log.read_text(encoding="utf-8")
    lines = [json.loads(line) for line in text.splitlines()]  # every line is one JSON object
    assert lines and all(isinstance(line, dict) and line.keys() >= FIELDS for line in lines), text
    assert {line["node"] for line in lines} == {"logs-node"}
    assert {line["level"] for line in lines} <= {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}
    assert all(datetime.fromisoformat(line["time"]).utcoffset() is not None for line in lines)

    def one(logger: str, message: str) -> dict[str, Any]:
        found = [line for line in lines if line["logger"] == logger and line["message"].startswith(message)]
        assert len(found) == 1, (logger, message, found)
        return found[0]

    connected = one("server.http.ws", "bot ann connected")
    assert connected["bot"] == "ann" and len(connected["request_id"]) == 16
    left = one("server.http.ws", "bot ann disconnected")
    assert left["bot"] == "ann" and left["request_id"] == connected["request_id"]  # the same connection
    assert one("server.http.api", "bot bob created")["bot"] == "bob"
    started = one("server.games.manager", f"game {game_id} started")
    assert started["game"] == game_id and started["level"] == "DEBUG"
    assert one("server.games.manager", f"game {game_id} over")["game"] == game_id
    health = [line for line in lines if line["logger"] == "aiohttp.access" and "GET /health" in line["message"]]
    assert {"trace-42", made} <= {line.get("request_id") for line in health}
    scrapes = [line["message"] for line in lines if line["logger"] == "aiohttp.access" and "GET /metrics" in line["message"]]
    assert len(scrapes) == 1 and '" 403 ' in scrapes[0], scrapes  # a scrape answered gets no line; a refused one does

    quoted = [line["message"] for line in lines if line["logger"] == "aiohttp.access" and "token=" in line["message"]]
    assert len(quoted) == 2 and all("token=…" in m for m in quoted) and "t=mdl_…" in quoted[0], quoted
    for secret in (ADMIN, wrong_admin, wrong_bot, *tokens.values()):
        assert secret not in text


async def test_a_bot_named_like_a_token_keeps_its_name_in_the_access_line(tmp_path: Path) -> None:
    """A bot name may start with ``mdl_`` (32 characters at most, fewer than any token's 47):
    the access lines of its page name it whole, while a token in the same URL is blanked."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "MANDALA_ADMIN_TOKEN": ADMIN}
    env.pop("DATABASE_URL", None)
    log = tmp_path / "server.log"
    name = "mdl_champion_bot_v2_final_32char"
    assert len(name) == 32
    with open(log, "wb") as stderr, open(tmp_path / "stdout", "wb") as stdout:
        server = subprocess.Popen([sys.executable, "-c", SERVE, "serve", "--port", str(port), "--db",
                                   str(tmp_path / "arena.db")], env=env, stdout=stdout, stderr=stderr)
    try:
        async with aiohttp.ClientSession() as http:
            async def up() -> bool:
                assert server.poll() is None, log.read_text()
                try:
                    async with http.get(url + "/health") as resp:
                        return resp.status == 200
                except aiohttp.ClientConnectionError:
                    return False

            await wait_until(up, 30, "the server did not come up")
            async with http.post(url + "/api/bots", json={"name": name}, headers={"Authorization": f"Bearer {ADMIN}"}) as resp:
                assert resp.status == 201
                token = (await resp.json())["token"]
            async with http.get(f"{url}/api/bots/{name}/history?t={token}") as resp:
                assert resp.status in (200, 400)
            async with http.get(f"{url}/api/bots/{name}") as resp:
                assert resp.status == 200
            await wait_until(lambda: log.read_text().count("GET /api/bots/mdl_") == 2, 10, "no access lines")
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(30)
    text = log.read_text()
    assert f'"GET /api/bots/{name}/history?t=mdl_… HTTP/1.1"' in text and f'"GET /api/bots/{name} HTTP/1.1"' in text, text
    assert token not in text
