"""Persistence behind one interface (``base.Storage``); SQLite now, PostgreSQL later."""

from .base import BotRow, GameRow, GameStatus, NameTaken, Storage

__all__ = ["BotRow", "GameRow", "GameStatus", "NameTaken", "Storage"]
