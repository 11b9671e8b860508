"""``GET /live``: the ladder, the games and the tournaments as they change, for the page and
anyone watching (``server/audience/live.py`` gathers the batches; PROTOCOL.md §18.7)."""

from __future__ import annotations

import asyncio
import logging

from aiohttp import WSMsgType, web

from protocol.messages import CLOSE_FLOOD

from ..arena import ARENA
from ..audience.live import RECENT
from ..config import max_msg_size
from ..connections.outbox import Outbox
from ..connections.peers import client_address
from ..connections.ratelimit import TokenBucket
from ..games.summary import game_summary
from .api import ApiError, connection_slot, ended_games

log = logging.getLogger(__name__)

LIVE_FRAME_MAX = 4096
"""A frame a ``/live`` viewer sends larger than this closes it (1009): it is not meant to send."""


async def live_handler(request: web.Request) -> web.WebSocketResponse:
    """``GET /live``, or ``/live?games=all`` for every game's start and end: batches of what
    changes (``server/audience/live.py``). A viewer sends nothing; what
    it sends is read and dropped within the connection's rate limit, and one that keeps
    sending past it is closed with 4008."""
    arena = request.app[ARENA]
    settings = arena.settings
    games = request.query.get("games", "sample")
    if games not in ("sample", "all"):
        raise ApiError(400, "invalid_request", f"games is sample (the default) or all, not {games!r}")
    with connection_slot(request):
        ws = web.WebSocketResponse(heartbeat=settings.heartbeat_s, max_msg_size=max_msg_size(LIVE_FRAME_MAX),
                                    compress=False)
        await ws.prepare(request)
        hub = arena.live
        if not hub.recent_loaded:
            try:
                hub.load_recent([game_summary(r) for r in await ended_games(arena, "finished", RECENT)])
            except Exception as e:
                arena.manager.recorder.faults.note("listing recent games for /live", e)
        address = client_address(request, settings)
        viewer = Outbox(ws, request.transport, settings.send_queue_max, f"/live viewer {address}")
        hub.join(viewer, every=games == "all")
        loop = asyncio.get_running_loop()
        bucket = TokenBucket(settings.messages_per_second, settings.burst, loop.time())
        refused = 0
        try:
            async for msg in ws:
                if msg.type is WSMsgType.ERROR:
                    break
                if bucket.take(loop.time()) is None:
                    refused = 0
                    continue
                refused += 1
                if refused > settings.flood_limit:
                    log.warning("/live viewer %s kept sending: closing it", address)
                    viewer.close(CLOSE_FLOOD, "flood")
                    break
        finally:
            hub.leave(viewer)
            await viewer.shutdown()
        return ws


def setup(app: web.Application) -> None:
    app.router.add_get("/live", live_handler)
