"""``scripts/test-postgres.sh``, which ``make cluster`` keeps a cluster's database with: a start
that fails on a database it made before (its port taken, say) leaves that database alone, and
the next start serves it again with everything in it."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import asyncpg

from test_cluster_script import free_run

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "test-postgres.sh"


def script(command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), command], env=env, capture_output=True, text=True, timeout=300)


async def sql(url: str, statement: str) -> object:
    conn = await asyncpg.connect(url)
    try:
        if statement.startswith("SELECT"):
            return await conn.fetchval(statement)
        return await conn.execute(statement)
    finally:
        await conn.close()


def test_a_failed_start_keeps_the_database_it_would_have_served() -> None:
    port = free_run(1)
    folder = tempfile.mkdtemp(prefix="mandala-pg-script-test-", dir="/tmp")  # the postgres user must reach it
    os.chmod(folder, 0o755)
    env = {**os.environ, "MANDALA_PG_PORT": str(port), "MANDALA_PG_DIR": folder}
    try:
        started = script("start", env)
        assert started.returncode == 0, started.stderr
        url = started.stdout.strip().splitlines()[-1]
        asyncio.run(sql(url, "CREATE TABLE season (games INTEGER); INSERT INTO season VALUES (680)"))
        assert script("halt", env).returncode == 0
        with socket.socket() as holder:  # something else took the port meanwhile
            holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            holder.bind(("127.0.0.1", port))
            holder.listen()
            refused = script("start", env)
        assert refused.returncode == 1 and "(kept)" in refused.stderr, refused.stderr
        again = script("start", env)
        assert again.returncode == 0, again.stderr
        assert asyncio.run(sql(url, "SELECT games FROM season")) == 680
    finally:
        script("stop", env)
        shutil.rmtree(folder, ignore_errors=True)
