"""``create_app(settings)``: the aiohttp application with every route, and its lifecycle.

Startup opens storage and marks games left running by a previous server as aborted; shutdown
aborts running games (their bots get ``game_over``), closes every connection, and waits for
the last game writes before closing storage.
"""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from .arena import ARENA, Arena
from .auth import new_token
from .challenges import ChallengeBook
from .clock import utc_now
from .config import Settings
from .games import GameManager
from .http_api import json_errors
from .http_api import setup as setup_api
from .ladder.service import Ladder
from .ladder_api import setup as setup_ladder_api
from .live import LiveHub
from .pages import setup as setup_pages
from .presence import Presence
from .ratelimit import WindowLimiter
from .replay_api import setup as setup_replay
from .storage import Storage, open_storage
from .ws import websocket_handler

log = logging.getLogger(__name__)

CLOSE_GOING_AWAY = 1001


def create_app(settings: Settings, storage: Storage | None = None) -> web.Application:
    """The whole server, on the storage ``settings.db`` names (a SQLite file or a
    ``postgresql://`` URL) unless ``storage`` is given. With no ``admin_token`` in ``settings`` one is generated
    (``app[ARENA].admin_token``; ``mandala serve`` prints it)."""
    app = web.Application(middlewares=[json_errors], client_max_size=1 << 20)
    storage = storage if storage is not None else open_storage(settings.db)
    presence = Presence()
    manager = GameManager(settings, storage, presence)
    live = LiveHub(settings.send_queue_max)
    manager.listeners.append(live)
    app[ARENA] = Arena(
        settings=settings,
        admin_token=settings.admin_token or new_token(),
        storage=storage,
        presence=presence,
        manager=manager,
        challenges=ChallengeBook(settings, storage, presence, manager),
        registrations=WindowLimiter(settings.registrations_per_hour, 3600.0),
        ladder=Ladder(settings, storage, presence, manager, live.publish),
        live=live,
    )
    app.router.add_get("/ws", websocket_handler)
    setup_api(app)
    setup_ladder_api(app)
    setup_replay(app)
    setup_pages(app)
    app.on_startup.append(_startup)
    app.on_shutdown.append(_shutdown)
    app.on_cleanup.append(_cleanup)
    return app


async def _startup(app: web.Application) -> None:
    arena = app[ARENA]
    await arena.storage.open()
    aborted = await arena.storage.abort_running(utc_now())
    if aborted:
        log.warning("%d game(s) left running by the previous server marked aborted", aborted)
    await arena.ladder.start()


async def _shutdown(app: web.Application) -> None:
    arena = app[ARENA]
    await arena.ladder.stop()
    await arena.live.close()
    arena.challenges.clear()
    arena.manager.abort_all()
    conns = list(arena.presence.connections)
    for conn in conns:
        conn.close(CLOSE_GOING_AWAY, "server shutting down")
    if conns:
        await asyncio.wait([asyncio.ensure_future(c.shutdown()) for c in conns], timeout=5)


async def _cleanup(app: web.Application) -> None:
    arena = app[ARENA]
    await arena.manager.flush()
    await arena.storage.close()
