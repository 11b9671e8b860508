"""The event loop's lag: how late a task that asks to wake at a fixed interval wakes.

Everything a node serves (clocks, moves, frames, ``/health`` itself) waits while one callback
holds the loop, so how late a timer fires is what every peer of the node waits on top of its
own work. :class:`LoopLag` asks to wake every ``interval_s`` and records how late each wake came,
keeping the last ``window_s`` of them; ``GET /health`` reports their median, 99th percentile
and maximum, and ``GET /metrics`` a histogram of every wake since start. A stretch of ``B`` seconds during which the loop runs nothing else shows as a wake
at least ``B − interval_s`` late (the wake was asked at most one interval before the stretch
began), so a stall longer than the interval cannot hide between two samples.
"""

from __future__ import annotations

import asyncio
import math
import time
from bisect import bisect_left
from collections import deque

import msgspec

INTERVAL_S = 0.05
"""How often the monitor asks to wake: a timer 20 times a second costs the loop next to nothing."""
WINDOW_S = 60.0
"""The wakes the figures cover: the last minute, so a monitor polling every few tens of seconds
sees every stall once at least."""
BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
"""Upper bounds of the lateness histogram since start (``GET /metrics``), in seconds: about a
millisecond with room to spare, tens of milliseconds on a busy loop, a second for a stall."""


class LagFigures(msgspec.Struct, frozen=True):
    """How late the loop woke the monitor over the last ``window_s`` (milliseconds)."""

    p50_ms: float
    p99_ms: float
    max_ms: float
    samples: int
    """Wakes in the window (fewer than ``window_s / interval_ms`` while the loop lags)."""
    window_s: float
    interval_ms: float


class LoopLag:
    """Samples the running loop's lag from :meth:`start` to :meth:`stop`."""

    def __init__(self, interval_s: float = INTERVAL_S, window_s: float = WINDOW_S) -> None:
        self.interval_s = interval_s
        self.window_s = window_s
        self._wakes: deque[tuple[float, float]] = deque()
        """``(when, how late)`` of each wake in the window, oldest first (perf_counter time, seconds)."""
        self._task: asyncio.Task[None] | None = None
        self.counts = [0] * (len(BUCKETS_S) + 1)
        """Wakes since start in each bucket of :data:`BUCKETS_S` (not cumulative; the last is
        above every bound)."""
        self.late_s = 0.0
        """Seconds late, every wake since start together."""

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    async def _run(self) -> None:
        clock = time.perf_counter  # not the loop's: uvloop's counts whole milliseconds
        while True:
            due = clock() + self.interval_s
            await asyncio.sleep(self.interval_s)
            now = clock()
            late = max(0.0, now - due)
            self._wakes.append((now, late))
            self.counts[bisect_left(BUCKETS_S, late)] += 1
            self.late_s += late
            while self._wakes[0][0] < now - self.window_s:
                self._wakes.popleft()

    def figures(self) -> LagFigures:
        """The window's median, 99th percentile (nearest rank) and maximum lag."""
        lags = sorted(late for _, late in self._wakes)
        n = len(lags)

        def rank(q: float) -> float:
            return round(lags[max(0, math.ceil(q * n) - 1)] * 1000, 2) if n else 0.0

        return LagFigures(p50_ms=rank(0.50), p99_ms=rank(0.99), max_ms=round(lags[-1] * 1000, 2) if n else 0.0,
                          samples=n, window_s=self.window_s, interval_ms=round(self.interval_s * 1000, 3))

    def cumulative(self) -> list[tuple[str, int]]:
        """``(le, wakes at most that late)`` for each bound and ``+Inf``, as Prometheus' exposition
        format has a histogram's buckets."""
        out, seen = [], 0
        for bound, n in zip((*(repr(b) for b in BUCKETS_S), "+Inf"), self.counts, strict=True):
            seen += n
            out.append((bound, seen))
        return out
