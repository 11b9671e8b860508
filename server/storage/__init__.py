"""Persistence behind one interface (``base.Storage``): SQLite (default) or PostgreSQL."""

from .base import (
    INITIAL_RATING,
    BotRow,
    GameFilter,
    GameList,
    GameRow,
    GameStatus,
    NameTaken,
    RatingChange,
    RatingConflict,
    RatingEntry,
    Standing,
    Storage,
    TournamentRow,
)

__all__ = [
    "INITIAL_RATING",
    "BotRow",
    "GameFilter",
    "GameList",
    "GameRow",
    "GameStatus",
    "NameTaken",
    "RatingChange",
    "RatingConflict",
    "RatingEntry",
    "Standing",
    "Storage",
    "TournamentRow",
    "is_postgres_url",
    "open_storage",
]


def is_postgres_url(db: str) -> bool:
    return db.startswith(("postgresql://", "postgres://"))


def open_storage(db: str) -> Storage:
    """The backend ``db`` names: a ``postgresql://`` URL, or else a SQLite file path
    (``sqlite:///path`` is accepted too). Not opened yet."""
    if is_postgres_url(db):
        from .postgres import PostgresStorage

        return PostgresStorage(db)
    from .sqlite import SqliteStorage

    return SqliteStorage(db.removeprefix("sqlite://") if db.startswith("sqlite:///") else db)
