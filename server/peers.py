"""Who a request comes from: the socket's peer, or behind a trusted proxy the client it names."""

from __future__ import annotations

from aiohttp import web

from .config import Settings


def client_address(request: web.Request, settings: Settings) -> str:
    """The client's address. With ``trust_forwarded_for`` it is the last address of
    ``X-Forwarded-For`` (the one the proxy itself added), else the socket's peer."""
    if settings.trust_forwarded_for:
        forwarded = request.headers.get("X-Forwarded-For")
        if forwarded:
            return forwarded.rsplit(",", 1)[-1].strip()
    return request.remote or "?"
