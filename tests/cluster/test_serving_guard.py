"""One PostgreSQL database, one server, or the nodes of one cluster: a ``mandala serve`` started
by mistake on a database another serves (a second single server, or a cluster's node without
``--redis``) would mark the running server's games aborted as it started. It is refused,
naming who holds the database, and the running game plays on; ``kill -9`` of the holder lets
the next start serve at once."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import aiohttp
import asyncpg

from arena_testkit import BIN, ServeProcess, exit_of, free_port


async def _serve_again(database: str, tmp_path: Path, *extra: str) -> tuple[int, str]:
    """``mandala serve`` on ``database`` (waiting 2 s for it at most): its exit status and
    stderr's last line (a server that starts is killed and fails the test)."""
    config = tmp_path / f"again{free_port()}.toml"
    config.write_text("storage_wait_s = 2\n")
    again = await asyncio.create_subprocess_exec(
        str(BIN / "mandala"), "serve", "--port", str(free_port()), "--db", database, "--config", str(config), *extra,
        cwd=tmp_path, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    code, err = await exit_of(again, 60)
    return code, err.strip().splitlines()[-1]


async def _status(database: str, game_id: str) -> str:
    conn = await asyncpg.connect(database)
    try:
        return str(await conn.fetchval("SELECT status FROM games WHERE id = $1", game_id))
    finally:
        await conn.close()


async def test_a_second_server_on_a_served_postgresql_database_is_refused(
        database: str, fresh_redis: str, tmp_path: Path) -> None:
    config = tmp_path / "arena.toml"
    config.write_text("decision_ms = 600000\n")
    port = free_port()
    async with aiohttp.ClientSession() as http:
        server = ServeProcess(database, port, config, tmp_path / "first.log")
        try:
            await server.ready(http)
            ws, game_id = await server.game_between(http, ["ann", "bob"])

            code, last = await _serve_again(database, tmp_path)
            assert code == 2, last
            assert last.startswith("mandala serve: cannot serve postgresql://") and ": another server (connected from " in last
            assert last.endswith(", and a single server may not serve it beside that: stop it first (a cluster's nodes "
                                 "all start with --redis)"), last
            code, last = await _serve_again(database, tmp_path, "--redis", fresh_redis, "--node", "n9")
            assert code == 2 and ": a single server (connected from " in last
            assert "and a cluster's node may not serve it beside that" in last, last
            assert await _status(database, game_id) == "running"
            async with http.get(f"http://127.0.0.1:{port}/api/games/{game_id}") as resp:
                assert (await resp.json())["status"] == "running"
            for conn in ws:
                await conn.close()
        finally:
            server.kill(signal.SIGKILL)

        # kill -9 let go of the database: the next start serves it (and aborts the game it left)
        restarted = ServeProcess(database, free_port(), config, tmp_path / "second.log")
        try:
            await restarted.ready(http, timeout=20)
        finally:
            restarted.kill(signal.SIGTERM)
    assert await _status(database, game_id) == "aborted"


async def test_a_single_server_beside_a_cluster_node_is_refused(database: str, fresh_redis: str,
                                                                tmp_path: Path) -> None:
    """The nodes of a cluster share the database; a single server started on it (a node whose
    ``--redis`` was left out) is refused while one of them runs."""
    config = tmp_path / "arena.toml"
    config.write_text("")
    async with aiohttp.ClientSession() as http:
        node = ServeProcess(database, free_port(), config, tmp_path / "node.log", "--redis", fresh_redis, "--node", "n1")
        try:
            await node.ready(http)
            code, last = await _serve_again(database, tmp_path)
            assert code == 2 and ": another server (connected from " in last, last
            second = ServeProcess(database, free_port(), config, tmp_path / "node2.log", "--redis", fresh_redis,
                                  "--node", "n2")
            try:
                await second.ready(http)  # a second node of the cluster shares it
            finally:
                second.kill(signal.SIGTERM)
        finally:
            node.kill(signal.SIGTERM)
