"""The viewers of ``GET /live`` (a WebSocket that pushes the ladder as it moves, for the page
and for anyone; the handler is in ``server/http/live.py``).

Every frame a viewer gets is a ``batch`` (``protocol.live.LiveBatch``): what happened since
its previous frame. A viewer follows one of two streams, chosen when it connects:

- **the default stream**, whose size does not grow with the arena: the top of the standings
  and what changed in it, a sample of the games (the start and the end of at most
  ``RUNNING_SHOWN`` running games at a time, and ``SAMPLED_PER_S`` new games a second), and
  counts (games running, games per minute, bots connected). One batch a second at most.
- **every game** (``/live?games=all``): the same, plus every game's start and end, in batches
  ``live_batches_per_second`` times a second at most.

Events are encoded once as they are published (a game's only when someone follows every
game) and gathered for a tick; each tick's batch of each stream is encoded once and written
to every viewer of it that keeps up, in slices that leave the loop to the games between them
(``server/connections/pacing.py``). The top of the standings and the counts are looked at once
a second, for both streams alike. A viewer that is behind is skipped, not queued for; when it
reads again it gets a fresh start of its stream — the running games (its sample, or all),
the recent games, the top, the counts, the health and the latest news of each tournament — in
one batch, built once for all such viewers. A viewer that reads nothing for
``audience_stall_s`` is dropped.
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

from protocol.live import RUNNING_SHOWN, SAMPLED_PER_S, TOP, LiveBatch, LiveCounts, LiveTopChanged
from protocol.messages import GameSummary, LiveGameEnded, LiveGames, LiveGameStarted, LiveHealth, LiveStandings
from protocol.tournaments import LiveTournament

from ..config import Settings
from ..connections.connection import encode
from ..connections.outbox import CLOSE_GOING_AWAY, SHUTDOWN_WAIT_S, Outbox
from ..connections.pacing import in_slices, stalled
from ..games.room import GameRoom
from ..recording.recorder import GameRecorder

log = logging.getLogger(__name__)

RECENT = 20
"""Finished games a fresh start shows."""
TOURNAMENTS_KEPT = 32
"""Tournaments whose latest news a fresh start repeats (the most recently changed)."""
SAMPLE_PACE_S = 1.0
"""The default stream's batches, the top's changes and the counts come at most this often."""
CANDIDATES_KEPT = 64
"""Games' starts and ends waiting for the default stream's next batch, newest kept: what
the sample is drawn from (the ends of the games it follows are kept apart, all of them)."""

Key = str | tuple[str, str] | None
"""What a later event of the same kind replaces in a batch: ``"health"``,
``("tournament", id)``; ``None`` for a game's start or end (all of them are kept)."""

GameEvent = LiveGameStarted | LiveGameEnded


@dataclass(eq=False, slots=True)
class Viewer:
    """One ``/live`` connection: its outbox, whether it follows every game, and since when
    it has been behind."""

    outbox: Outbox
    every: bool = False
    """It asked for every game (``/live?games=all``)."""
    behind_since: float | None = None
    fresh: bool = False
    """It was skipped: its next frame is a fresh start."""


class LiveHub:
    """The viewers of ``/live``, the events waiting for the next batch, and what a fresh start
    shows. Set by the app: ``state`` gives the standings and every running game, ``counting``
    the number of running games and of connected bots."""

    def __init__(self, settings: Settings, recorder: GameRecorder) -> None:
        self.viewers: dict[Outbox, Viewer] = {}
        self.followers: dict[Outbox, Viewer] = {}
        """The viewers that follow every game."""
        self.interval = 1.0 / settings.live_batches_per_second
        self.sample_interval = max(self.interval, SAMPLE_PACE_S)
        self.budget_s = settings.audience_budget_ms / 1000
        self.stall_s = settings.audience_stall_s
        self.recorder = recorder
        self.state: Callable[[], tuple[LiveStandings, list[GameSummary]]] | None = None
        self.counting: Callable[[], tuple[int, int]] | None = None
        self.recent: deque[GameSummary] = deque(maxlen=RECENT)
        self.recent_loaded = False
        self.tournaments: dict[str, msgspec.Raw] = {}
        self.seq = 0
        self.table: LiveStandings | None = None
        """The standings as last published (the whole table)."""
        self.top: LiveStandings | None = None
        """The top of the table as the viewers have it: what ``top_changed`` is relative to."""
        self.counts: LiveCounts | None = None
        """The counts as last sent."""
        self.shown: dict[str, GameSummary] = {}
        """The running games the default stream follows: their ends are always sent."""
        self._tokens = float(RUNNING_SHOWN)
        """Games the default stream may still tell of anew (a start, an end it did not follow,
        a running game a fresh start adds to those it follows): ``SAMPLED_PER_S`` more each
        second, at most ``RUNNING_SHOWN`` saved up. So the ends of the games it follows come no
        faster than it took them on."""
        self._tokens_at = time.monotonic()
        self.top_of: LiveStandings | None = None
        """The table ``top`` was last taken from."""
        self._order = 0
        self._every: list[tuple[Key, msgspec.Raw]] = []
        self._sampled: list[tuple[int, Key, msgspec.Raw]] = []
        """The default stream's events other than games, numbered in the order they came."""
        self._candidates: deque[tuple[int, GameEvent]] = deque(maxlen=CANDIDATES_KEPT)
        self._ends_shown: list[tuple[int, LiveGameEnded]] = []
        self._finished: deque[list[int]] = deque()
        """``[second, games finished in it]`` over the last minute."""
        self._fresh: dict[bool, bytes] = {}
        self._timer: asyncio.Handle | None = None
        self._timer_at = 0.0
        self._writing = False
        self._last_tick = 0.0
        self._last_sample = 0.0
        self._behind_every = False
        recorder.listeners.append(lambda: self.publish(self.health()))

    def health(self) -> LiveHealth:
        """Whether games can be recorded now (the page shows a banner while they cannot)."""
        r = self.recorder
        return LiveHealth("ok" if r.failing is None else "degraded", r.failing, r.pending)

    # ------------------------------------------------------------------ events

    def publish(self, msg: Any) -> None:
        """An event for the next batches; see :data:`Key`. What a fresh start repeats (recent
        games, tournaments, the standings, the games the sample follows) is kept even while
        nobody watches."""
        self._fresh.clear()
        if isinstance(msg, LiveStandings):
            self.table = msg  # its top is looked at once a second
            return
        if isinstance(msg, (LiveGameStarted, LiveGameEnded)):
            self._game(msg)
            return
        key: Key = None
        raw: msgspec.Raw | None = None
        if isinstance(msg, LiveHealth):
            key = "health"
        elif isinstance(msg, LiveTournament):
            tid = msg.tournament.tournament_id
            key = ("tournament", tid)
            raw = msgspec.Raw(encode(msg))
            self.tournaments.pop(tid, None)
            self.tournaments[tid] = raw
            while len(self.tournaments) > TOURNAMENTS_KEPT:
                del self.tournaments[next(iter(self.tournaments))]
        if not self.viewers:
            return
        raw = raw if raw is not None else msgspec.Raw(encode(msg))
        if self.followers:
            self._every.append((key, raw))
        if len(self.followers) < len(self.viewers):
            self._order += 1
            self._sampled.append((self._order, key, raw))
        self._schedule(every=bool(self.followers))

    def _game(self, msg: GameEvent) -> None:
        """A game started or ended: for everyone who follows every game, and as a candidate
        for the sample (the end of a game the sample follows is always sent)."""
        ended = isinstance(msg, LiveGameEnded)
        if ended and msg.game.status == "finished":
            self.recent.appendleft(msg.game)
            self._count_finished()
        shown = ended and self.shown.pop(msg.game.game_id, None) is not None
        if not self.viewers:
            return
        if self.followers:
            self._every.append((None, msgspec.Raw(encode(msg))))
        if len(self.followers) < len(self.viewers):
            self._order += 1
            if shown:
                assert isinstance(msg, LiveGameEnded)
                self._ends_shown.append((self._order, msg))
            else:
                self._candidates.append((self._order, msg))
        self._schedule(every=bool(self.followers))

    def game_started(self, room: GameRoom) -> None:
        if self.viewers:
            self.publish(LiveGameStarted(room.summary()))

    def game_ended(self, room: GameRoom) -> None:
        self.publish(LiveGameEnded(room.summary()))  # kept for fresh starts

    def rated_game_stored(self, room: GameRoom) -> None:
        pass

    def _count_finished(self) -> None:
        second = int(time.monotonic())
        if self._finished and self._finished[-1][0] == second:
            self._finished[-1][1] += 1
        else:
            self._finished.append([second, 1])
            while self._finished[0][0] <= second - 60:
                self._finished.popleft()

    # ------------------------------------------------------------------ what the default stream shows

    def _allowance(self, most: float) -> int:
        """How many games the default stream may tell of anew now, at most ``most``."""
        now = time.monotonic()
        self._tokens = min(float(RUNNING_SHOWN), self._tokens + (now - self._tokens_at) * SAMPLED_PER_S)
        self._tokens_at = now
        return int(min(most, self._tokens))

    def _pick(self) -> list[tuple[int, GameEvent]]:
        """This batch's games for the default stream: the ends of the games it follows, and up
        to ``SAMPLED_PER_S`` others (as the allowance has them), the top's bots' games first,
        then the newest. A start is taken while the sample follows fewer than
        ``RUNNING_SHOWN`` games (and not if the game ended meanwhile); an end only of a
        finished game."""
        picked: list[tuple[int, GameEvent]] = list(self._ends_shown)
        candidates = list(self._candidates)
        self._ends_shown.clear()
        self._candidates.clear()
        over = {m.game.game_id for _, m in candidates if isinstance(m, LiveGameEnded)}
        top = {s.bot for s in self.top.standings} if self.top is not None else set()

        def wanted(m: GameEvent) -> bool:
            if isinstance(m, LiveGameEnded):
                return m.game.status == "finished"
            return m.game.game_id not in over and m.game.game_id not in self.shown

        choices = [(i, m) for i, m in candidates if wanted(m)]
        ranked = sorted(choices, key=lambda c: (not (top & set(c[1].game.players)), -c[0]))
        allowed = self._allowance(SAMPLED_PER_S) if ranked else 0
        taken = 0
        for i, m in ranked:
            if taken == allowed:
                break
            if isinstance(m, LiveGameStarted):
                if len(self.shown) >= RUNNING_SHOWN:
                    continue
                self.shown[m.game.game_id] = m.game
            picked.append((i, m))
            taken += 1
        self._tokens -= taken
        return picked

    def _running_sample(self) -> list[GameSummary]:
        """The running games the default stream follows, newest first; while it follows fewer
        than it may and more games run, topped up with the newest of them as the allowance
        permits (and games that no longer run are forgotten)."""
        count = self.counting()[0] if self.counting is not None else 0
        if self.state is not None and (len(self.shown) < min(RUNNING_SHOWN, count) or count < len(self.shown)):
            running = self.state()[1]
            ids = {g.game_id for g in running}
            for game_id in [g for g in self.shown if g not in ids]:
                del self.shown[game_id]
            more = self._allowance(RUNNING_SHOWN - len(self.shown))
            for g in running:
                if more <= 0:
                    break
                if g.game_id not in self.shown:
                    self.shown[g.game_id] = g
                    self._tokens -= 1
                    more -= 1
        return sorted(self.shown.values(), key=lambda g: g.started, reverse=True)

    def _table_now(self) -> LiveStandings:
        if self.table is None:
            assert self.state is not None
            self.table = self.state()[0]
        return self.table

    def _top_now(self) -> LiveStandings:
        """The top as the viewers have it (at first, the table's top now)."""
        if self.top is None:
            table = self._table_now()
            self.top = LiveStandings(table.paused, table.standings[:TOP], table.total, 0)
            self.top_of = table
        return self.top

    def _count_now(self) -> LiveCounts:
        running, bots = self.counting() if self.counting is not None else (0, 0)
        horizon = int(time.monotonic()) - 60
        while self._finished and self._finished[0][0] <= horizon:
            self._finished.popleft()
        return LiveCounts(running, sum(n for _, n in self._finished), bots)

    def _shared(self) -> list[msgspec.Raw]:
        """Once a second, for both streams: what changed in the top since the viewers' top,
        and the counts if they changed."""
        out: list[msgspec.Raw] = []
        old = self._top_now()
        table = self._table_now()
        if table is not self.top_of:
            top = table.standings[:TOP]
            changed = [row for i, row in enumerate(top) if i >= len(old.standings) or old.standings[i] != row]
            if changed or len(top) != len(old.standings) or table.paused != old.paused or table.total != old.total:
                out.append(msgspec.Raw(encode(LiveTopChanged(table.paused, table.total, len(top), changed))))
            self.top = LiveStandings(table.paused, top, table.total, 0)
            self.top_of = table
        counts = self._count_now()
        if counts != self.counts:
            out.append(msgspec.Raw(encode(counts)))
            self.counts = counts
        return out

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
        self._fresh.clear()

    def fresh_start(self, every: bool = False) -> bytes:
        """A batch that replaces what a viewer of that stream knew: games, the top of the
        standings, counts, health, tournaments (built once until something changes)."""
        cached = self._fresh.get(every)
        if cached is not None:
            return cached
        assert self.state is not None
        running = self.state()[1] if every else self._running_sample()
        if self.counts is None:
            self.counts = self._count_now()
        messages: list[Any] = [LiveGames(running, list(self.recent)), self._top_now(), self.counts, self.health(),
                               *self.tournaments.values()]
        frame = encode(LiveBatch(self.seq, messages))
        self._fresh[every] = frame
        return frame

    def join(self, outbox: Outbox, every: bool = False) -> None:
        """A new viewer: its fresh start now, then every batch of its stream (nothing awaits in
        between)."""
        if not self.viewers:  # nobody holds the top or the counts: start from what they are now
            self.top = self.counts = None
            self._fresh.clear()
        outbox.send(self.fresh_start(every))
        viewer = Viewer(outbox, every)
        self.viewers[outbox] = viewer
        if every:
            self.followers[outbox] = viewer
        self._schedule(every=False)

    def leave(self, outbox: Outbox) -> None:
        self.viewers.pop(outbox, None)
        self.followers.pop(outbox, None)

    def _schedule(self, every: bool) -> None:
        """The next tick: the default stream's within ``sample_interval`` of its last (while
        anyone watches), sooner if viewers of every game have news or are behind."""
        if self._writing or not self.viewers:
            return
        loop = asyncio.get_running_loop()
        at = self._last_sample + self.sample_interval
        if (every and self._every) or self._behind_every:
            at = min(at, self._last_tick + self.interval)
        at = max(at, loop.time())
        if self._timer is not None:
            if self._timer_at <= at:
                return
            self._timer.cancel()
        # (uvloop answers a time already past with a plain Handle, which has no when())
        self._timer_at = at
        self._timer = loop.call_at(at, self._tick)

    def _tick(self) -> None:
        self._timer = None
        loop = asyncio.get_running_loop()
        now_loop = loop.time()
        self._last_tick = now_loop
        sampling = now_loop >= self._last_sample + self.sample_interval - 0.001
        events, self._every = self._every, []
        if not self.viewers:
            self._sampled.clear()
            self._candidates.clear()
            self._ends_shown.clear()
            return
        shared: list[msgspec.Raw] = []
        sample: list[msgspec.Raw] = []
        if sampling:
            self._last_sample = now_loop
            shared = self._shared()
            if len(self.followers) < len(self.viewers):
                games: list[tuple[int, Key, msgspec.Raw]] = [(i, None, msgspec.Raw(encode(m))) for i, m in self._pick()]
                merged = sorted(self._sampled + games, key=lambda e: e[0])
                sample = _coalesced([(key, raw) for _, key, raw in merged]) + shared
            self._sampled.clear()
        every = _coalesced(events) + shared if self.followers else []
        every_batch = sample_batch = None
        if every or sample:
            self.seq += 1
            self._fresh.clear()
            if every:
                every_batch = encode(LiveBatch(self.seq, every))  # type: ignore[arg-type]  # Raw events, written as they are
            if sample:
                sample_batch = encode(LiveBatch(self.seq, sample))  # type: ignore[arg-type]
        fresh: dict[bool, list[bytes]] = {}
        behind = 0
        self._behind_every = False
        now = time.monotonic()

        def step(viewer: Viewer) -> None:
            outbox = viewer.outbox
            if outbox.closing:
                return
            nonlocal behind
            batch = every_batch if viewer.every else sample_batch
            if not outbox.ready():
                if batch is None and not viewer.fresh:
                    return  # nothing new, nothing missed
                viewer.fresh = True
                if viewer.behind_since is None:
                    viewer.behind_since = now
                if stalled(outbox, viewer.behind_since, now, self.stall_s):
                    self.leave(outbox)
                else:
                    behind += 1
                    self._behind_every = self._behind_every or viewer.every
                return
            viewer.behind_since = None
            if viewer.fresh:
                if viewer.every not in fresh:
                    fresh[viewer.every] = [self.fresh_start(viewer.every)]
                viewer.fresh = False
                outbox.write_now(fresh[viewer.every])
            elif batch is not None:
                outbox.write_now([batch])

        def done() -> None:
            self._writing = False
            self._schedule(every=True)

        self._writing = True
        in_slices(list(self.viewers.values() if sampling else self.followers.values()), step, self.budget_s, done)

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        viewers = list(self.viewers)
        self.viewers.clear()
        self.followers.clear()
        for viewer in viewers:
            viewer.close(CLOSE_GOING_AWAY, "server shutting down")
        if viewers:
            await asyncio.wait([asyncio.ensure_future(v.shutdown()) for v in viewers], timeout=SHUTDOWN_WAIT_S)


def _coalesced(events: list[tuple[Key, msgspec.Raw]]) -> list[msgspec.Raw]:
    """The events of one batch, in order, each keyed one only at its last place."""
    last = {key: i for i, (key, _) in enumerate(events) if key is not None}
    return [raw for i, (key, raw) in enumerate(events) if key is None or last[key] == i]
