"""The spool: finished games the database could not take yet, kept in a file of their own.

When a finished game's write fails, its row is appended here and fsynced before its
``game_over`` is sent, so a game a bot was told had finished survives both the outage and a
crash during it. The file should live on another disk than the database (``spool_path``): a
spool beside a full database fails with it, and then ``game_over`` waits until one of the two
takes the game.

Format: JSON Lines. The first line names the database the games belong to,
``{"spool": 1, "db": "…"}``; each further line is one :class:`~server.storage.GameRow`.
A restart replays the lines in order before anything else; a last line cut short by a crash
was never fsynced, so never announced, and is dropped. Everything here blocks on the disk:
call it from a worker thread.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import msgspec

from ..storage import GameRow, is_postgres_url

SPOOL_FORMAT = 1


class SpoolError(Exception):
    """The spool cannot be used as it is (it belongs to another database, or is corrupt)."""


class _Header(msgspec.Struct, frozen=True):
    spool: int
    db: str


def database_identity(db: str) -> str:
    """The database a spool belongs to, without secrets: a PostgreSQL URL less its password,
    or a SQLite file's absolute path."""
    if is_postgres_url(db):
        parts = urlsplit(db)
        host = parts.hostname or ""
        netloc = f"{parts.username}@{host}" if parts.username else host
        if parts.port:
            netloc += f":{parts.port}"
        return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
    return str(Path(db.removeprefix("sqlite://")).resolve())


def default_spool_path(db: str) -> str:
    """Beside a SQLite file; ``mandala-spool.jsonl`` in the working directory for PostgreSQL.
    Set ``spool_path`` to a file on another disk to survive a full or failed database disk."""
    if is_postgres_url(db):
        return "mandala-spool.jsonl"
    return db.removeprefix("sqlite://") + ".spool"


class Spool:
    """One spool file for one database."""

    def __init__(self, path: str | Path, db: str) -> None:
        self.path = Path(path)
        self.db = database_identity(db)
        self._encode = msgspec.json.Encoder().encode
        self._rows = msgspec.json.Decoder(GameRow).decode

    def load(self) -> list[GameRow]:
        """The spooled games in the order they were spooled. A torn last line is cut off
        (so later appends start on a line of their own); a spool of another database, or a
        broken line before the last, raises :class:`SpoolError`."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        if not data:
            return []
        complete = data[: data.rfind(b"\n") + 1]
        if len(complete) != len(data):
            with self.path.open("r+b") as f:
                f.truncate(len(complete))
                f.flush()
                os.fsync(f.fileno())
        lines = complete.splitlines()
        if not lines:
            return []
        try:
            header = msgspec.json.decode(lines[0], type=_Header)
        except msgspec.DecodeError as e:
            raise SpoolError(f"{self.path}: not a spool file ({e})") from None
        if header.spool != SPOOL_FORMAT:
            raise SpoolError(f"{self.path}: spool format {header.spool}, this server reads {SPOOL_FORMAT}")
        if header.db != self.db:
            raise SpoolError(
                f"{self.path} holds games for {header.db}, not {self.db}: start the server on that database "
                "to store them, or move the file away"
            )
        rows = []
        for n, line in enumerate(lines[1:], start=2):
            try:
                rows.append(self._rows(line))
            except msgspec.DecodeError as e:
                raise SpoolError(f"{self.path}:{n}: {e}") from None
        return rows

    def append(self, rows: list[GameRow]) -> None:
        """Append ``rows`` and fsync: when this returns they survive a crash. Raises
        ``OSError`` if the spool's own disk fails."""
        new = not self.path.exists() or self.path.stat().st_size == 0
        chunks = [self._encode(_Header(SPOOL_FORMAT, self.db))] if new else []
        chunks.extend(self._encode(row) for row in rows)
        data = b"\n".join(chunks) + b"\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            except OSError:
                os.ftruncate(fd, size)  # no torn line for the next append to continue
                raise
        finally:
            os.close(fd)
        if new:
            self._sync_dir()

    def clear(self) -> None:
        """Empty the spool once every game in it is stored."""
        if not self.path.exists():
            return
        with self.path.open("r+b") as f:
            f.truncate(0)
            f.flush()
            os.fsync(f.fileno())

    def _sync_dir(self) -> None:
        """fsync the directory, so a newly created spool file itself survives a crash."""
        fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
