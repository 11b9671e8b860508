"""The standings' Bradley–Terry fit, run in a worker process.

The fit costs tens of milliseconds for fifty bots (it grows with the cube of the number of
bots, not with the games: it reads the totals of ``server/ladder/tally.py``). In a thread it
would hold the GIL and hold up the games' event loop by a switch interval at a time; in a
process the loop only sends the totals and reads the ratings back. One worker serves every
ladder of the process, started on first use (``spawn``: the server's threads are not forked).
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import signal
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from ..ratings import bradley_terry
from ..ratings.bradley_terry import Fit

log = logging.getLogger(__name__)

_pool: ProcessPoolExecutor | None = None


def _executor() -> ProcessPoolExecutor:
    global _pool
    if _pool is None:
        _pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                                    initializer=_ignore_sigint)
    return _pool


def _ignore_sigint() -> None:
    """In the worker: a terminal's Ctrl-C reaches the whole process group, but the server ends
    its worker itself; without this the worker dies of it with a ``KeyboardInterrupt`` traceback."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


async def fit_standings(rows: list[tuple[str, str, int, int, int]], players: Sequence[str],
                        center: float) -> dict[str, Fit]:
    """:func:`~server.ratings.bradley_terry.fit_tally` in the worker; a worker that died is
    replaced once, then the fit runs in a thread."""
    global _pool
    loop = asyncio.get_running_loop()
    for _ in range(2):
        try:
            return await loop.run_in_executor(_executor(), bradley_terry.fit_tally, rows, list(players), center)
        except BrokenProcessPool:
            log.warning("the standings' fitting process died: starting another")
            _pool = None
    return await asyncio.to_thread(bradley_terry.fit_tally, rows, list(players), center)
