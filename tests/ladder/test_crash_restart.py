"""``kill -9`` of a busy ladder server, then a restart on the same database: every game a bot
saw finish is stored with its result, games cut off are aborted, and every bot's rating
equals a replay of the stored rated games through the Elo formula."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp
import msgspec
import pytest

from arena_testkit import free_port
from protocol.messages import PROTOCOL_VERSION, Decision, GameOver, ServerMessage
from server.ladder import elo
from server.storage.sqlite import SqliteStorage

ADMIN = "crash-test-admin"
BOTS = ["ann", "ben", "cat", "dan"]
SERVE = "import sys; from mandala_cli.main import main; sys.exit(main(sys.argv[1:]))"
RULES_ENDS = {"river", "deck", "no_moves", "turn_limit"}


class Server:
    """``mandala serve`` as a child process."""

    def __init__(self, db: Path, port: int, config: Path, log: Path) -> None:
        self.url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "MANDALA_ADMIN_TOKEN": ADMIN}
        env.pop("DATABASE_URL", None)
        self.log = log.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVE, "serve", "--port", str(port), "--db", str(db), "--config", str(config)],
            env=env, stdout=self.log, stderr=subprocess.STDOUT,
        )

    async def ready(self, http: aiohttp.ClientSession, timeout: float = 20.0) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            assert self.proc.poll() is None, "the server exited"
            try:
                async with http.get(self.url + "/health") as resp:
                    if resp.status == 200:
                        return
            except aiohttp.ClientConnectionError:
                pass
            assert loop.time() < deadline, "the server did not come up"
            await asyncio.sleep(0.05)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        self.proc.send_signal(sig)
        self.proc.wait(timeout=20)
        self.log.close()


async def ladder_bot(http: aiohttp.ClientSession, url: str, token: str, seed: int, overs: list[GameOver]) -> None:
    """Seek and answer every decision with a random legal move until the connection drops."""
    rng = random.Random(seed)
    decode = msgspec.json.Decoder(ServerMessage).decode  # type: ignore[arg-type]
    try:
        async with http.ws_connect(url.replace("http", "ws", 1) + "/ws") as ws:
            await ws.send_json({"type": "hello", "protocol": PROTOCOL_VERSION, "token": token, "max_games": 2})
            await ws.send_json({"type": "seek"})
            async for frame in ws:
                if frame.type is not aiohttp.WSMsgType.TEXT:
                    break
                msg = decode(frame.data)
                if isinstance(msg, Decision):
                    move = msgspec.to_builtins(rng.choice(msg.legal))
                    await ws.send_json({"type": "move", "game_id": msg.game_id, "request_id": msg.request_id, "move": move})
                elif isinstance(msg, GameOver):
                    overs.append(msg)
    except (aiohttp.ClientError, ConnectionError):
        pass


async def test_kill_9_during_a_busy_ladder_loses_nothing(tmp_path: Path) -> None:
    db, port, log = tmp_path / "ladder.db", free_port(), tmp_path / "server.log"
    config = tmp_path / "arena.toml"
    config.write_text("pairing_interval_s = 0.05\nmessages_per_second = 10000.0\nburst = 10000\n")
    overs: list[GameOver] = []
    async with aiohttp.ClientSession() as http:
        server = Server(db, port, config, log)
        try:
            await server.ready(http)
            tokens = {}
            for name in BOTS:
                async with http.post(server.url + "/api/bots", json={"name": name},
                                     headers={"Authorization": f"Bearer {ADMIN}"}) as resp:
                    assert resp.status == 201
                    tokens[name] = (await resp.json())["token"]
            bots = [asyncio.create_task(ladder_bot(http, server.url, tokens[n], i, overs)) for i, n in enumerate(BOTS)]
            # Busy: wait until at least 30 rated games are stored and ladder games are running.
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 60
            while True:
                async with http.get(server.url + "/api/ladder") as resp:
                    table = (await resp.json())["standings"]
                async with http.get(server.url + "/api/games?status=running") as resp:
                    running = [g for g in await resp.json() if g["kind"] == "ladder"]
                if sum(s["games"] for s in table) >= 60 and len(running) >= 2:
                    break
                assert loop.time() < deadline, f"the ladder did not get busy: {table}"
                await asyncio.sleep(0.02)
            server.kill(signal.SIGKILL)
            await asyncio.wait_for(asyncio.gather(*bots), 10)
        finally:
            if server.proc.poll() is None:
                server.kill()

        seen_over = {o.game_id: o for o in overs}
        assert len(seen_over) >= 30

        restarted = Server(db, port, config, log)
        try:
            await restarted.ready(http)
            async with http.get(restarted.url + "/api/ladder") as resp:
                served = {s["bot"]: s for s in (await resp.json())["standings"]}
        finally:
            restarted.kill(signal.SIGTERM)

    store = SqliteStorage(str(db))
    await store.open()
    try:
        rows = {g.game_id: g for g in await store.list_games(None, 10_000)}
        # Every game a bot saw finish is stored, finished, with the result it was told.
        for game_id, over in seen_over.items():
            row = rows[game_id]
            assert row.status == "finished" and row.result == msgspec.to_builtins(over.result)
            assert row.record == msgspec.to_builtins(over.record)
        # Nothing is left running; what the kill cut off is aborted and unrated in effect.
        assert not [g for g in rows.values() if g.status == "running"]
        cut = [g for g in rows.values() if g.status == "aborted"]
        assert cut and all(g.game_id not in seen_over for g in cut)
        # Ratings equal a replay of the stored rated games, in the order they finished.
        results = await store.rated_results()
        assert len(results) == sum(1 for g in rows.values() if g.rated and g.status == "finished")
        state = {n: (elo.EloSettings().initial, 0) for n in BOTS}
        for a, b, score in results:
            (ra, ga), (rb, gb) = state[a], state[b]
            na, nb = elo.update((ra, rb), (ga, gb), score)
            state[a], state[b] = (na, ga + 1), (nb, gb + 1)
        standings = {s.bot: s for s in await store.standings() if s.bot in BOTS}
        for name in BOTS:
            rating, games = state[name]
            assert standings[name].rated_games == games
            assert standings[name].rating == pytest.approx(rating, abs=1e-9)
            assert len(await store.rating_history(name)) == games
            assert served[name]["games"] == games and served[name]["rating"] == round(rating, 1)
    finally:
        await store.close()
