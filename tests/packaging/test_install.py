"""The two distributions install anywhere, as a new user or operator installs them: built from a
copy of the checkout's files (as a fresh clone has them) into sdists and wheels (``python -m
build`` builds each wheel from its sdist, so an sdist that misses a file fails here), the
third-party wheels gathered into a wheelhouse, then installed with ``pip --no-index`` into
fresh virtual environments outside the checkout: the arena (which brings the client by its
dependency) in one, the client alone in another. The installed ``mandala serve`` serves on
SQLite, the installed ``mandala-bot`` of each environment plays it a game, and the page and
its static files are what the checkout holds, and its ``/metrics`` counts the game.

Building and installing takes about a minute (scipy's wheel is the largest part)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest

from arena_testkit import exit_of, free_port, wait_until
from test_metrics import parse, value

ROOT = Path(__file__).resolve().parents[2]
ARENA_VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
CLIENT_VERSION = tomllib.loads((ROOT / "clients/python/pyproject.toml").read_text(encoding="utf-8"))["project"][
    "version"]
SERVER_ONLY = {"mandala-arena", "asyncpg", "redis", "hiredis", "uvloop", "numpy", "scipy", "threadpoolctl", "tqdm"}
"""Distributions the arena needs and a bot author's client must not pull in."""
ADMIN = "install-test-admin"


def clean_env() -> dict[str, str]:
    """The environment without anything that points Python at the checkout or its venv."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if not p.startswith(str(ROOT)))
    return env


def run(*cmd: str | Path, cwd: Path, timeout: float = 600) -> str:
    """Run a command to its end; its output, or a failure that shows it."""
    return run_together([cmd], cwd=cwd, timeout=timeout)[0]


def run_together(cmds: list[tuple[str | Path, ...]], cwd: Path, timeout: float = 600) -> list[str]:
    """Run commands that do not depend on each other at once, each to its end; their outputs,
    or a failure that shows the first that failed."""
    started = [subprocess.Popen([str(c) for c in cmd], cwd=cwd, env=clean_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True) for cmd in cmds]
    outputs = [p.communicate(timeout=timeout) for p in started]
    for cmd, p, (out, err) in zip(cmds, started, outputs, strict=True):
        assert p.returncode == 0, f"{' '.join(map(str, cmd))} exited {p.returncode}:\n{out}\n{err}"
    return [out for out, _ in outputs]


def checkout_files() -> list[str]:
    """The files a fresh clone of this working tree would have (tracked or new, not ignored)."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                         capture_output=True, check=True).stdout.decode()
    return [name for name in out.split("\0") if name and (ROOT / name).is_file()]


@dataclass(frozen=True)
class Built:
    dist: Path
    wheelhouse: Path
    arena: Path
    """A virtual environment with the arena installed (and so the client)."""
    client: Path
    """A virtual environment with the client alone."""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    where = tmp_path_factory.mktemp("install")
    assert not where.is_relative_to(ROOT)
    src = where / "src"
    for name in checkout_files():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, src / name)
    dist = where / "dist"
    dist.mkdir()
    # Each build in its own isolated environment, the two at once.
    run_together([(sys.executable, "-m", "build", "--outdir", dist, source)
                  for source in (src / "clients" / "python", src)], cwd=where)
    wheelhouse = where / "wheelhouse"
    # The two environments made while the wheelhouse is gathered.
    envs = {"arena": where / "arena", "client": where / "client"}
    run_together([(sys.executable, "-m", "pip", "wheel", "-q", "--wheel-dir", wheelhouse, "--find-links", dist,
                   "mandala-arena"), *((sys.executable, "-m", "venv", venv) for venv in envs.values())], cwd=where)
    run_together([(venv / "bin" / "python", "-m", "pip", "install", "-q", "--no-index", "--find-links", wheelhouse,
                   what) for venv, what in ((envs["arena"], "mandala-arena"), (envs["client"], "mandala-arena-client"))],
                 cwd=where)
    yield Built(dist, wheelhouse, envs["arena"], envs["client"])


def top_level(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as z:
        return {name.split("/")[0] for name in z.namelist()}


def test_each_wheel_holds_its_own_packages(built: Built) -> None:
    arena = built.dist / f"mandala_arena-{ARENA_VERSION}-py3-none-any.whl"
    client = built.dist / f"mandala_arena_client-{CLIENT_VERSION}-py3-none-any.whl"
    assert top_level(arena) == {"server", "mandala_cli", f"mandala_arena-{ARENA_VERSION}.dist-info"}
    assert top_level(client) == {"mandala", "protocol", "mandala_client",
                                 f"mandala_arena_client-{CLIENT_VERSION}.dist-info"}
    with zipfile.ZipFile(arena) as z:
        static = sorted(n for n in z.namelist() if n.startswith("server/static/"))
        packages = {n.rsplit("/", 1)[0] for n in z.namelist() if n.endswith("/__init__.py")}
        metadata = z.read(f"mandala_arena-{ARENA_VERSION}.dist-info/METADATA").decode()
    assert static == sorted(f"server/static/{p.name}" for p in (ROOT / "server" / "static").iterdir())
    # every package of the checkout's server/, found rather than listed (server.cluster, server.tournaments…)
    assert packages == {str(p.parent.relative_to(ROOT)) for p in (ROOT / "server").rglob("__init__.py")} | {
        "mandala_cli"}
    assert f"Requires-Dist: mandala-arena-client=={CLIENT_VERSION}" in metadata.splitlines()
    with tarfile.open(built.dist / f"mandala_arena-{ARENA_VERSION}.tar.gz") as t:
        names = set(t.getnames())
    assert {f"mandala_arena-{ARENA_VERSION}/server/static/{p.name}" for p in (ROOT / "server/static").iterdir()} <= names


def installed(venv: Path) -> set[str]:
    out = run(venv / "bin" / "python", "-c",
              "import importlib.metadata as m; print('\\n'.join(d.metadata['Name'].lower() for d in m.distributions()))",
              cwd=venv)
    return set(out.split())


def test_the_client_installs_alone(built: Built) -> None:
    assert "mandala-arena-client" in installed(built.client)
    assert installed(built.client).isdisjoint(SERVER_ONLY)
    assert {"mandala-arena", "mandala-arena-client", "numpy", "scipy", "asyncpg"} <= installed(built.arena)
    assert run(built.client / "bin" / "mandala-bot", "--version", cwd=built.client).strip() == (
        f"mandala-bot {CLIENT_VERSION} (protocol 1)")
    assert run(built.arena / "bin" / "mandala", "--version", cwd=built.arena).strip() == (
        f"mandala {ARENA_VERSION} (mandala-arena-client {CLIENT_VERSION}, protocol 1)")
    where = run(built.client / "bin" / "python", "-c",
                "import mandala, protocol, mandala_client; print(mandala.__file__, protocol.__file__, "
                "mandala_client.__file__)\ntry:\n    import server\nexcept ImportError:\n    print('no server')",
                cwd=built.client).split()
    assert where[-2:] == ["no", "server"]
    assert all(Path(p).is_relative_to(built.client) for p in where[:3])


def test_the_client_alone_rates_a_bot_offline(built: Built) -> None:
    """A bot author with the client alone has ``mandala-bot match``: the same match, the same
    figures, as the arena's ``mandala match``."""
    args = ("match", "greedy", "random", "--games", "4", "--jobs", "2", "--seed", "3")
    figures = [json.loads(run(venv / "bin" / command, *args, cwd=venv).strip().splitlines()[-1])
               for venv, command in ((built.client, "mandala-bot"), (built.arena, "mandala"))]
    for f in figures:
        del f["seconds"]
    assert figures[0] == figures[1] and figures[0]["games"] == 4


async def test_the_installed_arena_serves_and_the_installed_bots_play(built: Built) -> None:
    work = built.arena.parent / "serve"
    work.mkdir()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with open(work / "server.log", "wb") as log:
        server = subprocess.Popen([str(built.arena / "bin" / "mandala"), "serve", "--port", str(port), "--db",
                                   str(work / "arena.db")], cwd=work, env={**clean_env(), "MANDALA_ADMIN_TOKEN": ADMIN},
                                  stdout=log, stderr=subprocess.STDOUT)
    try:
        async with aiohttp.ClientSession() as http:
            async def healthy() -> dict[str, object] | None:
                assert server.poll() is None, (work / "server.log").read_text()
                try:
                    async with http.get(url + "/health") as resp:
                        return await resp.json() if resp.status == 200 else None  # type: ignore[no-any-return]
                except aiohttp.ClientConnectionError:
                    return None

            health = await wait_until(healthy, 60, "the installed server did not come up")
            assert health["version"] == ARENA_VERSION
            tokens = {}
            for name in ("author-bot", "arena-bot"):
                async with http.post(url + "/api/bots", json={"name": name}) as resp:
                    assert resp.status == 201, await resp.text()
                    tokens[name] = (await resp.json())["token"]

            async def bot(venv: Path, name: str, *args: str) -> asyncio.subprocess.Process:
                return await asyncio.create_subprocess_exec(
                    str(venv / "bin" / "mandala-bot"), "--url", f"ws://127.0.0.1:{port}/ws", "--games", "1", *args,
                    cwd=venv, env={**clean_env(), "MANDALA_TOKEN": tokens[name]},
                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)

            async def connected() -> bool:
                async with http.get(url + "/api/bots") as resp:
                    return any(b["name"] == "arena-bot" and b["connected"] for b in await resp.json())

            accepting = await bot(built.arena, "arena-bot", "--bot", "random")
            await wait_until(connected, 30, "the arena's mandala-bot did not connect")
            challenging = await bot(built.client, "author-bot", "--bot", "greedy", "--challenge", "arena-bot")
            (code_a, log_a), (code_c, log_c) = await asyncio.gather(exit_of(challenging), exit_of(accepting))
            assert (code_a, code_c) == (0, 0), log_a + log_c
            async with http.get(url + "/api/games") as resp:
                games = await resp.json()
            assert [(sorted(g["players"]), g["kind"], g["status"]) for g in games] == [
                (["arena-bot", "author-bot"], "challenge", "finished")]
            async with http.get(url + "/metrics", headers={"Authorization": f"Bearer {ADMIN}"}) as resp:
                assert resp.status == 200
                samples = parse(await resp.text())
            assert value(samples, "mandala_games_started_total", kind="challenge") == 1.0
            assert value(samples, "mandala_games_finished_total", kind="challenge",
                         reason=games[0]["result"]["end_reason"]) == 1.0

            async with http.get(url + "/") as resp:
                assert resp.status == 200
                page = await resp.text()
            assets = re.findall(r'"/static/([a-z]+\.[a-z]+)\?v=[0-9a-f]+"', page)
            assert sorted(assets) == ["app.js", "style.css"]
            for name in assets:
                async with http.get(f"{url}/static/{name}") as resp:
                    assert resp.status == 200
                    assert await resp.read() == (ROOT / "server" / "static" / name).read_bytes()
    finally:
        server.terminate()
        code = server.wait(30)
    assert code == 0, (work / "server.log").read_text()
