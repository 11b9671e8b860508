"""PostgreSQL storage through asyncpg: the same interface as ``sqlite.py``, its queries, and
the running of the migrations ``postgres_schema.py`` lists.

asyncpg is natively async, so nothing here blocks the event loop; calls share one pool.
Every multi-statement write runs in ``async with conn.transaction()``. Names compare
case-insensitively through a unique index on ``lower(name)`` (SQLite uses COLLATE NOCASE).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import Any

import asyncpg
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
    DatabaseServed,
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
from .packing import (
    iso_of_ms,
    jsonb_order,
    ms_of_iso,
    pack_record,
    pack_result,
    pack_telemetry,
    unpack_record,
    unpack_result,
    unpack_telemetry,
)
from .postgres_schema import MIGRATIONS, SCHEMA_VERSION

log = logging.getLogger(__name__)
CONNECT_TIMEOUT_S = 5.0
"""Connecting gives up after this long (asyncpg's default is a minute)."""
MIGRATION_TIMEOUT_S = 3600.0
"""A migration's statement may take this long (the others give up after COMMAND_TIMEOUT_S)."""
COMMAND_TIMEOUT_S = 10.0
"""A statement gives up after this long, so a server that stopped answering is a failure."""
_MIGRATION_LOCK = 0x4D414E44  # pg_advisory_xact_lock key: one server migrates at a time
SERVE_LOCK = 0x4D4E5356
"""With the schema's ``hashtext``, the advisory lock a serving server holds (``claim_database``)."""
CLAIM_WAIT_S = 30.0
"""How long a start waits for another server's claim to go before it refuses: a server that
was cut off without closing its connection (a host gone, a network cut) is dropped by the
database within about 25 s (``CLAIM_KEEPALIVES``), so a restart in its place gets the claim."""
CLAIM_KEEPALIVES = {"tcp_keepalives_idle": "10", "tcp_keepalives_interval": "5", "tcp_keepalives_count": "3"}
"""The claim's connection is probed by the database after 10 s of silence, and dropped after
three probes unanswered, 5 s apart: its lock does not outlive the server by hours."""

_GAME_COLUMNS = ("id, seat0, seat1, status, rated, first_player, ply, record, result, end_reason, started, ended,"
                 " kind, pair_id, tournament_id, slot, telemetry, host, epoch, deal, decision_ms, record_z, telemetry_z,"
                 " result_z")
_WRITTEN_COLUMNS = f"{_GAME_COLUMNS}, {RATING_COLUMNS}"
_WRITTEN_VALUES = ", ".join(f"${i}::jsonb" if c in ("record", "result") else f"${i}"
                            for i, c in enumerate(_WRITTEN_COLUMNS.split(", "), 1))
_REWRITTEN = ", ".join(f"{c} = EXCLUDED.{c}" for c in [*_WRITTEN_COLUMNS.split(", ")[1:], "finish_seq"])
"""What writing a game's row names: all its columns (the ratings ``NULL`` but in a rated
game's last row), each replaced on a conflict."""
_SUMMARY_COLUMNS = (_GAME_COLUMNS.replace("record,", "NULL AS record,").replace("telemetry,", "NULL AS telemetry,")
                    .replace("deal,", "NULL AS deal,")
                    .replace("record_z, telemetry_z", "NULL AS record_z, NULL AS telemetry_z"))
"""The game columns without the record, the telemetry and the deal (lists need none of them)."""
_HEALTH_COLUMNS = (_GAME_COLUMNS.replace("record,", "NULL AS record,").replace("deal,", "NULL AS deal,")
                   .replace("record_z,", "NULL AS record_z,"))
"""The game columns without the record and the deal (a bot's health reads its telemetry)."""
_TOURNAMENT_COLUMNS = "id, name, definition, state, created, started, ended, schedule"
_BOT_COLUMNS = "name, token_hash, created, ladder"
_SINCE_RESET = "finish_seq > COALESCE((SELECT value::bigint FROM ladder_settings WHERE key = 'rated_since'), 0)"


def _game_row(r: asyncpg.Record) -> GameRow:
    return GameRow(
        game_id=r["id"],
        players=[r["seat0"], r["seat1"]],
        status=r["status"],
        rated=r["rated"],
        first_player=r["first_player"],
        ply=r["ply"],
        record=(jsonb_order(unpack_record(r["id"], r["record_z"])) if r["record_z"] is not None
                else msgspec.json.decode(r["record"]) if r["record"] is not None else None),
        result=_result(r["id"], r["result_z"], r["result"]),
        end_reason=r["end_reason"],
        started=iso_of_ms(r["started"]),
        ended=iso_of_ms(r["ended"]) if r["ended"] is not None else None,
        kind=r["kind"],
        pair_id=r["pair_id"],
        tournament_id=r["tournament_id"],
        slot=r["slot"],
        telemetry=(unpack_telemetry(r["id"], r["telemetry_z"]) if r["telemetry_z"] is not None
                   else msgspec.json.decode(r["telemetry"]) if r["telemetry"] is not None else None),
        host=r["host"],
        epoch=r["epoch"],
        deal=msgspec.json.decode(r["deal"]) if r["deal"] is not None else None,
        decision_ms=r["decision_ms"],
    )


def _result(game_id: str, packed: bytes | None, stored_json: str | None) -> dict[str, Any] | None:
    """A game's result: packed since schema 9, jsonb before (in jsonb's key order either way)."""
    if packed is not None:
        return unpack_result(game_id, packed, jsonb=True)
    return msgspec.json.decode(stored_json) if stored_json is not None else None


def _filter_sql(which: GameFilter, after: tuple[str, str] | None) -> tuple[str, list[Any]]:
    """The ``WHERE`` clause of an export page and its arguments (``$1``, ``$2``, …)."""
    args: list[Any] = [list(which.statuses)]
    where = ["status = ANY($1::text[])"]

    def arg(value: Any) -> str:
        args.append(value)
        return f"${len(args)}"

    if which.bot is not None:
        p = arg(which.bot)
        where.append(f"(seat0 = {p} OR seat1 = {p})")
    if which.kind is not None:
        where.append(f"kind = {arg(which.kind)}")
    for clause, value in (("started >=", which.since), ("started <", which.until), ("ended <=", which.ended_by)):
        if value is not None:
            where.append(f"{clause} {arg(ms_of_iso(value))}")
    if after is not None:
        where.append(f"(started, id) > ({arg(ms_of_iso(after[0]))}, {arg(after[1])})")
    return " AND ".join(where), args


def _tournament_row(r: asyncpg.Record) -> TournamentRow:
    return TournamentRow(tournament_id=r["id"], name=r["name"], definition=msgspec.json.decode(r["definition"]),
                         state=r["state"], created=r["created"], started=r["started"], ended=r["ended"],
                         schedule=msgspec.json.decode(r["schedule"]))


async def _let_go(db: asyncpg.Pool | asyncpg.Connection) -> None:
    """Close a pool or a connection; if the server is gone, drop it without goodbye."""
    try:
        await asyncio.wait_for(db.close(), CONNECT_TIMEOUT_S)
    except (TimeoutError, OSError, asyncpg.PostgresError):
        db.terminate()


class PostgresStorage(OneGameWrites):
    """:class:`~server.storage.base.Storage` on a PostgreSQL database.

    ``schema``, when given, is created if missing and used as the search path (the tests
    give each test its own)."""

    def __init__(self, url: str, *, schema: str | None = None, min_size: int = 1, max_size: int = 10) -> None:
        self.url = url
        self.schema = schema
        self._min_size = min_size
        self._max_size = max_size
        self._pool: asyncpg.Pool | None = None
        self._claim: asyncpg.Connection | None = None
        """The connection holding the advisory lock of :meth:`claim_database` (``None``: not claimed)."""
        self._claimed_shared = False
        self._reclaim: asyncio.Task[None] | None = None
        self._schema_name = schema or "public"

    def _p(self) -> asyncpg.Pool:
        if self._pool is None:
            raise RuntimeError("storage is not open")
        return self._pool

    async def open(self) -> None:
        settings: dict[str, str] = {}
        if self.schema is not None:
            conn = await asyncpg.connect(self.url)
            try:
                await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            finally:
                await conn.close()
            settings["search_path"] = self.schema
        await self.close()  # a start retried after a failure opens afresh
        self._pool = await asyncpg.create_pool(
            self.url, min_size=self._min_size, max_size=self._max_size, server_settings=settings,
            timeout=CONNECT_TIMEOUT_S, command_timeout=COMMAND_TIMEOUT_S,
        )
        try:
            await self._migrate()
        except BaseException:
            await self.close()  # a refused upgrade leaves no connection behind
            raise

    async def _migrate(self) -> None:
        async with self._p().acquire() as conn, conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", _MIGRATION_LOCK)
            await conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            current = await conn.fetchval("SELECT COALESCE(MAX(version), 0) FROM schema_version")
            if current > SCHEMA_VERSION:
                raise SchemaTooNew(f"the database has schema version {current}; this server knows up to "
                                   f"{SCHEMA_VERSION}: it was written by a newer release")
            for version in range(current + 1, SCHEMA_VERSION + 1):
                async with conn.transaction():  # a savepoint per migration
                    if current:  # an upgrade (a new database is created quietly)
                        log.info("migrating the database from schema %d to %d", version - 1, version)
                    for stmt in MIGRATIONS[version - 1]:
                        if callable(stmt):
                            await stmt(conn)
                        else:  # over a season's games a statement may take minutes
                            await conn.execute(stmt, timeout=MIGRATION_TIMEOUT_S)
                    await conn.execute("INSERT INTO schema_version (version) VALUES ($1)", version)

    async def claim_database(self, shared: bool, wait: float) -> None:
        """Hold the database on a connection of its own, by an advisory lock on its schema:
        shared by a cluster's nodes, alone by a single server. The lock goes with the
        connection, so a server that stops, ``kill -9`` included, lets go of it at once, and
        one cut off within about 25 s (:data:`CLAIM_KEEPALIVES`); a start waits ``wait``
        seconds, at most :data:`CLAIM_WAIT_S`, before it refuses with :class:`DatabaseServed`."""
        if self._claim is not None and not self._claim.is_closed():
            return
        self._claimed_shared = shared
        loop = asyncio.get_running_loop()
        deadline = loop.time() + min(wait, CLAIM_WAIT_S)
        said = False
        while True:
            holder = await self._try_claim(shared)
            if holder is None:
                return
            if loop.time() >= deadline:
                mine, theirs = ("a cluster's node", "a single server") if shared else ("a single server", "another server")
                raise DatabaseServed(f"{theirs} ({holder}) serves this database, schema {self._schema_name!r}, and "
                                     f"{mine} may not serve it beside that: stop it first (a cluster's nodes all start "
                                     "with --redis)")
            if not said:
                log.warning("another server (%s) holds the database: waiting up to %g s for it to let go", holder,
                            min(wait, CLAIM_WAIT_S))
                said = True
            await asyncio.sleep(1.0)

    async def _try_claim(self, shared: bool) -> str | None:
        """Take the lock on a new connection (kept in ``_claim``), or say who holds it."""
        settings = dict(CLAIM_KEEPALIVES)
        if self.schema is not None:
            settings["search_path"] = self.schema
        conn = await asyncpg.connect(self.url, timeout=CONNECT_TIMEOUT_S, server_settings=settings,
                                     command_timeout=COMMAND_TIMEOUT_S)
        try:
            self._schema_name = await conn.fetchval("SELECT current_schema()")
            take = "pg_try_advisory_lock_shared" if shared else "pg_try_advisory_lock"
            if await conn.fetchval(f"SELECT {take}($1, hashtext($2))", SERVE_LOCK, self._schema_name):
                self._claim, conn = conn, None
                self._claim.add_termination_listener(self._claim_lost)
                return None
            row = await conn.fetchrow(
                "SELECT host(a.client_addr) AS addr, a.pid, a.backend_start FROM pg_locks l"
                " JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted"
                " AND l.classid::bigint = $1 AND l.objid::bigint = (hashtext($2)::bigint & 4294967295)"
                " AND l.objsubid = 2 ORDER BY a.backend_start LIMIT 1", SERVE_LOCK, self._schema_name)
            if row is None:
                return "it has just let go"
            return (f"connected from {row['addr'] or 'a local socket'} since {row['backend_start']:%Y-%m-%d %H:%M:%S %Z},"
                    f" database process {row['pid']}")
        finally:
            if conn is not None:
                await conn.close()

    def _claim_lost(self, conn: asyncpg.Connection) -> None:
        """The claim's connection closed under a running server (the database restarted, or
        the network between them was cut): take the lock again as soon as it can be had."""
        if conn is self._claim:
            self._claim = None
            self._reclaim = asyncio.get_running_loop().create_task(self._claim_again(), name="claim-database")

    async def _claim_again(self) -> None:
        """Retry the claim every second until it is held again, or say, once, that another
        server took the database meanwhile."""
        failed = False
        while self._claim is None:
            try:
                holder = await self._try_claim(self._claimed_shared)
            except Exception as e:  # not back yet
                if not failed:
                    log.warning("the database is out of reach (%s): its claim is retried every second", e)
                    failed = True
                await asyncio.sleep(1.0)
                continue
            if holder is not None:
                log.error("another server (%s) took the database while it was out of reach: two servers may be "
                          "serving it; stop one", holder)
                return

    async def close(self) -> None:
        reclaim, self._reclaim = self._reclaim, None
        if reclaim is not None:
            reclaim.cancel()
        claim, self._claim = self._claim, None
        if claim is not None:
            await _let_go(claim)
        pool, self._pool = self._pool, None
        if pool is not None:
            await _let_go(pool)

    async def ping(self) -> None:
        await self._p().fetchval("SELECT 1")

    # ------------------------------------------------------------------ bots

    async def create_bot(self, name: str, token_hash: str, created: str, rating: float = INITIAL_RATING) -> BotRow:
        try:
            await self._p().execute(
                "INSERT INTO bots (name, token_hash, created, rating) VALUES ($1, $2, $3, $4)",
                name, token_hash, created, rating,
            )
        except asyncpg.UniqueViolationError:
            raise NameTaken(name) from None
        return BotRow(name, token_hash, created)

    async def bot_by_token_hash(self, token_hash: str) -> BotRow | None:
        r = await self._p().fetchrow(f"SELECT {_BOT_COLUMNS} FROM bots WHERE token_hash = $1", token_hash)
        return BotRow(*r) if r else None

    async def replace_token_hash(self, bot: str, old: str, new: str) -> bool:
        status = await self._p().execute(
            "UPDATE bots SET token_hash = $3 WHERE lower(name) = lower($1) AND token_hash = $2", bot, old, new)
        return bool(status == "UPDATE 1")

    async def bot_by_name(self, name: str) -> BotRow | None:
        r = await self._p().fetchrow(f"SELECT {_BOT_COLUMNS} FROM bots WHERE lower(name) = lower($1)", name)
        return BotRow(*r) if r else None

    async def list_bots(self) -> list[BotRow]:
        rows = await self._p().fetch(f"SELECT {_BOT_COLUMNS} FROM bots ORDER BY created, lower(name)")
        return [BotRow(*r) for r in rows]

    async def set_ladder(self, bot: str, ladder: LadderStanding, only_from: LadderStanding | None = None) -> None:
        await self._p().execute("UPDATE bots SET ladder = $1 WHERE lower(name) = lower($2) AND ladder = coalesce($3, ladder)",
                                ladder, bot, only_from)

    async def games_of(self, bot: str, limit: int, *, telemetry: bool = False) -> list[GameRow]:
        columns = _HEALTH_COLUMNS if telemetry else _SUMMARY_COLUMNS
        seat = f"(SELECT {columns} FROM games WHERE seat{{}} = $1 ORDER BY started DESC, id DESC LIMIT $2)"
        rows = await self._p().fetch(
            f"{seat.format(0)} UNION ALL {seat.format(1)} ORDER BY started DESC, id DESC LIMIT $2", bot, limit,
        )
        return [_game_row(r) for r in rows]

    async def count_games(self, which: GameFilter) -> int:
        where, args = _filter_sql(which, None)
        count: int = await self._p().fetchval(f"SELECT COUNT(*) FROM games WHERE {where}", *args)
        return count

    async def export_games(self, which: GameFilter, after: tuple[str, str] | None, limit: int) -> list[GameRow]:
        where, args = _filter_sql(which, after)
        rows = await self._p().fetch(
            f"SELECT {_GAME_COLUMNS} FROM games WHERE {where} ORDER BY started, id LIMIT ${len(args) + 1}",
            *args, limit,
        )
        return [_game_row(r) for r in rows]

    async def export_start(self, which: GameFilter, last: int) -> tuple[str, str] | None:
        where, args = _filter_sql(which, None)
        row = await self._p().fetchrow(
            f"SELECT started, id FROM games WHERE {where} ORDER BY started DESC, id DESC LIMIT 1 OFFSET ${len(args) + 1}",
            *args, last,
        )
        return (iso_of_ms(row["started"]), row["id"]) if row is not None else None

    async def get_setting(self, key: str) -> str | None:
        value: str | None = await self._p().fetchval("SELECT value FROM ladder_settings WHERE key = $1", key)
        return value

    async def put_setting(self, key: str, value: str) -> None:
        await self._p().execute(
            "INSERT INTO ladder_settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            key, value,
        )

    # ------------------------------------------------------------------ games

    @staticmethod
    async def _write_game(conn: Any, g: GameRow, finish: bool = False, changes: Sequence[RatingChange] = ()) -> None:
        """Insert or replace a game's row; its last one (``finish``) takes the next place in the
        finishing order, keeps a rated game's rating ``changes`` and drops the game's move log,
        in the same statement (one round trip, and no second version of the row to vacuum)."""
        packed = pack_record(g.record)
        order = "nextval('games_finish_order')" if finish else "NULL"
        logged = "WITH logged AS (DELETE FROM game_moves WHERE game_id = $1) " if finish else ""
        await conn.execute(
            f"{logged}INSERT INTO games ({_WRITTEN_COLUMNS}, finish_seq) VALUES ({_WRITTEN_VALUES}, {order})"
            f" ON CONFLICT (id) DO UPDATE SET {_REWRITTEN}",
            g.game_id, g.players[0], g.players[1], g.status, g.rated, g.first_player, g.ply,
            None if packed is not None else encode_json(g.record), None, g.end_reason, ms_of_iso(g.started),
            ms_of_iso(g.ended) if g.ended is not None else None, g.kind, g.pair_id, g.tournament_id, g.slot, None, g.host, g.epoch, encode_json(g.deal),
            g.decision_ms, packed, pack_telemetry(g.telemetry), pack_result(g.result),
            *seat_ratings(g.players, changes),
        )

    async def get_game(self, game_id: str) -> GameRow | None:
        r = await self._p().fetchrow(f"SELECT {_GAME_COLUMNS} FROM games WHERE id = $1", game_id)
        return _game_row(r) if r else None

    async def list_games(self, status: GameList | None, limit: int, before: tuple[str, str] | None = None,
                         bot: str | None = None) -> list[GameRow]:
        where: list[str] = ["TRUE"]
        args: list[Any] = []
        if status == "over":
            where.append("status <> 'running'")
        elif status is not None:
            args.append(status)
            where.append(f"status = ${len(args)}" + ("" if status == "finished" else f" AND {UNFINISHED}"))
        if before is not None:
            args += [ms_of_iso(before[0]), before[1]]
            where.append(f"(started, id) < (${len(args) - 1}, ${len(args)})")
        cond = " AND ".join(where)
        if bot is None:
            rows = await self._p().fetch(
                f"SELECT {_SUMMARY_COLUMNS} FROM games WHERE {cond} ORDER BY started DESC, id DESC LIMIT ${len(args) + 1}",
                *args, limit,
            )
        else:  # each seat through its own index, newest first, then the two merged
            n = len(args)
            seat = (f"(SELECT {_SUMMARY_COLUMNS} FROM games WHERE seat{{}} = ${n + 1} AND {cond}"
                    f" ORDER BY started DESC, id DESC LIMIT ${n + 2})")
            rows = await self._p().fetch(
                f"{seat.format(0)} UNION ALL {seat.format(1)} ORDER BY started DESC, id DESC LIMIT ${n + 2}",
                *args, bot, limit,
            )
        return [_game_row(r) for r in rows]

    async def abort_running(self, ended: str, game_ids: Sequence[str] | None = None) -> int:
        sql = f"UPDATE games SET status = 'aborted', end_reason = 'aborted', ended = $1 WHERE {RUNNING}"
        async with self._p().acquire() as conn, conn.transaction():
            if game_ids is None:
                ids = [r[0] for r in await conn.fetch(sql + " RETURNING id", ms_of_iso(ended))]
            else:
                ids = [r[0] for r in await conn.fetch(sql + " AND id = ANY($2::text[]) RETURNING id", ms_of_iso(ended),
                                                      list(game_ids))]
            await conn.execute("DELETE FROM game_moves WHERE game_id = ANY($1::text[])", ids)
        return len(ids)

    async def claim_game(self, game_id: str, epoch: int, host: str) -> Claim | None:
        async with self._p().acquire() as conn, conn.transaction():
            r = await conn.fetchrow(
                f"UPDATE games SET host = $3, epoch = epoch + 1 WHERE id = $1 AND epoch = $2 AND status = 'running'"
                f" RETURNING {_GAME_COLUMNS}", game_id, epoch, host,
            )
            if r is None:
                return None
            moves = await conn.fetch(
                "SELECT ply, epoch, move, think_ms FROM game_moves WHERE game_id = $1 ORDER BY ply", game_id
            )
        return Claim(row=_game_row(r), moves=[LoggedMove(m[0], m[1], decode_played(m[2]), m[3]) for m in moves])

    async def abandon_game(self, game_id: str, epoch: int, ended: str) -> bool:
        async with self._p().acquire() as conn, conn.transaction():
            tag = await conn.execute(
                "UPDATE games SET status = 'aborted', end_reason = 'aborted', ended = $3, epoch = epoch + 1"
                " WHERE id = $1 AND epoch = $2 AND status = 'running'", game_id, epoch, ms_of_iso(ended),
            )
            if tag.split()[-1] != "1":
                return False
            await conn.execute("DELETE FROM game_moves WHERE game_id = $1", game_id)
        return True

    async def running_games(self) -> list[RunningGame]:
        rows = await self._p().fetch(f"SELECT id, host, epoch FROM games WHERE {RUNNING} ORDER BY id")
        return [RunningGame(r[0], r[1], r[2]) for r in rows]

    # ------------------------------------------------------------------ ratings

    async def _between_game_and_ratings(self) -> None:
        """Does nothing; tests replace it to fail a :meth:`finish_game` half-way."""

    async def write_games(self, writes: Sequence[Write]) -> frozenset[str]:
        moves = [w for w in writes if isinstance(w, MoveWrite)]
        if len(moves) == len(writes):  # the usual batch in a cluster: one statement, one round trip
            return await self._append_moves(self._p(), moves)
        lost: set[str] = set()
        moves = []
        async with self._p().acquire() as conn, conn.transaction():
            for w in writes:
                if isinstance(w, MoveWrite):
                    moves.append(w)
                    continue
                if moves:  # in order: a game's moves before the rows queued after them
                    lost |= await self._append_moves(conn, moves)
                    moves = []
                if isinstance(w, PairClose):
                    await conn.execute(CLOSE_PAIR.format("$1"), w.pair_id)
                elif not w.final:
                    await self._write_game(conn, w.row)
                    if w.row.pair_id is not None:
                        await conn.execute(OPEN_PAIR.format("$1", "$2"), w.row.pair_id, w.row.game_id)
                elif not await self._finish_game(conn, w):
                    lost.add(w.row.game_id)
            if moves:
                lost |= await self._append_moves(conn, moves)
        return frozenset(lost)

    @staticmethod
    async def _append_moves(conn: Any, moves: list[MoveWrite]) -> frozenset[str]:
        """Append moves to their games' logs, those of games still running at the epoch each
        names, in one statement; the games of the others. The games' rows are locked (``FOR
        SHARE``, in id order) until the commit, so a takeover (:meth:`claim_game`, which
        updates them) waits for these moves and reads them, or comes first and these are
        refused. A move stored already (a batch retried after a commit it was not told of)
        counts as stored."""
        ids = sorted({m.game_id for m in moves})
        stored = await conn.fetch(
            """WITH owned AS (SELECT id, epoch FROM games WHERE id = ANY($6::text[]) AND status = 'running'
                              ORDER BY id FOR SHARE)
               INSERT INTO game_moves (game_id, ply, epoch, move, think_ms)
               SELECT m.game_id, m.ply, m.epoch, m.move, m.think_ms
               FROM unnest($1::text[], $2::int[], $3::int[], $4::text[], $5::float8[])
                    AS m (game_id, ply, epoch, move, think_ms)
               JOIN owned ON owned.id = m.game_id AND owned.epoch = m.epoch
               ON CONFLICT (game_id, ply) DO UPDATE SET think_ms = EXCLUDED.think_ms
               RETURNING game_id""",
            [m.game_id for m in moves], [m.move.ply for m in moves], [m.epoch for m in moves],
            [encode_json(m.move.move) for m in moves], [m.move.think_ms for m in moves], ids,
        )
        return frozenset(ids) - {r[0] for r in stored}

    async def _finish_game(self, conn: Any, w: GameWrite) -> bool:
        """Store a game's last row; false (nothing written) if another node runs it now."""
        row = w.row
        stored = await conn.fetchrow("SELECT status, epoch FROM games WHERE id = $1 FOR UPDATE", row.game_id)
        if stored is not None and stored["status"] == "finished":
            return True
        if stored is not None and stored["epoch"] != row.epoch:
            return False
        changes = await self._rate(conn, w)
        await self._write_game(conn, row, finish=True, changes=changes)
        if row.pair_id is not None:
            await conn.execute(CLOSE_PAIR_AT_END.format("$1", "$2", "$3"), row.pair_id, row.game_id, row.status)
        await self._between_game_and_ratings()
        if not changes:
            return True
        pair, counts = pair_counts(row.players[0], row.players[1], score_of_seat0(row.result))
        rated = await conn.fetchval(
            """WITH tally AS (
                   INSERT INTO pair_results (a, b, wins, draws, losses) VALUES ($1, $2, $3, $4, $5)
                   ON CONFLICT (a, b) DO UPDATE SET wins = pair_results.wins + EXCLUDED.wins,
                       draws = pair_results.draws + EXCLUDED.draws, losses = pair_results.losses + EXCLUDED.losses),
               rated AS (
                   UPDATE bots SET rating = c.rating, rated_games = rated_games + 1
                   FROM unnest($6::text[], $7::float8[], $8::int[]) AS c (bot, rating, games_before)
                   WHERE lower(name) = lower(c.bot) AND rated_games = c.games_before RETURNING 1)
               SELECT count(*) FROM rated""",
            *pair, *counts, [c.bot for c in changes], [c.rating_after for c in changes],
            [c.games_before for c in changes],
        )
        if rated != len(changes):
            raise RatingConflict("stored rated_games is not " + ", ".join(f"{c.games_before} for {c.bot}" for c in changes))
        return True

    async def _rate(self, conn: Any, w: GameWrite) -> list[RatingChange]:
        """The rating changes of a rated game's last write, from the bots' stored ratings.

        The bots' rows are locked as they are read (``FOR UPDATE``, in name order, so two
        writers never wait on each other in a circle): in a cluster, two nodes may finish
        games of the same bot at once, and the second must rate from the first's result, not
        from the rating both read before either wrote (its update would then find
        ``rated_games`` moved on and raise :class:`RatingConflict`)."""
        if w.rate is None:
            return []
        rows = await conn.fetch("SELECT name, rating, rated_games FROM bots WHERE lower(name) = ANY($1::text[])"
                                " ORDER BY lower(name) FOR UPDATE", [name.lower() for name in w.row.players])
        stored = {r[0].lower(): Standing(bot=r[0], rating=r[1], rated_games=r[2]) for r in rows}
        a, b = (stored.get(name.lower()) for name in w.row.players)
        if a is None or b is None:
            raise LookupError(f"rated game {w.row.game_id}: bot missing from storage: {w.row.players}")
        return list(w.rate(a, b))

    async def standings(self) -> list[Standing]:
        rows = await self._p().fetch("SELECT name, rating, rated_games FROM bots ORDER BY rating DESC, lower(name)")
        return [Standing(bot=r[0], rating=r[1], rated_games=r[2]) for r in rows]

    async def standing(self, bot: str) -> Standing | None:
        return await self._standing(self._p(), bot)

    @staticmethod
    async def _standing(conn: Any, bot: str) -> Standing | None:
        r = await conn.fetchrow("SELECT name, rating, rated_games FROM bots WHERE lower(name) = lower($1)", bot)
        return Standing(bot=r[0], rating=r[1], rated_games=r[2]) if r else None

    async def rating_history(self, bot: str, limit: int | None = None, before: int | None = None) -> list[RatingEntry]:
        seat = ("(SELECT id, seat{0} AS bot, rating{0}_before, rating{0}_after, games{0}_before AS games_before, ended"
                f" FROM games WHERE seat{{0}} = (SELECT name FROM bots WHERE lower(name) = lower($1))"
                f" AND games{{0}}_before < $2 AND {_SINCE_RESET} ORDER BY games{{0}}_before DESC LIMIT $3)")
        rows = await self._p().fetch(
            f"{seat.format(0)} UNION ALL {seat.format(1)} ORDER BY games_before DESC LIMIT $3",
            bot, 2**31 - 1 if before is None else before, limit,
        )
        return [RatingEntry(game_id=r[0], bot=r[1], rating_before=r[2], rating_after=r[3], games_before=r[4],
                            at=iso_of_ms(r[5]) if r[5] is not None else "") for r in reversed(rows)]

    async def rated_results(self) -> list[tuple[str, str, float]]:
        rows = await self._p().fetch(
            "SELECT id, seat0, seat1, result, result_z FROM games WHERE rated AND status = 'finished'"
            f" AND finish_seq IS NOT NULL AND {_SINCE_RESET} ORDER BY finish_seq"
        )
        return [(r[1], r[2], score_of_seat0(_result(r[0], r[4], r[3]))) for r in rows]

    async def pair_tallies(self) -> dict[tuple[str, str], tuple[int, int, int]]:
        rows = await self._p().fetch("SELECT a, b, wins, draws, losses FROM pair_results")
        return {(r[0], r[1]): (r[2], r[3], r[4]) for r in rows}

    async def ladder_games_since(self, since: str) -> list[tuple[str, str, str]]:
        rows = await self._p().fetch(
            "SELECT seat0, seat1, started FROM games WHERE kind = 'ladder' AND started >= $1 ORDER BY started",
            ms_of_iso(since),
        )
        return [(r[0], r[1], iso_of_ms(r[2])) for r in rows]

    # ------------------------------------------------------------------ tournaments

    async def create_tournament(self, row: TournamentRow) -> None:
        await self._p().execute(
            f"INSERT INTO tournaments ({_TOURNAMENT_COLUMNS}) VALUES ($1, $2, $3::jsonb, $4, $5, $6, $7, $8::jsonb)",
            row.tournament_id, row.name, encode_json(row.definition), row.state, row.created, row.started, row.ended,
            encode_json(row.schedule),
        )

    async def get_tournament(self, tournament_id: str) -> TournamentRow | None:
        r = await self._p().fetchrow(f"SELECT {_TOURNAMENT_COLUMNS} FROM tournaments WHERE id = $1", tournament_id)
        return _tournament_row(r) if r else None

    async def list_tournaments(self, states: Sequence[str] | None = None, *, before: tuple[str, str] | None = None,
                               limit: int | None = None) -> list[TournamentRow]:
        where: list[str] = []
        args: list[Any] = []
        if states is not None:
            args.append(list(states))
            where.append(f"state = ANY(${len(args)}::text[])")
        if before is not None:
            args += [before[0], before[1]]
            where.append(f"(created < ${len(args) - 1} OR (created = ${len(args) - 1}"
                         f" AND seq < (SELECT seq FROM tournaments WHERE id = ${len(args)})))")
        sql = f"SELECT {_TOURNAMENT_COLUMNS} FROM tournaments"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created DESC, seq DESC"
        if limit is not None:
            args.append(limit)
            sql += f" LIMIT ${len(args)}"
        return [_tournament_row(r) for r in await self._p().fetch(sql, *args)]

    async def update_tournament(self, row: TournamentRow, expected_state: str) -> bool:
        tag = await self._p().execute(
            "UPDATE tournaments SET state = $1, started = $2, ended = $3, schedule = $4::jsonb"
            " WHERE id = $5 AND state = $6",
            row.state, row.started, row.ended, encode_json(row.schedule), row.tournament_id, expected_state,
        )
        return bool(tag.split()[-1] == "1")

    async def set_tournament_state(self, row: TournamentRow, expected_state: str) -> bool:
        tag = await self._p().execute(
            "UPDATE tournaments SET state = $1, started = $2, ended = $3 WHERE id = $4 AND state = $5",
            row.state, row.started, row.ended, row.tournament_id, expected_state,
        )
        return bool(tag.split()[-1] == "1")

    async def tournament_games(self, tournament_id: str, *, records: bool = False, finished: bool = False,
                               after_slot: int = -1, limit: int = 1 << 30) -> list[GameRow]:
        columns = _GAME_COLUMNS if records else _SUMMARY_COLUMNS
        status = " AND status = 'finished'" if finished else ""
        rows = await self._p().fetch(
            f"SELECT {columns} FROM games WHERE tournament_id = $1 AND slot > $2{status}"
            " ORDER BY slot, started, id LIMIT $3",
            tournament_id, after_slot, limit,
        )
        return [_game_row(r) for r in rows]

    async def open_pairs(self, pair_ids: Sequence[str] | None = None) -> list[OpenPair]:
        sql = "SELECT pair_id, first_game, return_game FROM open_pairs"
        if pair_ids is None:
            rows = await self._p().fetch(sql + " ORDER BY pair_id")
        else:
            rows = await self._p().fetch(sql + " WHERE pair_id = ANY($1::text[]) ORDER BY pair_id", sorted(set(pair_ids)))
        return [OpenPair(pair_id=r[0], first_game=r[1], return_game=r[2]) for r in rows]

    async def tournament_states(self, tournament_ids: Sequence[str]) -> dict[str, str]:
        rows = await self._p().fetch("SELECT id, state FROM tournaments WHERE id = ANY($1::text[])",
                                     sorted(set(tournament_ids)))
        return {r[0]: r[1] for r in rows}

    async def tournament_slots(self, tournament_id: str, slots: Sequence[int]) -> list[GameRow]:
        rows = await self._p().fetch(
            f"SELECT {_SUMMARY_COLUMNS} FROM games WHERE tournament_id = $1 AND slot = ANY($2::int[])"
            " ORDER BY slot, started, id", tournament_id, sorted(set(slots)),
        )
        return [_game_row(r) for r in rows]

    async def reset_ratings(self, rating: float = INITIAL_RATING) -> None:
        async with self._p().acquire() as conn, conn.transaction():
            # Every bot first, in the order a rated game locks its two (``_rate``): a game another
            # node is storing commits before the pair totals are cleared, so none of it is left.
            await conn.execute("SELECT 1 FROM bots ORDER BY lower(name) FOR UPDATE")
            await conn.execute("DELETE FROM pair_results")
            await conn.execute("UPDATE bots SET rating = $1, rated_games = 0", rating)
            await conn.execute(
                "INSERT INTO ladder_settings (key, value)"
                " SELECT 'rated_since', (CASE WHEN is_called THEN last_value ELSE 0 END)::text FROM games_finish_order"
                " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value"
            )
