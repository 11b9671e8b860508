"""A bot's token: ``POST /api/bots/{name}/token`` issues a new one and retires the old one at
once (with the bot's current token, or the admin token); ``DELETE /api/bots/{name}/token``
(admin) revokes it, so the bot cannot connect until a new one is issued.

A retired token is refused from the moment the answer is sent: the stored hash changed in one
statement that only succeeds while the hash is still the one the request read (of two
rotations at once, one wins and the other gets 409 ``token_changed``). The connection that
said hello with it is closed with 4011, here and, in a cluster, on whatever node holds it;
its games go on under their clocks as after any disconnect, and resume when the bot comes
back with the new token. Neither token is ever logged.
"""

from __future__ import annotations

import hmac
import logging

from aiohttp import web

from ..arena import ARENA, Arena
from ..common.clock import utc_now
from ..connections.auth import REVOKED_PREFIX, bearer, hash_token, is_admin_token, new_token, revoked_hash
from ..connections.peers import client_address
from ..storage import BotRow
from .api import ApiError, json_response, require_admin, require_tls, takes

log = logging.getLogger(__name__)


async def _bot(arena: Arena, name: str) -> BotRow:
    row = await arena.storage.bot_by_name(name)
    if row is None:
        raise ApiError(404, "unknown_bot", f"no bot named {name!r}")
    if row.name == arena.ladder.house.name:
        raise ApiError(400, "house_bot", f"{row.name} is the server's own bot: it has no token")
    return row


async def _retire(arena: Arena, bot: str, old_hash: str) -> None:
    """Close the connection that said hello with the retired token, here and on the other nodes."""
    arena.presence.retire(bot, old_hash)
    if arena.cluster is not None:
        await arena.cluster.token_retired(bot, old_hash)


async def rotate_token(request: web.Request) -> web.Response:
    """``POST /api/bots/{name}/token``: a new token for the bot; the old one is retired at once."""
    arena = request.app[ARENA]
    require_tls(request, arena)
    token = bearer(request.headers.get("Authorization"))
    if token is None:
        raise ApiError(401, "unauthorized", "this needs the bot's current token or the admin token: "
                                            "Authorization: Bearer <token>", {"WWW-Authenticate": "Bearer"})
    row = await _bot(arena, request.match_info["name"])
    admin = is_admin_token(token, arena.admin_token)
    if not admin and not hmac.compare_digest(hash_token(token), row.token_hash):
        raise ApiError(401, "bad_token", f"not {row.name}'s current token (a retired or revoked one, another "
                                         "bot's, or none): give its current token, or ask the organizer")
    fresh = new_token()
    if not await arena.storage.replace_token_hash(row.name, row.token_hash, hash_token(fresh)):
        raise ApiError(409, "token_changed", f"{row.name}'s token changed while this request ran (another rotation "
                                             "or a revocation won): nothing changed here")
    await _retire(arena, row.name, row.token_hash)
    log.info("bot %s: token rotated by %s from %s; the old one is refused from now on", row.name,
             "the admin" if admin else "its owner", client_address(request, arena.settings))
    return json_response({"name": row.name, "token": fresh, "rotated": utc_now()})


async def revoke_token(request: web.Request) -> web.Response:
    """``DELETE /api/bots/{name}/token`` (admin): the bot's token is refused from now on, and
    no other works until ``POST`` issues one."""
    arena = request.app[ARENA]
    require_admin(request, arena)
    row = await _bot(arena, request.match_info["name"])
    if not row.token_hash.startswith(REVOKED_PREFIX):
        if not await arena.storage.replace_token_hash(row.name, row.token_hash, revoked_hash()):
            raise ApiError(409, "token_changed", f"{row.name}'s token changed while this request ran (a rotation "
                                                 "won): revoke again")
        await _retire(arena, row.name, row.token_hash)
        log.info("bot %s: token revoked by the admin from %s", row.name, client_address(request, arena.settings))
    return json_response({"name": row.name, "revoked": utc_now()})


def setup(app: web.Application) -> None:
    app.router.add_post("/api/bots/{name}/token", takes(rotate_token))
    app.router.add_delete("/api/bots/{name}/token", takes(revoke_token))
