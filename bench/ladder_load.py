"""The ladder run of ``make load-cluster`` (``bench/cluster_load.py --runs ladder``): three nodes
over PostgreSQL and Redis, K bots of known strengths spread over them, seeking on the ladder.

Bot *i* connects to node *i* mod 3 and has the error rate of tier *i* mod T (``--tiers T``,
``bench/erring.py``: greedy except, with that probability, a random legal move; ``--tiers 0``:
every bot answers its first legal move, as before strengths were given). Each answers after
``--think`` seconds, each game's decision on its own. The run creates the bots (a hundred
requests at a time), connects them (a hundred at a time), waits until every bot has passed
its qualification and is listed (at most ``--warmup`` seconds), then measures for
``--seconds``:

- each node's share of the servers' CPU (a node's process and its children: the leader's
  standings worker counts), decisions per second, the games each node hosted, the share of
  ladder games whose seats sit on different nodes, and the games hosted by no node of theirs;
- games per bot: the rated games of each bot in the final standings (min, median, max) and
  the ladder games each finished within the measured time;
- each node's event-loop lag, from its ``GET /health`` (``loop_lag``: the last minute),
  read when the measuring starts (the minute of the warm-up before it), each minute, and at
  the end;
- the standings' refresh: ``GET /api/ladder`` on a follower (n2), every page of the table,
  read every ``REFRESH_POLL_S``; a refresh is a table that counts new rated games. The
  interval between refreshes (median, max), and how many games the bots had been told were
  over (``game_over``) that the table did not count yet (median, max);
- the final standings (every page of ``GET /api/ladder`` on the leader, as the measuring
  ends) against the bots' known strengths: Spearman's ρ and Kendall's τ-b between the
  standings' ``rating`` and minus the error rate (1: the standings order the bots as their
  strengths do), and the same for the live Elo; with T tiers of equal size the tiers tie, so
  a perfect order reaches less than 1: the ceiling is printed beside them;
- the load client's own CPU, and the load average (the machine may be shared).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))

from erring import WireErringBot, tiers
from load import ADMIN, SERVE, TICKS, anywhere, cpu_seconds, pinned, wait_healthy

from server.common.loop_lag import LoopLag

NODES = 3
REFRESH_POLL_S = 0.25
"""How often the standings are read on a follower: the refresh interval's resolution."""
LAG_POLL_S = 60.0
"""How often each node's ``/health`` is read: its ``loop_lag`` covers the last minute."""
CHUNK = 100
"""Bots created, and connected, at a time."""


class LadderStats:
    """What the ladder's bots saw: decisions answered while measuring, each game's kind and
    seats, each game's end, errors, qualifications failed."""

    def __init__(self) -> None:
        self.measuring = False
        self.decisions = 0
        self.kind: dict[str, str] = {}
        self.seats: dict[str, tuple[str, str]] = {}
        self.started: set[str] = set()
        """Games that started while measuring."""
        self.ended: dict[str, tuple[str, bool]] = {}
        """Each game that ended: its end reason, and whether it ended while measuring."""
        self.ladder_over = 0
        """Ladder games whose ``game_over`` a bot received (each counted once)."""
        self.errors: Counter[str] = Counter()
        self.failed = 0
        self.late = 0
        """Answers the load client sent after the decision's clock had run out (as it saw it)."""


class Frame(msgspec.Struct):
    """The fields of a server frame the ladder's bots read (the rest is skipped unparsed)."""

    type: str
    game_id: str | None = None
    request_id: int | None = None
    code: str | None = None
    legal: list[msgspec.Raw] | None = None
    deadline_ms: int = 0


class Start(msgspec.Struct):
    """The fields of a ``game_start`` the run reads."""

    game_id: str
    players: list[dict[str, Any]]
    kind: str = "challenge"


class Result(msgspec.Struct):
    end_reason: str


class Over(msgspec.Struct):
    """The fields of a ``game_over`` the run reads (the record is skipped)."""

    game_id: str
    result: Result


class Ladder(msgspec.Struct):
    """The fields of a ``ladder`` message the run reads."""

    seeking: bool
    state: str


class Row(msgspec.Struct):
    """The fields of a standings row the run reads."""

    bot: str
    rating: float
    elo: float
    games: int


class Page(msgspec.Struct):
    standings: list[Row]
    total: int
    offset: int


_frame = msgspec.json.Decoder(Frame)
_start = msgspec.json.Decoder(Start)
_over = msgspec.json.Decoder(Over)
_ladder = msgspec.json.Decoder(Ladder)
_page = msgspec.json.Decoder(Page)
_MOVE = '{"type":"move","game_id":"%s","request_id":%d,"move":%s}'


async def ladder_bot(http: aiohttp.ClientSession, url: str, token: str, max_games: int, think: float,
                     player: WireErringBot | None, stats: LadderStats) -> None:
    """A bot that seeks on the ladder (again after a failed qualification) and answers each
    decision by ``player``'s policy (``None``: its first legal move) after ``think`` seconds."""
    loop = asyncio.get_running_loop()
    async with http.ws_connect(url.replace("http", "ws", 1) + "/ws", max_msg_size=1 << 20) as ws:
        await ws.send_json({"type": "hello", "protocol": 1, "token": token, "max_games": max_games})
        await ws.send_json({"type": "seek"})

        def move_of(frame: str, legal: list[msgspec.Raw]) -> bytes:
            return player.answer(frame, legal) if player is not None else bytes(legal[0])

        async def answer(msg: Frame, frame: str, deadline: float) -> None:
            await asyncio.sleep(think)
            assert msg.legal is not None
            try:
                await ws.send_str(_MOVE % (msg.game_id, msg.request_id, move_of(frame, msg.legal).decode()))
            except (aiohttp.ClientError, ConnectionError, RuntimeError):
                pass  # the run is over: the connection is closing
            stats.late += loop.time() > deadline

        answering: set[asyncio.Task[None]] = set()
        async for message in ws:
            msg = _frame.decode(message.data)
            if msg.type == "decision":
                deadline = loop.time() + msg.deadline_ms / 1000
                task = asyncio.create_task(answer(msg, message.data, deadline))
                answering.add(task)
                task.add_done_callback(answering.discard)
            elif msg.type == "move_accepted":
                stats.decisions += stats.measuring
            elif msg.type == "game_start":
                start = _start.decode(message.data)
                stats.kind[start.game_id] = start.kind
                stats.seats[start.game_id] = (start.players[0]["name"], start.players[1]["name"])
                if stats.measuring:
                    stats.started.add(start.game_id)
            elif msg.type == "game_over":
                over = _over.decode(message.data)
                if over.game_id not in stats.ended:
                    stats.ended[over.game_id] = (over.result.end_reason, stats.measuring)
                    stats.ladder_over += stats.kind.get(over.game_id) == "ladder"
            elif msg.type == "ladder":
                if _ladder.decode(message.data).state == "failed":
                    stats.failed += 1
                    await ws.send_json({"type": "seek"})
            elif msg.type == "error":
                stats.errors[msg.code or "?"] += 1


async def create_bots(http: aiohttp.ClientSession, url: str, n: int) -> list[str]:
    """Bots ``b0`` … ``b{n-1}``, created a hundred at a time (with the admin token, which no
    registration limit counts); their tokens."""

    async def one(i: int) -> str:
        async with http.post(url + "/api/bots", json={"name": f"b{i}"},
                             headers={"Authorization": f"Bearer {ADMIN}"}) as resp:
            if resp.status != 201:
                raise RuntimeError(f"creating b{i}: {resp.status} {await resp.text()}")
            return str((await resp.json())["token"])

    tokens: list[str] = []
    for start in range(0, n, CHUNK):
        tokens += await asyncio.gather(*(one(i) for i in range(start, min(n, start + CHUNK))))
    return tokens


async def table(http: aiohttp.ClientSession, url: str) -> list[Row]:
    """Every row of the standings, a page of 500 at a time; read again while the first page
    changed meanwhile (a refresh between the pages), so the rows are of one table."""
    for _ in range(5):
        rows: list[Row] = []
        first: bytes | None = None
        total = 1
        while len(rows) < total:
            async with http.get(url + "/api/ladder", params={"limit": 500, "offset": len(rows)}) as resp:
                body = await resp.read()
            page = _page.decode(body)
            first = body if first is None else first
            total = page.total
            if not page.standings:
                break
            rows += page.standings
        async with http.get(url + "/api/ladder", params={"limit": 500, "offset": 0}) as resp:
            if await resp.read() == first:
                return rows
    return rows


class Watch:
    """Each node's ``/health`` and the follower's standings, read while the run measures."""

    def __init__(self) -> None:
        self.lag: dict[str, list[dict[str, Any]]] = {}
        """Each node's ``loop_lag`` readings, the first at the start of the measuring."""
        self.refreshes: list[float] = []
        """When a table that counted new games was first seen."""
        self.running: list[int] = []
        """Games running in the cluster at each reading of ``/health``."""
        self.behind: list[int] = []
        """At each read: ladder games the bots were told were over that the table did not count."""

    async def health(self, http: aiohttp.ClientSession, names: list[str], urls: list[str]) -> None:
        for name, url in zip(names, urls, strict=True):
            async with http.get(url + "/health") as resp:
                body = await resp.json()
            if "loop_lag" in body:  # a server from before /health had it (--repo)
                self.lag.setdefault(name, []).append(body["loop_lag"])
            self.running.append(body["games_running"])

    async def lag_every_minute(self, http: aiohttp.ClientSession, names: list[str], urls: list[str],
                               seconds: float) -> None:
        """Each node's lag each minute of the ``seconds`` measured but the last (read at the end)."""
        for _ in range(math.ceil(seconds / LAG_POLL_S) - 1):
            await asyncio.sleep(LAG_POLL_S)
            await self.health(http, names, urls)
            progress(f"games running: {self.running[-1]}; lag p99 "
                     + ", ".join(f"{n} {lags[-1]['p99_ms']} ms" for n, lags in self.lag.items()))

    async def standings(self, http: aiohttp.ClientSession, url: str, stats: LadderStats) -> None:
        counted = -1
        while True:
            told = stats.ladder_over
            rows = await table(http, url)
            games = sum(r.games for r in rows) // 2
            if games != counted:
                self.refreshes.append(time.perf_counter())
                counted = games
            self.behind.append(max(0, told - games))
            await asyncio.sleep(REFRESH_POLL_S)


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


def machine_busy() -> tuple[float, float, float]:
    """CPU seconds of the whole machine since boot, every process of every user
    (``/proc/stat``): (busy at normal priority, busy niced, in all). Niced work (a background
    job) yields most of its cores to the nodes, which run at normal priority."""
    user, nice, system, idle, iowait, irq, softirq, steal = (
        int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9])
    return (user + system + irq + softirq + steal) / TICKS, nice / TICKS, \
        (user + nice + system + idle + iowait + irq + softirq + steal) / TICKS


def spread(values: list[float] | list[int]) -> tuple[float, float, float] | None:
    """(min, median, max), or ``None`` for no values."""
    return (min(values), statistics.median(values), max(values)) if values else None


def agreement(rows: list[Row], error: dict[str, float]) -> dict[str, Any]:
    """How the standings' order (``rating``) and the live Elo agree with the known strengths
    (minus the error rate): Spearman's ρ and Kendall's τ-b, and their ceilings with the tiers'
    ties (a table in the strengths' own order, the bots of one tier in any order)."""
    from scipy.stats import kendalltau, spearmanr

    rows = [r for r in rows if r.bot in error]
    if len(rows) < 3:
        return {}
    strength = [-error[r.bot] for r in rows]
    ideal = [s + i * 1e-9 for i, s in enumerate(strength)]  # untied: one order within each tier

    def both(values: list[float]) -> tuple[float, float]:
        return round(float(spearmanr(values, strength)[0]), 3), round(float(kendalltau(values, strength)[0]), 3)

    by_tier: dict[float, list[int]] = {}
    for rank, r in enumerate(rows, 1):
        by_tier.setdefault(error[r.bot], []).append(rank)
    return {
        "rating": both([r.rating for r in rows]),
        "elo": both([r.elo for r in rows]),
        "ceiling": both(ideal),
        "mean_rank_by_error": {f"{e:.2f}": round(statistics.mean(ranks)) for e, ranks in sorted(by_tier.items())},
    }


async def run_ladder(args: argparse.Namespace, tmp: Path, pg: str, redis: str, database: Any,
                     services: list[int]) -> dict[str, Any]:
    """Three nodes, ``args.bots`` ladder bots spread over them: the figures of the module's doc.
    ``database(pg)`` makes a fresh database; ``services`` are the pids of PostgreSQL's and
    Redis's main processes (their CPU is reported beside the nodes')."""
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(redis)
    await client.flushall()
    await client.aclose()
    db = await database(pg)
    config = tmp / "ladder.toml"
    config.write_text("messages_per_second = 1000000.0\nburst = 1000000\nregistrations_per_hour = 100000\n"
                      "send_queue_max = 100000\npairing_wait_s = 0.5\npairing_interval_s = 0.2\n"
                      f"decision_ms = {max(5000, int(args.think * 1000) + 5000)}\n")
    repo = args.repo.resolve()
    env = {**os.environ, "MANDALA_ADMIN_TOKEN": ADMIN, "PYTHONPATH": f"{repo}:{repo}/clients/python"}
    names = [f"n{i + 1}" for i in range(NODES)]
    urls = [f"http://127.0.0.1:{args.port + i}" for i in range(NODES)]
    # A core of its own for each node where there are enough (this client has core 1); else
    # the nodes and this client share every core as the scheduler sees fit (a CPU share is CPU
    # seconds spent): pinned to one core, three nodes and the client would share that one.
    own_cores = (os.cpu_count() or 1) >= NODES + 2
    affinity = os.sched_getaffinity(0)
    if not own_cores:
        os.sched_setaffinity(0, range(os.cpu_count() or 1))
    servers = []
    for i, name in enumerate(names):  # n1 first, so that it leads
        cmd = [sys.executable, "-c", SERVE, "serve", "--port", str(args.port + i), "--db", db, "--redis", redis,
               "--node", name, "--config", str(config), "--spool", str(tmp / f"{name}.spool")]
        log = (args.server_logs / f"{name}.log").open("wb") if args.server_logs else subprocess.DEVNULL
        servers.append(subprocess.Popen(pinned(cmd, i + 2) if own_cores else anywhere(cmd), env=env, cwd=repo,
                                        stdout=log, stderr=log))
        async with aiohttp.ClientSession() as http:
            await wait_healthy(http, urls[i])
        await asyncio.sleep(1.0 if i == 0 else 0.2)  # n1 takes the pairing lease before the others come
    stats, watch = LadderStats(), Watch()
    node_of = {f"b{i}": names[i % NODES] for i in range(args.bots)}
    rates = tiers(args.tiers) if args.tiers else []
    error = {f"b{i}": rates[i % len(rates)] for i in range(args.bots)} if rates else {}
    warmup = args.warmup if args.warmup is not None else max(10.0, args.seconds / 3)
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
            t_create = time.perf_counter()
            tokens = await create_bots(http, urls[0], args.bots)
            created_s = time.perf_counter() - t_create
            progress(f"{args.bots} bots created in {created_s:.1f} s; connecting them")
            warm_lag = LoopLag(window_s=3600.0)  # the load client's own loop, from the bots' start
            warm_lag.start()
            tasks = []
            group = CHUNK if not args.arrive else max(1, args.bots // 100)  # a hundred groups over --arrive
            for start in range(0, args.bots, group):
                tasks += [asyncio.create_task(ladder_bot(
                    http, urls[i % NODES], tokens[i], args.max_games, args.think,
                    WireErringBot(args.seed + i, error[f"b{i}"]) if error else None, stats))
                    for i in range(start, min(args.bots, start + group))]
                await asyncio.sleep(args.arrive * group / args.bots if args.arrive else 0.2)
            # Warm up: every bot qualifies and is listed (or the warm-up's time is up).
            t_warm, listed_s, listed = time.perf_counter(), None, 0
            said = t_warm
            while time.perf_counter() - t_warm < warmup:
                async with http.get(urls[0] + "/api/ladder", params={"limit": 1}) as resp:
                    listed = (await resp.json())["total"]
                if listed >= args.bots:
                    listed_s = time.perf_counter() - t_warm
                    break
                if time.perf_counter() - said >= 10:
                    said = time.perf_counter()
                    async with http.get(urls[0] + "/health") as resp:
                        running = (await resp.json())["games_running"]
                    progress(f"warming up: {listed} of {args.bots} listed, {running} games running, "
                             f"{stats.failed} qualifications failed, "
                             f"game ends {dict(Counter(r for r, _ in stats.ended.values()))}, "
                             f"{stats.late} answers late, client loop lag {warm_lag.figures()}")
                await asyncio.sleep(1.0)
            await asyncio.sleep(max(0.0, min(10.0, warmup - (time.perf_counter() - t_warm))))  # the first pairs
            await watch.health(http, names, urls)
            cpu0 = [tree_cpu(s.pid) for s in servers]
            side0, machine0 = [tree_cpu(p) for p in services], machine_busy()
            t0, own0 = time.perf_counter(), time.process_time()
            warmed, late0 = warm_lag.figures(), stats.late
            await warm_lag.stop()
            client_lag = LoopLag(window_s=args.seconds + 60)
            client_lag.start()
            stats.measuring = True
            progress(f"measuring for {args.seconds:g} s ({listed} listed)")
            pollers = [asyncio.create_task(watch.lag_every_minute(http, names, urls, args.seconds)),
                       asyncio.create_task(watch.standings(http, urls[1], stats))]
            await asyncio.sleep(args.seconds)
            stats.measuring = False
            cpu1 = [tree_cpu(s.pid) for s in servers]
            side1, machine1 = [tree_cpu(p) for p in services], machine_busy()
            elapsed, own = time.perf_counter() - t0, time.process_time() - own0
            measured_lag, late = client_lag.figures(), stats.late - late0
            await client_lag.stop()
            load = os.getloadavg()[0]
            for task in pollers:
                task.cancel()
            await asyncio.gather(*pollers, return_exceptions=True)
            await watch.health(http, names, urls)
            final = await table(http, urls[0])
            gone = [t for t in tasks if t.done()]
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
        os.sched_setaffinity(0, affinity)
    cpu = [sum(t - before.get(p, 0.0) for p, t in after.items()) for before, after in zip(cpu0, cpu1, strict=True)]
    workers = [sum(t - before.get(p, 0.0) for p, t in after.items() if p != server.pid)
               for before, after, server in zip(cpu0, cpu1, servers, strict=True)]
    total = sum(cpu) or 1.0
    side = sum(t - before.get(p, 0.0) for before, after in zip(side0, side1, strict=True) for p, t in after.items())
    games = [(g, stats.seats[g]) for g in stats.started]
    laddered = [(g, seats) for g, seats in games if stats.kind.get(g) == "ladder"]
    across = sum(1 for _, (a, b) in laddered if node_of[a] != node_of[b])
    hosted = {name: sum(1 for g, _ in games if hosts.get(g) == name) for name in names}
    off_seat = sum(1 for g, seats in games if hosts.get(g) not in {node_of.get(p) for p in seats})
    finished: Counter[str] = Counter({b: 0 for b in node_of})
    for g, (_, measured) in stats.ended.items():
        if measured and stats.kind.get(g) == "ladder":
            finished.update(stats.seats[g])
    gaps = [b - a for a, b in zip(watch.refreshes, watch.refreshes[1:], strict=False)]
    return {
        "bots": args.bots,
        "tiers": args.tiers,
        "think": args.think,
        "created_s": round(created_s, 1),
        "listed_s": round(listed_s, 1) if listed_s is not None else None,
        "per_s": round(stats.decisions / elapsed, 1),
        "cpu_share": {name: round(c / total, 3) for name, c in zip(names, cpu, strict=True)},
        "cpu_s": {name: round(c, 2) for name, c in zip(names, cpu, strict=True)},
        "worker_cpu_s": {name: round(c, 2) for name, c in zip(names, workers, strict=True)},
        "cpu_us": round(total / max(stats.decisions, 1) * 1e6, 1),
        "servers_cores": round(total / elapsed, 2),
        "client_cores": round(own / elapsed, 2),
        "services_cores": round(side / elapsed, 2),
        "machine_cores": round((machine1[0] - machine0[0]) / elapsed, 2),
        "machine_niced_cores": round((machine1[1] - machine0[1]) / elapsed, 2),
        "games": len(games),
        "ladder_games": len(laddered),
        "across_share": round(across / len(laddered), 3) if laddered else None,
        "hosted": hosted,
        "hosted_off_seat": off_seat,
        "listed": len(final),
        "rated_games_per_bot": spread([r.games for r in final]),
        "ladder_games_per_bot_measured": spread(list(finished.values())),
        "end_reasons": dict(Counter(reason for reason, measured in stats.ended.values() if measured)),
        "failed_qualifications": stats.failed,
        "loop_lag": {name: {"warmup_p99_ms": lags[0]["p99_ms"], "warmup_max_ms": lags[0]["max_ms"],
                            "p99_ms": spread([lag["p99_ms"] for lag in lags[1:]]),
                            "max_ms": max((lag["max_ms"] for lag in lags[1:]), default=None)}
                     for name, lags in watch.lag.items()},
        "refresh_s": {"median": round(statistics.median(gaps), 2), "max": round(max(gaps), 2),
                      "count": len(gaps)} if gaps else None,
        "games_behind": spread(watch.behind),
        "games_running": spread(watch.running[NODES:]),
        "agreement": agreement(final, error),
        "errors": dict(stats.errors),
        "late_answers": {"warmup": late0, "measured": late},
        "client_loop_lag": {"warmup_p99_ms": warmed.p99_ms, "warmup_max_ms": warmed.max_ms,
                            "p99_ms": measured_lag.p99_ms, "max_ms": measured_lag.max_ms},
        "bots_gone": len(gone),
        "bots_gone_why": dict(Counter(type(t.exception()).__name__ for t in gone if not t.cancelled()
                                      and t.exception() is not None)),
        "load_1min": round(load, 2),
    }


def progress(text: str) -> None:
    """Where a long run is, on stderr (the figures go to stdout)."""
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bots", type=int, default=60, help="the ladder run's bots (default 60)")
    parser.add_argument("--max-games", type=int, default=2,
                        help="games each of the ladder run's bots plays at a time (default 2)")
    parser.add_argument("--tiers", type=int, default=11,
                        help="the ladder bots' error rates, evenly from 0 to 1 (default 11: 0, 0.1, …, 1; "
                             "0: every bot plays its first legal move)")
    parser.add_argument("--warmup", type=float, default=None,
                        help="the longest the ladder run waits for every bot to be listed before it measures "
                             "(default a third of --seconds, at least 10)")
    parser.add_argument("--arrive", type=float, default=0.0,
                        help="connect the ladder run's bots evenly over this many seconds, as entrants arrive "
                             "(default 0: a hundred every 0.2 s, all seeking at once)")
    parser.add_argument("--seed", type=int, default=0, help="the ladder bots' random choices (default 0)")
    parser.add_argument("--server-logs", type=Path, default=None,
                        help="write each node's log to DIR/n1.log … (default: discarded)")


def ladder_table(ladder: dict[str, Any], args: argparse.Namespace) -> None:
    def triple(t: Any, unit: str = "") -> str:
        return " / ".join(f"{v:g}{unit}" for v in t) if t else "-"

    print(f"ladder: {ladder['bots']} bots on {NODES} nodes, {args.max_games} games each at a time, "
          f"think {args.think:g} s, {args.seconds:g} s measured, {ladder['tiers']} strength tiers")
    rows: list[tuple[str, Any]] = [
        ("bots created in / all listed after (s)", f"{ladder['created_s']} / {ladder['listed_s']}"),
        ("decisions/s", ladder["per_s"]),
        ("server CPU µs per decision (all nodes)", ladder["cpu_us"]),
        ("cores busy: nodes / PostgreSQL+Redis / load client",
         f"{ladder['servers_cores']} / {ladder['services_cores']} / {ladder['client_cores']}"),
        (f"cores busy: the whole machine (of {os.cpu_count()}), normal priority / niced",
         f"{ladder['machine_cores']} / {ladder['machine_niced_cores']}"),
        ("CPU share n1 (leader) / n2 / n3", " / ".join(f"{v:.3f}" for v in ladder["cpu_share"].values())),
        ("CPU s n1 / n2 / n3, of them in child processes (the standings' fit)",
         " / ".join(f"{ladder['cpu_s'][n]:g} ({ladder['worker_cpu_s'][n]:g})" for n in ladder["cpu_s"])),
        ("games started / of them ladder games", f"{ladder['games']} / {ladder['ladder_games']}"),
        ("games hosted n1 / n2 / n3", " / ".join(str(v) for v in ladder["hosted"].values())),
        ("share of ladder games across nodes", ladder["across_share"]),
        ("games hosted on no node of their seats", ladder["hosted_off_seat"]),
        ("listed bots", ladder["listed"]),
        ("rated games per bot, min / median / max", triple(ladder["rated_games_per_bot"])),
        ("ladder games per bot while measuring", triple(ladder["ladder_games_per_bot_measured"])),
        ("game ends while measuring", ladder["end_reasons"]),
        ("games running at once, each minute (min / median / max)", triple(ladder["games_running"])),
    ]
    for name, lag in ladder["loop_lag"].items():
        rows.append((f"loop lag {name}: p99 per minute (min / median / max), max",
                     f"{triple(lag['p99_ms'])} ms, {lag['max_ms']} ms"))
        rows.append((f"loop lag {name}: the minute before measuring p99, max",
                     f"{lag['warmup_p99_ms']} ms, {lag['warmup_max_ms']} ms"))
    refresh = ladder["refresh_s"]
    rows += [
        ("standings refresh interval median / max (s)",
         f"{refresh['median']} / {refresh['max']} ({refresh['count']} seen)" if refresh else "-"),
        ("games over but not in the table (min / median / max)", triple(ladder["games_behind"])),
    ]
    agree = ladder["agreement"]
    if agree:
        rows += [
            ("standings vs strengths: Spearman ρ / Kendall τ-b", " / ".join(map(str, agree["rating"]))),
            ("live Elo vs strengths: Spearman ρ / Kendall τ-b", " / ".join(map(str, agree["elo"]))),
            ("ceiling with tied tiers: ρ / τ-b", " / ".join(map(str, agree["ceiling"]))),
            ("mean rank by error rate", " ".join(f"{e}:{r}" for e, r in agree["mean_rank_by_error"].items())),
        ]
    rows += [
        ("failed qualifications", ladder["failed_qualifications"]),
        ("errors", ladder["errors"]),
        ("answers the client sent late: warm-up / measuring",
         f"{ladder['late_answers']['warmup']} / {ladder['late_answers']['measured']}"),
        ("load client's loop lag: warm-up p99, max / measuring p99, max",
         "{warmup_p99_ms}, {warmup_max_ms} / {p99_ms}, {max_ms} ms".format(**ladder["client_loop_lag"])),
        ("bots whose connection ended before the run did", f"{ladder['bots_gone']} {ladder['bots_gone_why'] or ''}"),
        ("load average (1 min) at the end", ladder["load_1min"]),
    ]
    width = max(len(r[0]) for r in rows)
    for label, value in rows:
        print(f"{label:{width}}  {value!s}")
