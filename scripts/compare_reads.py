"""Check an upgrade: serve a database with one checkout, read everything, and compare.

``dump`` starts ``mandala serve`` from a checkout (``--repo``) on a database, optionally lets
four instant bots play on its ladder first (one of them sends a bad move now and then, so
games carry incidents), then reads what the API serves: the ladder, every games list with its
next pages, each bot's games, profile and rating history (two pages), every game listed with
its record and its replays (the spectator's and each seat's), and the export; it writes the
responses (status, ``Link`` header, body) to a JSON file. ``diff`` compares two such files.
``synth`` writes a season's history with a checkout's own ``mandala history synth`` (the
installed ``mandala`` is the current release, whose database the previous one refuses).

To check that a new release serves a database written by the previous one unchanged::

    git worktree add /tmp/previous v1.2            # the previous release
    python scripts/compare_reads.py synth --repo /tmp/previous --db /tmp/up.db --games 3000
    python scripts/compare_reads.py dump --repo /tmp/previous --db /tmp/up.db --play 15 -o /dev/null
    python scripts/compare_reads.py dump --repo /tmp/previous --db /tmp/up.db -o before.json
    python scripts/compare_reads.py dump --repo . --db /tmp/up.db -o after.json   # migrates it
    python scripts/compare_reads.py diff before.json after.json

(The first ``dump`` plays; the second reads a database that no longer changes: games cut off by
the first one's stop are aborted when the server starts again.) ``--db`` may be a
``postgresql://`` URL. Exits 1 if the reads differ.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import aiohttp

SERVE = "import sys; from mandala_cli.main import main; sys.exit(main(sys.argv[1:]))"
ADMIN = "compare-reads-admin"
CONFIG = ("messages_per_second = 1000000.0\nburst = 1000000\nregistrations_per_hour = 100000\n"
          "qualification_pairs = 1\npairing_interval_s = 0.05\n")


async def wait_healthy(http: aiohttp.ClientSession, base: str) -> None:
    for _ in range(600):
        try:
            async with http.get(base + "/health") as resp:
                if resp.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.1)
    raise SystemExit("the server did not start")


async def play(http: aiohttp.ClientSession, base: str, seconds: float) -> None:
    """Four instant bots on the ladder for ``seconds``; the last one sends a move that is not
    one every 17th decision before its real answer."""
    tokens = []
    for i in range(4):
        async with http.post(base + "/api/bots", json={"name": f"reads-{i}"},
                             headers={"Authorization": f"Bearer {ADMIN}"}) as resp:
            tokens.append((await resp.json())["token"])

    async def bot(i: int, token: str) -> None:
        n = 0
        async with http.ws_connect(base.replace("http", "ws", 1) + "/ws") as ws:
            await ws.send_json({"type": "hello", "protocol": 1, "token": token, "max_games": 2})
            await ws.send_json({"type": "seek"})
            async for msg in ws:
                data = json.loads(msg.data)
                if data["type"] != "decision":
                    continue
                n += 1
                answer = {"type": "move", "game_id": data["game_id"], "request_id": data["request_id"]}
                if i == 3 and n % 17 == 0:
                    await ws.send_json({**answer, "move": {"type": "nonsense"}})
                await ws.send_json({**answer, "move": data["legal"][n % len(data["legal"])]})

    tasks = [asyncio.create_task(bot(i, t)) for i, t in enumerate(tokens)]
    await asyncio.sleep(seconds)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def read_everything(http: aiohttp.ClientSession, base: str) -> dict[str, Any]:
    got: dict[str, Any] = {}

    async def get(path: str) -> None:
        async with http.get(base + path) as resp:
            got[path] = [resp.status, resp.headers.get("Link"), (await resp.read()).decode()]

    async def with_pages(path: str, pages: int = 3) -> None:
        await get(path)
        link = got[path][1]
        for _ in range(pages):
            if not link:
                return
            path = link.split(";")[0].strip("<>")
            await get(path)
            link = got[path][1]

    await get("/api/ladder")
    names = [s["bot"] for s in json.loads(got["/api/ladder"][2])["standings"]]
    for status in ("", "&status=finished", "&status=aborted", "&status=running"):
        await with_pages(f"/api/games?limit=100{status}")
    for name in names:
        await with_pages(f"/api/games?bot={name}&limit=50")
        await get(f"/api/bots/{name}")
        await get(f"/api/bots/{name}/history?limit=50")
        await get(f"/api/bots/{name}/history?limit=7&before=40")
    games: set[str] = set()
    for path, (_, _, body) in list(got.items()):
        if path.startswith("/api/games?"):
            games |= {g["game_id"] for g in json.loads(body)}
    for game_id in sorted(games):
        for suffix in ("", "/record", "/replay", "/replay?seat=0", "/replay?seat=1"):
            await get(f"/api/games/{game_id}{suffix}")
    await get("/api/games/export")
    return got


def checkout_env(repo: Path) -> dict[str, str]:
    """The environment that runs ``repo``'s code (its two distributions) with this Python."""
    return {**os.environ, "MANDALA_ADMIN_TOKEN": ADMIN, "PYTHONPATH": f"{repo}:{repo}/clients/python"}


def synth(args: argparse.Namespace) -> int:
    repo = args.repo.resolve()
    return subprocess.run([sys.executable, "-c", SERVE, "history", "synth", "--db", args.db, "--games", str(args.games)],
                          env=checkout_env(repo), cwd=repo).returncode


async def dump(args: argparse.Namespace) -> None:
    repo = args.repo.resolve()
    env = checkout_env(repo)
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "reads.toml"
        config.write_text(CONFIG)
        server = subprocess.Popen([sys.executable, "-c", SERVE, "serve", "--port", str(args.port), "--db", args.db,
                                   "--config", str(config)], env=env, cwd=repo)
        base = f"http://127.0.0.1:{args.port}"
        try:
            async with aiohttp.ClientSession() as http:
                await wait_healthy(http, base)
                if args.play:
                    await play(http, base, args.play)
                got = await read_everything(http, base)
        finally:
            server.terminate()
            server.wait()
    args.output.write_text(json.dumps(got))
    print(f"{len(got)} reads written to {args.output}")


def diff(args: argparse.Namespace) -> int:
    before, after = json.loads(args.before.read_text()), json.loads(args.after.read_text())
    differ = [path for path in before if before[path] != after.get(path)]
    print(f"{len(before) - len(differ)} of {len(before)} reads identical; "
          f"{len(set(after) - set(before))} only in the second")
    for path in differ[:10]:
        a, b = str(before[path]), str(after.get(path))
        at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        start = max(0, at - 100)  # where they part, with some of what comes before
        print(f"differs: {path} (from character {at})\n  before: …{a[start:at + 200]}\n  after:  …{b[start:at + 200]}")
    return 1 if differ or set(after) - set(before) else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump", help="serve a database from a checkout and write every read to a file")
    d.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    d.add_argument("--db", required=True, help="a SQLite file or a postgresql:// URL")
    d.add_argument("--play", type=float, default=0.0, metavar="SECONDS", help="let four bots play first")
    d.add_argument("--port", type=int, default=8177)
    d.add_argument("-o", "--output", type=Path, required=True)
    c = sub.add_parser("diff", help="compare two dumps")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    s = sub.add_parser("synth", help="write a season's history with a checkout's own code")
    s.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    s.add_argument("--db", required=True, help="a SQLite file or a postgresql:// URL")
    s.add_argument("--games", type=int, default=3000)
    args = parser.parse_args()
    if args.command == "dump":
        asyncio.run(dump(args))
        return 0
    if args.command == "synth":
        return synth(args)
    return diff(args)


if __name__ == "__main__":
    sys.exit(main())
