"""``make cluster TLS=1`` (``CLUSTER_TLS=1 scripts/cluster.sh start``) as an organizer runs it:
PostgreSQL, Redis, three nodes and HAProxy, on ports of this test's own (below the ephemeral
range; ``MANDALA_TLS_CLUSTER_PORT`` moves them). With only the CA file it prints, the
``mandala`` command creates two bots, the Node.js bot (written from PROTOCOL.md alone) and
``mandala-bot`` play a game over ``wss://``, and a plain request to the address gets nothing.
Then ``scripts/cluster.sh clean`` stops everything and deletes its state."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from arena_testkit import exit_of
from test_chaos import haproxy_or_skip

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "client"))
from test_javascript_bot import node, node_command  # noqa: F401 - the fixture

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".venv" / "bin"
BASE = int(os.environ.get("MANDALA_TLS_CLUSTER_PORT", "23480"))
ADMIN = "tls-cluster-admin-token"


def cluster_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLUSTER_", "MANDALA_"))}
    env.update({"CLUSTER_TLS": "1", "CLUSTER_HOST": "127.0.0.1", "CLUSTER_PORT": str(BASE),
                "CLUSTER_NODE_PORT": str(BASE + 1), "CLUSTER_STATS_PORT": str(BASE + 4),
                "CLUSTER_PG_PORT": str(BASE + 5), "CLUSTER_PG_DIR": f"/tmp/mandala-tls-cluster-pg-{BASE}",
                "CLUSTER_REDIS_PORT": str(BASE + 6), "CLUSTER_REDIS_DIR": str(tmp_path / "redis"),
                "CLUSTER_DIR": str(tmp_path / "cluster"), "MANDALA_ADMIN_TOKEN": ADMIN})
    return env


async def test_make_cluster_tls_serves_wss_to_bots_that_have_only_the_printed_ca_file(
        node: str, tmp_path: Path) -> None:  # noqa: F811
    haproxy_or_skip()
    if not (BIN / "mandala").exists() or shutil.which("openssl") is None:
        pytest.skip("needs .venv/bin/mandala (make) and openssl")
    env = cluster_env(tmp_path)
    script = str(ROOT / "scripts" / "cluster.sh")
    try:
        started = await asyncio.to_thread(subprocess.run, [script, "start"], env=env, capture_output=True, text=True,
                                          timeout=240)
        assert started.returncode == 0, started.stdout + started.stderr
        out = started.stdout
        assert f"https://127.0.0.1:{BASE}/ " in out and f"wss://127.0.0.1:{BASE}/ws " in out
        found = re.search(r"its CA file, for the clients:\n  (\S+)\n", out)
        assert found is not None, out
        ca_file = found.group(1)
        assert ca_file == str(tmp_path / "cluster" / "tls" / "ca.pem") and Path(ca_file).exists()
        server, ws = f"https://127.0.0.1:{BASE}", f"wss://127.0.0.1:{BASE}/ws"
        clients = {k: v for k, v in os.environ.items() if not k.startswith(("MANDALA_", "NODE_EXTRA"))}
        for name in ("js-bot", "py-bot"):
            made = await asyncio.to_thread(
                subprocess.run, [str(BIN / "mandala"), "bot", "create", name, "--server", server, "--ca-file", ca_file,
                                 "--admin-token", ADMIN, "--token-file", str(tmp_path / f"{name}.token")],
                env=clients, capture_output=True, text=True, timeout=60)
            assert made.returncode == 0, made.stderr
        py = await asyncio.create_subprocess_exec(
            str(BIN / "mandala-bot"), "--url", ws, "--token-file", str(tmp_path / "py-bot.token"), "--bot", "greedy",
            "--games", "1", env={**clients, "MANDALA_CA_FILE": ca_file},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        js = await asyncio.create_subprocess_exec(
            *node_command(node), "--url", ws, "--token-file", str(tmp_path / "js-bot.token"), "--ca-file", ca_file,
            "--challenge", "py-bot", "--games", "1", env=clients,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        (js_code, js_log), (py_code, py_log) = await asyncio.gather(exit_of(js, 90), exit_of(py, 90))
        assert js_code == 0 and "connected as js-bot" in js_log and "[1/1]" in js_log, js_log
        assert py_code == 0 and "[1/1]" in py_log, py_log
        reader, writer = await asyncio.open_connection("127.0.0.1", BASE)  # plain HTTP on the TLS address
        writer.write(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answer = await asyncio.wait_for(reader.read(), 10)
        writer.close()
        assert not answer.startswith(b"HTTP/1.1 200"), answer
        status = await asyncio.to_thread(subprocess.run, [script, "status"], env=env, capture_output=True, text=True,
                                         timeout=60)
        assert status.returncode == 0 and f"wss://127.0.0.1:{BASE}/ws  (CA file: {ca_file})" in status.stdout
    finally:
        cleaned = await asyncio.to_thread(subprocess.run, [script, "clean"], env=env, capture_output=True, text=True,
                                          timeout=120)
        assert cleaned.returncode == 0, cleaned.stderr
