"""Each client's HTTP requests a second (``requests_per_second_per_ip``): the answers to public
reads are built on the event loop that runs every game's clock, so a client asking for profiles
and game lists as fast as it can would slow every game on the node (``bench/reads.py``). Past
its budget a request is answered ``429`` ``rate_limited`` at once, before anything is read.

WebSocket upgrades (``/ws``, ``/live``) are not counted here: their connections and frames have
limits of their own. Nor are the organizer's requests, which carry the admin token."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable

from aiohttp import web

from ..arena import ARENA
from ..connections.auth import check_admin
from ..connections.peers import client_address, client_key
from .api import ApiError

UNCOUNTED_PATHS = frozenset({"/ws", "/live"})


@web.middleware
async def request_budget(request: web.Request,
                         handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
    arena = request.app[ARENA]
    authorization = request.headers.get("Authorization")
    if request.path not in UNCOUNTED_PATHS and (authorization is None
                                                or check_admin(authorization, arena.admin_token) != "admin"):
        address = client_address(request, arena.settings)
        retry = arena.requests.take(address, asyncio.get_running_loop().time())
        if retry is not None:
            s = arena.settings
            raise ApiError(429, "rate_limited",
                           f"more than {s.requests_per_second_per_ip:g} requests a second from {client_key(address)} "
                           f"(burst {s.request_burst_per_ip})",
                           {"Retry-After": str(max(1, math.ceil(retry)))}, limit="requests", retry_after=round(retry, 3))
    return await handler(request)
