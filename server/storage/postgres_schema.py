"""PostgreSQL's schema history: the migrations, in order, and the schema version they reach.

``PostgresStorage`` runs them on open (``postgres.py``); each step says what it adds beside
SQLite's (``sqlite_schema.py``), where its purpose is told. A shipped migration never changes:
a new one is appended.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .base import OPEN_PAIRS, RATING_COLUMNS, SEASON_INDEXES
from .packing import pack_record, pack_telemetry

_SINCE_RESET_V7 = "finish_seq > COALESCE((SELECT value::bigint FROM ladder_settings WHERE key = 'rated_since'), 0)"
"""Migration 7's "rated since the last reset" (a shipped migration never changes)."""


async def _times_as_written(conn: Any) -> None:
    """Migration 9 converts the games' times to milliseconds: each must be as the server
    writes times (to the millisecond, in UTC), or the conversion would change it."""
    bad = await conn.fetchval(
        r"SELECT id FROM games WHERE started !~ $1 OR ended !~ $1 LIMIT 1", r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
    if bad is not None:
        raise RuntimeError(f"game {bad}: its start or end time is not as this server writes times "
                           "(2026-01-31T12:00:00.000Z); fix it before upgrading")


async def _compact_stored_records(conn: Any) -> None:
    """Migration 8: every record and telemetry stored as JSON, compacted in place."""
    last = ""
    while True:
        rows = await conn.fetch(
            "SELECT id, record::text AS record, telemetry FROM games WHERE id > $1"
            " AND (record IS NOT NULL OR telemetry IS NOT NULL) ORDER BY id LIMIT 1000", last,
        )
        if not rows:
            return
        updates = []
        for r in rows:
            packed = pack_record(msgspec.json.decode(r["record"])) if r["record"] is not None else None
            tel = pack_telemetry(msgspec.json.decode(r["telemetry"])) if r["telemetry"] is not None else None
            updates.append((r["id"], packed, tel))
        await conn.executemany(
            "UPDATE games SET record_z = $2, record = CASE WHEN $2::bytea IS NULL THEN record END,"
            " telemetry_z = COALESCE($3, telemetry_z), telemetry = NULL WHERE id = $1", updates,
        )
        last = rows[-1]["id"]


MIGRATIONS: list[list[Any]] = [
    # 1: bots and games.
    [
        """CREATE TABLE bots (
            name        TEXT NOT NULL,
            token_hash  TEXT NOT NULL UNIQUE,
            created     TEXT NOT NULL
        )""",
        "CREATE UNIQUE INDEX bots_name ON bots (lower(name))",
        """CREATE TABLE games (
            id           TEXT PRIMARY KEY,
            seq          BIGSERIAL,
            players      JSONB NOT NULL,
            seat0        TEXT NOT NULL,
            seat1        TEXT NOT NULL,
            status       TEXT NOT NULL,
            rated        BOOLEAN NOT NULL,
            first_player INTEGER NOT NULL,
            ply          INTEGER NOT NULL,
            record       JSONB,
            result       JSONB,
            end_reason   TEXT,
            started      TEXT NOT NULL,
            ended        TEXT
        )""",
        "CREATE INDEX games_status ON games (status, started)",
        "CREATE INDEX games_seat0 ON games (seat0)",
        "CREATE INDEX games_seat1 ON games (seat1)",
    ],
    # 2: the ladder (see sqlite_schema.py).
    [
        "ALTER TABLE bots ADD COLUMN rating DOUBLE PRECISION NOT NULL DEFAULT 1500",
        "ALTER TABLE bots ADD COLUMN rated_games INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE games ADD COLUMN finish_seq BIGINT",
        "CREATE SEQUENCE games_finish_order",
        """CREATE TABLE rating_history (
            id            BIGSERIAL PRIMARY KEY,
            game_id       TEXT NOT NULL REFERENCES games (id),
            bot           TEXT NOT NULL,
            rating_before DOUBLE PRECISION NOT NULL,
            rating_after  DOUBLE PRECISION NOT NULL,
            games_before  INTEGER NOT NULL,
            at            TEXT NOT NULL,
            UNIQUE (game_id, bot)
        )""",
        "CREATE INDEX rating_history_bot ON rating_history (lower(bot), id)",
        "CREATE INDEX games_finish_seq ON games (finish_seq)",
    ],
    # 3: matchmaking (see sqlite_schema.py).
    [
        "ALTER TABLE games ADD COLUMN kind TEXT NOT NULL DEFAULT 'challenge'",
        "ALTER TABLE games ADD COLUMN pair_id TEXT",
        "ALTER TABLE bots ADD COLUMN ladder TEXT NOT NULL DEFAULT 'new'",
        "CREATE TABLE ladder_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    ],
    # 4: tournaments (see sqlite_schema.py).
    [
        "ALTER TABLE games ADD COLUMN tournament_id TEXT",
        "ALTER TABLE games ADD COLUMN slot INTEGER",
        "CREATE INDEX games_tournament ON games (tournament_id, slot)",
        "CREATE INDEX games_kind_started ON games (kind, started)",
        """CREATE TABLE tournaments (
            id          TEXT PRIMARY KEY,
            seq         BIGSERIAL,
            name        TEXT NOT NULL,
            definition  JSONB NOT NULL,
            state       TEXT NOT NULL,
            created     TEXT NOT NULL,
            started     TEXT,
            ended       TEXT,
            schedule    JSONB NOT NULL
        )""",
    ],
    # 5: bot authors' tools (see sqlite_schema.py). The telemetry is kept as the text it was written.
    [
        "ALTER TABLE games ADD COLUMN telemetry TEXT",
        "CREATE INDEX games_started ON games (started, id)",
    ],
    # 6: games that survive their node (see sqlite_schema.py).
    [
        "ALTER TABLE games ADD COLUMN host TEXT",
        "ALTER TABLE games ADD COLUMN epoch INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE games ADD COLUMN deal TEXT",
        "ALTER TABLE games ADD COLUMN decision_ms INTEGER",
        """CREATE TABLE game_moves (
            game_id  TEXT NOT NULL,
            ply      INTEGER NOT NULL,
            epoch    INTEGER NOT NULL,
            move     TEXT NOT NULL,
            think_ms DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (game_id, ply)
        )""",
    ],
    # 7: a season's standings (see sqlite_schema.py). Names compare by code point ("C"), as Python's do.
    [
        """CREATE TABLE pair_results (
            a      TEXT COLLATE "C" NOT NULL,
            b      TEXT COLLATE "C" NOT NULL,
            wins   INTEGER NOT NULL,
            draws  INTEGER NOT NULL,
            losses INTEGER NOT NULL,
            PRIMARY KEY (a, b)
        )""",
        f"""INSERT INTO pair_results (a, b, wins, draws, losses)
            SELECT a, b, COUNT(*) FILTER (WHERE w), COUNT(*) FILTER (WHERE w IS NULL), COUNT(*) FILTER (WHERE NOT w)
            FROM (SELECT LEAST(seat0 COLLATE "C", seat1 COLLATE "C") AS a, GREATEST(seat0 COLLATE "C", seat1 COLLATE "C") AS b,
                         ((result->>'winner')::int = 0) = (seat0 COLLATE "C" < seat1 COLLATE "C") AS w
                  FROM games WHERE rated AND status = 'finished' AND finish_seq IS NOT NULL AND {_SINCE_RESET_V7}) AS t
            GROUP BY a, b""",
    ],
    # 8: compact records (see sqlite_schema.py): in their own BYTEA columns here (``record`` is jsonb);
    # the records and telemetry stored as JSON are compacted in place.
    [
        "ALTER TABLE games ADD COLUMN record_z BYTEA",
        "ALTER TABLE games ADD COLUMN telemetry_z BYTEA",
        _compact_stored_records,
        "CREATE INDEX games_status_started ON games (status, started, id)",
        "CREATE INDEX games_seat0_started ON games (seat0, started, id)",
        "CREATE INDEX games_seat1_started ON games (seat1, started, id)",
        "DROP INDEX games_status",
        "DROP INDEX games_seat0",
        "DROP INDEX games_seat1",
    ],
    # 9: a season in about a kilobyte a game (see sqlite_schema.py); results packed in their own
    # BYTEA column from now on (``result`` is jsonb).
    [
        *(f"ALTER TABLE games ADD COLUMN {c} {'INTEGER' if c.startswith('games') else 'DOUBLE PRECISION'}"
          for c in RATING_COLUMNS.split(", ")),
        *(f"""UPDATE games SET rating{seat}_before = h.rating_before, rating{seat}_after = h.rating_after,
                               games{seat}_before = h.games_before
              FROM rating_history AS h WHERE h.game_id = games.id AND lower(h.bot) = lower(games.seat{seat})"""
          for seat in (0, 1)),
        "DROP TABLE rating_history",
        "ALTER TABLE games DROP COLUMN players",
        "ALTER TABLE games ADD COLUMN result_z BYTEA",
        *SEASON_INDEXES,
        # The finishing order is the sequence's (a ratings reset reads its last value), and a
        # tournament's games of one slot are told apart by their start, then their id.
        "DROP INDEX games_finish_seq",
        "ALTER TABLE games DROP COLUMN seq",
        # Times in milliseconds since 1970: 8 bytes instead of 25, in the row and in each index
        # that orders by them (a bot's games are inserted at the end of its range of the seat
        # indexes, so their pages stay half full: a 24-byte key cost 100 bytes a game there).
        _times_as_written,
        *(f"ALTER TABLE games ALTER COLUMN {c} TYPE BIGINT USING (extract(epoch FROM {c}::timestamptz) * 1000)::bigint"
          for c in ("started", "ended")),
    ],
    # 10: records held while their deal is still to be played (see sqlite_schema.py).
    [
        OPEN_PAIRS,
    ],
]

SCHEMA_VERSION = len(MIGRATIONS)
