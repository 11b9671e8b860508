"""The ladder's pairing and standings on simulated ladders of 100 to 10,000 bots, no server.

Synthetic bots of known strengths (Elo, normal around 1500) and speeds seek all the time, one
game at a time. The real pairing code decides who plays whom (``server/ladder/matchmaking.py``
below ``pairing_large_from`` active bots, ``server/ladder/large.py`` from there, each pass run
in slices on an asyncio loop by the ladder's own driver), a result model decides the games
(Bradley–Terry with draws, Davidson's: ``P(draw) = ν·√(πa·πb) / (πa + πb + ν·√(πa·πb))``), and
the real Bradley–Terry fit (``server/ratings/bradley_terry.fit_tally``, on the totals of
``server/ladder/tally.py``) makes the standings, refreshed as the games come in and fed back
to the pairing as the server does::

    .venv/bin/python bench/ladder_sim.py --bots 100,1000,10000

For each size it reports: the pass time (the thread's CPU for one pairing pass, all its
slices) and the loop's lag (how late a task that asks to run at every turn of the loop got
while passes ran: what a game's clock or frame would have waited), both in steady state and
for the thundering herd (every bot seeking at once, as after a restart, with the ratings
known: the CPU deciding who plays whom, and with the simulation's starting of the pairs); the
refresh time (one fit of the standings, BLAS on one thread as in the server's fitting
worker); games per bot (min, median, max); and the Kendall τ between the standings' order and
the true strengths after 20, 50 and 100 games per bot (on average), for the ladder's pairing,
for random pairing (the same bots, speeds and result model, opponents drawn uniformly among
the free seekers) and for the live Elo of the ladder's own games (ordered by Elo instead of
the fit, on the same games): the mean of ``--seeds`` ladders (4) below 10,000 bots, one at
10,000. The other figures are the first seed's.

Simulated time: each of a pair's two games lasts ``--game-s`` seconds times the slower bot's
factor (log-normal, σ 0.5) times a uniform 0.5–1.5; a pairing pass runs every ``--tick`` seconds; the standings are
refitted every time the bots have played ``--refit`` games each since the last fit (half a
game each by default, one at 10,000 bots; the server refits as fast as the fit allows, which
is more often than that).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import heapq
import math
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scipy.stats import kendalltau
from threadpoolctl import threadpool_limits

from server.config import Settings
from server.ladder.large import Field
from server.ladder.matchmaking import Meetings, Seeker, pair_round
from server.ladder.service import PAIRING_SLICE_S, run_in_slices
from server.ladder.tally import Tally
from server.ratings import bradley_terry, elo

Z95 = bradley_terry.Z95
T = TypeVar("T")
CENTER = 1500.0


@dataclass
class Collector:
    """The time Python's cyclic garbage collector ran, in all and its longest pause: a full
    collection walks every object the process holds (here the simulation's and the tally's
    millions), wherever it happens to start, so its pauses are told apart from the pass's own."""

    def __init__(self) -> None:
        self.total = 0.0
        self.longest = 0.0
        self._began = 0.0
        gc.callbacks.append(self._heard)

    def _heard(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            pause = time.perf_counter() - self._began
            self.total += pause
            self.longest = max(self.longest, pause)


COLLECTOR = Collector()


@dataclass
class Probe:
    """How late a task that asks to run at every turn of the loop gets, while a pass runs: the
    longest stretch the pass held the loop (what a game's clock or frame would have waited),
    less any collector's pause in it (counted apart, ``Collector``)."""

    on: bool = False
    serial: int = 0
    lags: list[float] = field(default_factory=list)
    cpu_lags: list[float] = field(default_factory=list)
    """The same stretches in the loop thread's CPU: without the time other processes of a busy
    machine took the core from it."""
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self) -> None:
        while True:
            if not self.on:
                self.wake.clear()
                await self.wake.wait()
            serial, t, cpu, collected = self.serial, time.perf_counter(), time.thread_time(), COLLECTOR.total
            await asyncio.sleep(0)
            if self.on and self.serial == serial:
                gc_s = COLLECTOR.total - collected
                self.lags.append(time.perf_counter() - t - gc_s)
                self.cpu_lags.append(time.thread_time() - cpu - gc_s)

    def clear(self) -> None:
        self.lags.clear()
        self.cpu_lags.clear()

    def longest(self) -> tuple[float, float]:
        """The longest stretch so far: wall-clock, and the loop thread's CPU."""
        return max(self.lags, default=0.0), max(self.cpu_lags, default=0.0)

    async def start(self) -> None:
        """A pass begins: the probe's clock starts now (it runs before the pass does)."""
        self.serial += 1
        self.on = True
        self.wake.set()
        for _ in range(3):
            await asyncio.sleep(0)


def timed(steps: Iterator[T], total: list[float]) -> Iterator[T]:
    """``steps``, with the thread's CPU they take (less the collector's) added to ``total[0]``."""
    while True:
        t0, collected = time.thread_time(), COLLECTOR.total
        try:
            step = next(steps)
        except StopIteration:
            total[0] += time.thread_time() - t0 - (COLLECTOR.total - collected)
            return
        total[0] += time.thread_time() - t0 - (COLLECTOR.total - collected)
        yield step


@dataclass
class Run:
    """One simulated ladder under one pairing policy."""

    policy: str
    strength: list[float]
    speed: list[float]
    args: argparse.Namespace
    rng: random.Random
    settings: Settings = field(default_factory=Settings)
    meetings: Meetings = field(default_factory=Meetings)
    tally: Tally = field(default_factory=Tally)
    known: Field = field(default_factory=Field)
    elo: dict[str, float] = field(default_factory=dict)
    elo_games: dict[str, int] = field(default_factory=dict)
    games: dict[str, int] = field(default_factory=dict)
    last: dict[str, str] = field(default_factory=dict)
    free_since: dict[str, float] = field(default_factory=dict)
    ends: list[tuple[float, int, str, str]] = field(default_factory=list)
    ratings: dict[str, float] = field(default_factory=dict)
    pass_s: list[float] = field(default_factory=list)
    """CPU of each pass: deciding who plays whom and starting the pairs (the simulation's)."""
    deciding: list[float] = field(default_factory=lambda: [0.0])
    """CPU spent deciding who plays whom (``Field.pairing``), all passes together."""
    first: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0)
    """The first pass (every bot seeking, none rated): CPU deciding, CPU in all, longest lag
    (wall-clock, CPU)."""
    fit_s: list[float] = field(default_factory=list)
    fit_at: list[float] = field(default_factory=list)
    """Games per bot at each fit."""
    played: int = 0
    now: float = 0.0

    def __post_init__(self) -> None:
        self.names = [f"bot{i:05d}" for i in range(len(self.strength))]
        self.true = dict(zip(self.names, self.strength, strict=True))
        self.slow = dict(zip(self.names, self.speed, strict=True))
        for name in self.names:
            self.free_since[name] = 0.0
            self.elo[name] = CENTER
            self.elo_games[name] = 0
            self.games[name] = 0

    # ------------------------------------------------------------------ the games

    def play(self, a: str, b: str) -> float:
        """One game: ``a``'s score under Davidson's model."""
        pa, pb = 10.0 ** (self.true[a] / 400.0), 10.0 ** (self.true[b] / 400.0)
        tie = self.args.draw * math.sqrt(pa * pb)
        u = self.rng.random() * (pa + pb + tie)
        return 1.0 if u < pa else 0.5 if u < pa + tie else 0.0

    def start(self, a: str, b: str) -> None:
        self.meetings.add(a, b, 2)
        self.last[a], self.last[b] = b, a
        del self.free_since[a], self.free_since[b]
        length = self.args.game_s * max(self.slow[a], self.slow[b])
        end = self.now + length * (self.rng.uniform(0.5, 1.5) + self.rng.uniform(0.5, 1.5))
        heapq.heappush(self.ends, (end, self.rng.getrandbits(32), a, b))

    def finish(self, a: str, b: str) -> None:
        """Both games of a pair (seats swapped), told to everyone who counts them."""
        for first, second in ((a, b), (b, a)):
            score = self.play(first, second)
            self.tally.add(first, second, score)
            self.known.result(first, second, score)
            ga, gb = self.elo_games[first], self.elo_games[second]
            self.elo[first], self.elo[second] = elo.update((self.elo[first], self.elo[second]), (ga, gb), score,
                                                           self.settings.elo)
            self.elo_games[first], self.elo_games[second] = ga + 1, gb + 1
            self.played += 1
        self.known.ended(a, b)
        self.games[a] += 2
        self.games[b] += 2
        self.free_since[a] = self.free_since[b] = self.now

    # ------------------------------------------------------------------ pairing

    async def pass_now(self, probe: Probe) -> int:
        """One pairing pass over the free bots; returns the pairs started."""
        await probe.start()
        t0, collected = time.thread_time(), COLLECTOR.total
        free = list(self.free_since)
        waited = [self.now - self.free_since[b] for b in free]
        wait_s = self.settings.pairing_wait_s
        started = 0
        if self.policy == "random":
            self.rng.shuffle(free)
            for a, b in zip(free[::2], free[1::2], strict=False):
                self.start(a, b)
                started += 1
        elif len(self.names) < self.settings.pairing_large_from:
            seekers = [Seeker(b, self.ratings.get(b, CENTER), self.last.get(b), w) for b, w in zip(free, waited, strict=True)]
            busy = [b for b in self.names if b not in self.free_since]
            for a, b in pair_round(seekers, busy, self.meetings, self.rng, self.settings.pairing_spread, wait_s,
                                   2 * self.settings.pairing_max_lead):
                self.start(a, b)
                started += 1
        else:
            def steps() -> Iterator[None]:
                nonlocal started
                for batch in timed(self.known.pairing(free, waited, self.meetings, self.rng, wait_s), self.deciding):
                    for p in batch:
                        self.known.started(p)
                        self.start(p.a, p.b)
                        started += 1
                        yield
                    yield
            await run_in_slices(steps(), self.args.slice_ms / 1000.0)
        self.pass_s.append(time.thread_time() - t0 - (COLLECTOR.total - collected))
        await asyncio.sleep(0)  # the probe sees the last stretch
        probe.on = False
        return started

    def refit(self) -> dict[str, bradley_terry.Fit]:
        t0 = time.process_time()
        fits = bradley_terry.fit_tally(self.tally.rows(), self.names, CENTER)
        self.fit_s.append(time.process_time() - t0)
        self.fit_at.append(2 * self.played / len(self.names))
        self.ratings = {n: f.rating for n, f in fits.items()}
        self.known.update((n, f.rating, (f.high - f.low) / (2 * Z95), f.games) for n, f in fits.items())
        return fits

    def tau(self, ratings: dict[str, float]) -> float:
        return float(kendalltau([ratings[n] for n in self.names], self.strength).statistic)

    async def run(self, probe: Probe, checkpoints: Sequence[int], report: Callable[[str, int, dict[str, float]], None]
                  ) -> None:
        n = len(self.names)
        next_fit = 0.0
        marks = list(checkpoints)
        while marks:
            while self.ends and self.ends[0][0] <= self.now:
                _, _, a, b = heapq.heappop(self.ends)
                self.finish(a, b)
            if not self.pass_s and self.policy == "ladder":
                probe.clear()
                await self.pass_now(probe)
                self.first = (self.deciding[0], self.pass_s[0], *probe.longest())
                probe.clear()
                continue
            if self.policy != "random" and self.played >= next_fit:
                self.refit()
                next_fit = self.played + max(self.args.refit, n / 10_000) * n
            if 2 * self.played >= marks[0] * n:
                fits = bradley_terry.fit_tally(self.tally.rows(), self.names, CENTER)
                taus = {"fit": self.tau({k: f.rating for k, f in fits.items()})}
                if self.policy != "random":
                    taus["elo"] = self.tau(self.elo)
                report(self.policy, marks.pop(0), taus)
                continue
            await self.pass_now(probe)
            self.now += self.args.tick


async def herd(run: Run, probe: Probe) -> tuple[float, float, float, float]:
    """Every bot free at once, the ratings known: one pass (CPU s deciding, CPU s in all,
    longest lag s, wall-clock and CPU)."""
    for end, *_ in run.ends:
        run.now = max(run.now, end)
    for _, _, a, b in run.ends:
        run.finish(a, b)
    run.ends.clear()
    run.refit()
    for name in run.names:
        run.free_since[name] = run.now
    probe.clear()
    run.deciding[0] = 0.0
    await run.pass_now(probe)
    return run.deciding[0], run.pass_s[-1], *probe.longest()


async def size(n: int, args: argparse.Namespace) -> None:
    marks = [g for g in args.games if g <= args.max_games_at.get(n, max(args.games))]
    seeds = args.seeds if n < 10_000 else 1
    taus: dict[tuple[str, int], list[dict[str, float]]] = {}
    probe = Probe()
    probe_task = asyncio.get_running_loop().create_task(probe.run())
    for seed in range(args.seed, args.seed + seeds):
        rng = random.Random(seed * 1000 + n)
        strength = [rng.gauss(CENTER, args.spread) for _ in range(n)]
        speed = [math.exp(rng.gauss(0.0, 0.5)) for _ in range(n)]
        for policy in ("ladder", "random"):
            run = Run(policy, strength, speed, args, random.Random(rng.getrandbits(64)))
            probe.clear()
            t0 = time.perf_counter()
            await run.run(probe, marks, lambda p, g, t: taus.setdefault((p, g), []).append(t))
            if policy == "ladder" and seed == args.seed:  # the figures are the first seed's
                ladder, steady_lag, wall = run, probe.longest(), time.perf_counter() - t0
    games = sorted(ladder.games.values())
    herd_decide, herd_cpu, *herd_lag = await herd(ladder, probe)
    probe_task.cancel()
    passes = sorted(ladder.pass_s[1:-1])
    fit_s = sorted(ladder.fit_s)
    slowest = ladder.fit_at[ladder.fit_s.index(fit_s[-1])]
    print(f"\n### {n:,} bots ({wall:.0f} s of the ladder's run)\n")
    print("| figure | |\n| --- | --- |")
    print(f"| pass, steady (median / max) | {1e3 * statistics.median(passes):.2f} ms / {1e3 * passes[-1]:.1f} ms "
          f"({len(passes):,} passes) |")
    print(f"| loop lag while pairing, steady (max) | {lag(steady_lag)} |")
    cold_decide, cold_cpu, *cold_lag = ladder.first
    print(f"| first pass ({n:,} seekers at once, none rated) | {1e3 * cold_decide:.1f} ms deciding, "
          f"{1e3 * cold_cpu:.1f} ms with the pairs started; longest lag {lag(cold_lag)} |")
    print(f"| thundering herd ({n:,} seekers at once, rated: a restart) | {1e3 * herd_decide:.1f} ms deciding, "
          f"{1e3 * herd_cpu:.1f} ms with the pairs started; longest lag {lag(herd_lag)} |")
    print(f"| refresh (one fit: median / max) | {1e3 * statistics.median(fit_s):.0f} ms / {1e3 * fit_s[-1]:.0f} ms "
          f"({len(fit_s)} fits; the slowest at {slowest:.1f} games per bot) |")
    print(f"| games per bot (min / median / max) | {games[0]} / {statistics.median(games):g} / {games[-1]} |")
    print(f"| the garbage collector's longest pause (apart from the above) | {1e3 * COLLECTOR.longest:.1f} ms |")
    COLLECTOR.longest = 0.0
    what = f"mean of {seeds} seeds (lowest–highest)" if seeds > 1 else "one seed"
    print(f"\nKendall τ with the true strengths, {what}:\n")
    print("| games per bot | ladder (fit) | random pairing (fit) | ladder (Elo only) |\n| --- | --- | --- | --- |")
    for g in marks:
        cells = [[t[key] for t in taus[(policy, g)]] for policy, key in (("ladder", "fit"), ("random", "fit"),
                                                                           ("ladder", "elo"))]
        print(f"| {g} | " + " | ".join(cell(c) for c in cells) + " |")
    sys.stdout.flush()


def lag(longest: Sequence[float]) -> str:
    """A longest stretch as the loop thread's CPU, then wall-clock (which a busy machine stretches)."""
    wall, cpu = longest
    return f"{1e3 * cpu:.2f} ms CPU ({1e3 * wall:.2f} ms wall-clock)"


def cell(values: list[float]) -> str:
    mean = f"{statistics.mean(values):.3f}"
    return f"{mean} ({min(values):.3f}–{max(values):.3f})" if len(values) > 1 else mean


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bots", default="100,1000,10000", help="ladder sizes, comma-separated")
    p.add_argument("--games", default="20,50,100", help="games per bot at which τ is taken")
    p.add_argument("--max-games-at", default="", help="fewer checkpoints for a size: 10000:50")
    p.add_argument("--spread", type=float, default=200.0, help="standard deviation of the true strengths (Elo)")
    p.add_argument("--draw", type=float, default=0.2, help="Davidson's ν (0.2: 9%% draws between equals)")
    p.add_argument("--game-s", type=float, default=30.0)
    p.add_argument("--tick", type=float, default=1.0, help="seconds between pairing passes")
    p.add_argument("--refit", type=float, default=0.5,
                   help="games per bot between two fits (at least one per 10,000 bots: 1 at 10,000)")
    p.add_argument("--slice-ms", type=float, default=1e3 * PAIRING_SLICE_S, help="the pairing's slice (the server's)")
    p.add_argument("--seed", type=int, default=1, help="the first seed")
    p.add_argument("--seeds", type=int, default=4, help="seeds below 10,000 bots (one at 10,000: its τ varies little)")
    args = p.parse_args()
    args.games = [int(g) for g in args.games.split(",")]
    args.max_games_at = {int(k): int(v) for k, v in (kv.split(":") for kv in args.max_games_at.split(",") if kv)}
    threadpool_limits(1)  # as the server's fitting worker: the other core is the games'
    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}; "
          f"strengths N(1500, {args.spread:g}), ν = {args.draw:g}, seed {args.seed}")
    for n in (int(b) for b in args.bots.split(",")):
        asyncio.run(size(n, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
