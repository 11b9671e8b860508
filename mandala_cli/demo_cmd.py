"""``mandala demo``: the whole arena at once — a server, the shipped bots on its ladder, and the
live page to watch them.

It starts ``mandala serve`` on a fresh database, creates the bots ``random``, ``greedy`` and
``search`` (and ``javascript``, the Node.js bot, when ``node`` is installed), starts each with
``mandala-bot … --ladder`` (the Node bot with its own ``--ladder``), and prints the page's
address. A bot that exits is reported by name and the rest plays on (a demo with one bot fewer
is still worth watching); only the server's exit, Ctrl-C or SIGINT, SIGTERM, SIGHUP (its
terminal closed) or ``--seconds`` ends it, and then every process it started is stopped, so
none is left behind. If the demo itself dies without a chance to clean up (``kill -9``), Linux
sends each of its children SIGTERM (``PR_SET_PDEATHSIG``), so they do not outlive it either.
The database and logs go to a temporary folder that is removed at the end, unless ``--keep``
asks to keep it or something went wrong (a process exited: its log says why); ``--dir`` puts
them in a folder of the user's, which is kept.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import FrameType
from typing import IO, Any

from mandala_cli.serve_cmd import port_taken

JS_BOT = Path(__file__).resolve().parent.parent / "clients" / "javascript" / "mandala-bot.mjs"

BOTS = {"random": "random", "greedy": "greedy", "search": "search,budget=0.3"}
"""Demo bot name -> ``mandala-bot --bot`` spec (search thinks 0.3 s a move, so games move fast)."""


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("demo", help="a server with the shipped bots on its ladder, to watch live")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--dir", type=Path,
                   help="where the database and logs go, kept when the demo ends (default: a new temporary folder,"
                        " removed when the demo ends)")
    p.add_argument("--keep", action="store_true",
                   help="keep the temporary folder with the database and logs when the demo ends (its path is printed)")
    p.add_argument("--seconds", type=float, help="stop after this long (default: until Ctrl-C)")
    p.add_argument("--no-javascript", action="store_true", help="leave the Node.js bot out")
    p.add_argument("--ladder-games-per-hour", type=int, metavar="N",
                   help="the server's limit on ladder games per bot per hour (default: none)")
    p.set_defaults(run=run)


def node_command(node: str, script: Path) -> list[str] | None:
    """``node`` running ``script`` with a WebSocket client: built in from Node 22, behind
    ``--experimental-websocket`` on Node 20.10 to 21; ``None`` for an older Node."""
    try:
        version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    found = re.match(r"v(\d+)\.(\d+)\.", version.strip())
    if found is None:
        return None
    major, minor = int(found.group(1)), int(found.group(2))
    if (major, minor) < (20, 10):
        return None
    return [node, *(["--experimental-websocket"] if major < 22 else []), str(script)]


def _request(url: str, body: dict[str, Any] | None = None, token: str | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method="POST" if data else "GET")
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=5) as resp:
        return json.load(resp)


class _Terminated(Exception):
    """SIGINT, SIGTERM or SIGHUP arrived: end the demo (its children are stopped too)."""


def _on_signal(signum: int, frame: FrameType | None) -> None:
    raise _Terminated


ENDING = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
"""The signals that end the demo, all alike. SIGINT is handled whatever its disposition at start:
a shell starts a script's ``mandala demo &`` with SIGINT ignored, and ``kill -INT`` must still
end it (and the children, exec'd while it is caught, start with it at its default)."""
PR_SET_PDEATHSIG = 1


def _die_with(parent: int) -> Any:
    """A ``preexec_fn`` that has Linux send the child SIGTERM when ``parent`` dies (``None``
    where there is no ``prctl``). If the parent is already gone by then, the child ends."""
    libc_name = ctypes.util.find_library("c") if sys.platform.startswith("linux") else None
    if libc_name is None:
        return None
    prctl = ctypes.CDLL(libc_name, use_errno=True).prctl

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:
            os._exit(1)

    return preexec


def _status(code: int) -> str:
    """An exit status in words; a negative one is the signal that killed the process."""
    if code < 0:
        try:
            return f"status {code} (killed by {signal.Signals(-code).name})"
        except ValueError:
            pass
    return f"status {code}"


def _wait_for(url: str, server: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if server.poll() is not None:
            raise RuntimeError(f"the server exited with status {server.returncode} (see its log)")
        try:
            _request(url + "/health")
            return
        except (urllib.error.URLError, ConnectionError):
            if time.monotonic() > deadline:
                raise RuntimeError("the server did not start in time") from None
            time.sleep(0.1)


def run(args: argparse.Namespace) -> int:
    # Asked first: a server already on the port would answer the demo's health check and be
    # sent the demo's bots (refused, its admin token not the demo's) while the demo's own
    # server gave up on the port before its log said why.
    taken = port_taken(args.host, args.port)
    if taken is not None:
        print(f"mandala demo: {taken} (another server there? --port chooses another)", file=sys.stderr)
        return 2
    workdir = args.dir or Path(tempfile.mkdtemp(prefix="mandala-demo-"))
    workdir.mkdir(parents=True, exist_ok=True)
    removed = args.dir is None and not args.keep  # at the end, unless something went wrong
    failed = False
    db = workdir / f"demo-{int(time.time())}.db"
    admin = secrets.token_urlsafe(16)
    base = f"http://{args.host}:{args.port}"
    ws = f"ws://{args.host}:{args.port}/ws"
    procs: dict[str, subprocess.Popen[bytes]] = {}  # "server" and the bots, in the order started
    logs: list[IO[bytes]] = []
    preexec = _die_with(os.getpid())

    def start(name: str, cmd: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        log = (workdir / f"{name}.log").open("ab")
        logs.append(log)
        # Each in a process group of its own: a terminal's Ctrl-C reaches the demo alone, which
        # then stops them all (a bot still starting would die of it with a traceback).
        procs[name] = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                                       preexec_fn=preexec, process_group=0)
        return procs[name]

    previous = {sig: signal.signal(sig, _on_signal) for sig in ENDING}  # before any child starts
    try:
        limit = ["--ladder-games-per-hour", str(args.ladder_games_per_hour)] if args.ladder_games_per_hour else []
        server = start("server", [sys.executable, "-m", "mandala_cli.main", "serve", "--host", args.host,
                                  "--port", str(args.port), "--db", str(db), *limit],
                       {**os.environ, "MANDALA_ADMIN_TOKEN": admin})
        _wait_for(base, server)
        bots = dict(BOTS)
        node = shutil.which("node") if not args.no_javascript else None
        js = node_command(node, JS_BOT) if node and JS_BOT.exists() else None
        if js is not None:
            bots["javascript"] = "node"
        elif node and not JS_BOT.exists():
            print("mandala demo: the Node.js bot (clients/javascript/mandala-bot.mjs) comes with a checkout, not with "
                  "the installed package; it is left out", file=sys.stderr)
        elif node:
            print("mandala demo: the Node.js bot needs Node >= 20.10; it is left out", file=sys.stderr)
        for name, spec in bots.items():
            token = _request(base + "/api/bots", {"name": name}, admin)["token"]
            env = {**os.environ, "MANDALA_TOKEN": token}
            if spec == "node":
                start(name, [*(js or []), "--url", ws, "--ladder", "--max-games", "2"], env)
            else:
                start(name, [sys.executable, "-m", "mandala_client.cli", "--url", ws, "--bot", spec, "--ladder",
                             "--max-games", "2"], env)
        print(f"Mandala Arena demo: {len(bots)} bots ({', '.join(bots)}) are qualifying and then playing the ladder.")
        print(f"\n  Open {base}/ in a browser: the standings move live; click a game to watch it.\n")
        print(f"Admin token: {admin}")
        print(f"Logs and database: {workdir}" + (" (removed when the demo ends; --keep keeps them)" if removed else ""))
        print("Ctrl-C stops everything.", flush=True)
        deadline = time.monotonic() + args.seconds if args.seconds else None
        playing = set(bots)
        while deadline is None or time.monotonic() < deadline:
            if server.poll() is not None:
                print(f"mandala demo: the server exited with {_status(server.returncode)}; see {workdir / 'server.log'}",
                      file=sys.stderr, flush=True)
                failed = True
                return 1
            for name in sorted(playing):
                code = procs[name].poll()
                if code is not None:
                    playing.discard(name)
                    failed = True  # its log is worth keeping
                    print(f"mandala demo: bot {name} exited with {_status(code)}; the others play on"
                          f" (its log: {workdir / (name + '.log')})", file=sys.stderr, flush=True)
            time.sleep(0.5)
        return 0
    except (KeyboardInterrupt, _Terminated):
        return 0
    except (RuntimeError, urllib.error.URLError) as e:
        print(f"mandala demo: {e}; logs in {workdir}", file=sys.stderr)
        failed = True
        return 1
    finally:
        # A second signal or Ctrl-C must not cut the clean-up short and leave processes behind.
        for sig in ENDING:
            signal.signal(sig, signal.SIG_IGN)
        try:
            _stop(list(procs.values()))
        finally:
            for log in logs:
                log.close()
            for sig, handler in previous.items():
                signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
            _tidy(workdir, temporary=args.dir is None, keep=args.keep or failed)


def _tidy(workdir: Path, temporary: bool, keep: bool) -> None:
    """Remove the demo's temporary folder (its database and logs) once every process has
    ended, unless it is to be kept: asked with ``--keep``, or something went wrong and its
    logs tell what. A folder given with ``--dir`` is the user's and stays as it is."""
    if not temporary:
        return
    if keep:
        print(f"mandala demo: the database and logs are kept in {workdir}", flush=True)
        return
    shutil.rmtree(workdir, ignore_errors=True)


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    """Ask every process still running to stop, bots first, the server last (SIGTERM: each
    ends cleanly, and one still starting ends without a ``KeyboardInterrupt`` traceback); kill
    the process group of any that has not ended after 10 s (the server's with its standings'
    worker)."""
    for proc in reversed(procs):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in reversed(procs):
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
