"""Who a request comes from: the socket's peer, or behind a trusted proxy the client it names."""

from __future__ import annotations

from aiohttp import web

from ..config import Settings


def client_address(request: web.Request, settings: Settings) -> str:
    """The client's address. With ``trust_forwarded_for`` it is the last address of
    ``X-Forwarded-For`` (the one the proxy itself added), else the socket's peer."""
    if settings.trust_forwarded_for:
        forwarded = request.headers.get("X-Forwarded-For")
        if forwarded:
            return forwarded.rsplit(",", 1)[-1].strip()
    return request.remote or "?"


class AddressCap:
    """At most ``limit`` open WebSocket connections per client address (0: no limit), so one
    client cannot hold thousands on a public server; ``exempt`` addresses are never capped."""

    def __init__(self, limit: int, exempt: list[str]) -> None:
        self.limit = limit
        self.exempt = frozenset(exempt)
        self.open: dict[str, int] = {}

    def take(self, address: str) -> bool:
        """Count one more connection from ``address``; False (nothing counted) at the limit."""
        if not self.limit or address in self.exempt:
            return True
        held = self.open.get(address, 0)
        if held >= self.limit:
            return False
        self.open[address] = held + 1
        return True

    def give_back(self, address: str) -> None:
        """A connection ``take`` counted has closed."""
        held = self.open.get(address)
        if held is None:
            return
        if held <= 1:
            del self.open[address]
        else:
            self.open[address] = held - 1
