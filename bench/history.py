"""``make bench-history``: what a season's history costs, at 10k, 100k (and 1M) games, on SQLite
and PostgreSQL, in one run.

For each backend and each size: a fresh database filled by ``mandala history synth`` (real
games between 50 bots, with their records, ratings and totals), then a real ``mandala serve``
on it, pinned to core 0, and from core 1:

- bytes per game (the SQLite file, or PostgreSQL's tables with their indexes, after a
  ``VACUUM``, divided by the games);
- startup: from starting the process to ``/health`` answering;
- the median and the slowest of 20 requests to ``/api/ladder``, ``/api/games``,
  ``/api/games?status=finished``, ``/api/games?bot=…``, a page further (``before=``), a bot's
  profile and its rating history;
- server CPU per decision of a live ladder on top of that history: four new bots seeking and
  answering at once for ``--seconds``, against the same on a database with the same 50 bots
  listed and no game (the standings then show as many bots), the two alternately for
  ``--rounds`` rounds (the median of each, so a slow spell of the machine falls on both).

PostgreSQL is the throwaway one of the tests (``scripts/test-postgres.sh``, fsync off), with
a database per run.

    python bench/history.py [--sizes 10000,100000] [--backends sqlite,postgres] [--seconds 10] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cluster_load import fresh_database
from load import ADMIN, SERVE, cpu_seconds, pinned, wait_healthy

from mandala_cli.history_cmd import synth
from server.storage import open_storage

REPO = Path(__file__).resolve().parent.parent
BOTS = 50
PORT = 8140
LIVE_ROUNDS = itertools.count()
"""Each live round registers new bots (a database may be measured again)."""
ENDPOINTS = [
    ("/api/ladder", "/api/ladder"),
    ("/api/games", "/api/games?limit=50"),
    ("/api/games?status=finished", "/api/games?status=finished&limit=50"),
    ("/api/games?bot=", "/api/games?bot=synth-007&limit=50"),
    ("a page further", None),
    ("a bot's profile", "/api/bots/synth-007"),
    ("its rating history", "/api/bots/synth-007/history"),
]


async def fill(db: str, games: int) -> float:
    storage = open_storage(db)
    await storage.open()
    try:
        return await synth(storage, games, BOTS, seed=1, progress=False)
    finally:
        await storage.close()


async def database_bytes(db: str) -> int:
    if db.startswith("postgresql://"):
        conn = await asyncpg.connect(db)
        try:
            await conn.execute("VACUUM ANALYZE")
            # The tables with their indexes and TOAST (an empty database's own 7.5 MB left out).
            return int(await conn.fetchval(
                "SELECT SUM(pg_total_relation_size(oid)) FROM pg_class WHERE relkind = 'r'"
                " AND relnamespace = 'public'::regnamespace"))
        finally:
            await conn.close()
    import sqlite3

    with sqlite3.connect(db) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return sum(p.stat().st_size for p in Path(db).parent.glob(Path(db).name + "*"))


async def timed(http: aiohttp.ClientSession, url: str) -> tuple[float, Any]:
    began = time.perf_counter()
    async with http.get(url) as resp:
        body = await resp.read()
        assert resp.status == 200, (url, resp.status, body[:200])
        return time.perf_counter() - began, resp.headers.get("Link")


async def latencies(http: aiohttp.ClientSession, base: str) -> dict[str, tuple[float, float]]:
    out: dict[str, tuple[float, float]] = {}
    link = None
    for name, path in ENDPOINTS:
        if path is None:  # the next page of the bot's games
            if link is None:
                continue
            path = link.split(";")[0].strip("<>")
        times = []
        for _ in range(20):
            took, got = await timed(http, base + path)
            times.append(took)
            if name == "/api/games?bot=":
                link = got
        out[name] = (statistics.median(times) * 1000, max(times) * 1000)
    return out


async def live_ladder(http: aiohttp.ClientSession, base: str, pid: int, seconds: float, round_: int) -> float:
    """Four instant bots on the ladder (new ones each round): server CPU µs per decision
    while they play."""
    tokens = []
    for i in range(4):
        async with http.post(base + "/api/bots", json={"name": f"live-{round_}-{i}"},
                             headers={"Authorization": f"Bearer {ADMIN}"}) as resp:
            tokens.append((await resp.json())["token"])
    decisions = [0]
    measuring = [False]

    async def bot(token: str) -> None:
        async with http.ws_connect(base.replace("http", "ws", 1) + "/ws") as ws:
            await ws.send_json({"type": "hello", "protocol": 1, "token": token, "max_games": 2})
            await ws.send_json({"type": "seek"})
            async for msg in ws:
                data = json.loads(msg.data)
                if data["type"] == "decision":
                    await ws.send_json({"type": "move", "game_id": data["game_id"],
                                        "request_id": data["request_id"], "move": data["legal"][0]})
                    decisions[0] += measuring[0]

    tasks = [asyncio.create_task(bot(t)) for t in tokens]
    try:
        await asyncio.sleep(8.0)  # qualification, then the ladder
        cpu0 = cpu_seconds(pid)
        measuring[0] = True
        await asyncio.sleep(seconds)
        measuring[0] = False
        cpu = cpu_seconds(pid) - cpu0
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return cpu / max(decisions[0], 1) * 1e6


class Server:
    """``mandala serve`` on a database, pinned to core 0, for one measurement."""

    def __init__(self, db: str, tmp: Path) -> None:
        config = tmp / "bench.toml"
        config.write_text("messages_per_second = 1000000.0\nburst = 1000000\nregistrations_per_hour = 100000\n"
                          "qualification_pairs = 1\npairing_interval_s = 0.05\n")
        env = {**os.environ, "MANDALA_ADMIN_TOKEN": ADMIN, "PYTHONPATH": f"{REPO}:{REPO}/clients/python"}
        self.began = time.perf_counter()
        self.process = subprocess.Popen(
            pinned([sys.executable, "-c", SERVE, "serve", "--port", str(PORT), "--db", db, "--config", str(config)], 0),
            env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.base = f"http://127.0.0.1:{PORT}"

    async def __aenter__(self) -> Server:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.process.terminate()
        self.process.wait()


async def live_rounds(http: aiohttp.ClientSession, dbs: list[str], rounds: int, seconds: float,
                      tmp: Path) -> list[list[float]]:
    """The live ladder on each database in turn, ``rounds`` times (alternating, so a slow
    spell of the machine falls on both): each database's µs per decision, round by round."""
    out: list[list[float]] = [[] for _ in dbs]
    for _ in range(rounds):
        for i, db in enumerate(dbs):
            async with Server(db, tmp) as server:
                await wait_healthy(http, server.base)
                out[i].append(await live_ladder(http, server.base, server.process.pid, seconds, next(LIVE_ROUNDS)))
    return out


async def measure(db: str, baseline: str | None, games: int, seconds: float, rounds: int,
                  tmp: Path) -> dict[str, Any]:
    """Fill ``db`` with ``games``, then measure it; the live ladder alternately with
    ``baseline`` (the same bots, no games), if given."""
    took = await fill(db, games)  # with no games: the same 50 bots, listed
    size = await database_bytes(db)
    async with aiohttp.ClientSession() as http:
        async with Server(db, tmp) as server:
            await wait_healthy(http, server.base)
            startup = time.perf_counter() - server.began
            lat = await latencies(http, server.base) if games else {}
        live = await live_rounds(http, [db] if baseline is None else [baseline, db], rounds, seconds, tmp)
    figures: dict[str, Any] = {
        "games": games, "synth_s": round(took, 1), "bytes_per_game": round(size / games) if games else None,
        "startup_s": round(startup, 2), "latency_ms": {k: [round(a, 1), round(b, 1)] for k, (a, b) in lat.items()},
        "live_cpu_us": round(statistics.median(live[-1]), 1), "live_rounds_us": [round(v, 1) for v in live[-1]]}
    if baseline is not None:
        figures["baseline_rounds_us"] = [round(v, 1) for v in live[0]]
        figures["live_ratio"] = round(statistics.median(live[1]) / statistics.median(live[0]), 3)
    return figures


async def main_async(args: argparse.Namespace) -> None:
    sizes = [int(s) for s in args.sizes.split(",")]
    pg = None
    if "postgres" in args.backends:
        started = subprocess.run([str(REPO / "scripts" / "test-postgres.sh"), "start"], capture_output=True, text=True)
        pg = started.stdout.strip() or None
        if pg is None:
            print("PostgreSQL did not start: its rows are left out", file=sys.stderr)
    rows = []
    for backend in args.backends.split(","):
        if backend == "postgres" and pg is None:
            continue
        with tempfile.TemporaryDirectory() as kept:
            baseline = await fresh_database(pg) if backend == "postgres" and pg else str(Path(kept) / "none.db")
            figures = {"backend": backend, **await measure(baseline, None, 0, args.seconds, 1, Path(kept))}
            print(json.dumps(figures), flush=True)
            rows.append(figures)
            for games in sizes:
                with tempfile.TemporaryDirectory() as tmp:
                    db = await fresh_database(pg) if backend == "postgres" and pg else str(Path(tmp) / "history.db")
                    figures = {"backend": backend,
                               **await measure(db, baseline, games, args.seconds, args.rounds, Path(tmp))}
                    print(json.dumps(figures), flush=True)
                    rows.append(figures)
    print()
    for backend in args.backends.split(","):
        mine = [r for r in rows if r["backend"] == backend]
        if not mine:
            continue
        empty = next(r for r in mine if r["games"] == 0)
        print(f"{backend}: startup on an empty database {empty['startup_s']} s")
        header = ["games", "bytes/game", "startup s", *[n for n, _ in ENDPOINTS],
                  "live µs/decision (median of rounds; beside no games)"]
        print(" | ".join(header))
        for r in mine:
            if not r["games"]:
                continue
            lat = r["latency_ms"]
            cells = [f"{r['games']:,}", str(r["bytes_per_game"]), str(r["startup_s"]),
                     *[f"{lat[n][0]} ({lat[n][1]})" if n in lat else "-" for n, _ in ENDPOINTS],
                     f"{r['live_cpu_us']} vs {statistics.median(r['baseline_rounds_us'])} ({r['live_ratio']:.2f}×)"]
            print(" | ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="games in each history (default 10000,100000)")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long the live ladder is measured")
    parser.add_argument("--rounds", type=int, default=3,
                        help="live-ladder rounds on each history, alternating with the database of no games")
    args = parser.parse_args()
    if (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
