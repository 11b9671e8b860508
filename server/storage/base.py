"""The storage interface the server codes against, and the rows it exchanges.

Only this module is imported by the rest of the server, so adding PostgreSQL means writing
one more implementation of :class:`Storage`, nothing else.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

import msgspec

GameStatus = Literal["running", "finished", "aborted"]


class NameTaken(Exception):
    """A bot with that name (compared case-insensitively) exists already."""


class BotRow(msgspec.Struct, frozen=True):
    name: str
    token_hash: str
    created: str
    """ISO 8601, UTC."""


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
    ended: str | None = None
    end_reason: str | None = None
    result: dict[str, Any] | None = None
    """The protocol's GameResult as JSON."""
    record: dict[str, Any] | None = None
    """The R23 record as JSON (absent for games aborted by a server stop)."""


class Storage(Protocol):
    """Everything the server persists. Implementations must not block the event loop."""

    async def open(self) -> None:
        """Connect and create the schema if needed."""

    async def close(self) -> None: ...

    async def create_bot(self, name: str, token_hash: str, created: str) -> BotRow:
        """Insert a bot; raises :class:`NameTaken` if the name is in use."""

    async def bot_by_token_hash(self, token_hash: str) -> BotRow | None: ...

    async def bot_by_name(self, name: str) -> BotRow | None:
        """Case-insensitive lookup; the row carries the canonical spelling."""

    async def list_bots(self) -> list[BotRow]: ...

    async def save_game(self, row: GameRow) -> None:
        """Insert or replace the game with ``row.game_id``."""

    async def get_game(self, game_id: str) -> GameRow | None: ...

    async def list_games(self, status: GameStatus | None, limit: int) -> list[GameRow]:
        """Most recently started first."""

    async def abort_running(self, ended: str) -> int:
        """Mark every ``running`` game ``aborted`` (they died with the last server); returns how many."""
