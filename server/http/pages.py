"""Human-facing pages: ``/`` (the live ladder, games and replays: ``static/index.html`` and its
assets under ``/static/``) and ``/health`` (for monitors)."""

from __future__ import annotations

import hashlib
import math
from importlib import metadata
from pathlib import Path

from aiohttp import web

from protocol.messages import PROTOCOL_VERSION

from ..arena import ARENA
from .api import json_response

STATIC = Path(__file__).resolve().parent.parent / "static"
"""The page's files: ``server/static/``, shipped with the server package."""


def _version() -> str:
    try:
        return metadata.version("mandala-arena")
    except metadata.PackageNotFoundError:
        return "unknown"


VERSION = _version()


def _index_html() -> str:
    """index.html with its asset URLs tagged by the assets' content, so a browser never
    mixes a new page with an old cached script."""
    digest = hashlib.sha256()
    for name in ("app.js", "style.css"):
        digest.update((STATIC / name).read_bytes())
    return (STATIC / "index.html").read_text(encoding="utf-8").replace("__ASSET_VERSION__", digest.hexdigest()[:12])


_INDEX = _index_html()


async def index(request: web.Request) -> web.Response:
    return web.Response(text=_INDEX, content_type="text/html", headers={"Cache-Control": "no-cache"})


async def health(request: web.Request) -> web.Response:
    """``GET /health``: 200 ``ok``, or 503 ``degraded`` while storage fails (with why, since
    when, and how many finished games wait for it); either way the event loop's lag over the
    last minute (``server/common/loop_lag.py``)."""
    arena = request.app[ARENA]
    recorder = arena.manager.recorder
    body = {
        "status": "ok",
        "version": VERSION,
        "protocol": PROTOCOL_VERSION,
        "games_running": len(arena.manager.running),
        "bots_connected": arena.presence.bot_count,
        "loop_lag": arena.loop_lag.figures(),
    }
    cluster = arena.cluster
    if cluster is not None:
        body["games_running"] = len(arena.manager.running) + len(cluster.games)
        body["cluster"] = {"node": cluster.node, "redis": "ok" if cluster.healthy else "lost",
                           "leader": cluster.leader, "games_hosted_here": len(arena.manager.running),
                           "games_starting": cluster.games_starting}
    if recorder.failing is None:
        return json_response(body)
    body.update(recorder.health(), retry_after=recorder.retry_after)
    return json_response(body, 503, {"Retry-After": str(math.ceil(recorder.retry_after))})


def setup(app: web.Application) -> None:
    app.router.add_get("/", index)
    app.router.add_get("/health", health)
    app.router.add_static("/static/", STATIC)
