"""SQLite storage (stdlib ``sqlite3``) on one dedicated worker thread.

All calls go through a single-thread executor: the event loop never blocks on disk, and the
one connection is only ever used from its own thread, in submission order (a read submitted
after a write sees it).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, Callable, TypeVar

from .base import BotRow, GameRow, GameStatus, NameTaken

T = TypeVar("T")

SCHEMA = """
CREATE TABLE IF NOT EXISTS bots (
    name        TEXT NOT NULL UNIQUE COLLATE NOCASE,
    token_hash  TEXT NOT NULL UNIQUE,
    created     TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS games (
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
);
CREATE INDEX IF NOT EXISTS games_status ON games (status, started);
CREATE INDEX IF NOT EXISTS games_seat0 ON games (seat0);
CREATE INDEX IF NOT EXISTS games_seat1 ON games (seat1);
"""

_GAME_COLUMNS = "id, players, status, rated, first_player, ply, record, result, end_reason, started, ended"


def _game_row(row: tuple[Any, ...]) -> GameRow:
    gid, players, status, rated, first, ply, record, result, reason, started, ended = row
    return GameRow(
        game_id=gid,
        players=json.loads(players),
        status=status,
        rated=bool(rated),
        first_player=first,
        ply=ply,
        record=json.loads(record) if record else None,
        result=json.loads(result) if result else None,
        end_reason=reason,
        started=started,
        ended=ended,
    )


class SqliteStorage:
    """:class:`~server.storage.base.Storage` on one SQLite file in WAL mode."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite")
        self._db: sqlite3.Connection | None = None

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, partial(fn, *args))

    # ------------------------------------------------------------------ runs on the worker thread

    def _open(self) -> None:
        db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("PRAGMA busy_timeout=5000")
        db.executescript(SCHEMA)
        self._db = db

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            raise RuntimeError("storage is not open")
        return self._db

    def _create_bot(self, name: str, token_hash: str, created: str) -> BotRow:
        try:
            self._conn().execute("INSERT INTO bots (name, token_hash, created) VALUES (?, ?, ?)", (name, token_hash, created))
        except sqlite3.IntegrityError:
            raise NameTaken(name) from None
        return BotRow(name, token_hash, created)

    def _bot_where(self, column: str, value: str) -> BotRow | None:
        row = self._conn().execute(f"SELECT name, token_hash, created FROM bots WHERE {column} = ?", (value,)).fetchone()
        return BotRow(*row) if row else None

    def _list_bots(self) -> list[BotRow]:
        rows = self._conn().execute("SELECT name, token_hash, created FROM bots ORDER BY created, name").fetchall()
        return [BotRow(*r) for r in rows]

    def _save_game(self, g: GameRow) -> None:
        self._conn().execute(
            f"INSERT OR REPLACE INTO games ({_GAME_COLUMNS}, seat0, seat1) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                g.game_id, json.dumps(g.players), g.status, int(g.rated), g.first_player, g.ply,
                json.dumps(g.record) if g.record is not None else None,
                json.dumps(g.result) if g.result is not None else None,
                g.end_reason, g.started, g.ended, g.players[0], g.players[1],
            ),
        )

    def _get_game(self, game_id: str) -> GameRow | None:
        row = self._conn().execute(f"SELECT {_GAME_COLUMNS} FROM games WHERE id = ?", (game_id,)).fetchone()
        return _game_row(row) if row else None

    def _list_games(self, status: GameStatus | None, limit: int) -> list[GameRow]:
        if status is None:
            sql, args = f"SELECT {_GAME_COLUMNS} FROM games ORDER BY started DESC, rowid DESC LIMIT ?", (limit,)
        else:
            sql = f"SELECT {_GAME_COLUMNS} FROM games WHERE status = ? ORDER BY started DESC, rowid DESC LIMIT ?"
            args = (status, limit)  # type: ignore[assignment]
        return [_game_row(r) for r in self._conn().execute(sql, args).fetchall()]

    def _abort_running(self, ended: str) -> int:
        cur = self._conn().execute(
            "UPDATE games SET status = 'aborted', end_reason = 'aborted', ended = ? WHERE status = 'running'", (ended,)
        )
        return cur.rowcount

    def _close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    # ------------------------------------------------------------------ the async interface

    async def open(self) -> None:
        await self._run(self._open)

    async def close(self) -> None:
        await self._run(self._close)
        self._executor.shutdown(wait=True)

    async def create_bot(self, name: str, token_hash: str, created: str) -> BotRow:
        return await self._run(self._create_bot, name, token_hash, created)

    async def bot_by_token_hash(self, token_hash: str) -> BotRow | None:
        return await self._run(self._bot_where, "token_hash", token_hash)

    async def bot_by_name(self, name: str) -> BotRow | None:
        return await self._run(self._bot_where, "name", name)

    async def list_bots(self) -> list[BotRow]:
        return await self._run(self._list_bots)

    async def save_game(self, row: GameRow) -> None:
        await self._run(self._save_game, row)

    async def get_game(self, game_id: str) -> GameRow | None:
        return await self._run(self._get_game, game_id)

    async def list_games(self, status: GameStatus | None, limit: int) -> list[GameRow]:
        return await self._run(self._list_games, status, limit)

    async def abort_running(self, ended: str) -> int:
        return await self._run(self._abort_running, ended)
