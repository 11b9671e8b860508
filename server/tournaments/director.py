"""Runs the tournaments: starts each scheduled game when its bots can play, forfeits the games
of a bot that stays away, appends Swiss rounds, and ends a tournament when its schedule is done.

Everything runs on the event loop. The stored tournament row (state, schedule) and the stored
games that name it are the whole truth: an organizer's control changes the row, and the
director, woken at once or within ``TICK_S``, follows it. So a server killed mid-tournament
resumes it on restart from storage — finished games kept, a game cut off (aborted) replayed
in its slot on the same deal — and in a cluster the ladder's leader runs the tournaments
wherever the organizer's request arrived.

- **Due.** A slot is due when no game of it is running or over. Due slots start in schedule
  order while the tournament has fewer than ``max_concurrent`` games running and each bot
  fewer than ``max_games_per_bot`` (and a free slot of its connection's ``max_games``).
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
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

import mandala
from protocol.messages import GameResult
from protocol.tournaments import LiveTournament, TournamentDefinition, Waiting

from ..clock import utc_now
from ..deals import Deal, build_game
from ..games import GameManager, GameRoom
from ..refusal import Refusal
from ..storage import GameRow, Storage, TournamentRow
from ..summary import game_summary
from . import schedule as plan
from .results import scored
from .view import tournament_view

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
    deals: list[Deal]
    games: dict[int, GameRow] = field(default_factory=dict)
    """Each slot's finished game (summary rows, without records)."""
    running: dict[int, str] = field(default_factory=dict)
    """Slot -> id of its game running here."""
    elsewhere: dict[int, str] = field(default_factory=dict)
    """Slot -> id of its game left running by a node that lost the lead (followed in storage)."""
    forfeiting: set[int] = field(default_factory=set)
    """Slots whose forfeit is on its way to storage."""
    away: dict[str, tuple[float, str]] = field(default_factory=dict)
    """Bot -> (loop time, ISO time) its game first came due while it was away."""
    dirty: bool = False

    @property
    def id(self) -> str:
        return self.row.tournament_id

    def due(self) -> list[int]:
        taken = self.games.keys() | self.running.keys() | self.elsewhere.keys() | self.forfeiting
        return [slot for slot in range(len(self.row.schedule)) if slot not in taken]

    def busy(self, bot: str) -> int:
        return sum(1 for slot in self.running if bot in self.row.schedule[slot][1:3])


class Director:
    def __init__(self, storage: Storage, manager: GameManager, publish: Callable[[Any], None]) -> None:
        self.storage = storage
        self.manager = manager
        self.publish = publish
        self.may_act: Callable[[], bool] = lambda: True
        """In a cluster, whether this node still holds the lead."""
        self.leading = False
        self.runs: dict[str, Run] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
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
        runs = {}
        for row in reversed(await self.storage.list_tournaments(ACTIVE)):
            runs[row.tournament_id] = await self._load(row)
        if not self.leading:
            return
        self.runs = runs
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="tournaments")
        if runs:
            log.info("running %d tournament(s) from storage", len(runs))

    async def _load(self, row: TournamentRow) -> Run:
        definition = msgspec.convert(row.definition, TournamentDefinition)
        run = Run(row, definition, plan.deals(definition.seed or 0, definition.games_per_pairing // 2))
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
        run = self.runs.get(room.tournament_id or "")
        if run is None or room.slot is None:
            return
        run.running.pop(room.slot, None)
        if room.status == "finished":
            run.games[room.slot] = room.to_row(record=False)
        self._changed(run)
        self.wake()

    def rated_game_stored(self, room: GameRoom) -> None:
        pass

    # ------------------------------------------------------------------ the loop

    async def _loop(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), TICK_S)
            except TimeoutError:
                self._stored_changed = True
            self._wake.clear()
            try:
                if self._stored_changed:  # not for each game's end: those are known here
                    self._stored_changed = False
                    await self._refresh()
                for run in list(self.runs.values()):
                    await self._step(run)
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
                if game is None or game.status != "running":
                    del run.elsewhere[slot]
                    if game is not None and game.status == "finished":
                        run.games[slot] = game
                    self._changed(run)

    def _cancelled(self, run: Run, row: TournamentRow) -> None:
        run.row = row
        for game_id in list(run.running.values()):
            room = self.manager.running.get(game_id)
            if room is not None:
                room.abort()
        log.info("tournament %s cancelled", run.id)
        self._publish(run)

    async def _step(self, run: Run) -> None:
        if run.row.state != "running" or not self.leading or not self.may_act():
            return
        d = run.definition
        due = run.due()
        if not due and not run.running and not run.elsewhere and not run.forfeiting:
            if d.format == "swiss" and self._rounds(run) < (d.rounds or 0):
                await self._next_round(run)
                return
            await self._finish(run)
            return
        now = asyncio.get_running_loop().time()
        for bot in [b for b in run.away if self.manager.can_play(b)]:
            del run.away[bot]
        for slot in due:
            if len(run.running) >= d.max_concurrent:
                break
            _, a, b, deal = run.row.schedule[slot]
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
                room = self.manager.start_game((a, b), run.deals[deal], kind="tournament", decision_ms=d.decision_ms,
                                               tournament=(run.id, slot))
            except Refusal as r:
                log.info("tournament %s: game not started (%s)", run.id, r.message)
                return
            run.running[slot] = room.id
            self._changed(run)

    def _rounds(self, run: Run) -> int:
        return max((e[0] for e in run.row.schedule), default=0)

    async def _next_round(self, run: Run) -> None:
        scores: dict[str, tuple[float, int]] = {}
        for a, b, score in scored(run.games.values()):
            for bot, points in ((a, score), (b, 1.0 - score)):
                got = scores.get(bot, (0.0, 0))
                scores[bot] = (got[0] + points, got[1] + 1)
        entries = plan.next_swiss_round(run.definition, run.row.schedule, scores)
        row = msgspec.structs.replace(run.row, schedule=run.row.schedule + entries)
        if await self.storage.update_tournament(row, "running"):
            run.row = row
            log.info("tournament %s: round %d paired", run.id, self._rounds(run))
            self._changed(run)

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
        _, a, b, deal = run.row.schedule[slot]
        game = build_game(run.deals[deal])
        winner = None if len(away) == 2 else (0 if away[0] == b else 1)
        now = utc_now()
        row = GameRow(
            game_id=secrets.token_urlsafe(6), players=[a, b], status="finished", rated=False,
            first_player=game.first_player, ply=0, started=now, kind="tournament", tournament_id=run.id, slot=slot,
            ended=now, end_reason="forfeit",
            result=msgspec.to_builtins(GameResult(winner, "forfeit", list(game.scores()), list(game.cup_sizes()))),  # type: ignore[arg-type]
            record=msgspec.to_builtins(mandala.record_of(game)),
        )
        log.info("tournament %s: %s forfeit(s) slot %d", run.id, " and ".join(away), slot)
        run.forfeiting.add(slot)

        def durable() -> None:
            run.forfeiting.discard(slot)
            run.games[slot] = msgspec.structs.replace(row, record=None)
            self._changed(run)
            self.wake()

        self.manager.recorder.finish(row, durable=durable)

    # ------------------------------------------------------------------ what viewers see

    def waiting(self, tournament_id: str) -> list[Waiting]:
        """The bots a running tournament waits for, here (empty where another node leads)."""
        run = self.runs.get(tournament_id)
        if run is None:
            return []
        now = asyncio.get_running_loop().time()
        return [Waiting(bot=bot, since=iso, forfeits_in_s=round(max(0.0, run.definition.grace_s - (now - t)), 1))
                for bot, (t, iso) in sorted(run.away.items())]

    def _changed(self, run: Run) -> None:
        run.dirty = True
        if self._publisher is None or self._publisher.done():
            self._publisher = asyncio.get_running_loop().create_task(self._publish_soon())

    async def _publish_soon(self) -> None:
        await asyncio.sleep(PUBLISH_DELAY_S)
        for run in list(self.runs.values()):
            if run.dirty:
                self._publish(run)

    def _publish(self, run: Run) -> None:
        run.dirty = False
        running = [game_summary(self.manager.running[g].to_row(record=False))
                   for g in run.running.values() if g in self.manager.running]
        self.publish(LiveTournament(tournament_view(run.row, list(run.games.values()), running,
                                                    self.waiting(run.id))))

