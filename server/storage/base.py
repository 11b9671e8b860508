"""The storage interface the server codes against, and the rows it exchanges.

Only this module is imported by the rest of the server, so adding PostgreSQL means writing
one more implementation of :class:`Storage`, nothing else.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import msgspec

from mandala.record import PlayedMove

GameStatus = Literal["running", "finished", "aborted"]
GameList = Literal["running", "finished", "aborted", "over"]
"""Which games a list holds: those of one status, or ``over``: finished or aborted."""
LadderStanding = Literal["new", "listed", "removed"]
"""A bot's stored place on the ladder: ``new`` until it passes qualification, ``listed``
after, ``removed`` by the organizer."""


class NameTaken(Exception):
    """A bot with that name (compared case-insensitively) exists already."""


class SchemaTooNew(Exception):
    """The database was written by a newer server (a rollback, or an older node beside newer
    ones): this one refuses to start on it rather than read what it does not know."""


class DatabaseServed(Exception):
    """Another server serves the database in a way this one may not join (a single server
    beside anything else, a cluster's node beside a single server): this one refuses to
    start, because a start marks the games the database holds as running aborted."""


class BotRow(msgspec.Struct, frozen=True):
    name: str
    token_hash: str
    created: str
    """ISO 8601, UTC."""
    ladder: LadderStanding = "new"


class GameRow(msgspec.Struct, frozen=True, kw_only=True):
    """One game as stored: written at its start (``running``) and again at its end."""

    game_id: str
    players: list[str]
    """Bot names in seat order."""
    status: GameStatus
    rated: bool
    first_player: int
    ply: int
    started: str
    kind: str = "challenge"
    """Why it was started: ``challenge``, ``ladder``, ``qualification``, ``admin`` or ``tournament``."""
    pair_id: str | None = None
    """The duplicate pair of a ladder game (both games share the deal, seats swapped)."""
    tournament_id: str | None = None
    slot: int | None = None
    """A tournament game's place in its schedule (a game cut off is replayed in the same slot)."""
    ended: str | None = None
    end_reason: str | None = None
    result: dict[str, Any] | None = None
    """The protocol's GameResult as JSON."""
    record: dict[str, Any] | None = None
    """The R23 record as JSON (absent for games aborted by a server stop)."""
    telemetry: dict[str, Any] | None = None
    """What the server measured of the seats, stored with the game's last row:
    ``think_ms`` (each move's think time, by ply) and ``incidents`` (refused answers,
    time-outs, disconnects, resignations); see ``server/games/telemetry.py``."""
    host: str | None = None
    """In a cluster, the node that runs the game now (``None`` on one node)."""
    epoch: int = 0
    """How many times another node took the game over (``server/cluster/takeover.py``). Only the
    host of the stored epoch may append the game's moves or store its end."""
    deal: dict[str, Any] | None = None
    """What the game was dealt from (``server.deals.Deal`` as JSON, its reshuffle seed fixed),
    so that another node can rebuild it from its moves; lists leave it out."""
    decision_ms: int | None = None
    """The game's time per decision (a tournament's may differ from the server's)."""


class GameFilter(msgspec.Struct, frozen=True, kw_only=True):
    """Which games an export takes: all of them that match every field given."""

    bot: str | None = None
    """Games where this bot (its canonical name) sits in either seat."""
    kind: str | None = None
    statuses: tuple[GameStatus, ...] = ("finished", "aborted")
    since: str | None = None
    """Started at or after (ISO 8601, UTC)."""
    until: str | None = None
    """Started before (ISO 8601, UTC)."""
    ended_by: str | None = None
    """Ended at or before (ISO 8601, UTC): an export takes the games that were over when it was
    asked for, not one that ends while it streams (times count milliseconds: one that ends in
    the very millisecond it was asked in is taken)."""


class LoggedMove(msgspec.Struct, frozen=True, array_like=True):
    """One move of a running game's move log: durable before the bot hears it was accepted."""

    ply: int
    """Its place in the game (0 for the first move)."""
    epoch: int
    """The game's epoch when its host stored it."""
    move: PlayedMove
    """The R22 move with its ``player`` (R23)."""
    think_ms: float
    """The time the host's clock counted for the decision it answers."""


class RunningGame(msgspec.Struct, frozen=True, array_like=True):
    """A game stored as running: which node runs it, at which epoch."""

    game_id: str
    host: str | None
    epoch: int


class Claim(msgspec.Struct, frozen=True, kw_only=True):
    """A running game taken over (:meth:`Storage.claim_game`): its row at the new epoch and
    its move log, in order."""

    row: GameRow
    moves: list[LoggedMove]


class RatingChange(msgspec.Struct, frozen=True, kw_only=True):
    """One bot's Elo update from one rated game, as :meth:`Storage.finish_game` applies it."""

    bot: str
    rating_before: float
    rating_after: float
    games_before: int
    """Rated games the bot had finished before this one (its K depends on it)."""


class RatingEntry(msgspec.Struct, frozen=True, kw_only=True):
    """A bot's rating before and after one rated game (kept in the game's row)."""

    game_id: str
    bot: str
    rating_before: float
    rating_after: float
    games_before: int
    at: str
    """ISO 8601, UTC: when the game ended."""


class Standing(msgspec.Struct, frozen=True, kw_only=True):
    """A bot's current Elo state."""

    bot: str
    rating: float
    rated_games: int


class OpenPair(msgspec.Struct, frozen=True, kw_only=True):
    """A duplicate pair whose first game's record is held until its return game is over
    (``server/games/holds.py``): opened by the start row of the pair's first game, closed by
    the last row of its return game, of a first game that did not finish, or by a
    :class:`PairClose`."""

    pair_id: str
    first_game: str
    return_game: str | None = None
    """The return game, once its row is stored (running)."""


class TournamentRow(msgspec.Struct, kw_only=True):
    """One tournament as stored. ``definition`` is the organizer's (with its seed);
    ``schedule`` lists its games as ``[round, seat0, seat1, deal]`` (Swiss appends a round
    when the last one is over); results live in the games rows that name the tournament."""

    tournament_id: str
    name: str
    definition: dict[str, Any]
    state: str
    created: str
    started: str | None = None
    ended: str | None = None
    schedule: list[list[Any]] = msgspec.field(default_factory=list)


class RatingConflict(Exception):
    """A rating change was computed from a state that is no longer the stored one
    (``games_before`` differs from the bot's ``rated_games``); nothing was written."""


INITIAL_RATING = 1500.0


Rate = Callable[[Standing, Standing], list[RatingChange]]
"""A rated game's rating changes from both seats' stored standings (seat order)."""


@dataclass(frozen=True)
class GameWrite:
    """One game row for :meth:`Storage.write_games`."""

    row: GameRow
    final: bool = False
    """The game's last row: stored as :meth:`Storage.finish_game` says."""
    rate: Rate | None = None
    """For a rated final row: computes the rating changes from the standings stored at that
    point of the transaction (after the rows before it)."""


@dataclass(frozen=True)
class MoveWrite:
    """One move for a running game's log (:meth:`Storage.write_games`): stored only while the
    game is still running at ``epoch``, that is, while the writer still runs it."""

    game_id: str
    epoch: int
    move: LoggedMove


@dataclass(frozen=True)
class PairClose:
    """A duplicate pair given up (:meth:`Storage.write_games`): its return game will not be
    played, so its first game's record is no longer held (``server/games/holds.py``)."""

    pair_id: str


Write = GameWrite | MoveWrite | PairClose


def fixed_changes(changes: list[RatingChange]) -> Rate | None:
    """The :class:`Rate` of rating changes computed beforehand."""
    if not changes:
        return None
    return lambda a, b: changes


decode_played = msgspec.json.Decoder(PlayedMove).decode
"""A logged move from its JSON (raises ``msgspec.DecodeError`` for one that is not a move)."""


def encode_json(value: Any) -> str | None:
    """A row's JSON column (``None`` stays SQL NULL)."""
    return None if value is None else msgspec.json.encode(value).decode("utf-8")


class OneGameWrites(ABC):
    """:meth:`Storage.save_game` and :meth:`Storage.finish_game` as the one-row case of the
    backend's :meth:`Storage.write_games`, so one transaction body serves all three."""

    @abstractmethod
    async def write_games(self, writes: Sequence[Write]) -> frozenset[str]:
        """See :meth:`Storage.write_games`."""

    async def save_game(self, row: GameRow) -> None:
        await self.write_games([GameWrite(row)])

    async def finish_game(self, row: GameRow, rating_changes: list[RatingChange]) -> None:
        await self.write_games([GameWrite(row, final=True, rate=fixed_changes(list(rating_changes)))])


UNFINISHED = "status <> 'finished'"
"""The partial index ``games_unfinished`` serves a query only if its ``WHERE`` says this too."""
RUNNING = f"status = 'running' AND {UNFINISHED}"

SEASON_INDEXES = [
    "CREATE INDEX games_seat0_rated ON games (seat0, games0_before) WHERE games0_before IS NOT NULL",
    "CREATE INDEX games_seat1_rated ON games (seat1, games1_before) WHERE games1_before IS NOT NULL",
    f"CREATE INDEX games_unfinished ON games (status, started, id) WHERE {UNFINISHED}",
    "DROP INDEX games_status_started",
    "DROP INDEX games_kind_started",
    "DROP INDEX games_tournament",
    "CREATE INDEX games_tournament ON games (tournament_id, slot) WHERE tournament_id IS NOT NULL",
    *(stmt for seat in (0, 1) for stmt in (  # ties of the same millisecond broken by a sort
        f"DROP INDEX games_seat{seat}_started", f"CREATE INDEX games_seat{seat}_started ON games (seat{seat}, started)")),
]
"""Migration 9's indexes, the same on both backends: a bot's rated games by its count of
rated games before them; unfinished games by status and tournament games by slot, partial
(the rest are read through ``games_started``); a bot's games by seat and start."""

OPEN_PAIRS = """CREATE TABLE open_pairs (
    pair_id     TEXT PRIMARY KEY,
    first_game  TEXT NOT NULL,
    return_game TEXT
)"""
"""Migration 10, the same on both backends: the :class:`OpenPair` of each duplicate pair whose
first game's record waits for its return game (a few rows: the pairs under way)."""

OPEN_PAIR = ("INSERT INTO open_pairs (pair_id, first_game) VALUES ({0}, {1}) ON CONFLICT (pair_id)"
             " DO UPDATE SET return_game = excluded.first_game WHERE open_pairs.first_game <> excluded.first_game")
"""Written with a pair game's row that is not its last (``{0}``: the pair, ``{1}``: the game):
the first game stored opens the pair, another names its return game."""
CLOSE_PAIR_AT_END = "DELETE FROM open_pairs WHERE pair_id = {0} AND (first_game <> {1} OR {2} <> 'finished')"
"""Written with a pair game's last row (``{2}``: its status): the pair is closed unless this is
its first game, finished (its return game is still to come). An aborted first game ends its
pair (the ladder plays no return game after it), a return game's end ends it too."""
CLOSE_PAIR = "DELETE FROM open_pairs WHERE pair_id = {0}"
"""A :class:`PairClose`."""

RATING_COLUMNS = "rating0_before, rating0_after, games0_before, rating1_before, rating1_after, games1_before"
"""A rated game's two Elo changes, kept in its own row: a season's rating history costs no
table of its own."""


def seat_ratings(players: Sequence[str], changes: Sequence[RatingChange]) -> list[float | int | None]:
    """The values of :data:`RATING_COLUMNS` for a game between ``players`` (all ``None`` for
    an unrated game)."""
    values: list[float | int | None] = [None] * 6
    for c in changes:
        seat = 0 if c.bot.lower() == players[0].lower() else 1
        values[3 * seat:3 * seat + 3] = [c.rating_before, c.rating_after, c.games_before]
    return values


def score_of_seat0(result: dict[str, Any] | None) -> float:
    """1, ½ or 0: what seat 0 scored in a stored GameResult (no winner is a draw)."""
    winner = (result or {}).get("winner")
    return 1.0 if winner == 0 else 0.0 if winner == 1 else 0.5


def pair_counts(seat0: str, seat1: str, score0: float) -> tuple[tuple[str, str], tuple[int, int, int]]:
    """What one rated game adds to ``pair_results``: the pair in name order (``a < b`` by code
    point, as SQLite's and PostgreSQL's ``"C"`` collation compare), and ``a``'s win, the draw
    or ``a``'s loss; ``score0`` is what ``seat0`` scored (1, ½ or 0)."""
    pair = (seat0, seat1) if seat0 < seat1 else (seat1, seat0)
    score = score0 if pair[0] == seat0 else 1.0 - score0
    return pair, (1, 0, 0) if score == 1.0 else (0, 1, 0) if score == 0.5 else (0, 0, 1)


class Storage(Protocol):
    """Everything the server persists. Implementations must not block the event loop."""

    async def open(self) -> None:
        """Connect and create the schema if needed."""

    async def close(self) -> None: ...

    async def claim_database(self, shared: bool, wait: float) -> None:
        """Hold the open database for this server until :meth:`close`: ``shared`` with the
        other nodes of a cluster, else alone. Raises :class:`DatabaseServed` if another server
        holds it otherwise after up to ``wait`` seconds (a server cut off may hold it a little
        while). A SQLite file is claimed by ``mandala serve`` before it opens it."""

    async def ping(self) -> None:
        """Raise if the database cannot be reached (a cheap read)."""

    async def create_bot(self, name: str, token_hash: str, created: str, rating: float = INITIAL_RATING) -> BotRow:
        """Insert a bot at ``rating``; raises :class:`NameTaken` if the name is in use."""

    async def set_ladder(self, bot: str, ladder: LadderStanding, only_from: LadderStanding | None = None) -> None:
        """Set the bot's place on the ladder (case-insensitive name); with ``only_from``, only
        if that is its stored place (a listing must not undo a removal stored meanwhile)."""

    async def games_of(self, bot: str, limit: int, *, telemetry: bool = False) -> list[GameRow]:
        """The bot's games, most recently started first, without their records (with their
        telemetry only if ``telemetry``)."""

    async def get_setting(self, key: str) -> str | None:
        """A ladder setting kept across restarts (e.g. ``paused``)."""

    async def put_setting(self, key: str, value: str) -> None: ...

    async def bot_by_token_hash(self, token_hash: str) -> BotRow | None: ...

    async def replace_token_hash(self, bot: str, old: str, new: str) -> bool:
        """Give the bot (case-insensitive name) the token hash ``new`` if its hash is still
        ``old``, in one statement: of two rotations of one token, one wins. Whether it did."""

    async def bot_by_name(self, name: str) -> BotRow | None:
        """Case-insensitive lookup; the row carries the canonical spelling."""

    async def list_bots(self) -> list[BotRow]: ...

    async def save_game(self, row: GameRow) -> None:
        """Insert or replace the game with ``row.game_id``."""

    async def get_game(self, game_id: str) -> GameRow | None: ...

    async def list_games(self, status: GameList | None, limit: int, before: tuple[str, str] | None = None,
                         bot: str | None = None) -> list[GameRow]:
        """Without their records: most recently started first (then by id, descending), of
        one status, over (:data:`GameList`) or all, of one bot or all, started before
        ``before`` = ``(started, id)`` of the last game of the previous page (a keyset page: an
        index answers it at any size)."""

    async def export_games(self, which: GameFilter, after: tuple[str, str] | None, limit: int) -> list[GameRow]:
        """Up to ``limit`` games that match ``which``, with their records, in the order they
        started (then by id), from just after the game ``after`` = ``(started, game_id)``:
        one page of an export that reads any number of games a page at a time."""

    async def count_games(self, which: GameFilter) -> int:
        """How many games match ``which`` (an export's size, told before it starts)."""

    async def export_start(self, which: GameFilter, last: int) -> tuple[str, str] | None:
        """The ``(started, game_id)`` of the game just before the last ``last`` that match
        ``which`` (the ``after`` of an export of only those), ``None`` when no more match:
        found in the index without reading a record."""

    async def abort_running(self, ended: str, game_ids: Sequence[str] | None = None) -> int:
        """Mark every ``running`` game (or those of ``game_ids`` still running) ``aborted``:
        they died with the server that ran them. Returns how many."""

    async def write_games(self, writes: Sequence[Write]) -> frozenset[str]:
        """Store game rows and moves in order, in one transaction (all or none; one commit for
        many games). A row that is not final is inserted or replaced; a final one is stored as
        :meth:`finish_game` says, its rating changes computed by its ``rate`` from the
        standings stored at that point, and the game's move log is dropped (the record holds
        its moves). A move is appended to its game's log. A :class:`PairClose` closes its pair.

        The rows of a duplicate pair's games keep its :class:`OpenPair`: the first row stored of a pair opens it with that game as its first game, the start
        row of another game of it names that one its return game, and the last row of any game
        of it closes it, unless that game is its first game and finished (its return game is
        still to come).

        Returns the games whose writes were refused because the game is no longer running at
        the epoch the write names (another node took it over, or it is over): for those,
        nothing was written; the rest of the transaction stands. Raises ``LookupError`` if a
        rated game's bot is missing, :class:`RatingConflict` as :meth:`finish_game` does."""

    async def claim_game(self, game_id: str, epoch: int, host: str) -> Claim | None:
        """Take a running game over for ``host``: if it is still running at ``epoch``, move it
        to ``epoch + 1`` on ``host`` and return its row and move log, read in the same
        transaction (a move its former host appends later is refused); else ``None``."""

    async def abandon_game(self, game_id: str, epoch: int, ended: str) -> bool:
        """Mark a game ``aborted`` if it is still running at ``epoch`` (its next epoch, so its
        host can store nothing more of it) and drop its move log; whether it was."""

    async def running_games(self) -> list[RunningGame]:
        """Every game stored as running, with its host and epoch."""

    async def finish_game(self, row: GameRow, rating_changes: list[RatingChange]) -> None:
        """Write a game's final row (with, for a rated game, each bot's rating change) and each
        bot's new rating, in one transaction: all of it is stored or none.

        A game already stored as ``finished`` is left as it is and nothing is written, so
        storing a game twice (a spooled game replayed after a crash) counts it once.

        Raises :class:`RatingConflict` (writing nothing) if a change's ``games_before`` is not
        the bot's stored ``rated_games``."""

    async def standings(self) -> list[Standing]:
        """Every bot's rating, best first (bots without rated games included, at the start rating)."""

    async def standing(self, bot: str) -> Standing | None:
        """One bot's rating state (case-insensitive name)."""

    async def rating_history(self, bot: str, limit: int | None = None, before: int | None = None) -> list[RatingEntry]:
        """The bot's rating changes, oldest first: the last ``limit`` of them (all without one)
        made at fewer than ``before`` rated games (a keyset page, through the index)."""

    async def rated_results(self) -> list[tuple[str, str, float]]:
        """Every rated game finished since the last :meth:`reset_ratings`, as
        ``(seat0, seat1, seat0's score)``, in the order they finished."""

    async def pair_tallies(self) -> dict[tuple[str, str], tuple[int, int, int]]:
        """The totals of :meth:`rated_results` per pair of bots: ``(a, b)`` with ``a < b`` (by
        code point) → ``a``'s wins, draws, ``a``'s losses; kept up to date as each rated game
        is stored, so reading them costs the number of pairs, not of games."""

    async def ladder_games_since(self, since: str) -> list[tuple[str, str, str]]:
        """Ladder games started at or after ``since`` (ISO 8601, UTC), as ``(seat0, seat1,
        started)``, oldest first."""

    async def create_tournament(self, row: TournamentRow) -> None: ...

    async def get_tournament(self, tournament_id: str) -> TournamentRow | None: ...

    async def list_tournaments(self, states: Sequence[str] | None = None, *, before: tuple[str, str] | None = None,
                               limit: int | None = None) -> list[TournamentRow]:
        """Newest first (by ``created``, then the order they were stored in); only those in
        ``states`` if given, only those after ``before`` (the ``created`` and the id of the last
        one of the page before) if given, at most ``limit`` if given."""

    async def update_tournament(self, row: TournamentRow, expected_state: str) -> bool:
        """Store ``row``'s state, times and schedule if the stored state is still
        ``expected_state`` (a transition two requests race for happens once). False if not."""

    async def set_tournament_state(self, row: TournamentRow, expected_state: str) -> bool:
        """Store ``row``'s state and times, not its schedule, if the stored state is still
        ``expected_state``: an organizer's control, which must not write back a schedule the
        director extended (a Swiss round paired) since the row was read. False if not."""

    async def tournament_games(self, tournament_id: str, *, records: bool = False, finished: bool = False,
                               after_slot: int = -1, limit: int = 1 << 30) -> list[GameRow]:
        """The tournament's games in slots after ``after_slot`` (every status, or only
        ``finished`` ones: one a slot), by slot then start, at most ``limit``; with their
        records only if ``records``."""

    async def open_pairs(self, pair_ids: Sequence[str] | None = None) -> list[OpenPair]:
        """The open pairs of ``pair_ids`` (every one, without), by pair id."""

    async def tournament_states(self, tournament_ids: Sequence[str]) -> dict[str, str]:
        """The stored state of each tournament of ``tournament_ids`` that exists."""

    async def tournament_slots(self, tournament_id: str, slots: Sequence[int]) -> list[GameRow]:
        """The tournament's games in ``slots`` (every status), without their records, by slot
        then start."""

    async def reset_ratings(self, rating: float = INITIAL_RATING) -> None:
        """Every bot back to ``rating`` with no rated games, and the games rated so far no
        longer counted by :meth:`rated_results` nor :meth:`rating_history` (they stay stored,
        still marked rated, with their rating changes), all in one transaction."""
