"""The standings' Bradley–Terry fit, run in a worker process.

The fit reads the totals of ``server/ladder/tally.py`` (its cost follows the pairs of bots, not
the games): tens of milliseconds for a hundred bots, under a second of CPU for 10,000 bots and
500,000 pairs (``server/ratings/bradley_terry.py``, ``bench/standings_fit.py``). In a thread it
would hold the GIL through numpy's calls and hold up the games' event loop; in a process the
loop only hands over the totals and reads the ratings back. One worker serves every ladder of
the process, started on first use (``spawn``: the server's threads are not forked), its linear
algebra on one thread (the server's other cores are the games').

What crosses to the worker is packed first, in a thread and a slice of the rows at a time
(:func:`_pack`): the bots' names once and the totals as arrays, which pickle as bytes, instead
of half a million tuples pickled in one call that would hold the GIL for a fifth of a second.
The ratings come back as arrays and become :class:`Fit` objects the same way (:func:`_unpack`).
The last refresh's ratings go along as the fit's start: the totals change little from one
refresh to the next, and Newton's method from near the answer takes fewer steps.

The worker ends with the server, however the server ends (``kill -9`` included,
:func:`_die_with`): otherwise it would wait for work for ever, holding the server's log open,
and so would the resource tracker ``multiprocessing`` starts beside it, which ends once the
worker has (it reads a pipe the server and the worker hold until both are gone).
"""

from __future__ import annotations

import asyncio
import ctypes
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from itertools import chain, repeat
from operator import itemgetter
from typing import Any, TypeVar

import numpy as np

from ..ratings import bradley_terry
from ..ratings.bradley_terry import Fit

log = logging.getLogger(__name__)

T = TypeVar("T")

_pool: ProcessPoolExecutor | None = None

SLICE = 8192
"""Rows packed (or fits unpacked) between two chances for the event loop's thread to run."""


def _executor() -> ProcessPoolExecutor:
    """The worker pool, started on the event loop's thread (the worker is spawned by the
    thread that first submits to it, and :func:`_die_with` ties it to that thread's life)."""
    global _pool
    if _pool is None:
        _pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                    initializer=_start_worker, initargs=(os.getpid(),))
    return _pool


def stop_worker() -> None:
    """End the worker, if one was started: a server's last step once it has stopped serving
    (left to the interpreter's exit, the join could be cut short by a second Ctrl-C, with a
    traceback)."""
    global _pool
    pool, _pool = _pool, None
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)


def _start_worker(server: int) -> None:
    """In the worker: a terminal's Ctrl-C reaches the whole process group, but the server ends
    its worker itself; without this the worker dies of it with a ``KeyboardInterrupt`` traceback.
    BLAS on one thread: the fit's dense products are small, and a second thread only spins
    (it doubled the CPU of the small factorizations, measured). And scipy's solvers imported
    now, not in the first fit: the fit's CPU paces the refreshes (``standings.py``), and the
    import's 0.2 s would hold the first tables of a new leader back by a hundred times that."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with(server)
    import scipy.linalg.lapack
    import scipy.sparse.linalg  # noqa: F401
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)


PR_SET_PDEATHSIG = 1
"""``prctl(2)``: the signal the kernel sends this process when the thread that started it ends."""
WATCH_S = 1.0
"""How often the worker looks whether its server is still its parent, where the kernel cannot
tell it (not Linux)."""


def _die_with(server: int) -> None:
    """End this worker as soon as ``server``, its parent, ends. On Linux the kernel sends it
    ``SIGKILL`` then (``PR_SET_PDEATHSIG``); elsewhere a thread looks every :data:`WATCH_S`
    whether it has another parent now (an orphan is adopted by init or a subreaper). A server
    gone before the signal was asked for is caught by the look that follows."""
    if not _kernel_kills_orphan():
        threading.Thread(target=_watch, args=(server,), name="watch-server", daemon=True).start()
    if os.getppid() != server:
        os._exit(1)


def _kernel_kills_orphan() -> bool:
    if sys.platform != "linux":
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) == 0)


def _watch(server: int) -> None:
    while os.getppid() == server:
        time.sleep(WATCH_S)
    os._exit(1)


@dataclass(frozen=True)
class _Packed:
    """The totals as :func:`~server.ratings.bradley_terry.fit_arrays` takes them."""

    names: list[str]
    first: np.ndarray[Any, np.dtype[np.int32]]
    second: np.ndarray[Any, np.dtype[np.int32]]
    counts: np.ndarray[Any, np.dtype[np.int32]]
    """``(wins, draws, losses)`` of ``first`` against ``second``, one row per pair (32 bits
    each: half what 64 would cost to pickle)."""
    start: np.ndarray[Any, np.dtype[np.float64]] | None = None
    """Each bot's rating to start from (the last fit's; ``center`` for a bot it did not have),
    or ``None``: from ``center``."""


def _pack(rows: Sequence[tuple[str, str, int, int, int]], players: Sequence[str],
          previous: Mapping[str, float] | None = None, center: float = 1500.0) -> _Packed:
    """``rows`` numbered as ``fit_tally`` numbers them (``players`` first, then each pair's two
    in turn), a slice at a time: each slice is a few milliseconds in C, between which the
    event loop's thread takes the GIL back; and ``previous`` ratings as the fit's start."""
    index: dict[str, int] = {}
    for bot in players:
        index.setdefault(bot, len(index))
    n = len(rows)
    first, second = np.empty(n, np.int32), np.empty(n, np.int32)
    counts = np.empty((n, 3), np.int32)
    for start in range(0, n, SLICE):
        part = rows[start:start + SLICE]
        a, b = list(map(itemgetter(0), part)), list(map(itemgetter(1), part))
        if not index.keys() >= set(a).union(b):
            for bot in chain.from_iterable(zip(a, b, strict=True)):
                index.setdefault(bot, len(index))
        first[start:start + len(part)] = np.fromiter(map(index.__getitem__, a), np.int32, len(part))
        second[start:start + len(part)] = np.fromiter(map(index.__getitem__, b), np.int32, len(part))
        counts[start:start + len(part)] = np.fromiter(chain.from_iterable(map(itemgetter(2, 3, 4), part)), np.int32,
                                                      3 * len(part)).reshape(-1, 3)
    names = list(index)
    initial = None
    if previous:
        initial = np.fromiter(map(previous.get, names, repeat(center)), np.float64, len(names))
    return _Packed(names, first, second, counts, initial)


def _fit_packed(packed: _Packed, center: float) -> tuple[np.ndarray[Any, Any], ...]:
    """In the worker: the fit, as arrays (rating, low, high, games) in ``packed.names``' order."""
    return bradley_terry.fit_arrays(len(packed.names), packed.first, packed.second, packed.counts, center,
                                    start=packed.start)


def _unpack(names: list[str], arrays: tuple[np.ndarray[Any, Any], ...]) -> dict[str, Fit]:
    """The fits back as :class:`Fit` objects, a slice at a time (see :func:`_pack`)."""
    columns = [a.tolist() for a in arrays]
    out: dict[str, Fit] = {}
    for start in range(0, len(names), SLICE):
        stop = start + SLICE
        out.update((name, Fit(rating=r, low=lo, high=hi, games=int(g))) for name, r, lo, hi, g in zip(
            names[start:stop], *(c[start:stop] for c in columns), strict=True))
    return out


async def fit_standings(rows: list[tuple[str, str, int, int, int]], players: Sequence[str],
                        center: float, previous: Mapping[str, float] | None = None) -> dict[str, Fit]:
    """:func:`~server.ratings.bradley_terry.fit_tally` in the worker, started from the
    ``previous`` ratings (the same answer, sooner); a worker that died is replaced once, then
    the fit runs in a thread."""
    return (await fit_standings_costed(rows, players, center, previous))[0]


async def fit_standings_costed(rows: list[tuple[str, str, int, int, int]], players: Sequence[str],
                               center: float, previous: Mapping[str, float] | None = None,
                               ) -> tuple[dict[str, Fit], float]:
    """:func:`fit_standings`, and the CPU seconds it took: the worker's, and the server's
    threads' that packed and unpacked (what paces the standings' refreshes)."""
    global _pool
    loop = asyncio.get_running_loop()
    packed, cost = await asyncio.to_thread(_timed, _pack, rows, list(players), previous, center)
    for _ in range(2):
        try:
            arrays, fit_cost = await loop.run_in_executor(_executor(), _timed, _fit_packed, packed, center)
            fits, unpack_cost = await asyncio.to_thread(_timed, _unpack, packed.names, arrays)
            return fits, cost + fit_cost + unpack_cost
        except BrokenProcessPool:
            log.warning("the standings' fitting process died: starting another")
            _pool = None
    fits, fit_cost = await asyncio.to_thread(_timed, bradley_terry.fit_tally, rows, list(players), center)
    return fits, cost + fit_cost


def _timed(fn: Callable[..., T], *args: Any) -> tuple[T, float]:
    """``fn(*args)`` and the CPU seconds of the thread that ran it (in the worker: of the
    worker's process, whose one thread it is besides the pool's own)."""
    began = time.thread_time()
    out = fn(*args)
    return out, time.thread_time() - began
