"""``GET /api/games/{id}/replay``: a game that is over, position by position.

The stored record (R23) is replayed with the engine, and the spectator's view (R24) is taken
before the first move and after every move, so a viewer can step through the game without
knowing the rules. Once a game is over its record is public, and every view here is one a
spectator could have seen while the game ran.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

import mandala

from .arena import ARENA, Arena
from .http_api import ApiError, _stored, json_response
from .storage import GameRow


async def _over(arena: Arena, game_id: str) -> GameRow:
    """The game ``game_id`` with its record: in memory if it ended lately, else from storage."""
    room = arena.manager.lookup(game_id)
    row = room.to_row() if room is not None else await _stored(arena, game_id)
    if row.status == "running":
        raise ApiError(409, "game_running", f"game {game_id} is running: watch it over /ws; its replay is public once it is over")
    if row.record is None:
        raise ApiError(404, "no_record", f"game {game_id} was aborted by a server stop: no record was kept")
    return row


def plies(record: dict[str, Any]) -> list[dict[str, Any]]:
    """``{"ply", "move", "view"}`` for ply 0 (the deal, no move) and after each move of ``record``."""
    moves = record["moves"]
    out: list[dict[str, Any]] = []

    def step(ply: int, game: mandala.Game) -> None:
        out.append({"ply": ply, "move": moves[ply - 1] if ply else None, "view": mandala.view(game, None)})

    game = mandala.replay(record, on_decision=step)
    step(len(moves), game)
    return out


async def get_replay(request: web.Request) -> web.Response:
    """``GET /api/games/{id}/replay``: players, result and every ply's move and spectator view."""
    arena = request.app[ARENA]
    game_id = request.match_info["game_id"]
    row = await _over(arena, game_id)
    assert row.record is not None
    resp = json_response({"game_id": row.game_id, "players": row.players, "status": row.status,
                          "result": row.result, "plies": plies(row.record)})
    resp.enable_compression()  # ~1.2 kB a ply, over 1 MB for a long game; gzip makes it ~30 times smaller
    return resp


def setup(app: web.Application) -> None:
    app.router.add_get("/api/games/{game_id}/replay", get_replay)
