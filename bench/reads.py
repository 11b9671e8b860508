"""An audience reading beside the games: how long a game's end waits to be stored while a
crowd reads profiles and game lists over HTTP.

Starts a real ``mandala serve`` on a fresh SQLite database (``bench/load.py``'s arena: P pairs
of bots playing challenge games, answering at once) and measures ``2 × --rounds`` windows of
``--seconds``, every other one with R readers that each ask, one request after another, a
random bot's profile (``GET /api/bots/{name}``) or its last 50 games (``GET
/api/games?bot=…&limit=50``). A game's ``game_over`` is sent once its end is stored, so the
challenger's wait from its last frame of a game to the ``game_over`` is what storing the end
took. The readers come from one address (``X-Forwarded-For``, which the server is told to
trust), so the server's request budget (``requests_per_second_per_ip``, ``--budget``) holds
them as it would one client on the internet. Prints one JSON line per window, then the two
kinds of window side by side: games a second, that wait's p50 and p99, the readers' requests
a second, their p50, and the ``429`` answers a second.

    python bench/reads.py [--pairs 20] [--seconds 8] [--readers 64] [--rounds 2] [--budget 0] [--repo DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import Stats, arguments, pct, run, run_arena, wait_healthy

READER_ADDRESS = {"X-Forwarded-For": "203.0.113.7"}
"""The readers' client address (the server trusts the header): one address, not loopback's,
which has no request budget."""


async def reader(http: aiohttp.ClientSession, url: str, bots: int, latencies: list[float],
                 measuring: list[bool], refused: list[int]) -> None:
    """Ask for a random bot's profile or game list, one request after the other (after a
    ``429``, again when it says)."""
    while True:
        name = f"b{random.randrange(bots)}"
        path = f"/api/bots/{name}" if random.random() < 0.5 else f"/api/games?bot={name}&limit=50"
        t0 = time.perf_counter()
        async with http.get(url + path, headers=READER_ADDRESS) as resp:
            body = await resp.read()
        if resp.status == 429:
            refused[0] += measuring[0]
            await asyncio.sleep(json.loads(body)["error"]["retry_after"])
            continue
        assert resp.status == 200, (path, resp.status)
        if measuring[0]:
            latencies.append(time.perf_counter() - t0)


async def windows(args: argparse.Namespace, url: str, pid: int, tasks_for: Any, seconds: float,
                  live_games: int) -> list[tuple[bool, dict[str, Any]]]:
    """Warm up (and fill the database with games to read), then the windows, every other one
    with the readers."""
    stats = Stats()
    found: list[tuple[bool, dict[str, Any]]] = []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
        await wait_healthy(http, url)
        tasks = await tasks_for(http, stats)
        await asyncio.sleep(max(3.0, seconds / 2))
        for i in range(2 * args.rounds):
            reading = i % 2 == 1
            read_latencies: list[float] = []
            measuring, refused = [False], [0]
            readers = [asyncio.create_task(reader(http, url, 2 * args.pairs, read_latencies, measuring, refused))
                       for _ in range(args.readers if reading else 0)]
            await asyncio.sleep(0.5)  # the readers under way before the window opens
            games, over = stats.games, len(stats.to_over)
            t0 = time.perf_counter()
            stats.measuring = measuring[0] = True
            await asyncio.sleep(seconds)
            stats.measuring = measuring[0] = False
            elapsed = time.perf_counter() - t0
            waits = stats.to_over[over:]
            found.append((reading, {
                "games_per_s": round((stats.games - games) / elapsed, 1),
                "end_p50_ms": round(pct(waits, 0.50) * 1000, 2) if waits else None,
                "end_p99_ms": round(pct(waits, 0.99) * 1000, 2) if waits else None,
                "reads_per_s": round(len(read_latencies) / elapsed, 1),
                "read_p50_ms": round(pct(read_latencies, 0.50) * 1000, 2) if read_latencies else None,
                "refused_per_s": round(refused[0] / elapsed, 1),
            }))
            for task in readers:
                task.cancel()
            await asyncio.gather(*readers, return_exceptions=True)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return found


def main() -> None:
    def more(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--readers", type=int, default=64, help="readers in every other window (default 64)")
        parser.add_argument("--rounds", type=int, default=2, help="pairs of windows (default 2)")
        parser.add_argument("--budget", type=float, default=None,
                            help="the server's requests_per_second_per_ip (default: its own, 50; 0: none)")

    args = arguments(__doc__.splitlines()[0], 20, 18090, more)
    args.seconds = args.seconds if args.seconds != 10.0 else 8.0
    with tempfile.TemporaryDirectory() as tmp:
        settings = "trust_forwarded_for = true\n"
        if args.budget is not None:
            settings += f"requests_per_second_per_ip = {args.budget}\n"
        found = run(run_arena(args, Path(tmp), measure=lambda *a: windows(args, *a),  # type: ignore[arg-type]
                              settings=settings))
    for reading, figures in found:
        print(json.dumps({"readers": args.readers if reading else 0, **figures}))
    print(f"\n{'':<22}{'games/s':>9}{'end p50 ms':>12}{'end p99 ms':>12}{'reads/s':>9}{'read p50 ms':>13}"
          f"{'429/s':>8}")
    for reading in (False, True):
        rows = [f for r, f in found if r == reading]

        def mean(key: str, rows: list[dict[str, Any]] = rows) -> float:
            values = [r[key] for r in rows if r[key] is not None]
            return sum(values) / len(values) if values else float("nan")

        label = f"with {args.readers} readers" if reading else "no readers"
        print(f"{label:<22}{mean('games_per_s'):>9.1f}{mean('end_p50_ms'):>12.2f}{mean('end_p99_ms'):>12.2f}"
              f"{mean('reads_per_s'):>9.1f}{mean('read_p50_ms'):>13.2f}{mean('refused_per_s'):>8.1f}")


if __name__ == "__main__":
    main()
