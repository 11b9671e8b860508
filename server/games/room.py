"""One running game: :class:`GameRoom` holds the engine game, its seats, its clock and its
spectators, and turns a bot's answers into moves, updates and the game's end.

Everything here is synchronous and runs on the event loop, so a move, a timeout and a resign
can never interleave halfway. The clock is one timer per game (:meth:`GameRoom._clock_rang`):
a decision answered too late, or not at all, ends the game on time here. What the room needs
from outside is given to it: ``deliver`` for its bots' frames, a :class:`Journal` in a cluster
(each move stored before it takes effect), and its :class:`Spectator` connections.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from time import perf_counter
from typing import Any, Protocol, cast

import msgspec

import mandala
from mandala import Game, IllegalMove, Record, RecordError
from mandala.moves import Move
from mandala.record import PlayedMove, played, played_move
from protocol.messages import (
    Decision,
    GameKind,
    GameOver,
    GameResult,
    GameStart,
    GameSummary,
    MoveAccepted,
    OpponentAway,
    OpponentBack,
    Player,
    RecordHold,
    Update,
)

from ..common.clock import seconds_since, utc_now
from ..common.logs import about
from ..common.refusal import Refusal
from ..connections.auth import redact
from ..connections.connection import encode
from ..storage import GameRow, GameStatus
from ..storage.base import LoggedMove, MoveWrite
from .counters import GameCounters
from .deals import Deal, build_game
from .summary import game_summary
from .telemetry import Telemetry, clipped, ms

log = logging.getLogger(__name__)

Deliver = Callable[[str, Any], None]
"""Send a message (struct or encoded frame) to a bot by name, if it is connected."""


class Spectator(Protocol):
    """A connection watching games: here, or on another node of a cluster."""

    watching: set[str]

    def send(self, msg: Any) -> None: ...

    def send_watched(self, game_id: str, frame: bytes) -> None:
        """A frame of a watched game, encoded once for all its spectators."""


REQUEST_EPOCH = 1_000_000
"""A decision's ``request_id`` is ``epoch * REQUEST_EPOCH + ply``: the game's ply for a game
that never changed node, and after each takeover (a new epoch) an id no decision of the game
had before, greater than all of them (a game never reaches a million plies)."""


CATCH_UP_S = 0.001
"""How long after its deadline rings a decision is judged, at the least: a timer due later
than the loop's present, so that the loop reads its sockets before (uvloop's timers run
before its reads within a pass). A busy loop stretches it to however long it is behind."""


class Journal(Protocol):
    """Where a cluster's games store each move before it takes effect (the recorder)."""

    def append(self, move: MoveWrite, durable: Callable[[], None], lost: Callable[[], None]) -> None: ...


class Pending:
    """The decision the game waits for: whose it is, its request id, and when it was asked:
    ``sent_at`` on the loop's clock (for its timer) and ``asked`` on ``time.perf_counter``,
    which think times are measured by (uvloop's clock ticks in whole milliseconds, and a
    think time is promised to a tenth of one). ``paced``: an answer to it has had the rate
    limit's exemption, which is one answer a decision."""

    __slots__ = ("seat", "request_id", "sent_at", "asked", "paced")

    def __init__(self, seat: int, request_id: int, sent_at: float) -> None:
        self.seat = seat
        self.request_id = request_id
        self.sent_at = sent_at
        self.asked = perf_counter()
        self.paced = False

    def thought(self) -> float:
        """Seconds since the decision was asked."""
        return perf_counter() - self.asked


class GameRoom:
    """One game between two bots, from its first ``game_start`` to its ``game_over``."""

    def __init__(
        self,
        game_id: str,
        players: tuple[str, str],
        game: Game,
        *,
        rated: bool,
        kind: GameKind,
        pair_id: str | None,
        decision_ms: int,
        deal: Deal,
        tournament: tuple[str, int] | None = None,
        challenge_id: str | None = None,
        deliver: Deliver,
        on_end: Callable[[GameRoom], None],
        epoch: int = 0,
        host: str | None = None,
        journal: Journal | None = None,
        on_lost: Callable[[GameRoom], None] | None = None,
        started: str | None = None,
        counters: GameCounters | None = None,
    ) -> None:
        self.id = game_id
        self.players = players
        self.game = game
        self.rated = rated
        self.kind: GameKind = kind
        self.pair_id = pair_id
        self.challenge_id = challenge_id
        """The challenge accepted, for a challenge's game started here (told in ``game_start``)."""
        self.tournament_id: str | None = tournament[0] if tournament is not None else None
        self.slot: int | None = tournament[1] if tournament is not None else None
        self.decision_ms = decision_ms
        self.deal = deal
        self.epoch = epoch
        """Times another node took this game over; part of every ``request_id``."""
        self.host = host
        self.started = started or utc_now()
        self.ended: str | None = None
        self.status: GameStatus = "running"
        self.outcome: GameResult | None = None
        self.spectators: set[Spectator] = set()
        self.pending: Pending | None = None
        self.away: set[int] = set()
        self._storing: list[Callable[[], None]] | None = None
        """While a move is being stored: what the bots asked meanwhile (a resignation),
        done once it is applied."""
        self.lost = False
        """This node no longer runs the game (another took it over, or will): the room is dead."""
        self._explicit_reshuffles = len(deal.reshuffles or ())
        self._deliver = deliver
        self._on_end = on_end
        self._journal = journal
        self._on_lost = on_lost
        self._counters = counters if counters is not None else GameCounters()
        self._loop = asyncio.get_running_loop()
        # Incidents' times, away times: on perf_counter, finer than uvloop's loop clock (whole ms).
        self._t0 = perf_counter() - (seconds_since(self.started) if started is not None else 0.0)
        self.telemetry = Telemetry(decision_ms)
        self._away_since: dict[int, float] = {}
        self._clock: asyncio.Handle | None = None
        self._record: Record | None = None
        self.started_stored = False
        """Whether this node's row of the game's start is stored (``start_stored``): until it
        is, storage cannot tell whether its record is held (``server/games/holds.py``)."""
        self._encoded_at = -1
        self._encoded: list[msgspec.Raw | None] = [None, None, None]

    def __repr__(self) -> str:
        return f"<GameRoom {self.id} {self.players} ply={self.ply} {self.status}>"

    @property
    def ply(self) -> int:
        return len(self.game.history)

    @property
    def over(self) -> bool:
        return self.outcome is not None

    def seat_of(self, bot: str) -> int | None:
        if bot == self.players[0]:
            return 0
        if bot == self.players[1]:
            return 1
        return None

    def summary(self) -> GameSummary:
        """The game as lists show it, as it stands now."""
        return game_summary(self.to_row(record=False))

    def spectator_view(self) -> mandala.View:
        return mandala.view(self.game, None)

    def _view(self, seat: int | None) -> mandala.View:
        """What ``seat`` (``None``: a spectator) sees now, for a frame. Encoded once per
        position: a seat's ``update`` and its ``decision`` carry the same bytes, as do the
        updates of all spectators (msgspec writes a ``Raw`` value as it is)."""
        ply = self.ply
        if self._encoded_at != ply:
            self._encoded_at = ply
            self._encoded = [None, None, None]
        index = 2 if seat is None else seat
        raw = self._encoded[index]
        if raw is None:
            raw = self._encoded[index] = msgspec.Raw(encode(mandala.view(self.game, seat)))
        return cast(mandala.View, raw)

    def remaining_ms(self) -> int | None:
        """Milliseconds left on the pending decision's clock (``None`` if none is pending)."""
        p = self.pending
        if p is None:
            return None
        return max(0, int(self.decision_ms - (self._loop.time() - p.sent_at) * 1000))

    def record(self) -> Record:
        """The game's R23 record; built once when the game is over (stored and announced)."""
        if self.outcome is None:
            return mandala.record_of(self.game)
        if self._record is None:
            self._record = mandala.record_of(self.game)
        return self._record

    def to_row(self, record: bool = True) -> GameRow:
        """The game as storage keeps it; without the record (which is built from the whole
        game) when ``record`` is false, for lists and summaries."""
        done = record and self.outcome is not None
        return GameRow(
            game_id=self.id,
            players=list(self.players),
            status=self.status,
            rated=self.rated,
            first_player=self.game.first_player,
            ply=self.ply,
            started=self.started,
            kind=self.kind,
            pair_id=self.pair_id,
            tournament_id=self.tournament_id,
            slot=self.slot,
            ended=self.ended,
            end_reason=self.outcome.end_reason if self.outcome else None,
            result=msgspec.to_builtins(self.outcome) if self.outcome else None,
            record=msgspec.to_builtins(self.record()) if done else None,
            telemetry=self.telemetry.to_json() if done else None,
            host=self.host,
            epoch=self.epoch,
            deal=msgspec.to_builtins(self.deal) if record and not done else None,  # over: the record says it
            decision_ms=self.decision_ms,
        )

    # ------------------------------------------------------------------ messages to seats

    def _game_start(self, seat: int, resumed: bool) -> GameStart:
        return GameStart(
            game_id=self.id,
            seat=seat,  # type: ignore[arg-type]
            players=[Player(self.players[0], 0), Player(self.players[1], 1)],
            first_player=self.game.first_player,  # type: ignore[arg-type]
            decision_ms=self.decision_ms,
            rated=self.rated,
            resumed=resumed,
            kind=self.kind,
            pair_id=self.pair_id,
            tournament_id=self.tournament_id,
            challenge_id=self.challenge_id,
        )

    def _send_decision(self, deadline_ms: int) -> None:
        p = self.pending
        assert p is not None
        msg = Decision(
            game_id=self.id,
            request_id=p.request_id,
            seat=p.seat,  # type: ignore[arg-type]
            view=self._view(p.seat),
            legal=self.game.legal_moves,
            deadline_ms=deadline_ms,
        )
        self._deliver(self.players[p.seat], msg)

    def _broadcast_update(self, played: PlayedMove | None) -> None:
        """Each seat its own view, spectators the public one (encoded once for all of them)."""
        ply = self.ply
        for seat in (0, 1):
            self._deliver(self.players[seat], Update(self.id, ply, played, self._view(seat)))
        if self.spectators:
            frame = encode(Update(self.id, ply, played, self._view(None)))
            for conn in list(self.spectators):
                conn.send_watched(self.id, frame)

    # ------------------------------------------------------------------ lifecycle

    def begin(self) -> None:
        """Tell both seats the game starts, show them the deal, ask the first decision."""
        try:
            for seat in (0, 1):
                self._deliver(self.players[seat], self._game_start(seat, resumed=False))
            self._broadcast_update(None)
            self._ask()
        except Exception:
            self._failed()

    def _failed(self) -> None:
        """A step that messages the seats and restarts the clock failed (a bug): abort the
        game rather than leave it waiting for a decision nobody was asked."""
        log.exception("game %s failed: aborting it", self.id, extra=about(game=self.id))
        if not self.over:
            try:
                self.abort()
            except Exception:
                log.exception("aborting game %s failed too", self.id, extra=about(game=self.id))

    def _ask(self) -> None:
        """Ask the player to move for a decision and start its clock (or end a finished game)."""
        if self.game.is_over:
            res = mandala.result(self.game)
            assert res is not None
            self._end(GameResult(res.winner, res.end_reason, list(res.scores), list(res.cup_sizes)), "finished")
            return
        seat: int = self.game.to_move  # type: ignore[assignment]
        now = self._loop.time()
        self.pending = Pending(seat, self.epoch * REQUEST_EPOCH + self.ply, now)
        self._counters.decisions += 1
        if self._clock is None:
            self._clock = self._loop.call_at(now + self.decision_ms / 1000, self._clock_rang)
        self._send_decision(self.decision_ms)
        self._release_views()

    def _release_views(self) -> None:
        """The position's frames are sent: drop its views, built again only for a resume or a
        new spectator (a game waiting for a thinking bot holds no view)."""
        self._encoded = [None, None, None]
        self.game.forget_views()

    def _clock_rang(self, caught_up: bool = False) -> None:
        """The game's one timer. Deadlines only grow (each decision is asked after the last),
        so instead of a timer per decision there is one, set for the oldest deadline; when it
        rings for a decision already answered it is set again for the pending one.

        A deadline that has passed is judged only once the loop has caught up
        (:meth:`_catch_up`): a move that reached the server before then is applied first, so
        a busy loop, which runs a due timer before it reads its sockets, never loses a game
        on time for a move that was waiting to be read."""
        self._clock = None
        p = self.pending
        if p is None or self.over:
            return
        deadline = p.sent_at + self.decision_ms / 1000
        if self._loop.time() < deadline:
            self._clock = self._loop.call_at(deadline, self._clock_rang)
        elif not caught_up:
            self._clock = self._loop.call_later(CATCH_UP_S, self._catch_up)
        else:
            self._on_timeout(p.request_id)

    def _catch_up(self) -> None:
        """A pass of the loop after the deadline rang: the loop has read its sockets since, and
        the connection tasks woken by what it read run before the judgment this queues."""
        self._clock = self._loop.call_soon(self._clock_rang, True)

    def _on_timeout(self, request_id: int) -> None:
        try:
            p = self.pending
            if p is not None and p.request_id == request_id and not self.over:
                self._note("timeout", p.seat, request_id=request_id, after_ms=self._thought(p.seat),
                           away=True if p.seat in self.away else None)
                self._counters.timeouts += 1
                self._end_for(1 - p.seat, "timeout")
        except Exception:
            log.exception("timeout handling failed in %r", self, extra=about(game=self.id))

    def _end_for(self, winner: int | None, reason: str, status: GameStatus = "finished") -> None:
        scores = list(self.game.scores())
        cups = list(self.game.cup_sizes())
        self._end(GameResult(winner, reason, scores, cups), status)  # type: ignore[arg-type]

    def _end(self, outcome: GameResult, status: GameStatus) -> None:
        """Stop the clock and hand the room back; the manager stores it, then announces it."""
        if self._clock is not None:
            self._clock.cancel()
            self._clock = None
        self.pending = None
        self.outcome = outcome
        self.status = status
        self.ended = utc_now()
        self._on_end(self)

    def start_stored(self) -> None:
        """The recorder stored the game's start row."""
        self.started_stored = True

    def announce(self, hold: RecordHold | None = None) -> None:
        """Send ``game_over`` with the result and the record to both seats and the spectators;
        with ``hold``, the record is held (``server/games/holds.py``): its public part, and why."""
        assert self.outcome is not None
        record = self.record()
        if hold is not None:  # the public part: no deck, no reshuffles (holds.public_part)
            record = msgspec.structs.replace(record, deck=[], reshuffles=[])
        frame = encode(GameOver(self.id, self.outcome, record, hold))
        for name in self.players:
            self._deliver(name, frame)
        for conn in self.spectators:
            conn.send_watched(self.id, frame)
            conn.watching.discard(self.id)
        self.spectators.clear()
        self._release_views()

    # ------------------------------------------------------------------ what bots do

    def _refuse(self, code: Any, message: str, request_id: int | None = None, rule: str | None = None) -> Refusal:
        return Refusal(code, message, game_id=self.id, request_id=request_id, rule=rule)

    def _note(self, kind: Any, seat: int, **fields: Any) -> None:
        """An incident of ``seat`` now, for its author (``server/games/telemetry.py``)."""
        self.telemetry.incident(kind, seat, self.ply, perf_counter() - self._t0, **fields)

    def _thought(self, seat: int) -> float | None:
        """Milliseconds since ``seat``'s pending decision was sent (``None`` if none is)."""
        p = self.pending
        return ms(p.thought()) if p is not None and p.seat == seat else None

    def play(self, seat: int, request_id: int, move: Move) -> None:
        """Apply ``seat``'s answer to the pending decision; raises :class:`Refusal` and changes
        nothing if it is not one (the refusal is noted as an incident of the seat)."""
        try:
            self._play(seat, request_id, move)
        except Refusal as r:
            self._counters.refused[r.code] += 1
            if r.code != "game_over":
                self._note("refused", seat, request_id=request_id, after_ms=self._thought(seat), code=r.code,
                           rule=r.rule, message=r.message, sent=msgspec.to_builtins(move))
            raise

    def bad_frame(self, seat: int, r: Refusal, text: str) -> None:
        """A frame from ``seat``'s bot that did not decode, naming this game or sent while
        one of its decisions here was pending (with any token in it hidden: it is kept in the
        game's telemetry, which replays and exports show)."""
        self._counters.refused[r.code] += 1
        self._note("refused", seat, request_id=r.request_id, after_ms=self._thought(seat), code=r.code,
                   message=r.message, sent=clipped(redact(text)))

    def _play(self, seat: int, request_id: int, move: Move) -> None:
        if self.over:
            raise self._refuse("game_over", f"game {self.id} is over", request_id)
        p = self.pending
        if p is None or p.seat != seat:
            raise self._refuse("not_your_turn", "no decision of yours is pending in this game", request_id)
        if request_id != p.request_id:
            raise self._refuse("stale_request", f"the pending decision is request_id {p.request_id}", request_id)
        received = perf_counter()
        elapsed = received - p.asked
        if elapsed * 1000 > self.decision_ms:  # read after its deadline, before it was judged: applied
            self._note("late", seat, request_id=request_id, after_ms=ms(elapsed))
        if len(self.game.reshuffles) < self._explicit_reshuffles and not self._probe(move):
            return
        try:
            code = self.game.check(move)
        except IllegalMove as e:
            raise self._refuse("illegal_move", e.message, request_id, e.rule) from None
        self.pending = None
        if self._journal is None:
            self._apply(seat, request_id, code, elapsed, received)
            return
        # In a cluster the move takes effect once stored: a node that takes the game over
        # replays exactly the moves that were accepted. Meanwhile no decision is pending, so
        # no clock runs and nobody is charged for the write.
        ply = self.ply
        self._storing = []
        self._journal.append(
            MoveWrite(self.id, self.epoch, LoggedMove(ply, self.epoch, played_move(seat, code), ms(elapsed))),
            durable=lambda: self._apply(seat, request_id, code, elapsed, received, ply),
            lost=self.lose,
        )

    def _apply(self, seat: int, request_id: int, code: int, elapsed: float, received: float,
               ply: int | None = None) -> None:
        """Apply an accepted move: confirm it, show it to everyone, ask the next decision.
        A move that was being stored (``ply``) is dropped if the game ended or moved meanwhile;
        then what the bots asked while it was stored is done. ``received`` is when the move
        reached the game (``time.perf_counter``), for the ``move_accepted`` latency."""
        later, self._storing = self._storing, None
        if ply is not None and (self.over or self.lost or self.ply != ply):
            return
        self.game.push_code(code)
        self.telemetry.moved(seat, self.ply - 1, elapsed)
        try:
            self._deliver(self.players[seat], MoveAccepted(self.id, request_id, round(elapsed * 1000, 3)))
            self._counters.accepted.observe(perf_counter() - received)
            self._broadcast_update(played(self.game))
            self._ask()
        except Exception:
            self._failed()
        if later:
            for action in later:
                action()

    def lose(self) -> None:
        """Storage refused a write: another node took the game over. Stop here, say nothing."""
        if self.lost:
            return
        self.release()
        log.warning("game %s: another node runs it now (its epoch moved past %d); stopped here", self.id, self.epoch,
                    extra=about(game=self.id))
        if self._on_lost is not None:
            self._on_lost(self)

    def _probe(self, move: Move) -> bool:
        """Try ``move`` on a copy while explicit reshuffles are pending: the engine checks a given
        order against the discard pile only mid-draw (leaving the game half-changed), so a deal
        whose order does not fit is found here and the game aborted cleanly. False if aborted."""
        probe = self.game.copy()
        try:
            probe.push(move)
        except IllegalMove as e:
            raise self._refuse("illegal_move", e.message, self.ply, e.rule) from None
        except RecordError as e:
            log.warning("game %s: the deal's reshuffle order does not fit (%s): aborted", self.id, e,
                        extra=about(game=self.id))
            self.abort()
            return False
        return True

    def resign(self, seat: int) -> None:
        if self.over:
            raise self._refuse("game_over", f"game {self.id} is over")
        if self._storing is not None:  # after the move being stored, as the bots sent them
            self._storing.append(lambda: self._resign_later(seat))
            return
        self._note("resign", seat, after_ms=self._thought(seat))
        self._end_for(1 - seat, "resign")

    def _resign_later(self, seat: int) -> None:
        try:
            self.resign(seat)
        except Refusal as r:
            self._deliver(self.players[seat], r.to_error())

    def abort(self) -> None:
        """End without a winner (server stopping, unplayable deal)."""
        if not self.over and not self.lost:
            self._end_for(None, "aborted", "aborted")

    def release(self) -> None:
        """Stop running the game here without ending it: its clock stops and nothing more is
        sent; its stored row and move log are left for another node to take it over."""
        self.lost = True
        self._storing = None
        self.pending = None
        if self._clock is not None:
            self._clock.cancel()
            self._clock = None

    def take_over(self, node: str) -> None:
        """Run a game rebuilt from its move log (another node ran it before): each seat is
        told it is resumed and shown where it stands, and the decision due is asked afresh,
        with a new request id and a full clock."""
        for seat in (0, 1):
            self._note("takeover", seat, epoch=self.epoch, node=node)
        try:
            for seat in (0, 1):
                self._deliver(self.players[seat], self._game_start(seat, resumed=True))
                self._deliver(self.players[seat], Update(self.id, self.ply, None, self._view(seat)))
            if self.spectators:
                frame = encode(Update(self.id, self.ply, None, self._view(None)))
                for conn in list(self.spectators):
                    conn.send_watched(self.id, frame)
            self._ask()
        except Exception:
            self._failed()

    # ------------------------------------------------------------------ presence

    def resume(self, seat: int) -> None:
        """The bot in ``seat`` (re)connected: replay where the game stands, same pending request,
        and whether its opponent is away now."""
        name = self.players[seat]
        self._deliver(name, self._game_start(seat, resumed=True))
        self._deliver(name, Update(self.id, self.ply, None, self._view(seat)))
        if self.pending is not None and self.pending.seat == seat:
            self._send_decision(self.remaining_ms() or 0)
        if 1 - seat in self.away:  # it left while this seat was away too: the opponent_back to come needs this
            self._deliver(name, self._away_notice(1 - seat))
        if seat in self.away:
            self.away.discard(seat)
            since = self._away_since.pop(seat, None)
            self._note("reconnect", seat, away_ms=ms(perf_counter() - since) if since is not None else None)
            self._deliver(self.players[1 - seat], OpponentBack(self.id, seat))  # type: ignore[arg-type]
        self._release_views()

    def _away_notice(self, seat: int) -> OpponentAway:
        """What the other seat is told of ``seat`` being away: with the time its pending
        decision has left, if it is the one to decide."""
        grace = self.remaining_ms() if self.pending is not None and self.pending.seat == seat else None
        return OpponentAway(self.id, seat, grace)  # type: ignore[arg-type]

    def went_away(self, seat: int) -> None:
        """The bot in ``seat`` lost its connection: its clock runs on; tell the opponent."""
        self.away.add(seat)
        self._away_since[seat] = perf_counter()
        self._note("disconnect", seat, after_ms=self._thought(seat))
        self._deliver(self.players[1 - seat], self._away_notice(seat))

    def watch(self, conn: Spectator) -> None:
        self.spectators.add(conn)
        conn.watching.add(self.id)
        conn.send(Update(self.id, self.ply, None, self._view(None)))

    def unwatch(self, conn: Spectator) -> None:
        self.spectators.discard(conn)
        conn.watching.discard(self.id)


def _nowhere(*_: Any) -> None:
    """Where a game that runs elsewhere sends its frames and its end: nowhere."""


class PlayedElsewhere(GameRoom):
    """A game another node of a cluster ran, as this node heard it end: what the ladder and the
    tournament director read of a room when a game ends (its seats, kind, pair, tournament
    slot, status and result, and :meth:`to_row` without its record), so that they hear the
    ends of the games they placed on other nodes as they hear those run here. It never runs:
    it has no clock, no seats to write to, and its ply is the one its host told."""

    def __init__(self, game: GameSummary, *, slot: int | None, first_player: int, host: str | None,
                 decision_ms: int, epoch: int = 0) -> None:
        deal = Deal(first_player=1 if first_player else 0, reshuffle_seed=0)
        tournament = (game.tournament_id, slot) if game.tournament_id is not None and slot is not None else None
        super().__init__(game.game_id, (game.players[0], game.players[1]), build_game(deal), rated=game.rated,
                         kind=game.kind, pair_id=game.pair_id, decision_ms=decision_ms, deal=deal,
                         tournament=tournament, deliver=_nowhere, on_end=_nowhere, epoch=epoch, host=host,
                         started=game.started)
        self.lost = True
        self.status = game.status
        self.outcome = game.result
        self.ended = game.ended
        self._ply = game.ply

    @property
    def ply(self) -> int:
        return self._ply
