"""``mandala demo``: a real server with the shipped bots on its ladder, reachable at the address
it prints, and everything stopped when it ends."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from arena_testkit import free_port


def test_demo_puts_the_bots_on_the_ladder(tmp_path: Path) -> None:
    port = free_port()
    demo = subprocess.Popen(
        [sys.executable, "-m", "mandala_cli.main", "demo", "--port", str(port), "--dir", str(tmp_path),
         "--seconds", "60", "--no-javascript"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert demo.stdout is not None
        lines = [demo.stdout.readline() for _ in range(3)]
        assert f"Open http://127.0.0.1:{port}/" in "".join(lines)
        deadline = time.monotonic() + 50
        while True:  # the fast bots qualify within seconds; search takes longer
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/ladder", timeout=5) as resp:
                listed = {s["bot"]: s for s in json.load(resp)["standings"]}
            if {"random", "greedy"} <= listed.keys() and listed["greedy"]["games"] > 0:
                break
            assert time.monotonic() < deadline, listed
            time.sleep(0.2)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as resp:
            assert resp.status == 200 and "text/html" in resp.headers["Content-Type"]
    finally:
        demo.send_signal(2)  # Ctrl-C
        assert demo.wait(timeout=30) == 0
    logs = {p.name for p in tmp_path.iterdir()}
    assert {"server.log", "random.log", "greedy.log", "search.log"} <= logs
    with socket.socket() as s:  # the server is gone with the demo
        assert s.connect_ex(("127.0.0.1", port)) != 0
