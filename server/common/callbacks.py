"""Calling code that other code registered (listeners, completion callbacks), or running it in
a task of its own, without letting its failure into the caller: it is logged, with its
traceback, and the caller goes on."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)


def call_safely(callback: Callable[..., None] | None, what: str, *args: Any) -> None:
    """``callback(*args)``, if there is one; a failure is logged as ``what`` failed."""
    if callback is None:
        return
    try:
        callback(*args)
    except Exception:
        log.exception("%s failed", what)


def spawn(tasks: set[asyncio.Task[Any]], coro: Coroutine[Any, Any, Any], what: str) -> None:
    """Run ``coro`` in a task kept in ``tasks`` until it ends (so it can be awaited or
    cancelled at shutdown); a failure is logged as ``what`` failed."""
    task = asyncio.get_running_loop().create_task(coro)
    tasks.add(task)

    def done(t: asyncio.Task[Any]) -> None:
        tasks.discard(t)
        if not t.cancelled() and t.exception() is not None:
            log.error("%s failed", what, exc_info=t.exception())

    task.add_done_callback(done)


CANCEL_AGAIN_S = 1.0


async def cancel_and_wait(tasks: list[asyncio.Task[Any]]) -> None:
    """Cancel ``tasks`` and wait until every one has ended. A cancellation that lands inside a
    library call which swallows it (redis-py's pipeline can, mid-command) would leave a task
    running for ever, and a shutdown waiting on it: such a task is cancelled again each second."""
    pending = set(tasks)
    while pending:
        for task in pending:
            task.cancel()
        _, pending = await asyncio.wait(pending, timeout=CANCEL_AGAIN_S)
