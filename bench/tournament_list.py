"""What the list of tournaments costs a server once a season has hundreds of them::

    .venv/bin/python bench/tournament_list.py
    .venv/bin/python bench/tournament_list.py --tournaments 100,300,1000 --repo /tmp/other-checkout

For each size it writes a season into a fresh SQLite database (finished round robins of
``--bots`` bots, two games a pairing, every game stored as a finished tournament game), starts a
real ``mandala serve`` on it (from ``--repo``, default this checkout) and asks ``GET
/api/tournaments`` ``--requests`` times one after the other, after a first read that warms
what the server keeps, then the same with ``?limit=500`` (the most a page holds; a server
without pages ignores it and lists every tournament). Prints one JSON line per size and query:
the server's CPU milliseconds a request, the median answer's milliseconds, and its bytes.
The page at ``#/tournaments`` asks for its list every 5 s, so a request's CPU times the open
pages, divided by 5 s, is the share of a core that viewers of the list take.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load import SERVE, cpu_seconds, pct, pinned, wait_healthy

from server.storage import GameRow, TournamentRow, open_storage
from server.storage.base import GameWrite


async def season(path: Path, tournaments: int, bots: int) -> None:
    """``tournaments`` finished round robins of ``bots`` bots, every game stored."""
    storage = open_storage(str(path))
    await storage.open()
    names = [f"bot{i:02d}" for i in range(bots)]
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    rng = random.Random(1)
    try:
        for t in range(tournaments):
            tid = f"t{t:05d}"
            when = f"2030-{1 + t // 672 % 12:02d}-{1 + t // 24 % 28:02d}T{t % 24:02d}:00:00.000Z"
            schedule = [[1, *pairs[k // 2], k // 2] for k in range(2 * len(pairs))]
            await storage.create_tournament(TournamentRow(
                tournament_id=tid, name=f"daily {t}", state="finished", created=when, started=when, ended=when,
                definition={"name": f"daily {t}", "format": "round_robin", "participants": names,
                            "games_per_pairing": 2, "seed": t},
                schedule=schedule))
            writes = []
            for slot, (_, a, b, _) in enumerate(schedule):
                winner = rng.randrange(2)
                writes.append(GameWrite(GameRow(
                    game_id=f"{tid}g{slot}", players=[a, b], status="finished", rated=False, first_player=0, ply=80,
                    started=when, ended=when, kind="tournament", tournament_id=tid, slot=slot, end_reason="deck",
                    result={"winner": winner, "end_reason": "deck", "scores": [30, 20][::1 - 2 * winner],
                            "cup_sizes": [10, 10]},
                    record={"deck": [], "reshuffles": [], "first_player": 0, "moves": []}), final=True))
            await storage.write_games(writes)
    finally:
        await storage.close()


async def measure(url: str, pid: int, path: str, requests: int) -> dict[str, float]:
    async with aiohttp.ClientSession() as http:
        await wait_healthy(http, url)
        async with http.get(url + path) as resp:  # the first read counts every tournament once
            assert resp.status == 200, await resp.text()
        times: list[float] = []
        size = 0
        cpu = cpu_seconds(pid)
        for _ in range(requests):
            t0 = time.perf_counter()
            async with http.get(url + path) as resp:
                size = len(await resp.read())
            times.append(time.perf_counter() - t0)
        cpu = cpu_seconds(pid) - cpu
    return {"cpu_ms": round(1000 * cpu / requests, 2), "p50_ms": round(1000 * pct(times, 0.5), 2), "bytes": size}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tournaments", default="100,300,1000", help="season sizes, comma-separated")
    p.add_argument("--bots", type=int, default=12, help="bots in each round robin (default 12: 132 games)")
    p.add_argument("--requests", type=int, default=50)
    p.add_argument("--port", type=int, default=18760)
    p.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    args = p.parse_args()
    repo = args.repo.resolve()
    env = {**os.environ, "PYTHONPATH": f"{repo}:{repo}/clients/python"}
    for n in (int(x) for x in args.tournaments.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "season.db"
            asyncio.run(season(db, n, args.bots))
            server = subprocess.Popen(pinned([sys.executable, "-c", SERVE, "serve", "--port", str(args.port),
                                              "--db", str(db)], 0),
                                      env=env, cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                for query in ("", "?limit=500"):
                    row = asyncio.run(measure(f"http://127.0.0.1:{args.port}", server.pid, "/api/tournaments" + query,
                                              args.requests))
                    print(json.dumps({"repo": str(repo), "tournaments": n, "query": query or "(none)", **row}), flush=True)
            finally:
                server.terminate()
                server.wait()


if __name__ == "__main__":
    main()
