"""``scripts/cluster.sh`` leaves nothing behind: a cluster started by it (PostgreSQL, Redis, three
nodes, HAProxy, on ports and folders of the test's own), whose leading node is killed with
``kill -9`` once its standings' worker runs and then started again, stops with
``scripts/cluster.sh stop`` and no process of it is left: not the nodes, not their workers, not
Redis, PostgreSQL or HAProxy."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from arena_testkit import FITTING, assert_all_gone, descendants, fitting

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "cluster.sh"
NODES = ("node1", "node2", "node3")


def free_run(n: int) -> int:
    """The first of ``n`` consecutive ports free on 127.0.0.1 (below the ephemeral range)."""
    for _ in range(200):
        base = random.randrange(20000, 32000 - n)
        try:
            for port in range(base, base + n):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise AssertionError("no run of free ports")


def health(port: int) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as resp:
            return json.load(resp)  # type: ignore[no-any-return]
    except OSError:
        return None


def poll(check: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while not (got := check()):
        assert time.monotonic() < deadline, what
        time.sleep(0.1)
    return got


def pid_file(path: Path) -> int:
    return int(path.read_text().split()[0])


def test_a_chaos_kill_then_stop_leaves_no_process_of_the_cluster(tmp_path: Path) -> None:
    if shutil.which("haproxy") is None and not os.access("/usr/sbin/haproxy", os.X_OK):
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("haproxy is missing (make test installs it); CI=true requires this test", pytrace=False)
        pytest.skip("haproxy is missing (make test installs it)")
    base = free_run(7)
    pg_dir = tempfile.mkdtemp(prefix="mandala-cluster-test-pg-", dir="/tmp")  # the postgres user must reach it
    state = tmp_path / "cluster"
    env = {**os.environ, "CLUSTER_PORT": str(base), "CLUSTER_NODE_PORT": str(base + 1),
           "CLUSTER_STATS_PORT": str(base + 4), "CLUSTER_PG_PORT": str(base + 5), "CLUSTER_PG_DIR": pg_dir,
           "CLUSTER_REDIS_PORT": str(base + 6), "CLUSTER_DIR": str(state), "MANDALA_LOG_FORMAT": "json"}
    env.pop("MANDALA_ADMIN_TOKEN", None)

    def cluster(command: str) -> None:
        done = subprocess.run([str(SCRIPT), command], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"cluster.sh {command}:\n{done.stderr}"

    try:
        cluster("start")
        node_port = {name: base + 1 + i for i, name in enumerate(NODES)}
        leader = poll(lambda: (h := health(node_port["node1"])) and h["cluster"]["leader"], 30, "no node leads")
        pid = pid_file(state / f"{leader}.pid")
        family = poll(lambda: (f := descendants(pid)) and fitting(f) == FITTING and f, 60,
                      f"{leader} did not start its standings' worker")
        os.kill(pid, signal.SIGKILL)
        assert_all_gone({pid: leader, **family}, f"after kill -9 of {leader}")
        cluster("start")  # starts the node that died again
        poll(lambda: all(health(p) for p in node_port.values()), 60, "the cluster did not come back")
        # The node that leads now, as it says itself (another's word may lag behind a change).
        leader = poll(lambda: next((n for n, p in node_port.items() if (h := health(p)) and h["cluster"]["leader"] == n),
                                   None), 60, "no node says it leads")
        new_pid = pid_file(state / f"{leader}.pid")
        try:
            poll(lambda: fitting(descendants(new_pid)) == FITTING, 90, f"{leader}, leading now, did not start its standings' worker")
        except AssertionError as e:
            lines = (state / f"{leader}.log").read_text(errors="replace").splitlines()
            log = "\n".join(line for line in lines if "aiohttp.access" not in line)[-4000:]
            views = {n: (h or {}).get("cluster", {}).get("leader") for n, p in node_port.items() for h in [health(p)]}
            raise AssertionError(f"{e}; each node's leader: {views}; its processes: {descendants(new_pid)}; "
                                 f"the end of its log:\n{log}") from None

        processes: dict[int, str] = {}
        for name in NODES:
            node = pid_file(state / f"{name}.pid")
            processes |= {node: name, **descendants(node)}
        processes[pid_file(state / "haproxy.pid")] = "haproxy"
        processes[pid_file(state / "redis" / "redis.pid")] = "redis"
        postmaster = pid_file(Path(pg_dir) / "data" / "postmaster.pid")
        processes |= {postmaster: "postgres", **descendants(postmaster)}
        assert set(fitting(processes)) == set(FITTING)  # the leader's worker is among them
        cluster("stop")
        assert_all_gone(processes, "after scripts/cluster.sh stop", timeout=30)
    finally:
        subprocess.run([str(SCRIPT), "clean"], env=env, capture_output=True, timeout=300)
        shutil.rmtree(pg_dir, ignore_errors=True)
