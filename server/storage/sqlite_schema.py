"""SQLite's schema history: the migrations, in order, and the schema version they reach.

``SqliteStorage`` runs them on open (``sqlite.py``); this module only says what each one does.
A shipped migration never changes: a new one is appended.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import msgspec

from .base import OPEN_PAIRS, RATING_COLUMNS, SEASON_INDEXES
from .packing import pack_record, pack_telemetry


def _compact_stored_records(db: sqlite3.Connection) -> None:
    """Migration 8: every record and telemetry stored as JSON text, compacted in place."""
    last = 0
    while True:
        rows = db.execute(
            "SELECT rowid, record, telemetry FROM games WHERE rowid > ?"
            " AND (typeof(record) = 'text' OR typeof(telemetry) = 'text') ORDER BY rowid LIMIT 1000",
            (last,),
        ).fetchall()
        if not rows:
            return
        for rowid, record, telemetry in rows:
            packed = pack_record(msgspec.json.decode(record)) if isinstance(record, str) else None
            db.execute(
                "UPDATE games SET record = COALESCE(?, record), telemetry = ? WHERE rowid = ?",
                (packed,
                 pack_telemetry(msgspec.json.decode(telemetry)) if isinstance(telemetry, str) else telemetry, rowid),
            )
        last = rows[-1][0]


def _sqlite_3_35(db: sqlite3.Connection) -> None:
    """Migration 9 drops a column and updates from a join: SQLite 3.35 or newer."""
    if sqlite3.sqlite_version_info < (3, 35):
        raise RuntimeError(f"upgrading the database to schema 9 needs SQLite 3.35 or newer, not {sqlite3.sqlite_version}")


_SINCE_RESET_V7 = "finish_seq > COALESCE((SELECT CAST(value AS INTEGER) FROM ladder_settings WHERE key = 'rated_since'), 0)"
"""Migration 7's "rated since the last reset" (a shipped migration never changes)."""

MIGRATIONS: list[list[str | Callable[[sqlite3.Connection], None]]] = [
    # 1: bots and games (the schema from before migrations; IF NOT EXISTS so a file made then
    # is adopted as version 1).
    [
        """CREATE TABLE IF NOT EXISTS bots (
            name        TEXT NOT NULL UNIQUE COLLATE NOCASE,
            token_hash  TEXT NOT NULL UNIQUE,
            created     TEXT NOT NULL
        )""",
        """CREATE TABLE IF NOT EXISTS games (
            id           TEXT PRIMARY KEY,
            players      TEXT NOT NULL,
            seat0        TEXT NOT NULL,
            seat1        TEXT NOT NULL,
            status       TEXT NOT NULL,
            rated        INTEGER NOT NULL,
            first_player INTEGER NOT NULL,
            ply          INTEGER NOT NULL,
            record       TEXT,
            result       TEXT,
            end_reason   TEXT,
            started      TEXT NOT NULL,
            ended        TEXT
        )""",
        "CREATE INDEX IF NOT EXISTS games_status ON games (status, started)",
        "CREATE INDEX IF NOT EXISTS games_seat0 ON games (seat0)",
        "CREATE INDEX IF NOT EXISTS games_seat1 ON games (seat1)",
    ],
    # 2: the ladder. Each bot's Elo state lives on its row; rating_history has one row per
    # rated game and bot; games.finish_seq orders finished rated games for a replay.
    [
        "ALTER TABLE bots ADD COLUMN rating REAL NOT NULL DEFAULT 1500",
        "ALTER TABLE bots ADD COLUMN rated_games INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE games ADD COLUMN finish_seq INTEGER",
        """CREATE TABLE rating_history (
            id            INTEGER PRIMARY KEY AUTOINCREMENT,
            game_id       TEXT NOT NULL REFERENCES games (id),
            bot           TEXT NOT NULL COLLATE NOCASE,
            rating_before REAL NOT NULL,
            rating_after  REAL NOT NULL,
            games_before  INTEGER NOT NULL,
            at            TEXT NOT NULL,
            UNIQUE (game_id, bot)
        )""",
        "CREATE INDEX rating_history_bot ON rating_history (bot, id)",
        "CREATE INDEX games_finish_seq ON games (finish_seq)",
    ],
    # 3: matchmaking. Why each game was started and its duplicate pair; each bot's place on
    # the ladder; ladder settings that outlive a restart (paused, the last ratings reset).
    [
        "ALTER TABLE games ADD COLUMN kind TEXT NOT NULL DEFAULT 'challenge'",
        "ALTER TABLE games ADD COLUMN pair_id TEXT",
        "ALTER TABLE bots ADD COLUMN ladder TEXT NOT NULL DEFAULT 'new'",
        "CREATE TABLE ladder_settings (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    ],
    # 4: tournaments. A tournament game names its tournament and its slot in the schedule;
    # ladder games are found by start time (for a games-per-hour limit).
    [
        "ALTER TABLE games ADD COLUMN tournament_id TEXT",
        "ALTER TABLE games ADD COLUMN slot INTEGER",
        "CREATE INDEX games_tournament ON games (tournament_id, slot)",
        "CREATE INDEX games_kind_started ON games (kind, started)",
        """CREATE TABLE tournaments (
            id          TEXT PRIMARY KEY,
            name        TEXT NOT NULL,
            definition  TEXT NOT NULL,
            state       TEXT NOT NULL,
            created     TEXT NOT NULL,
            started     TEXT,
            ended       TEXT,
            schedule    TEXT NOT NULL
        )""",
    ],
    # 5: bot authors' tools. What the server measured of each seat (think times, refused
    # answers, time-outs, disconnects) stored with the game; exports read games in the order
    # they started.
    [
        "ALTER TABLE games ADD COLUMN telemetry TEXT",
        "CREATE INDEX games_started ON games (started, id)",
    ],
    # 6: games that survive their node. In a cluster each running game names its host and
    # epoch (bumped by each takeover), keeps what it was dealt from, and logs its moves
    # until its last row is stored, so another node can rebuild it (``server/cluster/takeover.py``).
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
            think_ms REAL NOT NULL,
            PRIMARY KEY (game_id, ply)
        )""",
    ],
    # 7: a season's standings. Wins, draws and losses of each pair of bots since the last
    # ratings reset, kept as each rated game is stored (the ladder reads these, not the games);
    # filled here from the rated games already stored.
    [
        """CREATE TABLE pair_results (
            a      TEXT NOT NULL,
            b      TEXT NOT NULL,
            wins   INTEGER NOT NULL,
            draws  INTEGER NOT NULL,
            losses INTEGER NOT NULL,
            PRIMARY KEY (a, b)
        )""",
        f"""INSERT INTO pair_results (a, b, wins, draws, losses)
            SELECT a, b, SUM(w = 1), SUM(w IS NULL), SUM(w = 0) FROM (
                SELECT MIN(seat0, seat1) AS a, MAX(seat0, seat1) AS b,
                       (json_extract(result, '$.winner') = 0) = (seat0 < seat1) AS w
                FROM games WHERE rated = 1 AND status = 'finished' AND finish_seq IS NOT NULL AND {_SINCE_RESET_V7})
            GROUP BY a, b""",
    ],
    # 8: compact records (``mandala/compact.py``): a finished game's record in about 200
    # bytes instead of 6 KB and its telemetry compressed, in the same columns (as BLOBs); the
    # ones stored as JSON are compacted in place.
    [
        _compact_stored_records,
        # Lists in pages, newest first, through an index whatever their filter: by status, by bot.
        "CREATE INDEX games_status_started ON games (status, started, id)",
        "CREATE INDEX games_seat0_started ON games (seat0, started, id)",
        "CREATE INDEX games_seat1_started ON games (seat1, started, id)",
        "DROP INDEX games_status",
        "DROP INDEX games_seat0",
        "DROP INDEX games_seat1",
    ],
    # 9: a season in under a kilobyte a game. Each rated game keeps its two Elo changes in its
    # own row (rating_history cost two rows and two indexes a game; a bot's changes are found
    # through games_seat*_rated, its n-th rated game by n); the players are the seats; results
    # are packed (``server/storage/packing.py``) from now on; indexes only where a list needs
    # them: rare statuses and tournament games through partial ones, the last hour's ladder
    # games by start time (games_started).
    [
        _sqlite_3_35,
        *(f"ALTER TABLE games ADD COLUMN {c} {'INTEGER' if c.startswith('games') else 'REAL'}"
          for c in RATING_COLUMNS.split(", ")),
        *(f"""UPDATE games SET rating{seat}_before = h.rating_before, rating{seat}_after = h.rating_after,
                               games{seat}_before = h.games_before
              FROM rating_history AS h WHERE h.game_id = games.id AND h.bot = games.seat{seat}""" for seat in (0, 1)),
        "DROP TABLE rating_history",
        "ALTER TABLE games DROP COLUMN players",
        *SEASON_INDEXES,
    ],
    # 10: records held while their deal is still to be played. A duplicate pair whose first
    # game's record waits for its return game (``server/games/holds.py``), kept by the games'
    # own rows (``SqliteStorage._write_games``) and closed when the pair is given up.
    [
        OPEN_PAIRS,
    ],
]
"""Applied in order on open, each in its own transaction with its number in ``schema_version``.
Append new ones; never edit one that has shipped."""

SCHEMA_VERSION = len(MIGRATIONS)
