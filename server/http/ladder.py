"""The ladder over HTTP: standings and bot profiles for everyone, controls for the organizer.

``GET /api/ladder`` (a page at a time), ``GET /api/bots/{name}``; with the admin token ``POST /api/ladder/pause``,
``POST /api/ladder/resume``, ``POST /api/ladder/reset``, ``DELETE /api/ladder/bots/{name}``
and ``POST /api/ladder/bots/{name}/restore``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from urllib.parse import urlencode

from aiohttp import web

from ..arena import ARENA, Arena
from ..cluster.bus import ClusterUnavailable
from ..games import holds
from ..games.health import HEALTH_GAMES, health
from ..ladder.controls import ControlRefused, LadderOp, carry_out
from ..storage import BotRow
from .api import INT64_MAX, ApiError, json_response, query_int, require_admin, takes

log = logging.getLogger(__name__)

PROFILE_GAMES = 20
HISTORY_PAGE = 200
"""Rating changes a profile shows (the older ones a page at a time: ``/api/bots/{name}/history``)."""


LADDER_PAGE = 100
"""Rows ``GET /api/ladder`` answers without ``limit``: a table this long or shorter comes whole."""
LADDER_PAGE_MAX = 500


async def standings(request: web.Request) -> web.Response:
    """``GET /api/ladder?limit=100&offset=0`` or ``?bot=NAME&limit=100``: a page of the
    standings, best first (listed bots only), with the table's ``total`` and the page's
    ``offset``; ``Link`` names the pages before and after it. With ``bot`` the page is the one
    around that bot (``404`` ``unknown_bot`` or ``not_listed`` when it has no row)."""
    arena = request.app[ARENA]
    limit = query_int(request, "limit", LADDER_PAGE, 1, LADDER_PAGE_MAX)
    offset = query_int(request, "offset", 0, 0)
    bot = request.query.get("bot")
    table = arena.ladder.standings
    total = table.table.total
    if bot is not None:
        if "offset" in request.query:
            raise ApiError(400, "invalid_request", "bot and offset do not go together: bot chooses the page")
        at = table.position(bot)
        if at is None:
            row = await arena.storage.bot_by_name(bot)
            if row is None:
                raise ApiError(404, "unknown_bot", f"no bot named {bot!r}")
            raise ApiError(404, "not_listed", f"{row.name} is not in the standings (it is {arena.ladder.state(row.name)})")
        offset = max(0, min(at - limit // 2, total - limit))
    page = table.rows(offset, limit)
    links = []
    if offset > 0:
        links.append(f'<{request.url.path}?{urlencode({"limit": limit, "offset": max(0, offset - limit)})}>; rel="prev"')
    if offset + len(page.standings) < page.total:
        links.append(f'<{request.url.path}?{urlencode({"limit": limit, "offset": offset + len(page.standings)})}>; rel="next"')
    return json_response(page, headers={"Link": ", ".join(links)} if links else None)


async def _bot(arena: Arena, name: str) -> BotRow:
    row = await arena.storage.bot_by_name(name)
    if row is None:
        raise ApiError(404, "unknown_bot", f"no bot named {name!r}")
    return row


async def profile(request: web.Request) -> web.Response:
    """``GET /api/bots/{name}``: place on the ladder, standing, rating history, recent games,
    and its health over its recent games (``server/games/health.py``)."""
    arena = request.app[ARENA]
    row = await _bot(arena, request.match_info["name"])
    ladder = arena.ladder
    at = ladder.standings.position(row.name)
    standing = ladder.table.standings[at] if at is not None else None
    history, older = await _history_page(arena, row.name, HISTORY_PAGE, None)
    await arena.manager.recorder.settle()
    await arena.manager.hear_out()
    games = await arena.storage.games_of(row.name, HEALTH_GAMES, telemetry=True)
    held = await holds.holds_of(arena.storage, games)  # their incidents could tell a deal still to play
    return json_response({
        "name": row.name,
        "created": row.created,
        "connected": arena.presence.is_connected(row.name),
        "seeking": row.name in ladder.seeking,
        "state": ladder.state(row.name),
        "standing": standing,
        "history": history,
        "history_before": older,
        "games": arena.manager.as_they_stand(games[:PROFILE_GAMES]),
        "health": health(row.name, games, held),
    })


Body = dict[str, object]


async def _history_page(arena: Arena, bot: str, limit: int, before: int | None) -> tuple[list[Body], int | None]:
    """The last ``limit`` rating changes of ``bot`` made before its ``before``-th rated game,
    oldest first, ratings to a tenth as the standings give them, and the cursor of the page before them (``None``: this page is the first)."""
    entries = await arena.storage.rating_history(bot, limit + 1, before)
    older = entries[1].games_before if len(entries) > limit else None
    page = entries[-limit:]
    return [{"game_id": h.game_id, "rating_before": round(h.rating_before, 1), "rating_after": round(h.rating_after, 1),
             "games_before": h.games_before, "at": h.at} for h in page], older


async def rating_history(request: web.Request) -> web.Response:
    """``GET /api/bots/{name}/history?before=N&limit=200``: a page of the bot's rating changes."""
    arena = request.app[ARENA]
    row = await _bot(arena, request.match_info["name"])
    limit = query_int(request, "limit", HISTORY_PAGE, 1, 1000)
    before = query_int(request, "before", -1, 0, INT64_MAX) if request.query.get("before") else None
    history, older = await _history_page(arena, row.name, limit, before)
    return json_response({"history": history, "before": older})




def _control(op: LadderOp, with_bot: bool = False) -> Callable[[web.Request], Awaitable[web.Response]]:
    """The handler of one control: carried out here, or by the cluster's pairing leader."""

    async def handler(request: web.Request) -> web.Response:
        arena = request.app[ARENA]
        require_admin(request, arena)
        bot = request.match_info["name"] if with_bot else None
        cluster = arena.cluster
        if cluster is None or cluster.leading:
            try:
                return json_response(await carry_out(arena.ladder, op, bot))
            except ControlRefused as e:
                raise ApiError(e.status, e.code, e.message) from None
        try:
            answer = await cluster.call_leader(op, bot)
        except ClusterUnavailable as e:
            raise ApiError(503, "cluster_unavailable", str(e)) from None
        if answer.status != 200:
            raise ApiError(answer.status, str(answer.body.get("error")), str(answer.body.get("message")))
        return json_response(answer.body)

    return handler


def setup(app: web.Application) -> None:
    app.router.add_get("/api/ladder", takes(standings, "limit", "offset", "bot"))
    app.router.add_get("/api/bots/{name}", takes(profile))
    app.router.add_get("/api/bots/{name}/history", takes(rating_history, "limit", "before"))
    app.router.add_post("/api/ladder/pause", takes(_control("pause")))
    app.router.add_post("/api/ladder/resume", takes(_control("resume")))
    app.router.add_post("/api/ladder/reset", takes(_control("reset")))
    app.router.add_delete("/api/ladder/bots/{name}", takes(_control("remove", with_bot=True)))
    app.router.add_post("/api/ladder/bots/{name}/restore", takes(_control("restore", with_bot=True)))
