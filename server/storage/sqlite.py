"""SQLite storage (stdlib ``sqlite3``) on one dedicated worker thread: the queries, and the
running of the migrations ``sqlite_schema.py`` lists.

All calls go through a single-thread executor: the event loop never blocks on disk, and the
one connection is only ever used from its own thread, in submission order (a read submitted
after a write sees it).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import msgspec

from .base import (
    CLOSE_PAIR,
    CLOSE_PAIR_AT_END,
    INITIAL_RATING,
    OPEN_PAIR,
    RATING_COLUMNS,
    RUNNING,
    UNFINISHED,
    BotRow,
    Claim,
    GameFilter,
    GameList,
    GameRow,
    GameWrite,
    LadderStanding,
    LoggedMove,
    MoveWrite,
    NameTaken,
    OneGameWrites,
    OpenPair,
    PairClose,
    RatingChange,
    RatingConflict,
    RatingEntry,
    RunningGame,
    SchemaTooNew,
    Standing,
    TournamentRow,
    Write,
    decode_played,
    encode_json,
    pair_counts,
    score_of_seat0,
    seat_ratings,
)
from .packing import pack_record, pack_result, pack_telemetry, unpack_record, unpack_result, unpack_telemetry
from .sqlite_schema import MIGRATIONS, SCHEMA_VERSION

T = TypeVar("T")

log = logging.getLogger(__name__)

_GAME_COLUMNS = ("id, seat0, seat1, status, rated, first_player, ply, record, result, end_reason, started, ended, kind,"
                 " pair_id, tournament_id, slot, telemetry, host, epoch, deal, decision_ms")
_WRITTEN_COLUMNS = f"{_GAME_COLUMNS}, {RATING_COLUMNS}"
_WRITTEN_COUNT = len(_WRITTEN_COLUMNS.split(", "))
_SUMMARY_COLUMNS = _GAME_COLUMNS.replace("record,", "NULL,").replace("telemetry,", "NULL,").replace("deal,", "NULL,")
"""The game columns without the record, the telemetry and the deal (lists need none of them)."""
_HEALTH_COLUMNS = _GAME_COLUMNS.replace("record,", "NULL,").replace("deal,", "NULL,")
"""The game columns without the record and the deal (a bot's health reads its telemetry)."""
_TOURNAMENT_COLUMNS = "id, name, definition, state, created, started, ended, schedule"
_BOT_COLUMNS = "name, token_hash, created, ladder"
_SINCE_RESET = "finish_seq > COALESCE((SELECT CAST(value AS INTEGER) FROM ladder_settings WHERE key = 'rated_since'), 0)"
"""Rated games count from the last ratings reset on."""


_IN_CHUNK = 500
"""Values of one ``IN (…)`` list at most (SQLite caps a statement's parameters)."""

_NO_END = 1 << 62
"""A ``games_before`` no rating change reaches (no page bound)."""


def _page_where(status: GameList | None, before: tuple[str, str] | None) -> tuple[str, list[Any]]:
    """A page of a games list: of one status (or over, or all), older than ``before`` (started, id)."""
    where: list[str] = ["1"]
    args: list[Any] = []
    if status == "over":
        where.append("status <> 'running'")
    elif status is not None:
        where.append("status = ?" if status == "finished" else f"status = ? AND {UNFINISHED}")
        args.append(status)
    if before is not None:
        where.append("(started, id) < (?, ?)")
        args += before
    return " AND ".join(where), args


def _is_contention(e: sqlite3.OperationalError) -> bool:
    """Another writer held the lock: the connection itself is fine."""
    return "locked" in str(e) or "busy" in str(e)


def _stored(game_id: str, value: bytes | str | None, unpack: Callable[[str, bytes], dict[str, Any]]) -> Any:
    """A record, result or telemetry column: packed (bytes) since schema 8 (results since 9),
    JSON text before."""
    if value is None:
        return None
    if isinstance(value, bytes):
        return unpack(game_id, value)
    return msgspec.json.decode(value)


def _game_row(row: tuple[Any, ...]) -> GameRow:
    (gid, seat0, seat1, status, rated, first, ply, record, result, reason, started, ended, kind, pair_id, tid, slot,
     tel, host, epoch, deal, decision_ms) = row
    return GameRow(
        game_id=gid,
        players=[seat0, seat1],
        status=status,
        rated=bool(rated),
        first_player=first,
        ply=ply,
        record=_stored(gid, record, unpack_record),
        result=_stored(gid, result, unpack_result),
        end_reason=reason,
        started=started,
        ended=ended,
        kind=kind,
        pair_id=pair_id,
        tournament_id=tid,
        slot=slot,
        telemetry=_stored(gid, tel, unpack_telemetry),
        host=host,
        epoch=epoch,
        deal=msgspec.json.decode(deal) if deal else None,
        decision_ms=decision_ms,
    )


def _filter_sql(which: GameFilter, after: tuple[str, str] | None) -> tuple[str, list[Any]]:
    """The ``WHERE`` clause of an export page and its arguments."""
    where = [f"status IN ({', '.join('?' * len(which.statuses))})"]
    args: list[Any] = list(which.statuses)
    if which.bot is not None:
        where.append("(seat0 = ? OR seat1 = ?)")
        args += [which.bot, which.bot]
    for clause, value in (("kind = ?", which.kind), ("started >= ?", which.since), ("started < ?", which.until),
                          ("ended <= ?", which.ended_by)):
        if value is not None:
            where.append(clause)
            args.append(value)
    if after is not None:
        where.append("(started, id) > (?, ?)")
        args += list(after)
    return " AND ".join(where), args


def _tournament_row(row: tuple[Any, ...]) -> TournamentRow:
    tid, name, definition, state, created, started, ended, schedule = row
    return TournamentRow(tournament_id=tid, name=name, definition=msgspec.json.decode(definition), state=state,
                         created=created, started=started, ended=ended, schedule=msgspec.json.decode(schedule))


class SqliteStorage(OneGameWrites):
    """:class:`~server.storage.base.Storage` on one SQLite file in WAL mode."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._executor: ThreadPoolExecutor | None = None
        self._db: sqlite3.Connection | None = None
        self._opened = False
        """Opened once: a connection dropped after a fault is opened again on the next call."""

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        if self._executor is None:
            raise RuntimeError("storage is not open")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, partial(self._guarded, fn, *args))

    # ------------------------------------------------------------------ runs on the worker thread

    def _guarded(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn`` on the connection. After a disk fault (full, read-only, I/O error) the
        connection is dropped and the next call opens a new one: SQLite may keep a failed
        file's state, and a disk that was replaced or remounted is only seen by a new open."""
        if self._db is None:
            if not self._opened:
                raise RuntimeError("storage is not open")
            self._open(create=False)
        try:
            return fn(*args)
        except sqlite3.OperationalError as e:
            if not _is_contention(e):
                self._close()
            raise

    def _open(self, create: bool = True) -> None:
        """Connect. Reopening after a fault never creates the file: a disk that is not mounted
        (yet) must fail, not leave an empty database in the bare mount point."""
        self._close()
        if create:
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        else:
            uri = f"{Path(self.path).resolve().as_uri()}?mode=rw"
            db = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")  # a commit is on disk before game_over is sent
        db.execute("PRAGMA busy_timeout=5000")
        self._db = db
        try:
            self._migrate()
        except BaseException:
            self._close()
            raise
        self._opened = True

    def _migrate(self) -> None:
        db = self._conn()
        db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        row = db.execute("SELECT MAX(version) FROM schema_version").fetchone()
        current = row[0] or 0
        if current > SCHEMA_VERSION:
            raise SchemaTooNew(f"{self.path} has schema version {current}; this server knows up to {SCHEMA_VERSION}: "
                               "it was written by a newer release")
        for version in range(current + 1, SCHEMA_VERSION + 1):
            if current:  # an upgrade (a new database is created quietly)
                log.info("migrating %s from schema %d to %d", self.path, version - 1, version)
            with self._transaction():
                for stmt in MIGRATIONS[version - 1]:
                    if callable(stmt):
                        stmt(db)
                    else:
                        db.execute(stmt)
                db.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE … COMMIT, or ROLLBACK if the body raises."""
        db = self._conn()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            if db.in_transaction:
                try:
                    db.execute("ROLLBACK")
                except sqlite3.Error:
                    pass  # the failure that brought us here is the one to report
            raise
        db.execute("COMMIT")

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            raise RuntimeError("storage is not open")
        return self._db

    def _create_bot(self, name: str, token_hash: str, created: str, rating: float) -> BotRow:
        try:
            self._conn().execute(
                "INSERT INTO bots (name, token_hash, created, rating) VALUES (?, ?, ?, ?)",
                (name, token_hash, created, rating),
            )
        except sqlite3.IntegrityError:
            raise NameTaken(name) from None
        return BotRow(name, token_hash, created)

    def _replace_token_hash(self, bot: str, old: str, new: str) -> bool:
        cur = self._conn().execute("UPDATE bots SET token_hash = ? WHERE name = ? AND token_hash = ?", (new, bot, old))
        return cur.rowcount == 1

    def _bot_where(self, column: str, value: str) -> BotRow | None:
        row = self._conn().execute(f"SELECT {_BOT_COLUMNS} FROM bots WHERE {column} = ?", (value,)).fetchone()
        return BotRow(*row) if row else None

    def _list_bots(self) -> list[BotRow]:
        rows = self._conn().execute(f"SELECT {_BOT_COLUMNS} FROM bots ORDER BY created, name").fetchall()
        return [BotRow(*r) for r in rows]

    def _set_ladder(self, bot: str, ladder: str, only_from: str | None) -> None:
        self._conn().execute("UPDATE bots SET ladder = ? WHERE name = ? AND ladder = coalesce(?, ladder)",
                             (ladder, bot, only_from))

    def _games_of(self, bot: str, limit: int, telemetry: bool) -> list[GameRow]:
        columns = _HEALTH_COLUMNS if telemetry else _SUMMARY_COLUMNS
        seat = f"SELECT * FROM (SELECT {columns} FROM games WHERE seat{{}} = ? ORDER BY started DESC, id DESC LIMIT ?)"
        rows = self._conn().execute(
            f"{seat.format(0)} UNION ALL {seat.format(1)} ORDER BY 11 DESC, 1 DESC LIMIT ?",
            (bot, limit, bot, limit, limit),
        ).fetchall()
        return [_game_row(r) for r in rows]

    def _get_setting(self, key: str) -> str | None:
        row = self._conn().execute("SELECT value FROM ladder_settings WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def _put_setting(self, key: str, value: str) -> None:
        self._conn().execute("INSERT OR REPLACE INTO ladder_settings (key, value) VALUES (?, ?)", (key, value))

    @staticmethod
    def _write_game(db: sqlite3.Connection, g: GameRow, changes: Sequence[RatingChange] = ()) -> None:
        """Insert or replace a game's row, with the rating ``changes`` of a rated game's last one."""
        db.execute(
            f"INSERT OR REPLACE INTO games ({_WRITTEN_COLUMNS}) VALUES ({', '.join('?' * _WRITTEN_COUNT)})",
            (
                g.game_id, g.players[0], g.players[1], g.status, int(g.rated), g.first_player, g.ply,
                pack_record(g.record) or encode_json(g.record), pack_result(g.result),
                g.end_reason, g.started, g.ended, g.kind, g.pair_id, g.tournament_id, g.slot,
                pack_telemetry(g.telemetry), g.host, g.epoch, encode_json(g.deal), g.decision_ms,
                *seat_ratings(g.players, changes),
            ),
        )

    def _get_game(self, game_id: str) -> GameRow | None:
        row = self._conn().execute(f"SELECT {_GAME_COLUMNS} FROM games WHERE id = ?", (game_id,)).fetchone()
        return _game_row(row) if row else None

    def _list_games(self, status: GameList | None, limit: int, before: tuple[str, str] | None,
                    bot: str | None) -> list[GameRow]:
        where, args = _page_where(status, before)
        if bot is None:
            sql = f"SELECT {_SUMMARY_COLUMNS} FROM games WHERE {where} ORDER BY started DESC, id DESC LIMIT ?"
            rows = self._conn().execute(sql, (*args, limit)).fetchall()
        else:  # each seat through its own index, newest first, then the two merged
            seat = (f"SELECT * FROM (SELECT {_SUMMARY_COLUMNS} FROM games WHERE seat{{}} = ? AND {where}"
                    " ORDER BY started DESC, id DESC LIMIT ?)")
            sql = f"{seat.format(0)} UNION ALL {seat.format(1)} ORDER BY 11 DESC, 1 DESC LIMIT ?"
            rows = self._conn().execute(sql, (bot, *args, limit, bot, *args, limit, limit)).fetchall()
        return [_game_row(r) for r in rows]

    def _export_games(self, which: GameFilter, after: tuple[str, str] | None, limit: int) -> list[GameRow]:
        where, args = _filter_sql(which, after)
        rows = self._conn().execute(
            f"SELECT {_GAME_COLUMNS} FROM games INDEXED BY games_started WHERE {where} ORDER BY started, id LIMIT ?",
            (*args, limit),
        ).fetchall()
        return [_game_row(r) for r in rows]

    def _export_start(self, which: GameFilter, last: int) -> tuple[str, str] | None:
        where, args = _filter_sql(which, None)
        row = self._conn().execute(
            f"SELECT started, id FROM games INDEXED BY games_started WHERE {where}"
            " ORDER BY started DESC, id DESC LIMIT 1 OFFSET ?",
            (*args, last),
        ).fetchone()
        return (row[0], row[1]) if row is not None else None

    def _count_games(self, which: GameFilter) -> int:
        where, args = _filter_sql(which, None)
        count: int = self._conn().execute(f"SELECT COUNT(*) FROM games WHERE {where}", args).fetchone()[0]
        return count

    def _abort_running(self, ended: str, game_ids: Sequence[str] | None) -> int:
        sql = f"UPDATE games SET status = 'aborted', end_reason = 'aborted', ended = ? WHERE {RUNNING}"
        with self._transaction() as db:
            if game_ids is None:
                ids = [r[0] for r in db.execute(f"SELECT id FROM games WHERE {RUNNING}").fetchall()]
                db.execute(sql, (ended,))
            else:
                ids = [g for g in game_ids if db.execute(sql + " AND id = ?", (ended, g)).rowcount]
            db.executemany("DELETE FROM game_moves WHERE game_id = ?", [(g,) for g in ids])
        return len(ids)

    def _claim_game(self, game_id: str, epoch: int, host: str) -> Claim | None:
        with self._transaction() as db:  # BEGIN IMMEDIATE: no other writer until the commit
            if not db.execute("UPDATE games SET host = ?, epoch = epoch + 1 WHERE id = ? AND epoch = ?"
                              " AND status = 'running'", (host, game_id, epoch)).rowcount:
                return None
            r = db.execute(f"SELECT {_GAME_COLUMNS} FROM games WHERE id = ?", (game_id,)).fetchone()
            moves = db.execute(
                "SELECT ply, epoch, move, think_ms FROM game_moves WHERE game_id = ? ORDER BY ply", (game_id,)
            ).fetchall()
        return Claim(row=_game_row(r), moves=[LoggedMove(p, e, decode_played(m), t) for p, e, m, t in moves])

    def _abandon_game(self, game_id: str, epoch: int, ended: str) -> bool:
        with self._transaction() as db:
            done = db.execute(
                "UPDATE games SET status = 'aborted', end_reason = 'aborted', ended = ?, epoch = epoch + 1"
                " WHERE id = ? AND epoch = ? AND status = 'running'", (ended, game_id, epoch),
            ).rowcount == 1
            if done:
                db.execute("DELETE FROM game_moves WHERE game_id = ?", (game_id,))
        return done

    def _running_games(self) -> list[RunningGame]:
        rows = self._conn().execute(f"SELECT id, host, epoch FROM games WHERE {RUNNING} ORDER BY id")
        return [RunningGame(g, h, e) for g, h, e in rows.fetchall()]

    def _between_game_and_ratings(self) -> None:
        """Does nothing; tests replace it to fail a :meth:`finish_game` half-way."""

    def _write_games(self, writes: list[Write]) -> frozenset[str]:
        lost: set[str] = set()
        with self._transaction() as db:
            for w in writes:
                if isinstance(w, MoveWrite):
                    if not self._append_move(db, w):
                        lost.add(w.game_id)
                elif isinstance(w, PairClose):
                    db.execute(CLOSE_PAIR.format("?"), (w.pair_id,))
                elif not w.final:
                    self._write_game(db, w.row)
                    if w.row.pair_id is not None:
                        db.execute(OPEN_PAIR.format("?", "?"), (w.row.pair_id, w.row.game_id))
                elif not self._finish_game(db, w):
                    lost.add(w.row.game_id)
        return frozenset(lost)

    @staticmethod
    def _append_move(db: sqlite3.Connection, w: MoveWrite) -> bool:
        """Append a move to its game's log if the game still runs at the move's epoch (one
        writer at a time: the transaction holds the database's write lock)."""
        stored = db.execute("SELECT epoch FROM games WHERE id = ? AND status = 'running'", (w.game_id,)).fetchone()
        if stored is None or stored[0] != w.epoch:
            return False
        db.execute(
            "INSERT OR IGNORE INTO game_moves (game_id, ply, epoch, move, think_ms) VALUES (?, ?, ?, ?, ?)",
            (w.game_id, w.move.ply, w.epoch, encode_json(w.move.move), w.move.think_ms),
        )
        return True

    def _finish_game(self, db: sqlite3.Connection, w: GameWrite) -> bool:
        """Store a game's last row; false (nothing written) if another node runs it now."""
        g = w.row
        stored = db.execute("SELECT status, epoch FROM games WHERE id = ?", (g.game_id,)).fetchone()
        if stored is not None and stored[0] == "finished":
            return True
        if stored is not None and stored[1] != g.epoch:
            return False
        changes = self._rate(w)
        self._write_game(db, g, changes)
        if g.pair_id is not None:
            db.execute(CLOSE_PAIR_AT_END.format("?", "?", "?"), (g.pair_id, g.game_id, g.status))
        db.execute(
            "UPDATE games SET finish_seq = (SELECT COALESCE(MAX(finish_seq), 0) + 1 FROM games) WHERE id = ?",
            (g.game_id,),
        )
        db.execute("DELETE FROM game_moves WHERE game_id = ?", (g.game_id,))
        self._between_game_and_ratings()
        if not changes:
            return True
        pair, counts = pair_counts(g.players[0], g.players[1], score_of_seat0(g.result))
        db.execute(
            "INSERT INTO pair_results (a, b, wins, draws, losses) VALUES (?, ?, ?, ?, ?) ON CONFLICT (a, b) DO UPDATE"
            " SET wins = wins + excluded.wins, draws = draws + excluded.draws, losses = losses + excluded.losses",
            (*pair, *counts),
        )
        for c in changes:
            cur = db.execute(
                "UPDATE bots SET rating = ?, rated_games = rated_games + 1 WHERE name = ? AND rated_games = ?",
                (c.rating_after, c.bot, c.games_before),
            )
            if cur.rowcount != 1:
                raise RatingConflict(f"{c.bot}: stored rated_games is not {c.games_before}")
        return True

    def _rate(self, w: GameWrite) -> list[RatingChange]:
        """The rating changes of a rated game's last write, from the bots' stored ratings."""
        if w.rate is None:
            return []
        a, b = (self._standing(name) for name in w.row.players)
        if a is None or b is None:
            raise LookupError(f"rated game {w.row.game_id}: bot missing from storage: {w.row.players}")
        return list(w.rate(a, b))

    def _standings(self) -> list[Standing]:
        rows = self._conn().execute("SELECT name, rating, rated_games FROM bots ORDER BY rating DESC, name").fetchall()
        return [Standing(bot=n, rating=r, rated_games=g) for n, r, g in rows]

    def _standing(self, bot: str) -> Standing | None:
        row = self._conn().execute("SELECT name, rating, rated_games FROM bots WHERE name = ?", (bot,)).fetchone()
        return Standing(bot=row[0], rating=row[1], rated_games=row[2]) if row else None

    def _rating_history(self, bot: str, limit: int | None, before: int | None) -> list[RatingEntry]:
        """Each seat's rated games of the bot by its count of rated games before them, newest
        first, the two merged. Games rated before a ratings reset share the index (their counts
        began at 0 too) and are passed over: at most one a reset for each count."""
        db = self._conn()
        named = db.execute("SELECT name FROM bots WHERE name = ?", (bot,)).fetchone()
        if named is None:
            return []
        seat = ("SELECT * FROM (SELECT id, seat{0}, rating{0}_before, rating{0}_after, games{0}_before, ended"
                f" FROM games WHERE seat{{0}} = ? AND games{{0}}_before < ? AND {_SINCE_RESET}"
                " ORDER BY games{0}_before DESC LIMIT ?)")
        end, count = _NO_END if before is None else before, -1 if limit is None else limit
        rows = db.execute(
            f"{seat.format(0)} UNION ALL {seat.format(1)} ORDER BY 5 DESC LIMIT ?",
            (named[0], end, count, named[0], end, count, count),
        ).fetchall()
        return [
            RatingEntry(game_id=r[0], bot=r[1], rating_before=r[2], rating_after=r[3], games_before=r[4], at=r[5] or "")
            for r in reversed(rows)
        ]

    def _rated_results(self) -> list[tuple[str, str, float]]:
        rows = self._conn().execute(
            "SELECT id, seat0, seat1, result FROM games WHERE rated = 1 AND status = 'finished'"
            f" AND finish_seq IS NOT NULL AND {_SINCE_RESET} ORDER BY finish_seq"
        ).fetchall()
        return [(a, b, score_of_seat0(_stored(g, r, unpack_result))) for g, a, b, r in rows]

    def _pair_tallies(self) -> dict[tuple[str, str], tuple[int, int, int]]:
        rows = self._conn().execute("SELECT a, b, wins, draws, losses FROM pair_results").fetchall()
        return {(a, b): (w, d, lost) for a, b, w, d, lost in rows}

    def _ladder_games_since(self, since: str) -> list[tuple[str, str, str]]:
        rows = self._conn().execute(
            "SELECT seat0, seat1, started FROM games WHERE kind = 'ladder' AND started >= ? ORDER BY started",
            (since,),
        ).fetchall()
        return [(a, b, t) for a, b, t in rows]

    def _create_tournament(self, t: TournamentRow) -> None:
        self._conn().execute(
            f"INSERT INTO tournaments ({_TOURNAMENT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (t.tournament_id, t.name, encode_json(t.definition), t.state, t.created, t.started, t.ended,
             encode_json(t.schedule)),
        )

    def _get_tournament(self, tournament_id: str) -> TournamentRow | None:
        row = self._conn().execute(f"SELECT {_TOURNAMENT_COLUMNS} FROM tournaments WHERE id = ?",
                                   (tournament_id,)).fetchone()
        return _tournament_row(row) if row else None

    def _list_tournaments(self, states: Sequence[str] | None, before: tuple[str, str] | None,
                          limit: int | None) -> list[TournamentRow]:
        where: list[str] = []
        args: list[Any] = []
        if states is not None:
            where.append(f"state IN ({', '.join('?' * len(states))})")
            args += states
        if before is not None:
            where.append("(created < ? OR (created = ? AND rowid < (SELECT rowid FROM tournaments WHERE id = ?)))")
            args += [before[0], before[0], before[1]]
        sql = f"SELECT {_TOURNAMENT_COLUMNS} FROM tournaments"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created DESC, rowid DESC"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        return [_tournament_row(r) for r in self._conn().execute(sql, args).fetchall()]

    def _update_tournament(self, t: TournamentRow, expected_state: str) -> bool:
        cur = self._conn().execute(
            "UPDATE tournaments SET state = ?, started = ?, ended = ?, schedule = ? WHERE id = ? AND state = ?",
            (t.state, t.started, t.ended, encode_json(t.schedule), t.tournament_id, expected_state),
        )
        return cur.rowcount == 1

    def _set_tournament_state(self, t: TournamentRow, expected_state: str) -> bool:
        cur = self._conn().execute(
            "UPDATE tournaments SET state = ?, started = ?, ended = ? WHERE id = ? AND state = ?",
            (t.state, t.started, t.ended, t.tournament_id, expected_state),
        )
        return cur.rowcount == 1

    def _tournament_games(self, tournament_id: str, records: bool, finished: bool, after_slot: int,
                          limit: int) -> list[GameRow]:
        columns = _GAME_COLUMNS if records else _SUMMARY_COLUMNS
        status = " AND status = 'finished'" if finished else ""
        rows = self._conn().execute(
            f"SELECT {columns} FROM games WHERE tournament_id = ? AND slot > ?{status}"
            " ORDER BY slot, started, rowid LIMIT ?",
            (tournament_id, after_slot, limit),
        ).fetchall()
        return [_game_row(r) for r in rows]

    def _open_pairs(self, pair_ids: Sequence[str] | None) -> list[OpenPair]:
        sql = "SELECT pair_id, first_game, return_game FROM open_pairs"
        if pair_ids is None:
            rows = self._conn().execute(sql + " ORDER BY pair_id").fetchall()
        else:
            rows = []
            ids = sorted(set(pair_ids))
            for start in range(0, len(ids), _IN_CHUNK):
                chunk = ids[start:start + _IN_CHUNK]
                rows += self._conn().execute(sql + f" WHERE pair_id IN ({', '.join('?' * len(chunk))})"
                                             " ORDER BY pair_id", chunk).fetchall()
        return [OpenPair(pair_id=p, first_game=f, return_game=r) for p, f, r in rows]

    def _tournament_states(self, tournament_ids: Sequence[str]) -> dict[str, str]:
        ids = sorted(set(tournament_ids))
        states: dict[str, str] = {}
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = ids[start:start + _IN_CHUNK]
            states.update(self._conn().execute(
                f"SELECT id, state FROM tournaments WHERE id IN ({', '.join('?' * len(chunk))})", chunk).fetchall())
        return states

    def _tournament_slots(self, tournament_id: str, slots: Sequence[int]) -> list[GameRow]:
        wanted = sorted(set(slots))
        rows: list[tuple[Any, ...]] = []
        for start in range(0, len(wanted), _IN_CHUNK):
            chunk = wanted[start:start + _IN_CHUNK]
            rows += self._conn().execute(
                f"SELECT {_SUMMARY_COLUMNS} FROM games WHERE tournament_id = ? AND slot IN ({', '.join('?' * len(chunk))})"
                " ORDER BY slot, started, rowid", (tournament_id, *chunk),
            ).fetchall()
        return [_game_row(r) for r in rows]

    def _reset_ratings(self, rating: float) -> None:
        with self._transaction() as db:
            db.execute("DELETE FROM pair_results")
            db.execute("UPDATE bots SET rating = ?, rated_games = 0", (rating,))
            db.execute(
                "INSERT OR REPLACE INTO ladder_settings (key, value)"
                " SELECT 'rated_since', CAST(COALESCE(MAX(finish_seq), 0) AS TEXT) FROM games"
            )

    def _ping(self) -> None:
        self._conn().execute("SELECT 1").fetchone()

    def _close(self) -> None:
        if self._db is not None:
            try:
                self._db.close()
            except sqlite3.Error:
                pass
            self._db = None

    # ------------------------------------------------------------------ the async interface

    async def open(self) -> None:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite")
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._open)

    async def close(self) -> None:
        if self._executor is None:
            return
        self._opened = False
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._close)
        self._executor.shutdown(wait=True)
        self._executor = None

    async def claim_database(self, shared: bool, wait: float) -> None:
        """Nothing: one file has one server, which ``mandala serve`` claims before it opens it."""

    async def ping(self) -> None:
        await self._run(self._ping)

    async def create_bot(self, name: str, token_hash: str, created: str, rating: float = INITIAL_RATING) -> BotRow:
        return await self._run(self._create_bot, name, token_hash, created, rating)

    async def set_ladder(self, bot: str, ladder: LadderStanding, only_from: LadderStanding | None = None) -> None:
        await self._run(self._set_ladder, bot, ladder, only_from)

    async def games_of(self, bot: str, limit: int, *, telemetry: bool = False) -> list[GameRow]:
        return await self._run(self._games_of, bot, limit, telemetry)

    async def count_games(self, which: GameFilter) -> int:
        return await self._run(self._count_games, which)

    async def export_games(self, which: GameFilter, after: tuple[str, str] | None, limit: int) -> list[GameRow]:
        return await self._run(self._export_games, which, after, limit)

    async def export_start(self, which: GameFilter, last: int) -> tuple[str, str] | None:
        return await self._run(self._export_start, which, last)

    async def get_setting(self, key: str) -> str | None:
        return await self._run(self._get_setting, key)

    async def put_setting(self, key: str, value: str) -> None:
        await self._run(self._put_setting, key, value)

    async def bot_by_token_hash(self, token_hash: str) -> BotRow | None:
        return await self._run(self._bot_where, "token_hash", token_hash)

    async def replace_token_hash(self, bot: str, old: str, new: str) -> bool:
        return await self._run(self._replace_token_hash, bot, old, new)

    async def bot_by_name(self, name: str) -> BotRow | None:
        return await self._run(self._bot_where, "name", name)

    async def list_bots(self) -> list[BotRow]:
        return await self._run(self._list_bots)

    async def write_games(self, writes: Sequence[Write]) -> frozenset[str]:
        return await self._run(self._write_games, list(writes))

    async def claim_game(self, game_id: str, epoch: int, host: str) -> Claim | None:
        return await self._run(self._claim_game, game_id, epoch, host)

    async def abandon_game(self, game_id: str, epoch: int, ended: str) -> bool:
        return await self._run(self._abandon_game, game_id, epoch, ended)

    async def running_games(self) -> list[RunningGame]:
        return await self._run(self._running_games)

    async def get_game(self, game_id: str) -> GameRow | None:
        return await self._run(self._get_game, game_id)

    async def list_games(self, status: GameList | None, limit: int, before: tuple[str, str] | None = None,
                         bot: str | None = None) -> list[GameRow]:
        return await self._run(self._list_games, status, limit, before, bot)

    async def abort_running(self, ended: str, game_ids: Sequence[str] | None = None) -> int:
        return await self._run(self._abort_running, ended, game_ids)

    async def standings(self) -> list[Standing]:
        return await self._run(self._standings)

    async def standing(self, bot: str) -> Standing | None:
        return await self._run(self._standing, bot)

    async def rating_history(self, bot: str, limit: int | None = None, before: int | None = None) -> list[RatingEntry]:
        return await self._run(self._rating_history, bot, limit, before)

    async def rated_results(self) -> list[tuple[str, str, float]]:
        return await self._run(self._rated_results)

    async def pair_tallies(self) -> dict[tuple[str, str], tuple[int, int, int]]:
        return await self._run(self._pair_tallies)

    async def ladder_games_since(self, since: str) -> list[tuple[str, str, str]]:
        return await self._run(self._ladder_games_since, since)

    async def create_tournament(self, row: TournamentRow) -> None:
        await self._run(self._create_tournament, row)

    async def get_tournament(self, tournament_id: str) -> TournamentRow | None:
        return await self._run(self._get_tournament, tournament_id)

    async def list_tournaments(self, states: Sequence[str] | None = None, *, before: tuple[str, str] | None = None,
                               limit: int | None = None) -> list[TournamentRow]:
        return await self._run(self._list_tournaments, states, before, limit)

    async def update_tournament(self, row: TournamentRow, expected_state: str) -> bool:
        return await self._run(self._update_tournament, row, expected_state)

    async def set_tournament_state(self, row: TournamentRow, expected_state: str) -> bool:
        return await self._run(self._set_tournament_state, row, expected_state)

    async def tournament_games(self, tournament_id: str, *, records: bool = False, finished: bool = False,
                               after_slot: int = -1, limit: int = 1 << 30) -> list[GameRow]:
        return await self._run(self._tournament_games, tournament_id, records, finished, after_slot, limit)

    async def open_pairs(self, pair_ids: Sequence[str] | None = None) -> list[OpenPair]:
        return await self._run(self._open_pairs, pair_ids)

    async def tournament_states(self, tournament_ids: Sequence[str]) -> dict[str, str]:
        return await self._run(self._tournament_states, tournament_ids)

    async def tournament_slots(self, tournament_id: str, slots: Sequence[int]) -> list[GameRow]:
        return await self._run(self._tournament_slots, tournament_id, slots)

    async def reset_ratings(self, rating: float = INITIAL_RATING) -> None:
        await self._run(self._reset_ratings, rating)
