"""``make load-cluster``: the decision path across nodes, in one run.

Starts PostgreSQL and Redis (``scripts/test-postgres.sh``, ``scripts/test-redis.sh``, on ports
of their own), then for each setting a fresh database and fresh ``mandala serve --redis`` nodes,
and drives P pairs of bots through the protocol for D seconds (challenge games, each bot answers
the first legal move at once or after ``--think`` seconds), as ``bench/load.py`` does:

- one node, every pair on it;
- two nodes, each pair on one node (half the pairs on each);
- two nodes, each pair across them (the challenger, whose node hosts the game, alternates);
- ``ladder``: three nodes and K bots (``--bots``) spread over them (bot i on node i mod 3),
  each seeking on the ladder with ``--max-games`` games at a time: the leader pairs, each game
  runs on the node of one of its seats. It reports each node's share of the servers' CPU (a
  node's process and its children: the leader's standings worker counts), the games each node
  hosted, decisions per second, and the share of games whose two seats sit on different nodes.

Server CPU counts every node (not PostgreSQL or Redis); each node is pinned to a core of its own
where there are enough (with two cores, the second node shares this load client's core: read
the load average beside the figures). In a cluster each move is stored in PostgreSQL before
it is accepted: the throwaway PostgreSQL runs with fsync off unless ``--durable`` (each commit
flushed to disk, as a real deployment runs it).

    python bench/cluster_load.py [--pairs 100] [--seconds 10] [--think 0] [--runs one,pairs,across]
                                 [--durable] [--repo DIR]
    python bench/cluster_load.py --runs ladder [--bots 60] [--max-games 2] [--seconds 30]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import ADMIN, SERVE, Frame, Stats, arguments, bot, cpu_seconds, create_bots, drive, pinned, run, wait_healthy

REPO = Path(__file__).resolve().parent.parent
PG_PORT, REDIS_PORT = 55490, 56490
RUNS = {"one": ("one node", 1, False), "pairs": ("two nodes, pairs on one node", 2, False),
        "across": ("two nodes, pairs across nodes", 2, True)}


def service(script: str, action: str, durable: bool = False) -> str:
    """Start or stop the load's own PostgreSQL or Redis (in folders PostgreSQL's user may enter)."""
    pg = "/tmp/mandala-load-pg-durable" if durable else "/tmp/mandala-load-pg"
    env = {**os.environ, "MANDALA_PG_DIR": pg, "MANDALA_PG_PORT": str(PG_PORT + durable),
           "MANDALA_REDIS_DIR": "/tmp/mandala-load-redis", "MANDALA_REDIS_PORT": str(REDIS_PORT),
           "MANDALA_PG_DURABLE": "1" if durable else ""}
    done = subprocess.run([str(REPO / "scripts" / script), action], env=env, capture_output=True, text=True)
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


LADDER_NODES = 3


class LadderStats:
    """What the ladder's bots saw while measuring: decisions answered, the games that started
    (their seats), errors."""

    def __init__(self) -> None:
        self.measuring = False
        self.decisions = 0
        self.started: dict[str, tuple[str, str]] = {}
        self.errors: dict[str, int] = {}


class Start(msgspec.Struct):
    """The fields of a ``game_start`` the ladder run reads."""

    game_id: str
    players: list[dict[str, Any]]


_frame = msgspec.json.Decoder(Frame)
_start = msgspec.json.Decoder(Start)
_MOVE = '{"type":"move","game_id":"%s","request_id":%d,"move":%s}'


async def ladder_bot(http: aiohttp.ClientSession, url: str, token: str, max_games: int, think: float,
                     stats: LadderStats) -> None:
    """A bot that seeks on the ladder and answers each decision with its first legal move (at
    once, or after ``think`` seconds: each game's decision on its own, as a real bot would)."""
    async with http.ws_connect(url.replace("http", "ws", 1) + "/ws", max_msg_size=1 << 20) as ws:
        await ws.send_json({"type": "hello", "protocol": 1, "token": token, "max_games": max_games})
        await ws.send_json({"type": "seek"})

        async def answer(game_id: str | None, request_id: int | None, move: bytes) -> None:
            await asyncio.sleep(think)
            try:
                await ws.send_str(_MOVE % (game_id, request_id, move.decode()))
            except (aiohttp.ClientError, ConnectionError, RuntimeError):
                pass  # the run is over: the connection is closing

        answering: set[asyncio.Task[None]] = set()
        async for message in ws:
            msg = _frame.decode(message.data)
            if msg.type == "decision":
                assert msg.legal is not None
                if think:
                    task = asyncio.create_task(answer(msg.game_id, msg.request_id, bytes(msg.legal[0])))
                    answering.add(task)
                    task.add_done_callback(answering.discard)
                else:
                    await ws.send_str(_MOVE % (msg.game_id, msg.request_id, bytes(msg.legal[0]).decode()))
            elif msg.type == "move_accepted":
                stats.decisions += stats.measuring
            elif msg.type == "game_start" and stats.measuring:
                start = _start.decode(message.data)
                stats.started[start.game_id] = (start.players[0]["name"], start.players[1]["name"])
            elif msg.type == "error":
                stats.errors[msg.code or "?"] = stats.errors.get(msg.code or "?", 0) + 1


def process_tree(pid: int) -> list[int]:
    """``pid`` and every process below it (a node's standings worker)."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                pass
    return found


def tree_cpu(pid: int) -> dict[int, float]:
    """CPU seconds of each process of ``pid``'s tree, by pid."""
    out = {}
    for p in process_tree(pid):
        try:
            out[p] = cpu_seconds(p)
        except OSError:
            pass
    return out


async def run_ladder(args: argparse.Namespace, tmp: Path, pg: str, redis: str) -> dict[str, Any]:
    """Three nodes, ``args.bots`` ladder bots spread over them; each node's share of the CPU."""
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(redis)
    await client.flushall()
    await client.aclose()
    db = await fresh_database(pg)
    config = tmp / "ladder.toml"
    config.write_text("messages_per_second = 1000000.0\nburst = 1000000\nregistrations_per_hour = 100000\n"
                      "send_queue_max = 100000\npairing_wait_s = 0.5\npairing_interval_s = 0.2\n"
                      f"decision_ms = {max(5000, int(args.think * 1000) + 5000)}\n")
    repo = args.repo.resolve()
    env = {**os.environ, "MANDALA_ADMIN_TOKEN": ADMIN, "PYTHONPATH": f"{repo}:{repo}/clients/python"}
    names = [f"n{i + 1}" for i in range(LADDER_NODES)]
    urls = [f"http://127.0.0.1:{args.port + i}" for i in range(LADDER_NODES)]
    # A core of its own for each node where there are enough (this client has core 1); else
    # the nodes share the cores as the scheduler sees fit (a CPU share is CPU seconds spent).
    own_cores = (os.cpu_count() or 1) >= LADDER_NODES + 2
    servers = []
    for i, name in enumerate(names):  # n1 first, so that it leads
        cmd = [sys.executable, "-c", SERVE, "serve", "--port", str(args.port + i), "--db", db, "--redis", redis,
               "--node", name, "--config", str(config), "--spool", str(tmp / f"{name}.spool")]
        servers.append(subprocess.Popen(pinned(cmd, i + 2) if own_cores else cmd, env=env, cwd=repo,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        async with aiohttp.ClientSession() as http:
            await wait_healthy(http, urls[i])
        await asyncio.sleep(1.0 if i == 0 else 0.2)  # n1 takes the pairing lease before the others come
    stats = LadderStats()
    node_of = {f"b{i}": names[i % LADDER_NODES] for i in range(args.bots)}
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
            tokens = await create_bots(http, urls[0], args.bots)
            tasks = [asyncio.create_task(ladder_bot(http, urls[i % LADDER_NODES], tokens[i], args.max_games,
                                                    args.think, stats))
                     for i in range(args.bots)]
            await asyncio.sleep(max(10.0, args.seconds / 3))  # warm up: qualification, the first pairs
            cpu0 = [tree_cpu(s.pid) for s in servers]
            t0 = time.perf_counter()
            stats.measuring = True
            await asyncio.sleep(args.seconds)
            stats.measuring = False
            cpu1 = [tree_cpu(s.pid) for s in servers]
            elapsed = time.perf_counter() - t0
            load = os.getloadavg()[0]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.sleep(1.0)  # the last games' start rows are stored
        conn = await asyncpg.connect(db)
        try:
            hosts = dict(await conn.fetch("SELECT id, host FROM games WHERE id = ANY($1::text[])", list(stats.started)))
        finally:
            await conn.close()
    finally:
        for s in servers:
            s.terminate()
        for s in servers:
            s.wait()
    cpu = [sum(t - before.get(p, 0.0) for p, t in after.items()) for before, after in zip(cpu0, cpu1, strict=True)]
    total = sum(cpu) or 1.0
    games = list(stats.started.items())
    laddered = [(g, seats) for g, seats in games if all(p in node_of for p in seats)]  # not qualification's
    across = sum(1 for _, (a, b) in laddered if node_of[a] != node_of[b])
    hosted = {name: sum(1 for g, _ in games if hosts.get(g) == name) for name in names}
    off_seat = sum(1 for g, seats in games if hosts.get(g) not in {node_of.get(p) for p in seats})
    return {
        "bots": args.bots,
        "per_s": round(stats.decisions / elapsed, 1),
        "cpu_share": {name: round(c / total, 3) for name, c in zip(names, cpu, strict=True)},
        "cpu_s": {name: round(c, 2) for name, c in zip(names, cpu, strict=True)},
        "cpu_us": round(total / max(stats.decisions, 1) * 1e6, 1),
        "games": len(games),
        "ladder_games": len(laddered),
        "across_share": round(across / len(laddered), 3) if laddered else None,
        "hosted": hosted,
        "hosted_off_seat": off_seat,
        "errors": stats.errors,
        "load_1min": round(load, 2),
    }


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", default="one,pairs,across",
                        help="which settings, in order: one, pairs (two nodes, pairs on one), across, ladder")
    parser.add_argument("--durable", action="store_true", help="PostgreSQL with fsync on")
    parser.add_argument("--bots", type=int, default=60, help="the ladder run's bots (default 60)")
    parser.add_argument("--max-games", type=int, default=2,
                        help="games each of the ladder run's bots plays at a time (default 2)")


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
                    ladder = run(run_ladder(args, tmp, pg, redis))
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


def ladder_table(ladder: dict[str, Any], args: argparse.Namespace) -> None:
    print(f"ladder: {ladder['bots']} bots on {LADDER_NODES} nodes, {args.max_games} games each at a time, "
          f"think {args.think:g} s, {args.seconds:g} s measured")
    rows = [
        ("decisions/s", ladder["per_s"]),
        ("server CPU µs per decision (all nodes)", ladder["cpu_us"]),
        ("CPU share n1 (leader) / n2 / n3", " / ".join(f"{v:.3f}" for v in ladder["cpu_share"].values())),
        ("games started / of them ladder games", f"{ladder['games']} / {ladder['ladder_games']}"),
        ("games hosted n1 / n2 / n3", " / ".join(str(v) for v in ladder["hosted"].values())),
        ("share of ladder games across nodes", ladder["across_share"]),
        ("games hosted on no node of their seats", ladder["hosted_off_seat"]),
        ("errors", ladder["errors"]),
        ("load average (1 min) at the end", ladder["load_1min"]),
    ]
    width = max(len(r[0]) for r in rows)
    for label, value in rows:
        print(f"{label:{width}}  {value!s:>30}")


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
