"""Recording games: every game row goes to storage through one ordered queue, and a finished
game is durable before anyone hears that it finished.

The guarantee (docs/operating.md, "Storage faults"; PROTOCOL.md §19): a game's ``game_over`` is sent
only once its final row is stored in the database, or, while the database fails, appended
to the spool (``server/recording/spool.py``) and fsynced. If both fail, ``game_over`` waits until one
of them takes the game. Spooled games are stored from the queue as soon as the database
takes writes again, and by a restart before it serves anything.

One queue, drained by one task, in the order games started and ended: a game's end never
overtakes its start, and rated games are stored, with the Elo update each computes from the
stored ratings, in the order they finished, so the ratings always equal a replay of the
stored rated games. A rated game stays rated however long storage fails.

In a cluster the same queue carries each move of the node's games to their move logs
(``server/cluster/takeover.py``): a move is accepted once stored, and a game's end only once the
database has it (a spool on this node's disk is no use to the node that takes its games
over). A write for a game another node took over meanwhile is refused by the database and
reported to its game (``lost``), never retried.

While storage fails the recorder is *failing*: :meth:`GameRecorder.check` refuses new games
with ``storage_unavailable``, ``/health`` answers 503, the live page shows a banner. Each
distinct failure is logged once with its traceback, then counted. The head of the queue is
retried with backoff; when the queue is empty, a ping tells whether storage is back (and,
every ``storage_probe_s``, whether it is still there when nothing is written).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..common.callbacks import call_safely
from ..common.clock import utc_now
from ..common.logs import about
from ..common.refusal import Refusal
from ..config import Settings
from ..ratings import elo
from ..ratings.elo import EloSettings
from ..storage import GameRow, RatingChange, Standing, Storage
from ..storage.base import DatabaseServed, GameWrite, MoveWrite, PairClose, Rate, SchemaTooNew, score_of_seat0
from .spool import Spool, SpoolError

log = logging.getLogger(__name__)

RETRY_MIN_S = 0.05
"""First pause before retrying a failed write; it doubles up to ``storage_retry_max_s``."""
BATCH_MAX = 64
"""Rows stored in one transaction at most: the rows queued while the last commit ran go
together (a group commit), so a busy server pays one commit for many games."""
STOP_WAIT_S = 5.0
"""How long a shutdown waits for the recorder to stop once cancelled: a database driver's call
cut short in the middle may never return (seen after PostgreSQL came back from an outage), and a
server must stop all the same."""


def describe(e: BaseException) -> str:
    """A failure in one line: its message and its type."""
    text = str(e).strip() or repr(e)
    return f"{text[:200]} ({type(e).__module__}.{type(e).__qualname__})"


class StorageUnavailable(Exception):
    """Storage did not open, or its spool was not stored, within ``storage_wait_s`` of the
    start: the server does not serve without it."""


class FaultLog:
    """Each distinct storage failure logged once, with its traceback, then only counted."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def note(self, doing: str, e: BaseException) -> str:
        cause = describe(e)
        key = f"{doing}: {cause}"
        if key not in self.counts:
            log.error("storage failed %s: %s (logged once; further failures are counted)", doing, cause, exc_info=e)
        self.counts[key] += 1
        return cause

    def summary(self) -> str:
        return "; ".join(f"{n} × {key}" for key, n in self.counts.most_common()) or "no failures"


@dataclass(eq=False)
class Write:
    """One game row, one move of a game's log, or a duplicate pair given up, on its way to
    storage."""

    row: GameRow | None
    """The row (``None`` for a move or a pair)."""
    final: bool
    """The game's last row (finished or aborted), stored with :meth:`Storage.finish_game`."""
    durable: Callable[[], None] | None = None
    """Called once the row is stored or spooled (a finished game's ``game_over``), or the move
    stored."""
    stored: Callable[[], None] | None = None
    """Called once the row is in the database."""
    lost: Callable[[], None] | None = None
    """Called instead of the others when storage refused the write because another node runs
    the game now (it took the game over): nothing of it was written."""
    move: MoveWrite | None = None
    pair: PairClose | None = None
    spooled: bool = False
    spoolable: bool = False
    """A finished game's last row, which may be spooled while the database fails."""

    @property
    def game_id(self) -> str:
        """The game written (for a pair given up, the pair)."""
        if self.pair is not None:
            return self.pair.pair_id
        item = self.row if self.row is not None else self.move
        assert item is not None
        return item.game_id

    def made_durable(self) -> None:
        """Call ``durable``, once: a finished game may be stored by the database while it is
        being spooled, and both then say so."""
        durable, self.durable = self.durable, None
        call_safely(durable, "a game recorder callback")


class GameRecorder:
    """The one writer of game rows; see the module's docstring."""

    def __init__(self, settings: Settings, storage: Storage, spool: Spool) -> None:
        self.settings = settings
        self.storage = storage
        self.spool = spool
        self.spools = settings.redis is None
        """Whether a finished game may be announced once spooled. Not in a cluster: another
        node that takes over a dead node's games reads the database, never its spool, so
        there a game is announced only once the database has it (like each move)."""
        self.rating_lock = asyncio.Lock()
        """Held from reading two bots' ratings to storing their update (and by a ratings
        reset), so no rated game starts from a rating that is being replaced."""
        self.failing: str | None = None
        """Why storage fails, while it does."""
        self.failing_since: str | None = None
        self.spool_failing: str | None = None
        self.faults = FaultLog()
        self.listeners: list[Callable[[], None]] = []
        """Told when the health changes (failing, recovered, games waiting)."""
        self._queue: deque[Write] = deque()
        self._drained = asyncio.Event()
        self._drained.set()
        self._wake = asyncio.Event()
        self._spool_lock = asyncio.Lock()
        self._backoff = RETRY_MIN_S
        self._task: asyncio.Task[None] | None = None
        self._spooling: set[asyncio.Task[None]] = set()
        self._spool_holds = False
        """Whether games may have been appended to the spool since it was last emptied: a game
        can finish, and be spooled, while the spool is being emptied after an outage, or while
        the database stores it."""
        self._told_pending = 0

    # ------------------------------------------------------------------ what the server asks

    def save(self, row: GameRow, durable: Callable[[], None] | None = None) -> None:
        """Queue a running game's row (its start); ``durable`` runs once it is stored."""
        self._push(Write(row, final=False, durable=durable))

    def append(self, move: MoveWrite, durable: Callable[[], None], lost: Callable[[], None]) -> None:
        """Queue a move for its game's log; ``durable`` runs once it is stored, ``lost`` if
        another node runs the game now (the move was not stored)."""
        self._push(Write(None, final=False, durable=durable, lost=lost, move=move))

    def close_pair(self, pair_id: str) -> None:
        """Queue the end of a duplicate pair whose return game will not be played (dropped,
        or never to be played here): its first game's record is held no more
        (``server/games/holds.py``)."""
        self._push(Write(None, final=False, pair=PairClose(pair_id)))

    def finish(self, row: GameRow, durable: Callable[[], None] | None = None,
               stored: Callable[[], None] | None = None, lost: Callable[[], None] | None = None) -> None:
        """Queue a game's last row; ``durable`` runs once it is stored or (one node only)
        spooled, ``stored`` once it is in the database, ``lost`` instead of them if another
        node runs the game now."""
        spoolable = row.status == "finished" and self.spools
        write = Write(row, final=True, durable=durable, stored=stored, lost=lost, spoolable=spoolable)
        self._push(write)
        if self.failing is not None and write.spoolable:
            task = asyncio.get_running_loop().create_task(self._spool_waiting())
            self._spooling.add(task)
            task.add_done_callback(self._spooling.discard)

    def check(self) -> None:
        """Raise ``storage_unavailable`` while storage fails: no game starts that could not
        be recorded."""
        if self.failing is not None:
            raise Refusal(
                "storage_unavailable",
                f"the server cannot record games right now ({self.failing}); no new game starts until storage is back",
                retry_after=self.retry_after,
            )

    @property
    def retry_after(self) -> float:
        return round(max(1.0, self._backoff), 1)

    @property
    def queued(self) -> int:
        """Writes waiting for storage: game rows and, in a cluster, moves."""
        return len(self._queue)

    @property
    def spooled(self) -> int:
        """Finished games waiting in the spool file for storage to come back."""
        return sum(1 for w in self._queue if w.spooled)

    @property
    def pending(self) -> int:
        """Finished games not yet in the database."""
        return sum(1 for w in self._queue if w.final and w.row is not None and w.row.status == "finished")

    def health(self) -> dict[str, Any]:
        """What ``/health`` says about storage."""
        return {
            "status": "ok" if self.failing is None else "degraded",
            "storage": self.failing,
            "since": self.failing_since,
            "pending": self.pending,
            "spooled": self.spooled,
            "spool": str(self.spool.path),
            "spool_failing": self.spool_failing,
        }

    async def flush(self) -> None:
        """Wait until every row queued so far is in the database."""
        while not self._drained.is_set():
            await self._drained.wait()

    async def settle(self) -> None:
        """Before a read that should see the latest games: wait for the queue to drain, but
        not while storage fails and not beyond ``storage_timeout_s``."""
        if self.failing is None and not self._drained.is_set():
            try:
                await asyncio.wait_for(self.flush(), self.settings.storage_timeout_s)
            except TimeoutError:
                pass

    # ------------------------------------------------------------------ lifecycle

    async def open(self) -> int:
        """Open storage and store what the spool holds, in order, before anything else;
        while storage fails, retry for up to ``storage_wait_s``. Returns how many spooled
        games were stored. A spool of another database raises :class:`SpoolError`."""
        self.spool.path.parent.mkdir(parents=True, exist_ok=True)
        rows = await asyncio.to_thread(self.spool.load)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.settings.storage_wait_s
        opened = False
        stored = 0
        while True:
            try:
                if not opened:
                    await asyncio.wait_for(self.storage.open(), self.settings.storage_timeout_s)
                    await self.storage.claim_database(self.settings.redis is not None, self.settings.storage_wait_s)
                    opened = True
                while stored < len(rows):
                    await asyncio.wait_for(self.store_final(rows[stored]), self.settings.storage_timeout_s)
                    stored += 1
                break
            except (SpoolError, SchemaTooNew, DatabaseServed, RuntimeError, ValueError):
                raise  # not a fault that waiting mends (a schema too new, a bad URL)
            except Exception as e:
                self._fail("at start" if not opened else "storing the spooled games", e)
                if loop.time() + self._backoff > deadline:
                    waited = self.settings.storage_wait_s
                    raise StorageUnavailable(f"storage did not {'open' if not opened else 'take the spooled games'}"
                                             f" in {waited:g} s (storage_wait_s): {describe(e)}") from e
                await asyncio.sleep(self._backoff)
                self._backoff = min(self._backoff * 2, self.settings.storage_retry_max_s)
        if rows:
            await asyncio.to_thread(self.spool.clear)
            log.warning("stored %d finished game(s) from the spool %s", stored, self.spool.path)
        if self.failing is not None:
            self._recovered()
        self._task = loop.create_task(self._run(), name="game-recorder")
        return stored

    async def close(self, timeout: float) -> None:
        """At shutdown: let the queue drain for up to ``timeout`` seconds, then spool what
        is left (it is stored at the next start)."""
        try:
            await asyncio.wait_for(self.flush(), timeout)
        except TimeoutError:
            await self._spool_waiting()
            left = self.pending
            if left:
                log.error("shutting down with %d finished game(s) not stored: %d in the spool %s",
                          left, sum(1 for w in self._queue if w.spooled), self.spool.path)
        if self._task is not None:
            self._task.cancel()
            done, _ = await asyncio.wait({self._task}, timeout=STOP_WAIT_S)
            if not done:  # what is left was spooled above; closing storage then drops the call
                log.error("the game recorder did not stop within %g s of being told to (a storage call that "
                          "does not return): the server stops without it", STOP_WAIT_S)
            self._task = None

    # ------------------------------------------------------------------ the drain

    def _push(self, write: Write) -> None:
        self._queue.append(write)
        self._drained.clear()
        self._wake.set()

    async def _run(self) -> None:
        while True:
            if not self._queue:
                await self._idle()
                continue
            batch = list(itertools.islice(self._queue, BATCH_MAX))
            try:
                lost = await asyncio.wait_for(self._store(batch), self.settings.storage_timeout_s)
            except Exception as e:
                self._fail(f"storing game {batch[0].game_id}", e)  # the head, retried until stored
                await self._spool_waiting()
                self._tell_pending()
                await self._pause()
                continue
            for _ in batch:
                self._queue.popleft()
            for write in batch:
                if lost and write.game_id in lost:
                    call_safely(write.lost, "a game recorder callback")
                else:
                    write.made_durable()
            if not self._queue:
                self._drained.set()
                if self._spool_holds:
                    await self._clear_spool()
                if self.failing is not None:
                    self._recovered()

    async def _idle(self) -> None:
        """Nothing to write: wait for a write, pinging storage now and then."""
        self._wake.clear()
        interval = self._backoff if self.failing is not None else self.settings.storage_probe_s
        try:
            await asyncio.wait_for(self._wake.wait(), interval)
            return
        except TimeoutError:
            pass
        try:
            await asyncio.wait_for(self.storage.ping(), self.settings.storage_timeout_s)
        except Exception as e:
            self._fail("answering a ping", e)
            await self._pause()
            return
        if self.failing is not None:
            self._recovered()

    async def _pause(self) -> None:
        await asyncio.sleep(self._backoff)
        self._backoff = min(self._backoff * 2, self.settings.storage_retry_max_s)

    async def _store(self, batch: list[Write]) -> frozenset[str]:
        """Store rows and moves in one transaction, in queue order; the games whose writes
        were refused because another node runs them now. Rated games get both Elo updates,
        each computed from the ratings stored just before it, under the rating lock, and their
        ``stored`` callbacks run before it is released: whoever reads the stored ratings and
        what those callbacks keep in memory under the lock sees both or neither."""
        writes = [self._for_storage(w) for w in batch]
        if not any(isinstance(w, GameWrite) and w.rate is not None for w in writes):
            return await self.storage.write_games(writes)
        async with self.rating_lock:
            lost = await self.storage.write_games(writes)
            for write in batch:
                if write.stored is not None and write.game_id not in lost:
                    call_safely(write.stored, "a game recorder callback")
        return lost

    async def store_final(self, row: GameRow) -> None:
        """Store a game's last row now (games go through the queue; this is its last step).
        Storing a game already stored changes nothing; one another node runs now is dropped."""
        if await self._store([Write(row, final=True)]):
            log.warning("game %s: another node runs it now; its spooled end was not stored", row.game_id,
                        extra=about(game=row.game_id))

    def _for_storage(self, w: Write) -> GameWrite | MoveWrite | PairClose:
        if w.move is not None:
            return w.move
        if w.pair is not None:
            return w.pair
        assert w.row is not None
        return GameWrite(w.row, w.final, self._rate_for(w.row) if w.final else None)

    def _rate_for(self, row: GameRow) -> Rate | None:
        return rating_update(row, self.settings.elo)

    async def _spool_waiting(self) -> None:
        """Spool every finished game the database has not taken, and announce it."""
        async with self._spool_lock:
            waiting = [w for w in self._queue if w.spoolable and not w.spooled]
            if not waiting:
                return
            self._spool_holds = True  # before the append: a drain meanwhile waits for it, then empties
            try:
                await asyncio.to_thread(self.spool.append, [w.row for w in waiting if w.row is not None])
            except Exception as e:
                self.spool_failing = self.faults.note(f"writing the spool {self.spool.path}", e)
                return
            self.spool_failing = None
            for w in waiting:
                w.spooled = True
                w.made_durable()

    async def _clear_spool(self) -> None:
        async with self._spool_lock:
            if any(w.spooled for w in self._queue):
                return
            try:
                await asyncio.to_thread(self.spool.clear)
            except OSError as e:
                # Harmless: its games are stored, and storing them again changes nothing.
                self.faults.note(f"emptying the spool {self.spool.path}", e)
                return
            self._spool_holds = False

    # ------------------------------------------------------------------ health

    def _fail(self, doing: str, e: BaseException) -> None:
        cause = self.faults.note(doing, e)
        first = self.failing is None
        self.failing = cause
        if first:
            self.failing_since = utc_now()
            log.error("storage is failing (%s): no new game starts until it is back", cause)
            self._notify()

    def _recovered(self) -> None:
        log.warning("storage is back (failing since %s): %s", self.failing_since, self.faults.summary())
        self.failing = None
        self.failing_since = None
        self.faults = FaultLog()
        self._backoff = RETRY_MIN_S
        self._notify()

    def _tell_pending(self) -> None:
        if self.pending != self._told_pending:
            self._notify()

    def _notify(self) -> None:
        self._told_pending = self.pending
        for listener in list(self.listeners):
            call_safely(listener, "a storage health listener")


def rating_update(row: GameRow, settings: EloSettings) -> Rate | None:
    """For a finished rated game: the Elo changes from the two bots' ratings as stored when
    the game is (computed inside the transaction that stores it, so ratings equal a replay)."""
    if not (row.rated and row.status == "finished"):
        return None
    score = score_of_seat0(row.result)

    def rate(a: Standing, b: Standing) -> list[RatingChange]:
        after = elo.update((a.rating, b.rating), (a.rated_games, b.rated_games), score, settings)
        return [
            RatingChange(bot=s.bot, rating_before=s.rating, rating_after=new, games_before=s.rated_games)
            for s, new in zip((a, b), after, strict=True)
        ]

    return rate
