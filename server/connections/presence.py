"""Which bot is connected on which connection (at most one live connection per bot).

Games and challenges address bots by name and look the connection up here at send time,
so a bot that reconnects, or is replaced by a new connection, keeps receiving its frames.
In a cluster, a bot connected to another node is found through ``elsewhere``
(:class:`~server.cluster.bots.ClusterBots`), as a seat that sends its frames there.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from protocol.messages import CLOSE_TOKEN_RETIRED

from .connection import Connection


class Seat(Protocol):
    """Where a bot's frames go: its connection here, or on another node."""

    @property
    def max_games(self) -> int: ...

    @property
    def reachable(self) -> bool: ...

    def send(self, msg: Any) -> None: ...


class Elsewhere(Protocol):
    """The bots connected to other nodes of the cluster."""

    def get(self, bot: str) -> Seat | None: ...

    def count(self) -> int: ...


class Presence:
    """Live connections: bots by name, plus every open connection (for counts and shutdown)."""

    def __init__(self) -> None:
        self._bots: dict[str, Connection] = {}
        self.connections: set[Connection] = set()
        self.by_id: dict[int, Connection] = {}
        self.elsewhere: Elsewhere | None = None
        self.retirements = 0
        """Tokens retired so far (here, or heard of from another node): a ``hello`` that looked
        its token up while this changed looks it up again (``server/http/ws.py``)."""

    def opened(self, conn: Connection) -> None:
        self.connections.add(conn)
        self.by_id[conn.id] = conn

    def closed(self, conn: Connection) -> None:
        self.connections.discard(conn)
        self.by_id.pop(conn.id, None)

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

    def retire(self, name: str, token_hash: str) -> bool:
        """The bot's token with ``token_hash`` was rotated or revoked: close its connection
        here if it said hello with that token (4011; its games go on as after any disconnect).
        Whether one was closed."""
        self.retirements += 1
        conn = self._bots.get(name)
        if conn is None or conn.token_hash != token_hash:
            return False
        conn.close(CLOSE_TOKEN_RETIRED, "token retired")
        return True

    def get(self, name: str) -> Seat | None:
        """The bot's seat: its connection here, else (in a cluster) on another node."""
        conn = self._bots.get(name)
        if conn is None and self.elsewhere is not None:
            return self.elsewhere.get(name)
        return conn

    def get_local(self, name: str) -> Connection | None:
        """The bot's connection to this node."""
        return self._bots.get(name)

    def local_bots(self) -> Iterator[tuple[str, Connection]]:
        return iter(list(self._bots.items()))

    def is_connected(self, name: str) -> bool:
        return self.get(name) is not None

    @property
    def bot_count(self) -> int:
        return len(self._bots) + (self.elsewhere.count() if self.elsewhere is not None else 0)
