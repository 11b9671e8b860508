"""The ladder's standings: the table of listed bots that ``GET /api/ladder`` serves a page
at a time and ``/live`` shows the top of, computed and published.

Listed bots are ranked by a Bradley–Terry fit over every rated game since the last ratings
reset (``fitting.py``, over the totals of ``tally.py``), each with its 95% interval (so the
number, the order and the interval are one quantity), the live Elo beside it, and W/D/L.
Changes closer together than ``STANDINGS_DELAY_S`` are computed and pushed once, and a refresh
waits after the last one ended at least ``STANDINGS_PACE`` times the CPU that one took
(:func:`refresh_wait`): however many games end, computing the standings takes at most
1 / ``STANDINGS_PACE`` of a core. Only the leading node computes them; the others keep
the table the leader broadcasts.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from protocol.messages import LiveStandings, Standing

from ..config import Settings
from ..connections.presence import Presence
from ..ratings import elo
from ..ratings.bradley_terry import rank_key
from ..recording.recorder import GameRecorder
from ..storage import Storage
from ..storage.base import LadderStanding
from .fitting import fit_standings_costed
from .matchmaking import RecentGames
from .tally import Tally

log = logging.getLogger(__name__)

STANDINGS_DELAY_S = 0.2
"""Standings changes closer together than this are computed and pushed once."""

STANDINGS_PACE = 100.0
"""A refresh starts at least this many times the last refresh's CPU after that one ended: the
fit's CPU (the fitting worker's, and the threads' that pack the totals for it and unpack its
answer) and the table's making on the event loop. Refreshing then takes at most 1/100 (1 %) of
a core, however often games end. It is CPU, not wall time: what a refresh waits for (a core on
a busy machine, the rating lock, PostgreSQL, the hop to the worker) costs nothing, and a small
ladder, whose fit takes a millisecond, refreshes 0.2 s after a change as before. A fit of
1,000 bots (0.1–0.2 s of CPU) lets one start every 10–20 s; of 10,000 (0.4–0.5 s) every
40–50 s. Why 100: in a cluster the leader may take 1.25 / N of the servers' CPU (with three
nodes, a twelfth of the whole beyond its third), and the fit is most of what it does beyond
the others (docs/performance.md, *The standings paced by their cost*): in the thousand bots'
run the leader took 0.422 of the servers' CPU at fifty times the CPU, over the limit of
0.417, and 0.496 refreshing at four times the wall time."""


def refresh_wait(now: float, last_end: float | None, last_cost: float) -> float:
    """How long a refresh asked for at ``now`` waits: the coalescing delay, and as long as it
    takes for :data:`STANDINGS_PACE` times the last refresh's CPU (``last_cost``, seconds;
    it ended at ``last_end``) to have passed since that refresh ended."""
    if last_end is None:
        return STANDINGS_DELAY_S
    return max(STANDINGS_DELAY_S, last_end + STANDINGS_PACE * last_cost - now)


class Board(Protocol):
    """What the standings read of the ladder, afresh at each refresh (in a cluster, the node
    replaces ``publish`` and, on a follower, the places and who seeks)."""

    tally: Tally
    seeking: set[str]
    paused: bool
    recent: RecentGames
    publish: Callable[[Any], None]

    def place(self, bot: str) -> LadderStanding: ...


class Standings:
    """The standings table as last computed (or, following, as the leader sent it), and the
    coalesced refresh that recomputes and publishes it."""

    def __init__(self, settings: Settings, storage: Storage, presence: Presence, recorder: GameRecorder,
                 ladder: Board) -> None:
        self.settings = settings
        self.storage = storage
        self.presence = presence
        self.recorder = recorder
        self.ladder = ladder
        self._table = LiveStandings(paused=False, standings=[], total=0, offset=0)
        self._ranks: dict[str, int] | None = None
        self.ratings: dict[str, float] = {}
        """Each bot's stored Elo as last read (pairing prefers close ratings)."""
        self._refresh: asyncio.Task[None] | None = None
        self._dirty = False
        self.refreshes = 0
        """Tables computed here (``GET /metrics``), and the seconds they took in all."""
        self.refresh_s = 0.0
        self.last_end: float | None = None
        """When the last refresh ended (``time.perf_counter``), and the CPU seconds it took:
        the next one waits for :func:`refresh_wait`."""
        self.last_cost = 0.0
        self._ratings: dict[str, float] = {}
        """Every bot's fitted rating at the last refresh: the next fit starts from them."""

    @property
    def table(self) -> LiveStandings:
        """The whole table, best first."""
        return self._table

    @table.setter
    def table(self, table: LiveStandings) -> None:
        self._table = table
        self._ranks = None

    def position(self, bot: str) -> int | None:
        """The bot's row in the table (0 for the first), ``None`` if it is not listed; its name
        compares case-insensitively, as bot names do everywhere. The index is built once per
        table, so finding a bot in ten thousand costs a look-up."""
        if self._ranks is None:
            self._ranks = {s.bot.lower(): i for i, s in enumerate(self._table.standings)}
        return self._ranks.get(bot.lower())

    def rows(self, offset: int, limit: int) -> LiveStandings:
        """The rows ``offset`` to ``offset + limit`` of the table (fewer at its end)."""
        table = self._table
        return LiveStandings(table.paused, table.standings[offset:offset + limit], len(table.standings), offset)

    def changed(self) -> None:
        """Something the standings show changed: recompute and push them, coalesced."""
        self._dirty = True
        if self._refresh is None or self._refresh.done():
            self._refresh = asyncio.get_running_loop().create_task(self._refresh_soon())

    def stop(self) -> None:
        if self._refresh is not None:
            self._refresh.cancel()

    def paused_changed(self) -> None:
        """The ladder was paused or resumed: the same table, said again with its new state."""
        self.table = LiveStandings(self.ladder.paused, self.table.standings, self.table.total, 0)
        self.ladder.publish(self.table)

    async def _refresh_soon(self) -> None:
        """Refresh until no change came in meanwhile, each paced by the last one's cost
        (:func:`refresh_wait`): a change that arrives while the standings are being read is
        never lost, only shown by the next refresh."""
        while self._dirty:
            await asyncio.sleep(refresh_wait(time.perf_counter(), self.last_end, self.last_cost))
            self._dirty = False
            try:
                await self.refresh()
            except Exception as e:
                if self.recorder.failing is None:
                    log.exception("computing the standings failed")
                else:
                    self.recorder.faults.note("reading the standings", e)

    async def refresh(self) -> LiveStandings:
        """Compute the table now and publish it."""
        began = time.perf_counter()
        ladder = self.ladder
        # Under the rating lock, the stored ratings and game counts and the totals kept in
        # memory (added to as each rated game is stored, under the same lock) are one snapshot.
        async with self.recorder.rating_lock:
            rows = await self.storage.standings()
            tally = ladder.tally.copy()
        self.ratings = {r.bot: r.rating for r in rows}
        listed = [r for r in rows if ladder.place(r.bot) == "listed"]
        center = sum(r.rating for r in listed) / len(listed) if listed else self.settings.elo_initial
        fits, cost = await fit_standings_costed(tally.rows(), [r.bot for r in listed], center, self._ratings)
        self._ratings = {bot: f.rating for bot, f in fits.items()}
        on_loop = time.thread_time()  # from here to the end, this thread's alone: no await
        wdl, met = tally.per_bot()
        now = asyncio.get_running_loop().time()
        listed.sort(key=lambda r: rank_key(fits[r.bot].rating, r.bot))
        table = [
            Standing(
                rank=i + 1,
                bot=r.bot,
                rating=round(fits[r.bot].rating, 1),
                low=round(fits[r.bot].low, 1),
                high=round(fits[r.bot].high, 1),
                elo=round(r.rating, 1),
                games=r.rated_games,
                wins=wdl.get(r.bot, (0, 0, 0))[0],
                draws=wdl.get(r.bot, (0, 0, 0))[1],
                losses=wdl.get(r.bot, (0, 0, 0))[2],
                provisional=elo.is_provisional(r.rated_games, self.settings.elo),
                connected=self.presence.is_connected(r.bot),
                seeking=r.bot in ladder.seeking,
                opponents=len(met.get(r.bot, ())),
                recent_games=ladder.recent.count(r.bot, now),
            )
            for i, r in enumerate(listed)
        ]
        self.table = LiveStandings(paused=ladder.paused, standings=table, total=len(table), offset=0)
        ladder.publish(self.table)
        self.refreshes += 1
        self.last_end = time.perf_counter()
        self.last_cost = cost + time.thread_time() - on_loop
        self.refresh_s += self.last_end - began
        return self.table
