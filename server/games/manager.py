"""The game manager: :class:`GameManager` is the one place games start, are looked up, and end.

It hands each game's row to the recorder at its start and its end; a finished game's
``game_over`` is sent once its row is durable (stored, or spooled while the database fails),
so a game announced as finished is never lost, and while storage fails no game starts. In a
cluster it forwards what concerns a game another node hosts (:class:`GamesElsewhere`), has the
games the ladder and the tournaments decide started on a node of their seats
(:meth:`GameManager.place_game`), and knows where each running game stands
(:meth:`GameManager.as_it_stands`).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

import msgspec

import mandala
from mandala import Game, IllegalMove, RecordError
from mandala.moves import Move
from mandala.record import move_of
from protocol.messages import GameKind, GameSummary, PlayMove, RecordHold, Resign

from ..common.callbacks import spawn
from ..common.ids import new_id
from ..common.logs import about
from ..common.refusal import Refusal
from ..config import Settings
from ..connections.connection import Connection
from ..connections.presence import Presence
from ..recording.recorder import GameRecorder
from ..storage import GameRow
from ..storage.base import Claim
from . import holds
from .counters import GameCounters
from .deals import Deal, build_game
from .room import GameRoom, Journal, Spectator
from .seams import GameEvents, GamesElsewhere, GameSetup
from .summary import game_summary

log = logging.getLogger(__name__)


STOPPING_RETRY_S = 5.0
"""The ``retry_after`` of a start refused because the server is stopping (a restart's time)."""


class GameManager:
    """Starts every game (challenges and the admin API here with :meth:`start_game`; the
    ladder's and the tournaments' with :meth:`place_game`, which in a cluster may have the node
    of one of its seats start it), finds games by id, and hands
    them to the recorder at their start and their end. ``house`` holds in-process seats
    (:class:`~server.games.house.HouseBot`) that get their messages like a connection would."""

    def __init__(self, settings: Settings, presence: Presence, recorder: GameRecorder) -> None:
        self.settings = settings
        self.presence = presence
        self.recorder = recorder
        self.running: dict[str, GameRoom] = {}
        self.finished: OrderedDict[str, GameRoom] = OrderedDict()
        self._by_bot: dict[str, dict[str, GameRoom]] = {}
        self.house: dict[str, Any] = {}
        self.listeners: list[GameEvents] = []
        self.elsewhere: GamesElsewhere | None = None
        self.host: str | None = None
        """In a cluster, this node's name: the host stored with each game it starts."""
        self.journal: Journal | None = None
        """In a cluster, where each move is stored before it takes effect (the recorder)."""
        self.counters = GameCounters()
        """What the games here count for ``GET /metrics``."""
        self.stopping = False
        """The server is stopping: no game starts here any more (its running games are aborted,
        or left to the other nodes of a cluster)."""
        self._judging: set[asyncio.Task[Any]] = set()
        """Games over whose record storage is asked about before their ``game_over``."""

    # ------------------------------------------------------------------ starting and ending

    def start_game(
        self,
        players: tuple[str, str],
        deal: Deal | None = None,
        *,
        rated: bool = False,
        kind: GameKind = "challenge",
        pair_id: str | None = None,
        decision_ms: int | None = None,
        tournament: tuple[str, int] | None = None,
        game_id: str | None = None,
        challenge_id: str | None = None,
    ) -> GameRoom:
        """Deal and begin a game here; seat 0 is ``players[0]``. ``decision_ms`` overrides the
        server's clock (a tournament's); ``tournament`` is its id and the game's slot;
        ``game_id`` one chosen by the node that decided the game (:meth:`place_game`);
        ``challenge_id`` the challenge accepted, told in ``game_start``. Raises
        ``SetupError`` for a bad deal, ``ValueError`` for a bot playing itself or a game id
        taken, :class:`Refusal` ``storage_unavailable`` while games cannot be recorded."""
        self._check(players)
        deal = self._fixed(deal)
        game = build_game(deal)
        if game_id is None:
            game_id = self._new_id()
        elif game_id in self.running or game_id in self.finished:
            raise ValueError(f"game {game_id} exists already")
        room = self._room(game_id, players, game, deal, rated=rated, kind=kind, pair_id=pair_id,
                          decision_ms=decision_ms or self.settings.decision_ms, tournament=tournament,
                          challenge_id=challenge_id)
        self.recorder.save(room.to_row(), durable=room.start_stored)
        self.counters.started[kind] += 1
        log.debug("game %s started (%s): %s vs %s", game_id, kind, *players, extra=about(game=game_id))
        for listener in self.listeners:
            listener.game_started(room)
        room.begin()
        return room

    def place_game(
        self,
        players: tuple[str, str],
        deal: Deal,
        *,
        rated: bool = False,
        kind: GameKind,
        pair_id: str | None = None,
        decision_ms: int | None = None,
        tournament: tuple[str, int] | None = None,
    ) -> str:
        """Start a game the ladder or a tournament decided where it is to run, and return its
        id at once. On one node that is here (:meth:`start_game`). In a cluster it is the node
        of one of its seats, by the cluster's rule (``GamesElsewhere.place``): started here,
        or asked of that node, whose start and end every node hears as any game's there (and
        which the ladder and the director hear ended aborted if it never starts). Raises as
        :meth:`start_game` does, and :class:`Refusal` ``cluster_unavailable`` if the chosen
        node cannot be reached."""
        self._check(players)
        setup = GameSetup(game_id=self._new_id(), players=players, deal=self._fixed(deal), kind=kind, rated=rated,
                          pair_id=pair_id, decision_ms=decision_ms,
                          tournament_id=tournament[0] if tournament is not None else None,
                          slot=tournament[1] if tournament is not None else None)
        if self.elsewhere is not None and self.elsewhere.place(setup):
            return setup.game_id
        return self.start_game(players, setup.deal, rated=rated, kind=kind, pair_id=pair_id, decision_ms=decision_ms,
                               tournament=tournament, game_id=setup.game_id).id

    def _check(self, players: tuple[str, str]) -> None:
        """What every start checks first: two bots, storage taking games, seats reachable."""
        if players[0] == players[1]:
            raise ValueError("a bot cannot play itself")
        if self.stopping:
            raise Refusal("storage_unavailable", "the server is stopping: no game starts now", retry_after=STOPPING_RETRY_S)
        self.recorder.check()
        for name in players:
            seat = self.presence.get(name)
            if seat is not None and not seat.reachable:
                raise Refusal("cluster_unavailable", f"{name} is connected to another node, which cannot be reached now")

    @staticmethod
    def _fixed(deal: Deal | None) -> Deal:
        """``deal`` with its reshuffle seed fixed, so the game can be dealt again (a takeover)."""
        deal = deal or Deal()
        if deal.reshuffle_seed is None:
            deal = msgspec.structs.replace(deal, reshuffle_seed=secrets.randbits(63))
        return deal

    def _new_id(self) -> str:
        """A game id not used here (48 random bits: one shared across a cluster is as unlikely)."""
        game_id = new_id(6)
        while game_id in self.running or game_id in self.finished:
            game_id = new_id(6)
        return game_id

    def abort(self, game_id: str, why: str) -> None:
        """Abort a running game, here or on the node that hosts it (a cancelled tournament's)."""
        room = self.running.get(game_id)
        if room is not None:
            room.abort()
        elif self.elsewhere is not None and (host := self.elsewhere.host_of(game_id)) is not None:
            self.elsewhere.abort(host, game_id, why)

    def _room(self, game_id: str, players: tuple[str, str], game: Game, deal: Deal, **fields: Any) -> GameRoom:
        """A room for ``game``, registered as running here."""
        room = GameRoom(game_id, players, game, deal=deal, deliver=self._deliver, on_end=self._on_end,
                        host=self.host, journal=self.journal, on_lost=self._lost, counters=self.counters, **fields)
        self.running[game_id] = room
        for name in players:
            self._by_bot.setdefault(name, {})[game_id] = room
        return room

    def adopt(self, claim: Claim) -> GameRoom:
        """Run here a game another node ran, rebuilt from its deal and its move log (a
        :meth:`Storage.claim_game`): its seats are told it resumed and the decision due is
        asked afresh. Raises :class:`RecordError` if the log does not replay."""
        row = claim.row
        if row.deal is None or row.decision_ms is None:
            raise RecordError("R23", f"game {row.game_id} was stored without its deal")
        try:
            deal = msgspec.convert(row.deal, Deal)
            game = build_game(deal)
        except (msgspec.ValidationError, mandala.SetupError) as e:
            raise RecordError("R3", f"game {row.game_id}: its stored deal does not deal: {e}") from None
        for ply, entry in enumerate(claim.moves):
            if entry.ply != ply or entry.move.player != game.to_move:
                raise RecordError("R23", f"game {row.game_id}: its move log has no move {ply} by seat {game.to_move}", ply)
            try:
                game.push(move_of(entry.move))
            except (IllegalMove, KeyError) as e:
                raise RecordError("R23", f"game {row.game_id}: its move log does not replay: {e}", ply) from None
        tournament = (row.tournament_id, row.slot) if row.tournament_id is not None and row.slot is not None else None
        room = self._room(row.game_id, (row.players[0], row.players[1]), game, deal, rated=row.rated,
                          kind=row.kind, pair_id=row.pair_id, decision_ms=row.decision_ms, tournament=tournament,
                          epoch=row.epoch, started=row.started)
        room.telemetry.restore(claim.moves)
        room.start_stored()  # read from storage: its start row is there
        self.counters.taken_over += 1
        log.warning("game %s taken over at ply %d (epoch %d)", room.id, room.ply, room.epoch, extra=about(game=room.id))
        if self.elsewhere is not None:
            self.elsewhere.adopting(room)
        room.take_over(self.host or "")
        return room

    def release_all(self) -> None:
        """Stop running every game here without ending it (a cluster node leaving: another
        node takes them over from their move logs)."""
        for room in list(self.running.values()):
            room.release()
            self._unregister(room)

    def _deliver(self, name: str, msg: Any) -> None:
        conn = self.presence.get(name) or self.house.get(name)
        if conn is not None:
            conn.send(msg)

    def _on_end(self, room: GameRoom) -> None:
        """A game is over. A finished game is announced (``game_over`` to its bots, the
        listeners told) once it is durable; an aborted one at once, but in a cluster, where
        another node may have taken the game over, also only once stored."""
        log.debug("game %s over: %s", room.id, room.outcome, extra=about(game=room.id))
        row = room.to_row()
        if room.status == "aborted" and self.journal is None:
            self.recorder.finish(row)
            self._judge(room)
            return
        # Only a finished rated game changes the ratings and the pairs' totals as stored.
        stored = (lambda: self._rated_game_stored(room)) if room.rated and room.status == "finished" else None
        self.recorder.finish(row, durable=lambda: self._judge(room), stored=stored, lost=room.lose)

    def _judge(self, room: GameRoom) -> None:
        """Announce a game that is over, its record in ``game_over`` or held: a game the rule
        could hold (a pair's, a tournament's) once storage has said whether it is
        (``holds.py``), any other at once."""
        row = room.to_row(record=False)
        if not holds.may_be_held(row):
            self._announce(room)
            return
        spawn(self._judging, self._judge_then_announce(room, row), f"announcing game {room.id}")

    async def _judge_then_announce(self, room: GameRoom, row: GameRow) -> None:
        self._announce(room, await self.hold_of(row))

    async def hold_of(self, row: GameRow) -> RecordHold | None:
        """Whether ``row``'s record is held (``holds.py``), as storage says once it has this
        node's writes of the game: the rule reads its deal's state there, which the game's
        start row opened. While that row is not stored (storage fails, or its write is still
        queued behind others) or storage cannot be asked, every record the rule could hold is
        held (``holds.assumed``): it is served when asked again."""
        if not holds.may_be_held(row):
            return None
        room = self.lookup(row.game_id)
        if room is not None and not room.started_stored:
            await self.recorder.settle()
        if room is not None and not room.started_stored:
            return holds.assumed(row)
        try:
            return await asyncio.wait_for(holds.hold_of(self.recorder.storage, row), self.settings.storage_timeout_s)
        except Exception as e:
            self.recorder.faults.note(f"asking whether the record of game {row.game_id} is held", e)
            return holds.assumed(row)

    async def judged(self) -> None:
        """Wait until every game over here whose hold is being asked now is announced (at
        shutdown, before the connections close)."""
        if self._judging:
            await asyncio.gather(*list(self._judging), return_exceptions=True)

    def _lost(self, room: GameRoom) -> None:
        """Another node runs ``room``'s game now: forget it here without a word to its seats
        (they hear from the new host); this node's spectators follow it there."""
        self._unregister(room)
        if self.elsewhere is not None:
            self.elsewhere.moved(room)

    def _unregister(self, room: GameRoom) -> None:
        if self.running.get(room.id) is room:
            del self.running[room.id]
        for name in room.players:
            games = self._by_bot.get(name)
            if games is not None and games.get(room.id) is room:
                del games[room.id]
                if not games:
                    del self._by_bot[name]

    def _rated_game_stored(self, room: GameRoom) -> None:
        for listener in self.listeners:
            try:
                listener.rated_game_stored(room)
            except Exception:
                log.exception("a listener failed on the stored rated game %s", room.id, extra=about(game=room.id))

    def _announce(self, room: GameRoom, hold: RecordHold | None = None) -> None:
        """Move the room from running to finished, send ``game_over`` (its record held with
        ``hold``), tell the listeners."""
        self._unregister(room)
        self.finished[room.id] = room
        if room.outcome is not None:
            self.counters.finished[room.kind, room.outcome.end_reason] += 1
        while len(self.finished) > self.settings.finished_cache:
            self.finished.popitem(last=False)
        room.announce(hold)
        for listener in self.listeners:
            try:
                listener.game_ended(room)
            except Exception:
                log.exception("a listener failed on the end of game %s", room.id, extra=about(game=room.id))

    async def flush(self) -> None:
        """Wait until every game row queued so far is in the database, and every game over
        among them is announced."""
        await self.recorder.flush()
        await self.judged()

    def abort_all(self) -> None:
        for room in list(self.running.values()):
            room.abort()

    # ------------------------------------------------------------------ lookups

    def lookup(self, game_id: str) -> GameRoom | None:
        return self.running.get(game_id) or self.finished.get(game_id)

    def running_summary(self, game_id: str) -> GameSummary | None:
        """A running game as it stands, wherever it runs (another node's as its host last
        told); ``None`` if it is not known to run."""
        room = self.running.get(game_id)
        if room is not None:
            return room.summary()
        known = self.elsewhere.summary_of(game_id) if self.elsewhere is not None else None
        return known if known is not None and known.status == "running" else None

    def as_it_stands(self, row: GameRow) -> GameSummary:
        """A stored game as it stands now. Storage keeps a running game as it started (ply 0):
        one this node runs, or ended lately, is taken from its room, one another node of a
        cluster runs from what its host last told."""
        room = self.lookup(row.game_id)
        if room is not None and not room.lost:
            return room.summary()
        if row.status == "running" and self.elsewhere is not None:
            known = self.elsewhere.summary_of(row.game_id)
            if known is not None:
                return known
        return game_summary(row)

    def as_they_stand(self, rows: Iterable[GameRow]) -> list[GameSummary]:
        return [self.as_it_stands(row) for row in rows]

    def running_summaries(self) -> list[GameSummary]:
        """The running games of the whole cluster (of this server, on one node) as they stand,
        newest first (by start, then by ``game_id``, descending: the order of the API's pages)."""
        games = [room.summary() for room in self.running.values()]
        if self.elsewhere is not None:
            games += self.elsewhere.summaries()
        return sorted(games, key=lambda g: (g.started, g.game_id), reverse=True)

    async def hear_out(self) -> None:
        """Before running games are listed: in a cluster, learn how far the games of the other
        nodes went; on one node the rooms say it already."""
        if self.elsewhere is not None:
            await self.elsewhere.hear_out()

    def games_of(self, bot: str) -> list[GameRoom]:
        """The bot's running games, oldest first."""
        return [room for room in self._by_bot.get(bot, {}).values() if not room.over]

    def running_count(self, bot: str) -> int:
        """The bot's games not yet announced over (a game being stored still takes its slot),
        in the whole cluster."""
        here = len(self._by_bot.get(bot, ()))
        return here if self.elsewhere is None else here + self.elsewhere.running_count(bot)

    def can_play(self, bot: str) -> bool:
        """Whether the bot can play now: connected (here or elsewhere), or an in-process seat."""
        return bot in self.house or self.presence.is_connected(bot)

    def open_slots(self, bot: str) -> int:
        """Games the bot could start now: its connection's ``max_games`` less its running
        games (an in-process seat has no limit; a bot not connected has none)."""
        if bot in self.house:
            return 1 << 30
        conn = self.presence.get(bot)
        if conn is None:
            return 0
        return conn.max_games - self.running_count(bot)

    def game_ids_of(self, bot: str) -> list[str]:
        """The ids of the bot's running games, here and on other nodes."""
        here = [room.id for room in self.games_of(bot)]
        return here if self.elsewhere is None else here + self.elsewhere.game_ids(bot)

    def _host_elsewhere(self, game_id: str) -> str | None:
        """The node hosting ``game_id`` if another node does (and this one does not know it)."""
        if self.elsewhere is None or game_id in self.running or game_id in self.finished:
            return None
        return self.elsewhere.host_of(game_id)

    def _room_for(self, bot: str, game_id: str, request_id: int | None = None) -> tuple[GameRoom, int]:
        room = self.lookup(game_id)
        if room is None:
            raise Refusal("unknown_game", f"no game {game_id!r}", game_id=game_id, request_id=request_id)
        seat = room.seat_of(bot)
        if seat is None:
            raise Refusal("not_your_game", f"{bot} does not play game {game_id}", game_id=game_id, request_id=request_id)
        return room, seat

    # ------------------------------------------------------------------ bot requests

    def paces(self, bot: str, game_id: str, request_id: int) -> bool:
        """Whether a move is the first answer of ``bot`` to the pending decision ``request_id``
        of ``game_id``: the one answer a decision that the rate limit does not charge, the
        server pacing those itself (PROTOCOL.md §15.1). True once a decision."""
        room = self.running.get(game_id)
        if room is None:
            return self.elsewhere is not None and self.elsewhere.paces(bot, game_id, request_id)
        p = room.pending
        if p is None or p.paced or p.request_id != request_id or room.players[p.seat] != bot:
            return False
        p.paced = True
        return True

    def play(self, bot: str, game_id: str, request_id: int, move: Move) -> None:
        """Answer a decision; a game hosted by another node gets the move there."""
        if self.elsewhere is not None and (host := self._host_elsewhere(game_id)) is not None:
            self.elsewhere.forward(host, bot, PlayMove(game_id, request_id, move))
            return
        room, seat = self._room_for(bot, game_id, request_id)
        room.play(seat, request_id, move)

    def bad_frame(self, bot: str, r: Refusal, text: str) -> None:
        """A frame from ``bot`` that did not decode, noted for its author in the game it names,
        or else in each of its games here that wait for its decision."""
        if r.game_id is not None:
            named = self.running.get(r.game_id)
            rooms = [named] if named is not None else []
        else:
            rooms = [room for room in self.games_of(bot)
                     if room.pending is not None and room.players[room.pending.seat] == bot]
        for room in rooms:
            seat = room.seat_of(bot)
            if seat is not None and not room.over:
                room.bad_frame(seat, r, text)

    def resign(self, bot: str, game_id: str) -> None:
        if self.elsewhere is not None and (host := self._host_elsewhere(game_id)) is not None:
            self.elsewhere.forward(host, bot, Resign(game_id))
            return
        room, seat = self._room_for(bot, game_id)
        room.resign(seat)

    def watch(self, conn: Spectator, game_id: str) -> None:
        """Start sending ``conn`` the game's updates (a game another node hosts: from there)."""
        if self.elsewhere is not None and isinstance(conn, Connection) and (host := self._host_elsewhere(game_id)):
            self.elsewhere.watch(conn, game_id, host, True)
            conn.watching.add(game_id)
            return
        room = self.lookup(game_id)
        if room is None:
            raise Refusal("unknown_game", f"no running game {game_id!r}", game_id=game_id)
        if room.over:
            raise Refusal("game_over", f"game {game_id} is over: its record is at /api/games/{game_id}/record (which"
                          " answers 409 record_held while another game on its deal is still to be played)",
                          game_id=game_id)
        room.watch(conn)

    def unwatch(self, conn: Connection, game_id: str) -> None:
        room = self.lookup(game_id)
        if room is None and game_id not in conn.watching:
            raise Refusal("unknown_game", f"no game {game_id!r}", game_id=game_id)
        if room is not None:
            room.unwatch(conn)
        elif self.elsewhere is not None and (host := self.elsewhere.host_of(game_id)) is not None:
            self.elsewhere.watch(conn, game_id, host, False)
        conn.watching.discard(game_id)

    # ------------------------------------------------------------------ presence

    def bot_arrived(self, bot: str) -> None:
        """A bot said hello: resume each of its running games on its new connection."""
        for room in self.games_of(bot):
            seat = room.seat_of(bot)
            assert seat is not None
            room.resume(seat)

    def bot_left(self, bot: str) -> None:
        """A bot's last connection closed: its games go on, their opponents are told."""
        for room in self.games_of(bot):
            seat = room.seat_of(bot)
            assert seat is not None
            room.went_away(seat)

    def connection_closed(self, conn: Connection) -> None:
        """Drop a closed connection from the games it watched."""
        for game_id in list(conn.watching):
            room = self.lookup(game_id)
            if room is not None:
                room.unwatch(conn)
            elif self.elsewhere is not None and (host := self.elsewhere.host_of(game_id)) is not None:
                self.elsewhere.watch(conn, game_id, host, False)
        conn.watching.clear()
