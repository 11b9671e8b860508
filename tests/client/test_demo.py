"""``mandala demo``: a real server with the shipped bots on its ladder, reachable at the address
it prints, and everything stopped when it ends."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from arena_testkit import children, descendants, free_port, gone, read_until


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


def test_a_demo_on_a_port_already_served_says_so_and_sends_that_server_nothing(tmp_path: Path) -> None:
    with socket.socket() as other:  # another server, listening on the port the demo is given
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = other.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "mandala_cli.main", "demo", "--port", str(port), "--dir", str(tmp_path),
             "--seconds", "30", "--no-javascript"],
            capture_output=True, text=True, timeout=60,
        )
        other.setblocking(False)
        try:
            other.accept()
            raise AssertionError("the demo connected to the other server")
        except BlockingIOError:
            pass
    assert done.returncode == 2
    assert done.stderr == (f"mandala demo: cannot listen on 127.0.0.1:{port}: Address already in use"
                           " (another server there? --port chooses another)\n")
    assert list(tmp_path.iterdir()) == []  # no server was started, no log left


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return json.load(resp)


def test_a_bot_that_exits_leaves_the_demo_running_and_sigterm_stops_everything(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    demo = subprocess.Popen(
        [sys.executable, "-m", "mandala_cli.main", "demo", "--port", str(port), "--dir", str(tmp_path),
         "--no-javascript"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    kids: dict[int, str] = {}
    try:
        assert demo.stdout is not None and demo.stderr is not None
        read_until(demo.stdout, b"Ctrl-C stops everything.", 60)
        kids = children(demo.pid)
        assert len(kids) == 4, kids  # the server and three bots
        (victim,) = [pid for pid, cmd in kids.items() if "--bot random " in cmd]
        deadline = time.monotonic() + 30
        while not all(get_json(f"{base}/api/bots/{name}")["connected"] for name in ("random", "greedy", "search")):
            assert time.monotonic() < deadline, "the demo's bots did not connect"
            time.sleep(0.1)

        os.kill(victim, signal.SIGKILL)
        said = read_until(demo.stderr, b"bot random exited with status -9", 30).decode(errors="replace")
        assert "the others play on" in said
        # The server and the other bots go on; the demo did not end.
        assert demo.poll() is None
        assert get_json(f"{base}/health")["status"] == "ok"
        assert not get_json(f"{base}/api/bots/random")["connected"]
        assert all(get_json(f"{base}/api/bots/{name}")["connected"] for name in ("greedy", "search"))
        assert set(children(demo.pid)) == set(kids) - {victim}
    finally:
        demo.send_signal(signal.SIGTERM)
        code = demo.wait(timeout=30)
    assert code == 0
    deadline = time.monotonic() + 10
    while not all(gone(pid) for pid in kids):  # every process the demo started ended with it
        assert time.monotonic() < deadline, {pid: cmd for pid, cmd in kids.items() if not gone(pid)}
        time.sleep(0.05)
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0


def started_demo(tmp_path: Path, port: int) -> tuple[subprocess.Popen[str], dict[int, str]]:
    """A demo that is up, and the processes it started."""
    demo = subprocess.Popen(
        [sys.executable, "-m", "mandala_cli.main", "demo", "--port", str(port), "--dir", str(tmp_path),
         "--no-javascript"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert demo.stdout is not None
    read_until(demo.stdout, b"Ctrl-C stops everything.", 60)
    kids = children(demo.pid)
    assert len(kids) == 4, kids  # the server and three bots
    return demo, kids


def assert_all_gone(kids: dict[int, str], port: int) -> None:
    deadline = time.monotonic() + 15
    while not all(gone(pid) for pid in kids):
        assert time.monotonic() < deadline, {pid: cmd for pid, cmd in kids.items() if not gone(pid)}
        time.sleep(0.05)
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_sighup_stops_the_demo_and_everything_it_started(tmp_path: Path) -> None:
    port = free_port()
    demo, kids = started_demo(tmp_path, port)
    try:
        demo.send_signal(signal.SIGHUP)  # its terminal closed
        assert demo.wait(timeout=30) == 0
    finally:
        if demo.poll() is None:
            demo.kill()
    assert_all_gone(kids, port)


def test_a_demo_killed_outright_takes_its_children_with_it(tmp_path: Path) -> None:
    port = free_port()
    demo, kids = started_demo(tmp_path, port)
    demo.kill()  # SIGKILL: no clean-up runs in the demo itself
    assert demo.wait(timeout=30) == -signal.SIGKILL
    assert_all_gone(kids, port)


def wait_for_the_fitting_worker(parent: subprocess.Popen[str]) -> dict[int, str]:
    """Every process below ``parent`` once the server has started its standings' worker (its
    first standings start it), the worker included."""
    deadline = time.monotonic() + 60
    while True:
        procs = descendants(parent.pid)
        if any("multiprocessing" in cmd and "spawn_main" in cmd for cmd in procs.values()):
            return procs
        assert parent.poll() is None and time.monotonic() < deadline, procs
        time.sleep(0.2)


def no_traceback_anywhere(demo_output: str, workdir: Path) -> None:
    assert "Traceback" not in demo_output and "KeyboardInterrupt" not in demo_output, demo_output
    for log in workdir.glob("*.log"):
        text = log.read_text(errors="replace")
        assert "Traceback" not in text and "KeyboardInterrupt" not in text, (log.name, text[-3000:])


def test_sigint_stops_a_demo_started_with_sigint_ignored(tmp_path: Path) -> None:
    # A shell starts a background job (`mandala demo &` in a script) with SIGINT ignored;
    # `kill -INT` must end it all the same, like SIGTERM.
    # The premise: a job that sh starts with `&` starts with SIGINT ignored.
    status = subprocess.run(["sh", "-c", "cat /proc/self/status & wait"], capture_output=True, text=True).stdout
    assert int(status.split("SigIgn:")[1].split()[0], 16) & (1 << (signal.SIGINT - 1))
    port = free_port()
    demo = subprocess.Popen(
        ["sh", "-c", f'"{sys.executable}" -m mandala_cli.main demo --port {port} --dir "{tmp_path}" --no-javascript'
                     " & wait"],  # a non-interactive sh ignores SIGINT in its `&` job
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    pid = 0
    try:
        assert demo.stdout is not None
        said = read_until(demo.stdout, b"Ctrl-C stops everything.", 60).decode()
        (pid,) = children(demo.pid)
        procs = descendants(pid)
        assert len(children(pid)) == 4, procs
        os.kill(pid, signal.SIGINT)
        out, _ = demo.communicate(timeout=30)
        assert demo.returncode == 0
    finally:
        if pid and not gone(pid):
            os.kill(pid, signal.SIGTERM)  # the demo itself, not only its shell
        if demo.poll() is None:
            demo.kill()
    assert_all_gone(procs, port)
    no_traceback_anywhere(said + out, tmp_path)


def test_ctrl_c_to_the_process_group_stops_everything_without_a_traceback(tmp_path: Path) -> None:
    # A terminal's Ctrl-C reaches every process of the foreground group: the demo, the server,
    # the bots and the server's standings worker.
    port = free_port()
    demo = subprocess.Popen(
        [sys.executable, "-m", "mandala_cli.main", "demo", "--port", str(port), "--dir", str(tmp_path),
         "--no-javascript"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    try:
        assert demo.stdout is not None
        said = read_until(demo.stdout, b"Ctrl-C stops everything.", 60).decode()
        procs = wait_for_the_fitting_worker(demo)
        os.killpg(demo.pid, signal.SIGINT)
        out, _ = demo.communicate(timeout=30)
        assert demo.returncode == 0
    finally:
        if demo.poll() is None:
            os.killpg(demo.pid, signal.SIGKILL)
    assert_all_gone(procs, port)
    no_traceback_anywhere(said + out, tmp_path)


def test_ctrl_c_to_a_servers_process_group_ends_its_standings_worker_without_a_traceback(tmp_path: Path) -> None:
    # `mandala serve` run from a terminal: Ctrl-C reaches the server and its standings' worker
    # (started with the server's first standings); the server ends the worker itself.
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "mandala_cli.main", "serve", "--port", str(port), "--db", str(tmp_path / "arena.db")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    try:
        assert server.stdout is not None
        said = read_until(server.stdout, b"Registration is", 60).decode()
        procs = wait_for_the_fitting_worker(server)
        os.killpg(server.pid, signal.SIGINT)
        out, _ = server.communicate(timeout=30)
        assert server.returncode == 0
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
    assert_all_gone(procs, port)
    no_traceback_anywhere(said + out, tmp_path)


def _folder(said: str) -> Path:
    """The folder the demo named for its database and logs."""
    return Path(said.split("Logs and database: ", 1)[1].split()[0])


def test_the_demo_removes_its_temporary_folder_when_it_ends(tmp_path: Path) -> None:
    port = free_port()
    demo = subprocess.Popen(
        [sys.executable, "-m", "mandala_cli.main", "demo", "--port", str(port), "--no-javascript"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    try:
        assert demo.stdout is not None
        said = read_until(demo.stdout, b"Ctrl-C stops everything.", 60).decode()
        folder = _folder(said)
        assert folder.parent == tmp_path and folder.name.startswith("mandala-demo-")
        assert "(removed when the demo ends; --keep keeps them)" in said
        assert (folder / "server.log").exists() and list(folder.glob("demo-*.db"))
        demo.send_signal(signal.SIGINT)
        out, _ = demo.communicate(timeout=30)
        assert demo.returncode == 0, out
    finally:
        if demo.poll() is None:
            demo.kill()
    assert not folder.exists()
    assert list(tmp_path.iterdir()) == []
    assert "kept" not in out


def test_the_demo_keeps_its_temporary_folder_when_asked(tmp_path: Path) -> None:
    port = free_port()
    done = subprocess.run(
        [sys.executable, "-m", "mandala_cli.main", "demo", "--port", str(port), "--no-javascript", "--keep",
         "--seconds", "1"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    folder = _folder(done.stdout)
    assert folder.parent == tmp_path and "removed when" not in done.stdout
    assert f"mandala demo: the database and logs are kept in {folder}" in done.stdout
    assert {"server.log", "random.log", "greedy.log", "search.log"} <= {p.name for p in folder.iterdir()}
    assert list(folder.glob("demo-*.db"))
