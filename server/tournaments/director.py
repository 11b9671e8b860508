"""Runs the tournaments: starts each scheduled game when its bots can play, forfeits the games
of a bot that stays away, appends Swiss rounds, and ends a tournament when its schedule is done.

Everything runs on the event loop. The stored tournament row (state, schedule) and the stored
games that name it are the whole truth: an organizer's control changes the row, and the
director, woken at once or within ``TICK_S``, follows it. So a server killed mid-tournament
resumes it on restart from storage — finished games kept, a game cut off (aborted) replayed
in its slot on the same deal — and in a cluster the ladder's leader runs the tournaments
wherever the organizer's request arrived, each game hosted by the node of one of its seats
(``GameManager.place_game``), whose end the leader hears as it hears any game's.

- **Due.** A slot is due when no game of it is running or over. Due slots start in schedule
  order while the tournament has fewer than ``max_concurrent`` games running and each bot
  fewer than ``max_games_per_bot`` (and a free slot of its connection's ``max_games``).
- **One game of a deal at a time.** A due slot waits while the other slot of its deal
  (``holds.deal_slots``: the same deal, seats swapped) has a game running: each bot would
  hold, in one game, the cards its opponent holds in the other, and see there the draws still
  to come in the other.
- **Tournament games come first.** A due game that could start now but for a bot's free slots
  (both bots connected, the tournament's limits permitting) holds a slot of each of its two
  bots (:attr:`Director.held`): the ladder starts no game in it, so the slot freed when a bot's
  other game ends is the tournament's. The holds are recomputed at each look and as each
  tournament game ends (before the ladder hears of a freed slot), and given up when the game
  starts or the tournament pauses, is cancelled or ends. Between a Swiss round's last game and
  the storing of the next round's pairing, every bot of the tournament holds a slot, and the
  new round's games start in the step that pairs it. A bot due such a game whose slots are
  all taken, some by games outside the tournament, is shown waited for as busy, with them.
- **Away.** A bot not connected when one of its games is due is waited for ``grace_s`` from
  that moment; then it forfeits that game and every further one that comes due while it stays
  away (a forfeit is a stored game of no moves, ``end_reason`` ``forfeit``, won by the other
  bot; a draw if both are away). Connecting again ends the wait.
- **Pause** starts no game (running games finish) and stops the waiting; **cancel** aborts the
  running games and ends the tournament where it stands.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from protocol.messages import GameSummary, LiveGameEnded
from protocol.tournaments import BusyGame, LiveTournament, TournamentDefinition, Waiting

from ..common.clock import utc_now
from ..common.refusal import Refusal
from ..games.deals import Deal
from ..games.forfeits import forfeit_ended, forfeit_row
from ..games.holds import deal_slots
from ..games.manager import GameManager
from ..games.room import GameRoom
from ..storage import GameRow, Storage, TournamentRow
from . import schedule as plan
from .view import Tallies, tournament_view

log = logging.getLogger(__name__)

TICK_S = 0.5
"""The director looks at its tournaments at least this often (grace periods, states changed
on another node, games hosted by a node that lost the lead)."""
PUBLISH_DELAY_S = 0.2
"""Changes to one tournament closer together than this are pushed to ``/live`` once."""
ACTIVE = ("running", "paused")


@dataclass
class Run:
    """One tournament the director is running (or holding paused)."""

    row: TournamentRow
    definition: TournamentDefinition
    games: dict[int, GameRow] = field(default_factory=dict)
    """Each slot's finished game (summary rows, without records)."""
    running: dict[int, str] = field(default_factory=dict)
    """Slot -> id of its game this director started (running here or on another node)."""
    elsewhere: dict[int, str] = field(default_factory=dict)
    """Slot -> id of its game started by a node that lost the lead since (followed in storage)."""
    forfeiting: set[int] = field(default_factory=set)
    """Slots whose forfeit is on its way to storage."""
    away: dict[str, tuple[float, str]] = field(default_factory=dict)
    """Bot -> (loop time, ISO time) its game first came due while it was away."""
    busy_since: dict[str, str] = field(default_factory=dict)
    """Bot -> ISO time its game first came due while every slot of it was taken."""
    busy_with: dict[str, list[BusyGame]] = field(default_factory=dict)
    """Each busy bot's running games, as of the last look."""
    shown: tuple[tuple[str, str, str, tuple[str, ...]], ...] = ()
    """The waiting state last seen (bot, reason, since, game ids): a change is published."""
    dirty: bool = False

    @property
    def id(self) -> str:
        return self.row.tournament_id

    def deal(self, slot: int) -> Deal:
        """The deal of a slot (``schedule.deal_of``)."""
        return plan.deal_of(self.definition.seed or 0, self.row.schedule[slot])

    def due(self) -> list[int]:
        taken = self.games.keys() | self.running.keys() | self.elsewhere.keys() | self.forfeiting
        return [slot for slot in range(len(self.row.schedule)) if slot not in taken]

    def busy(self, bot: str) -> int:
        return sum(1 for slot in self.running if bot in self.row.schedule[slot][1:3])

    def twin_running(self, slot: int) -> bool:
        """Whether the other slot of ``slot``'s deal has a game running (here or on another
        node): then ``slot`` waits for its end, so no bot plays both seats of one deal at once."""
        return any(s != slot and (s in self.running or s in self.elsewhere) for s in deal_slots(slot))

    def rounds(self) -> int:
        """Rounds scheduled so far."""
        return max((e[0] for e in self.row.schedule), default=0)

    def round_due(self) -> bool:
        """Whether a Swiss round is to be paired now: the rounds so far all played (and
        stored), more to come."""
        return (self.definition.format == "swiss" and self.rounds() < (self.definition.rounds or 0)
                and not self.due() and not self.running and not self.elsewhere and not self.forfeiting)

    def bots(self) -> set[str]:
        """The bots the schedule names (as registered)."""
        return {p for entry in self.row.schedule for p in entry[1:3]}

    def playing(self) -> Counter[str]:
        """Each bot's games of this tournament running (here or on another node)."""
        count: Counter[str] = Counter()
        for slot in (*self.running, *self.elsewhere):
            count.update(self.row.schedule[slot][1:3])
        return count


class Director:
    def __init__(self, storage: Storage, manager: GameManager, publish: Callable[[Any], None]) -> None:
        self.storage = storage
        self.manager = manager
        self.publish = publish
        self.announce_end: Callable[[LiveGameEnded], None] = publish
        """Where a forfeit's end goes once stored: ``/live`` (in a cluster, every node's)."""
        self.may_act: Callable[[], bool] = lambda: True
        """In a cluster, whether this node still holds the lead."""
        self.leading = False
        self.runs: dict[str, Run] = {}
        self.tallies = Tallies()
        """Each tournament's results as last read, brought up to date at each read (the
        director's views and the API's alike)."""
        self.held: dict[str, int] = {}
        """Slots kept per bot for due tournament games (replaced at each look): the ladder
        subtracts them from the bot's free slots (:meth:`held_for`)."""
        self.released: Callable[[], None] = lambda: None
        """Called when a bot's holds shrink (the ladder's wake: it may pair the bot again)."""
        self.games_elsewhere: Callable[[], list[GameSummary]] = list
        """In a cluster, the games other nodes host (a busy bot's games there)."""
        self._busy: set[str] = set()
        """Bots shown busy in some tournament (the end of any game of theirs wakes the director)."""
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._leads = 0
        """How many times this node took the lead: a load that a newer lead overtook (the lease
        lost and won again meanwhile) starts no loop."""
        self._publisher: asyncio.Task[None] | None = None
        self._stored_changed = True
        """Whether to read the stored states before the next step (an organizer's request
        here, or the tick: another node may have taken one)."""

    # ------------------------------------------------------------------ lifecycle

    async def start(self, lead: bool = True) -> None:
        self.manager.listeners.append(self)
        if lead:
            await self.lead()

    async def lead(self) -> None:
        """Take up every running or paused tournament from storage and run them."""
        self.follow()
        self.leading = True
        self._leads += 1
        lead = self._leads
        runs = {}
        for row in reversed(await self.storage.list_tournaments(ACTIVE)):
            runs[row.tournament_id] = await self._load(row)
        if not self.leading or self._leads != lead:  # the lead was lost meanwhile (and maybe won again)
            return
        self.runs = runs
        self._hold()  # at once, not at the loop's first look: the ladder may pair meanwhile
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="tournaments")
        if runs:
            log.info("running %d tournament(s) from storage", len(runs))

    async def _load(self, row: TournamentRow) -> Run:
        definition = msgspec.convert(row.definition, TournamentDefinition)
        run = Run(row, definition)
        for game in await self.storage.tournament_games(row.tournament_id):
            if game.slot is None:
                continue
            if game.status == "finished":
                run.games[game.slot] = game
            elif game.status == "running" and game.game_id in self.manager.running:
                run.running[game.slot] = game.game_id
            elif game.status == "running":
                run.elsewhere[game.slot] = game.game_id
        for slot in run.games:
            run.elsewhere.pop(slot, None)
        return run

    def follow(self) -> None:
        """Stop starting games (another node leads); games running here play on."""
        self.leading = False
        if self._task is not None:
            self._task.cancel()
            self._task = None
        self.runs.clear()
        self._hold()

    async def stop(self) -> None:
        self.follow()
        if self._publisher is not None:
            self._publisher.cancel()

    def wake(self, stored: bool = False) -> None:
        """Look at the tournaments now; ``stored``: an organizer changed one in storage."""
        self._stored_changed |= stored
        self._wake.set()

    # ------------------------------------------------------------------ games (GameEvents)

    def game_started(self, room: GameRoom) -> None:
        pass

    def game_ended(self, room: GameRoom) -> None:
        """A tournament game's end frees a slot the ladder must not take: the holds are
        recomputed here, before the ladder's pairing runs. The end of a busy or held bot's
        other game wakes the director to start the game waiting for it."""
        run = self.runs.get(room.tournament_id or "")
        if run is not None and room.slot is not None:
            if run.running.get(room.slot) == room.id:  # not a game given up whose slot was played again
                del run.running[room.slot]
            if run.elsewhere.get(room.slot) == room.id:
                del run.elsewhere[room.slot]
            if room.status == "finished":
                run.games[room.slot] = room.to_row(record=False)
            self._changed(run)
            self._hold()
            self.wake()
        elif any(p in self.held or p in self._busy for p in room.players):
            self.wake()

    def rated_game_stored(self, room: GameRoom) -> None:
        pass

    # ------------------------------------------------------------------ the loop

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        read = loop.time()
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), TICK_S)
            except TimeoutError:
                pass
            self._wake.clear()
            if loop.time() - read >= TICK_S:
                # An organizer's control sent to another node is known only from storage: read
                # it every tick, also while games ending here wake the loop more often than that.
                self._stored_changed = True
            try:
                if self._stored_changed:  # not for each game's end: those are known here
                    self._stored_changed = False
                    read = loop.time()
                    await self._refresh()
                for run in list(self.runs.values()):
                    await self._step(run)
                self._hold()
            except asyncio.CancelledError:
                raise
            except Exception as e:
                recorder = self.manager.recorder
                if recorder.failing is not None:
                    recorder.faults.note("running the tournaments", e)
                else:
                    log.exception("running the tournaments failed")

    async def _refresh(self) -> None:
        """Follow the states stored by organizer requests (here or on another node)."""
        stored = {row.tournament_id: row for row in await self.storage.list_tournaments(ACTIVE)}
        for tid, run in list(self.runs.items()):
            row = stored.get(tid)
            if row is None:  # finished or cancelled meanwhile
                fresh = await self.storage.get_tournament(tid)
                if fresh is not None and fresh.state == "cancelled":
                    self._cancelled(run, fresh)
                self.runs.pop(tid, None)
            elif row.state != run.row.state:
                run.row.state = row.state
                run.row.started = row.started
                run.away.clear()
                self._changed(run)
        for tid, row in stored.items():
            if tid not in self.runs and self.leading:
                self.runs[tid] = await self._load(row)
                self._changed(self.runs[tid])
        for run in self.runs.values():
            for slot, game_id in list(run.elsewhere.items()):
                game = await self.storage.get_game(game_id)
                if run.elsewhere.get(slot) != game_id:
                    continue  # its end was heard meanwhile (the slot may run its replay now)
                if game is None or game.status != "running":
                    del run.elsewhere[slot]
                    if game is not None and game.status == "finished":
                        run.games[slot] = game
                    self._changed(run)

    def _cancelled(self, run: Run, row: TournamentRow) -> None:
        run.row = row
        for game_id in [*run.running.values(), *run.elsewhere.values()]:
            self.manager.abort(game_id, f"tournament {run.id} was cancelled")
        # Their ends reach no run (it is dropped now), so the last view pushed, which every
        # new viewer's fresh start repeats, must already list none of them as running.
        run.running.clear()
        run.elsewhere.clear()
        log.info("tournament %s cancelled", run.id)
        self._publish(run)

    async def _step(self, run: Run) -> None:
        if run.row.state != "running" or not self.leading or not self.may_act():
            return
        d = run.definition
        if run.round_due() and not await self._next_round(run):
            return
        due = run.due()
        if not due and not run.running and not run.elsewhere and not run.forfeiting:
            await self._finish(run)
            return
        now = asyncio.get_running_loop().time()
        for bot in [b for b in run.away if self.manager.can_play(b)]:
            del run.away[bot]
        for slot in due:
            if len(run.running) >= d.max_concurrent:
                break
            if run.twin_running(slot):
                continue
            _, a, b, _ = run.row.schedule[slot]
            away = [p for p in (a, b) if not self.manager.can_play(p)]
            if away:
                for p in away:
                    if p not in run.away:
                        run.away[p] = (now, utc_now())
                        self._changed(run)
                if all(now - run.away[p][0] >= d.grace_s for p in away):
                    self._forfeit(run, slot, away)
                continue
            if any(run.busy(p) >= d.max_games_per_bot or self.manager.open_slots(p) < 1 for p in (a, b)):
                continue
            try:
                game_id = self.manager.place_game((a, b), run.deal(slot), kind="tournament",
                                                  decision_ms=d.decision_ms, tournament=(run.id, slot))
            except Refusal as r:
                log.info("tournament %s: game not started (%s)", run.id, r.message)
                return
            run.running[slot] = game_id
            self._changed(run)

    async def _next_round(self, run: Run) -> bool:
        """Pair and store the next Swiss round; whether it was (the row may have changed state
        meanwhile). Its games start in the same step: the round's bots were held for it."""
        scores = self.tallies.of(run.row, run.games.values()).scores()
        entries = plan.next_swiss_round(run.definition, run.row.schedule, scores)
        row = msgspec.structs.replace(run.row, schedule=run.row.schedule + entries)
        if not await self.storage.update_tournament(row, "running"):
            return False
        run.row = row
        log.info("tournament %s: round %d paired", run.id, run.rounds())
        self._changed(run)
        return True

    async def _finish(self, run: Run) -> None:
        row = msgspec.structs.replace(run.row, state="finished", ended=utc_now())
        if await self.storage.update_tournament(row, "running"):
            run.row = row
            log.info("tournament %s finished", run.id)
            self._publish(run)
        self.runs.pop(run.id, None)

    def _forfeit(self, run: Run, slot: int, away: list[str]) -> None:
        """Store the slot's game as forfeited by the bots in ``away`` (a draw if both are)."""
        self.manager.recorder.check()
        _, a, b, _ = run.row.schedule[slot]
        row = forfeit_row((a, b), run.deal(slot), away, kind="tournament", rated=False, tournament=(run.id, slot))
        log.info("tournament %s: %s forfeit(s) slot %d", run.id, " and ".join(away), slot)
        run.forfeiting.add(slot)

        def durable() -> None:
            run.forfeiting.discard(slot)
            run.games[slot] = msgspec.structs.replace(row, record=None)
            self.announce_end(forfeit_ended(row))
            self._changed(run)
            self.wake()

        self.manager.recorder.finish(row, durable=durable)

    # ------------------------------------------------------------------ holds

    def held_for(self, bot: str) -> int:
        """Slots of ``bot`` kept for its due tournament games (the ladder's to leave alone)."""
        return self.held.get(bot, 0)

    def _hold(self) -> None:
        """Recompute :attr:`held` and each run's busy bots from the runs as they stand; call
        :attr:`released` if a bot's holds shrank. Synchronous, so no pairing runs between a
        freed slot and its hold."""
        held: Counter[str] = Counter()
        busy: set[str] = set()
        if self.leading:
            playing: Counter[str] = Counter()
            for run in self.runs.values():
                playing.update(run.playing())
            elsewhere: list[GameSummary] | None = None
            for run in self.runs.values():
                found = self._hold_run(run, held, playing)
                if found and elsewhere is None:
                    elsewhere = self.games_elsewhere()
                self._mark_busy(run, found, elsewhere or [])
                busy |= found
        shrank = any(held[bot] < n for bot, n in self.held.items())
        self.held = dict(held)
        self._busy = busy
        if shrank:
            self.released()

    def _hold_run(self, run: Run, held: Counter[str], playing: Counter[str]) -> set[str]:
        """Add to ``held`` the slots ``run``'s due games need (in schedule order, as many as
        its limits would start); return its busy bots (connected and due, every slot taken,
        some by games of other kinds or tournaments)."""
        busy: set[str] = set()
        if run.row.state != "running":
            return busy
        if run.round_due():
            # Between a Swiss round's last game and the next round's pairing (a storage write)
            # nothing is due, yet every bot of the round to come is: keep a slot of each.
            for p in run.bots():
                if self.manager.can_play(p) and self._capacity(p) - playing[p] - held[p] > 0:
                    held[p] += 1
            return busy
        d = run.definition
        concurrent = len(run.running) + len(run.elsewhere)
        own = run.playing()
        per_bot = own.copy()
        for slot in run.due():
            if concurrent >= d.max_concurrent:
                break
            if run.twin_running(slot):
                continue  # cannot start before its twin ends, whose end recomputes the holds
            _, a, b, _ = run.row.schedule[slot]
            if per_bot[a] >= d.max_games_per_bot or per_bot[b] >= d.max_games_per_bot:
                continue
            if not (self.manager.can_play(a) and self.manager.can_play(b)):
                continue  # away: waited for (and forfeited), not held
            busy.update(p for p in (a, b)
                        if self.manager.open_slots(p) < 1 and self.manager.running_count(p) > own[p])
            spare = {p: self._capacity(p) - playing[p] - held[p] for p in (a, b)}
            if any(spare[p] <= 0 < held[p] for p in (a, b)):
                continue  # behind an earlier due game of that bot: it holds its slots
            concurrent += 1
            per_bot.update((a, b))
            # A bot whose every slot is in tournament games needs no hold: the end of one of
            # them recomputes the holds before the ladder hears of it.
            held.update(p for p in (a, b) if spare[p] > 0)
        return busy

    def _capacity(self, bot: str) -> int:
        """Games the bot may play at once (its connection's ``max_games``; its running games
        count, on any node, also those on their way to storage)."""
        return self.manager.open_slots(bot) + self.manager.running_count(bot)

    def _mark_busy(self, run: Run, busy: set[str], elsewhere: list[GameSummary]) -> None:
        """Note when each busy bot came due busy and the games that take its slots; publish a
        change of who is waited for and why."""
        for bot in [b for b in run.busy_since if b not in busy]:
            del run.busy_since[bot]
        run.busy_with = {}
        for bot in busy:
            run.busy_since.setdefault(bot, utc_now())
            games = [(room.started, BusyGame(game_id=room.id, kind=room.kind, opponent=room.players[1 - room.players.index(bot)]))
                     for room in self.manager.games_of(bot)]
            games += [(g.started, BusyGame(game_id=g.game_id, kind=g.kind, opponent=g.players[1 - g.players.index(bot)]))
                      for g in elsewhere if bot in g.players and g.game_id not in self.manager.running]
            run.busy_with[bot] = [game for _, game in sorted(games, key=lambda e: (e[0], e[1].game_id))]
        shown = tuple(sorted(
            [(bot, "away", iso, ()) for bot, (_, iso) in run.away.items()]
            + [(bot, "busy", since, tuple(g.game_id for g in run.busy_with[bot])) for bot, since in run.busy_since.items()]
        ))
        if shown != run.shown:
            run.shown = shown
            self._changed(run)

    # ------------------------------------------------------------------ what viewers see

    def waiting(self, tournament_id: str) -> list[Waiting]:
        """The bots a running tournament waits for, here (empty where another node leads, and
        once it is paused or over): away ones with their forfeit countdown, busy ones with the
        games that take their slots."""
        run = self.runs.get(tournament_id)
        if run is None or run.row.state != "running":
            return []
        now = asyncio.get_running_loop().time()
        due = {p for slot in run.due() for p in run.row.schedule[slot][1:3]}
        away = [Waiting(bot=bot, reason="away", since=iso, busy_with=[],
                        forfeits_in_s=round(max(0.0, run.definition.grace_s - (now - t)), 1))
                for bot, (t, iso) in run.away.items() if bot in due]  # one with no game left is waited for no more
        busy = [Waiting(bot=bot, reason="busy", since=since, forfeits_in_s=None, busy_with=list(run.busy_with.get(bot, ())))
                for bot, since in run.busy_since.items()]
        return sorted(away + busy, key=lambda w: w.bot)

    def _changed(self, run: Run) -> None:
        run.dirty = True
        if self._publisher is None or self._publisher.done():
            self._publisher = asyncio.get_running_loop().create_task(self._publish_soon())

    async def _publish_soon(self) -> None:
        await asyncio.sleep(PUBLISH_DELAY_S)
        for run in list(self.runs.values()):
            if run.dirty:
                self._publish(run)

    def running(self, run: Run) -> list[GameSummary]:
        """``run``'s games running on this node, as they stand."""
        found = (self.manager.running_summary(g) for g in run.running.values())
        return [g for g in found if g is not None]

    def _publish(self, run: Run) -> None:
        run.dirty = False
        self.publish(LiveTournament(tournament_view(run.row, self.tallies.of(run.row, run.games.values()),
                                                    self.running(run), self.waiting(run.id))))

