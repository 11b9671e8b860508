"""``make load-cluster``: the decision path across nodes, in one run.

Starts PostgreSQL and Redis (``scripts/test-postgres.sh``, ``scripts/test-redis.sh``, on ports
of their own), then for each setting a fresh database and fresh ``mandala serve --redis`` nodes,
and drives P pairs of bots through the protocol for D seconds (challenge games, each bot answers
the first legal move at once or after ``--think`` seconds), as ``bench/load.py`` does:

- one node, every pair on it;
- two nodes, each pair on one node (half the pairs on each);
- two nodes, each pair across them (the challenger, whose node hosts the game, alternates);
- ``ladder``: three nodes and K bots (``--bots``) of known strengths spread over them (bot i
  on node i mod 3), each seeking on the ladder with ``--max-games`` games at a time: the leader
  pairs, each game runs on the node of one of its seats. It reports each node's share of the
  servers' CPU, the games each node hosted, decisions per second, the share of games whose two
  seats sit on different nodes, games per bot, each node's event-loop lag, the standings'
  refresh interval, and how well the final standings order the bots by their strengths
  (``bench/ladder_load.py``).

Server CPU counts every node (not PostgreSQL or Redis); each node is pinned to a core of its own
where there are enough (with two cores, the second node shares this load client's core: read
the load average beside the figures). PostgreSQL and Redis may run on any core. In a cluster each move is stored in PostgreSQL before
it is accepted: the throwaway PostgreSQL runs with fsync off unless ``--durable`` (each commit
flushed to disk, as a real deployment runs it).

    python bench/cluster_load.py [--pairs 100] [--seconds 10] [--think 0] [--runs one,pairs,across]
                                 [--durable] [--repo DIR]
    python bench/cluster_load.py --runs ladder [--bots 60] [--max-games 2] [--seconds 30] [--think 0]
                                 [--tiers 11] [--warmup S] [--seed 0]

Its PostgreSQL listens on 25490 (25491 with ``--durable``), its Redis on 26490, with their files
in ``/tmp/mandala-load-pg`` and ``/tmp/mandala-load-redis`` or where ``MANDALA_PG_DIR`` and
``MANDALA_REDIS_DIR`` say (never your tests' instance: the load stops and removes its own at
the end).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ladder_load import ladder_table, run_ladder
from ladder_load import options as ladder_options
from load import ADMIN, SERVE, Stats, anywhere, arguments, bot, create_bots, drive, pinned, run, wait_healthy

REPO = Path(__file__).resolve().parent.parent
PG_PORT, REDIS_PORT = 25490, 26490
"""The load's own PostgreSQL and Redis (``--durable``: PostgreSQL on the next port): below the
ephemeral range (32768–60999), so no client socket of the load can hold them."""
RUNS = {"one": ("one node", 1, False), "pairs": ("two nodes, pairs on one node", 2, False),
        "across": ("two nodes, pairs across nodes", 2, True)}


def folders(durable: bool = False) -> tuple[Path, Path]:
    """The load's own PostgreSQL's and Redis's folders (where PostgreSQL's user may enter):
    ``MANDALA_PG_DIR`` and ``MANDALA_REDIS_DIR`` when set, as for the test scripts, so that
    loads in two checkouts do not share one; ``--durable`` adds ``-durable``."""
    pg = os.environ.get("MANDALA_PG_DIR") or "/tmp/mandala-load-pg"
    return Path(pg + "-durable" if durable else pg), Path(os.environ.get("MANDALA_REDIS_DIR") or "/tmp/mandala-load-redis")


def service_pids(durable: bool = False) -> list[int]:
    """The main processes of the load's PostgreSQL and Redis (from their pid files)."""
    pg, redis = folders(durable)
    pids = []
    for pidfile in (pg / "data" / "postmaster.pid", redis / "redis.pid"):
        try:
            pids.append(int(pidfile.read_text().split()[0]))
        except (OSError, ValueError, IndexError):
            pass
    return pids


def service(script: str, action: str, durable: bool = False) -> str:
    """Start or stop the load's own PostgreSQL or Redis."""
    pg, redis = folders(durable)
    env = {**os.environ, "MANDALA_PG_DIR": str(pg), "MANDALA_PG_PORT": str(PG_PORT + durable),
           "MANDALA_REDIS_DIR": str(redis), "MANDALA_REDIS_PORT": str(REDIS_PORT),
           "MANDALA_PG_DURABLE": "1" if durable else ""}
    done = subprocess.run(anywhere([str(REPO / "scripts" / script), action]), env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{script} {action} failed: {done.stderr}")
    return done.stdout.strip()


async def fresh_database(pg: str) -> str:
    name = f"load_{uuid.uuid4().hex[:10]}"
    conn = await asyncpg.connect(pg)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return f"{pg.rpartition('/')[0]}/{name}"


async def run_cluster(args: argparse.Namespace, tmp: Path, pg: str, redis: str, nodes: int,
                      across: bool) -> dict[str, Any]:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(redis)
    await client.flushall()
    await client.aclose()
    db = await fresh_database(pg)
    config = tmp / "load.toml"
    config.write_text(f"messages_per_second = 1000000.0\nburst = 1000000\nregistrations_per_hour = 100000\n"
                      f"send_queue_max = 100000\ndecision_ms = {max(5000, int(args.think * 1000) + 5000)}\n")
    repo = args.repo.resolve()
    env = {**os.environ, "MANDALA_ADMIN_TOKEN": ADMIN, "PYTHONPATH": f"{repo}:{repo}/clients/python"}
    urls = [f"http://127.0.0.1:{args.port + i}" for i in range(nodes)]
    cores = [0, 1] if (os.cpu_count() or 1) <= 3 else [0, 2]
    servers = [
        subprocess.Popen(pinned([sys.executable, "-c", SERVE, "serve", "--port", str(args.port + i), "--db", db,
                                 "--redis", redis, "--node", f"n{i + 1}", "--config", str(config),
                                 "--spool", str(tmp / f"n{i}.spool")], cores[i]),
                         env=env, cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for i in range(nodes)
    ]

    async def start(http: aiohttp.ClientSession, stats: Stats) -> list[asyncio.Task[None]]:
        for url in urls[1:]:
            await wait_healthy(http, url)
        tokens = await create_bots(http, urls[0], 2 * args.pairs)
        # Pair i's challenger (whose node hosts its games) on node i mod n; its opponent on the
        # same node, or on the next one when the pairs play across nodes.
        home = [i % nodes for i in range(args.pairs)]
        away = [(h + 1) % nodes if across else h for h in home]
        welcomed = [asyncio.Event() for _ in range(args.pairs)]
        tasks = [asyncio.create_task(bot(http, urls[away[i]], tokens[2 * i + 1], None, args.think, stats,
                                         welcomed[i])) for i in range(args.pairs)]
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in welcomed)), 120)
        await asyncio.sleep(1.0)  # every node has heard where the opponents are
        tasks += [asyncio.create_task(bot(http, urls[home[i]], tokens[2 * i], f"b{2 * i + 1}", args.think, stats))
                  for i in range(args.pairs)]
        return tasks

    try:
        return await drive(urls[0], [s.pid for s in servers], start, args.seconds, args.pairs)
    finally:
        for s in servers:
            s.terminate()
        for s in servers:
            s.wait()


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", default="one,pairs,across",
                        help="which settings, in order: one, pairs (two nodes, pairs on one), across, ladder")
    parser.add_argument("--durable", action="store_true", help="PostgreSQL with fsync on")
    ladder_options(parser)


def main() -> None:
    args = arguments(__doc__.split("\n\n")[0], pairs=100, port=8140, more=options)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        pg, redis = service("test-postgres.sh", "start", args.durable), service("test-redis.sh", "start")
        try:
            runs = {}
            ladder = None
            for key in args.runs.split(","):
                if key == "ladder":
                    ladder = run(run_ladder(args, tmp, pg, redis, fresh_database, service_pids(args.durable)))
                    continue
                label, nodes, across = RUNS[key]
                runs[label] = run(run_cluster(args, tmp, pg, redis, nodes, across))
        finally:
            service("test-redis.sh", "stop")
            service("test-postgres.sh", "stop", args.durable)
    print(json.dumps({"pairs": args.pairs, "seconds": args.seconds, "think": args.think, "durable": args.durable,
                      "repo": str(args.repo.resolve()), "runs": runs, "ladder": ladder}), flush=True)
    if runs:
        table(runs)
    if ladder is not None:
        ladder_table(ladder, args)


def table(runs: dict[str, dict[str, Any]]) -> None:
    rows = [
        ("decisions/s", "per_s"),
        ("server CPU µs per decision (all nodes)", "cpu_us"),
        ("p50 move → move_accepted, ms", "p50_ms"),
        ("p99 move → move_accepted, ms", "p99_ms"),
        ("p99 move → next decision, ms", "p99_next_ms"),
        ("errors", "errors"),
        ("load average (1 min) at the end", "load_1min"),
    ]
    width = max(len(r[0]) for r in rows)
    names = list(runs)
    print(f"{'':{width}}  " + "  ".join(f"{n:>30}" for n in names))
    for label, key in rows:
        print(f"{label:{width}}  " + "  ".join(f"{runs[n][key]!s:>30}" for n in names))


if __name__ == "__main__":
    main()
