"""The viewers of ``GET /live`` (a WebSocket that pushes the ladder as it moves, for the page
and for anyone; the handler is in ``ladder_api``).

Every frame a viewer gets is a ``batch`` (``protocol.live.LiveBatch``): what happened since
its previous frame. Events are encoded once as they are published and gathered for a tick;
``live_batches_per_second`` times a second (at most) the tick's batch is encoded once and
written to every viewer that keeps up, in slices that leave the loop to the games between
them (``server/connections/pacing.py``). A viewer that is behind is skipped, not queued for; when it
reads again it gets a fresh start — the running and recent games, the standings, the health
and the latest news of each tournament — in one batch, built once per tick for all such
viewers. A viewer that reads nothing for ``audience_stall_s`` is dropped.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from protocol.live import LiveBatch
from protocol.messages import GameSummary, LiveGameEnded, LiveGames, LiveGameStarted, LiveHealth, LiveStandings
from protocol.tournaments import LiveTournament

from ..config import Settings
from ..connections.connection import encode
from ..connections.outbox import CLOSE_GOING_AWAY, Outbox
from ..connections.pacing import in_slices, stalled
from ..games.room import GameRoom
from ..recording.recorder import GameRecorder

log = logging.getLogger(__name__)

RECENT = 20
"""Finished games a fresh start shows."""
TOURNAMENTS_KEPT = 32
"""Tournaments whose latest news a fresh start repeats (the most recently changed)."""

Key = str | tuple[str, str] | None
"""What a later event of the same kind replaces in a batch: ``"standings"``, ``"health"``,
``("tournament", id)``; ``None`` for a game's start or end (all of them are kept)."""


@dataclass(eq=False, slots=True)
class Viewer:
    """One ``/live`` connection: its outbox, and since when it has been behind."""

    outbox: Outbox
    behind_since: float | None = None
    fresh: bool = False
    """It was skipped: its next frame is a fresh start."""


class LiveHub:
    """The viewers of ``/live``, the events waiting for the next batch, and what a fresh start
    shows. ``state`` gives the standings and the running games (set by the app)."""

    def __init__(self, settings: Settings, recorder: GameRecorder) -> None:
        self.viewers: dict[Outbox, Viewer] = {}
        self.interval = 1.0 / settings.live_batches_per_second
        self.budget_s = settings.audience_budget_ms / 1000
        self.stall_s = settings.audience_stall_s
        self.recorder = recorder
        self.state: Callable[[], tuple[LiveStandings, list[GameSummary]]] | None = None
        self.recent: deque[GameSummary] = deque(maxlen=RECENT)
        self.recent_loaded = False
        self.tournaments: dict[str, msgspec.Raw] = {}
        self.seq = 0
        self._events: list[tuple[Key, msgspec.Raw]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._writing = False
        self._last_tick = 0.0
        recorder.listeners.append(lambda: self.publish(self.health()))

    def health(self) -> LiveHealth:
        """Whether games can be recorded now (the page shows a banner while they cannot)."""
        r = self.recorder
        return LiveHealth("ok" if r.failing is None else "degraded", r.failing, r.pending)

    # ------------------------------------------------------------------ events

    def publish(self, msg: Any) -> None:
        """An event for the next batch (encoded now, once); see :data:`Key`. What a fresh
        start repeats (recent games, tournaments) is kept even while nobody watches."""
        raw: msgspec.Raw | None = None
        key: Key = None
        if isinstance(msg, LiveStandings):
            key = "standings"
        elif isinstance(msg, LiveHealth):
            key = "health"
        elif isinstance(msg, LiveTournament):
            tid = msg.tournament.tournament_id
            key = ("tournament", tid)
            raw = msgspec.Raw(encode(msg))
            self.tournaments.pop(tid, None)
            self.tournaments[tid] = raw
            while len(self.tournaments) > TOURNAMENTS_KEPT:
                del self.tournaments[next(iter(self.tournaments))]
        elif isinstance(msg, LiveGameEnded) and msg.game.status == "finished":
            self.recent.appendleft(msg.game)
        if not self.viewers:
            return
        self._events.append((key, raw if raw is not None else msgspec.Raw(encode(msg))))
        if self._timer is None and not self._writing:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_at(max(loop.time(), self._last_tick + self.interval), self._tick)

    def game_started(self, room: GameRoom) -> None:
        if self.viewers:
            self.publish(LiveGameStarted(room.summary()))

    def game_ended(self, room: GameRoom) -> None:
        self.publish(LiveGameEnded(room.summary()))  # kept for fresh starts

    def rated_game_stored(self, room: GameRoom) -> None:
        pass

    # ------------------------------------------------------------------ viewers

    def load_recent(self, stored: list[GameSummary]) -> None:
        """The finished games storage holds, newest first, for fresh starts (read once: the
        hub keeps the list as games end)."""
        if self.recent_loaded:
            return
        self.recent_loaded = True
        known = {g.game_id for g in self.recent}
        merged = list(self.recent) + [g for g in stored if g.game_id not in known]
        merged.sort(key=lambda g: g.ended or g.started, reverse=True)
        self.recent = deque(merged[:RECENT], maxlen=RECENT)

    def fresh_start(self) -> bytes:
        """A batch that replaces what a viewer knew: games, standings, health, tournaments."""
        assert self.state is not None
        table, running = self.state()
        messages: list[Any] = [LiveGames(running, list(self.recent)), table, self.health(),
                               *self.tournaments.values()]
        return encode(LiveBatch(self.seq, messages))

    def join(self, outbox: Outbox) -> None:
        """A new viewer: its fresh start now, then every batch (nothing awaits in between)."""
        outbox.send(self.fresh_start())
        self.viewers[outbox] = Viewer(outbox)

    def leave(self, outbox: Outbox) -> None:
        self.viewers.pop(outbox, None)

    def _tick(self) -> None:
        self._timer = None
        loop = asyncio.get_running_loop()
        self._last_tick = loop.time()
        events, self._events = self._events, []
        if not self.viewers:
            return
        batch: bytes | None = None
        if events:
            self.seq += 1
            last = {key: i for i, (key, _) in enumerate(events) if key is not None}
            kept = [raw for i, (key, raw) in enumerate(events) if key is None or last[key] == i]
            batch = encode(LiveBatch(self.seq, kept))  # type: ignore[arg-type]  # Raw events, written as they are
        fresh: list[bytes] = []
        behind = 0
        now = time.monotonic()

        def step(viewer: Viewer) -> None:
            outbox = viewer.outbox
            if outbox.closing:
                return
            nonlocal behind
            if not outbox.ready():
                if batch is None and not viewer.fresh:
                    return  # nothing new, nothing missed
                viewer.fresh = True
                if viewer.behind_since is None:
                    viewer.behind_since = now
                if stalled(outbox, viewer.behind_since, now, self.stall_s):
                    self.viewers.pop(outbox, None)
                else:
                    behind += 1
                return
            viewer.behind_since = None
            if viewer.fresh:
                if not fresh:
                    fresh.append(self.fresh_start())
                viewer.fresh = False
                outbox.write_now(fresh)
            elif batch is not None:
                outbox.write_now([batch])

        def done() -> None:
            self._writing = False
            if (self._events or behind) and self._timer is None:  # a viewer behind is looked at again
                self._timer = loop.call_at(max(loop.time(), self._last_tick + self.interval), self._tick)

        self._writing = True
        in_slices(list(self.viewers.values()), step, self.budget_s, done)

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        viewers = list(self.viewers)
        self.viewers.clear()
        for viewer in viewers:
            viewer.close(CLOSE_GOING_AWAY, "server shutting down")
        for viewer in viewers:
            await viewer.shutdown()
