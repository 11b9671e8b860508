"""Which bot is connected on which connection (at most one live connection per bot).

Games and challenges address bots by name and look the connection up here at send time,
so a bot that reconnects, or is replaced by a new connection, keeps receiving its frames.
"""

from __future__ import annotations

from .connection import Connection


class Presence:
    """Live connections: bots by name, plus every open connection (for counts and shutdown)."""

    def __init__(self) -> None:
        self._bots: dict[str, Connection] = {}
        self.connections: set[Connection] = set()

    def attach(self, name: str, conn: Connection) -> Connection | None:
        """Make ``conn`` the bot's connection; returns the connection it replaces, if any."""
        old = self._bots.get(name)
        self._bots[name] = conn
        return old if old is not conn else None

    def detach(self, name: str, conn: Connection) -> bool:
        """Forget ``conn`` if it is still the bot's connection (False if it was replaced)."""
        if self._bots.get(name) is conn:
            del self._bots[name]
            return True
        return False

    def get(self, name: str) -> Connection | None:
        return self._bots.get(name)

    def is_connected(self, name: str) -> bool:
        return name in self._bots

    @property
    def bot_count(self) -> int:
        return len(self._bots)
