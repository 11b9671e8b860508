"""The audience — viewers of ``/live`` and spectators of games — served at a human pace and
never ahead of the games.

Games write to bots as soon as a loop iteration ends (``server/connections/outbox.py``). The audience
waits for a tick: :class:`Audience` writes each spectator's updates of the last tick in one
write, ``spectator_flushes_per_second`` times a second, and ``server/audience/live.py`` writes one batch
to every viewer ``live_batches_per_second`` times a second. Both go through
:func:`in_slices`, which hands the loop back to the games after ``audience_budget_ms`` of
writing, so a decision never waits behind a long list of viewers.

A peer that does not read is never queued for: its socket holds at most one tick's frames,
and it is skipped forward (a spectator keeps only the latest update of each game it watches,
and its ``game_over``; a viewer gets the whole state again when it reads again). One that has
not caught up (read all that was written to it) for ``audience_stall_s`` is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from ..config import Settings
from .outbox import Outbox

log = logging.getLogger(__name__)

T = TypeVar("T")

SLICE = 4
"""Items written between two looks at the clock."""


def in_slices(items: Sequence[T], step: Callable[[T], None], budget_s: float,
              done: Callable[[], None] | None = None) -> None:
    """Call ``step`` on each item; after ``budget_s`` of it, go on in the next loop iteration
    (after the loop has read the sockets and run the games), then call ``done``."""
    loop = asyncio.get_running_loop()

    def run(start: int) -> None:
        began = time.perf_counter()
        n = len(items)
        i = start
        while i < n:
            try:
                step(items[i])
            except Exception:
                log.exception("writing to the audience failed")
            i += 1
            if i % SLICE == 0 and i < n and time.perf_counter() - began > budget_s:
                loop.call_soon(run, i)
                return
        if done is not None:
            done()

    run(0)


def stalled(outbox: Outbox, behind_since: float | None, now: float, stall_s: float) -> bool:
    """Whether a peer behind since ``behind_since`` (its socket never emptied since) has been
    so too long; if so it is cut
    (a close frame would wait behind the frames it does not read: it sees 1006)."""
    if behind_since is None or now - behind_since <= stall_s:
        return False
    log.warning("%s has not caught up for %.0f s: dropping it", outbox.name, now - behind_since)
    outbox.cut()
    return True


class Feed:
    """The frames of the games one connection watches, waiting for the next tick: each
    ``(game_id, frame)`` in order, or only the latest of each game while the peer is behind."""

    __slots__ = ("outbox", "frames", "behind_since")

    def __init__(self, outbox: Outbox) -> None:
        self.outbox = outbox
        self.frames: list[tuple[str, bytes]] = []
        self.behind_since: float | None = None

    def flush(self, now: float, stall_s: float) -> bool:
        """Write what waits if the peer keeps up; True once nothing is left to write."""
        outbox = self.outbox
        if outbox.closing:
            self.frames.clear()
            return True
        if outbox.ready():
            outbox.write_now([frame for _, frame in self.frames])
            self.frames.clear()
            self.behind_since = None
            return True
        if self.behind_since is None:
            self.behind_since = now
        if stalled(outbox, self.behind_since, now, stall_s):
            self.frames.clear()
            return True
        self.frames = latest_of_each(self.frames)
        return False


GAME_OVER = b'{"type":"game_over"'
"""How a ``game_over`` frame begins (msgspec writes a tagged struct's tag first)."""


def latest_of_each(frames: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """What a peer that fell behind still gets of ``frames``: for each game, the latest
    ``update`` (it holds the game's whole public view) and then its ``game_over`` if it came,
    games in the order of their last frame. The final position is kept beside the
    ``game_over``: a held record's deal is empty, so the position could not be rebuilt."""
    latest: dict[str, list[bytes]] = {}
    for game_id, frame in frames:
        kept = latest.pop(game_id, [])
        latest[game_id] = [*kept[:1], frame] if frame.startswith(GAME_OVER) else [frame]
    return [(game_id, frame) for game_id, kept in latest.items() for frame in kept]


class Audience:
    """Writes the spectators' feeds, ``spectator_flushes_per_second`` times a second."""

    def __init__(self, settings: Settings) -> None:
        self.interval = 1.0 / settings.spectator_flushes_per_second
        self.budget_s = settings.audience_budget_ms / 1000
        self.stall_s = settings.audience_stall_s
        self._waiting: dict[Feed, None] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._writing = False
        self._closed = False

    def send(self, feed: Feed, game_id: str, frame: bytes) -> None:
        """``frame`` (already encoded, the same bytes for every spectator) for the next tick."""
        if self._closed:
            return
        feed.frames.append((game_id, frame))
        self._waiting[feed] = None
        if self._timer is None and not self._writing:
            self._timer = asyncio.get_running_loop().call_later(self.interval, self._tick)

    def _tick(self) -> None:
        self._timer = None
        feeds = list(self._waiting)
        self._waiting.clear()
        now = time.monotonic()
        behind: list[Feed] = []

        def step(feed: Feed) -> None:
            if not feed.flush(now, self.stall_s):
                behind.append(feed)

        def done() -> None:
            self._writing = False
            for feed in behind:
                self._waiting.setdefault(feed, None)
            if self._waiting:
                self._timer = asyncio.get_running_loop().call_later(self.interval, self._tick)

        self._writing = True
        in_slices(feeds, step, self.budget_s, done)

    def close(self) -> None:
        """Write what waits now, once (the server is stopping: the games' ``game_over`` among
        it, before the connections close), and write no more."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._closed = True
        now = time.monotonic()
        for feed in self._waiting:
            feed.flush(now, self.stall_s)
        self._waiting.clear()
