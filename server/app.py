"""``create_app(settings)``: the aiohttp application with every route, and its lifecycle.

Startup opens storage, stores the games a previous server left in the spool (waiting while
storage fails), and marks games left running by it as aborted; shutdown aborts running games
(their bots get ``game_over``), closes every connection, and lets the last game writes drain
(what storage will not take stays in the spool) before closing storage.

With ``settings.redis`` the server is one node of a cluster (:mod:`server.cluster.node`): it
joins before it serves (an unreachable Redis stops the start with
:class:`~server.cluster.bus.ClusterUnavailable`) and takes back the games it ran before a
restart from their move logs; it stops without ending its games, which the ladder's leader
takes over (:mod:`server.cluster.takeover`).
"""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from .arena import ARENA, Arena
from .audience.live import LiveHub
from .cluster.node import ClusterNode
from .common.clock import utc_now
from .config import Settings
from .connections.auth import new_admin_token
from .connections.outbox import CLOSE_GOING_AWAY, SHUTDOWN_WAIT_S
from .connections.pacing import Audience
from .connections.peers import AddressBudget, AddressCap
from .connections.presence import Presence
from .connections.ratelimit import WindowLimiter
from .games.challenges import ChallengeBook
from .games.manager import GameManager
from .http.api import json_errors, strict_requests
from .http.api import setup as setup_api
from .http.budget import request_budget
from .http.export import setup as setup_export
from .http.json_lines import setup as setup_json_lines
from .http.ladder import setup as setup_ladder_api
from .http.live import setup as setup_live
from .http.metrics import setup as setup_metrics
from .http.pages import setup as setup_pages
from .http.replay import setup as setup_replay
from .http.requests import AccessLog, request_ids, stamp_request_id
from .http.tokens import setup as setup_tokens
from .http.tournaments import setup as setup_tournaments
from .http.ws import websocket_handler
from .ladder.service import Ladder
from .recording.recorder import GameRecorder
from .recording.spool import Spool, default_spool_path
from .storage import Storage, open_storage
from .tournaments.director import Director

log = logging.getLogger(__name__)

SHUTDOWN_DRAIN_S = 10.0
"""At shutdown, how long the last game writes may take before what is left is spooled."""


def create_app(settings: Settings, storage: Storage | None = None) -> web.Application:
    """The whole server, on the storage ``settings.db`` names (a SQLite file or a
    ``postgresql://`` URL) unless ``storage`` is given. With no ``admin_token`` in ``settings`` one is generated
    (``app[ARENA].admin_token``; ``mandala serve`` prints it)."""
    app = web.Application(middlewares=[request_ids, json_errors, request_budget, strict_requests], client_max_size=1 << 20,
                          handler_args={"access_log_class": AccessLog})
    app.on_response_prepare.append(stamp_request_id)
    storage = storage if storage is not None else open_storage(settings.db)
    presence = Presence()
    recorder = GameRecorder(settings, storage, Spool(settings.spool_path or default_spool_path(settings.db), settings.db))
    manager = GameManager(settings, presence, recorder)
    live = LiveHub(settings, recorder)
    manager.listeners.append(live)
    app[ARENA] = Arena(
        settings=settings,
        admin_token=settings.admin_token or new_admin_token(),
        storage=storage,
        presence=presence,
        manager=manager,
        challenges=ChallengeBook(settings, storage, presence, manager),
        registrations=WindowLimiter(settings.registrations_per_hour, 3600.0),
        ladder=Ladder(settings, storage, presence, manager, live.publish),
        live=live,
        audience=Audience(settings),
        addresses=AddressCap(settings.connections_per_ip, settings.connections_per_ip_exempt),
        frames=AddressBudget(settings.messages_per_second_per_ip, settings.burst_per_ip,
                             settings.connections_per_ip_exempt),
        requests=AddressBudget(settings.requests_per_second_per_ip, settings.request_burst_per_ip,
                               settings.connections_per_ip_exempt),
        tournaments=Director(storage, manager, live.publish),
    )
    live.state = lambda: (app[ARENA].ladder.table, app[ARENA].manager.running_summaries())
    live.counting = lambda: (_running_games(manager), presence.bot_count)
    # Tournament games come first: the ladder leaves alone the slots the director holds for
    # due tournament games, and pairs again at once when a hold is given up.
    app[ARENA].ladder.held = app[ARENA].tournaments.held_for
    app[ARENA].tournaments.released = app[ARENA].ladder.wake
    if settings.redis is not None:
        cluster = ClusterNode(settings.redis, settings.node_name)
        cluster.bind(app[ARENA])
        app[ARENA].cluster = cluster
        app[ARENA].tournaments.games_elsewhere = cluster.summaries
    app.router.add_get("/ws", websocket_handler)
    setup_json_lines(app)
    setup_export(app)  # before /api/games/{game_id}
    setup_api(app)
    setup_tokens(app)
    setup_ladder_api(app)
    setup_live(app)
    setup_replay(app)
    setup_tournaments(app)
    setup_pages(app)
    setup_metrics(app)
    app.on_startup.append(_startup)
    app.on_shutdown.append(_shutdown)
    app.on_cleanup.append(_cleanup)
    return app


def _running_games(manager: GameManager) -> int:
    """Games running now, this node's and, in a cluster, the others' (for ``/live``'s counts)."""
    elsewhere = manager.elsewhere
    return len(manager.running) + (len(elsewhere.summaries()) if elsewhere is not None else 0)


async def _startup(app: web.Application) -> None:
    arena = app[ARENA]
    arena.loop_lag.start()
    cluster = arena.cluster
    if cluster is not None:
        await cluster.open()
    await arena.manager.recorder.open()
    if cluster is None:
        aborted = await arena.storage.abort_running(utc_now())
        if aborted:
            log.warning("%d game(s) left running by a server that stopped marked aborted", aborted)
    await arena.ladder.start(lead=cluster is None)
    await arena.tournaments.start(lead=cluster is None)
    if cluster is not None:
        adopted = await cluster.takeover.adopt_own()  # the others' are the leader's to take
        if adopted:
            log.warning("%d game(s) this node ran before it restarted taken back from their move logs", adopted)
        cluster.run()


async def _shutdown(app: web.Application) -> None:
    arena = app[ARENA]
    arena.manager.stopping = True  # whatever runs before the ladder and the tournaments stop starts nothing
    await arena.tournaments.stop()
    await arena.ladder.stop()
    await arena.live.close()
    arena.challenges.clear()
    running = len(arena.manager.running)
    if arena.cluster is not None:
        arena.cluster.leave()  # its games are taken over by another node, not aborted
        log.info("stopping: %d running game(s) left to the other nodes to take over", running)
    else:
        arena.manager.abort_all()
        log.info("stopping: %d running game(s) aborted", running)
    await arena.manager.judged()  # every game over is announced before the connections close
    arena.audience.close()  # the spectators' last frames (the games' game_over) go out now, not at the next tick
    conns = list(arena.presence.connections)
    for conn in conns:
        conn.close(CLOSE_GOING_AWAY, "server shutting down")
    if conns:
        await asyncio.wait([asyncio.ensure_future(c.shutdown()) for c in conns], timeout=SHUTDOWN_WAIT_S)
    if arena.cluster is not None:
        await arena.cluster.close()


async def _cleanup(app: web.Application) -> None:
    arena = app[ARENA]
    await arena.loop_lag.stop()
    await arena.manager.recorder.close(SHUTDOWN_DRAIN_S)
    await arena.storage.close()
    log.info("stopped")
