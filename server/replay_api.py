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

from .arena import ARENA
from .http_api import json_response, over_game


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
    row = await over_game(request.app[ARENA], request.match_info["game_id"])
    assert row.record is not None
    resp = json_response({"game_id": row.game_id, "players": row.players, "status": row.status,
                          "result": row.result, "plies": plies(row.record)})
    resp.enable_compression()  # ~1.2 kB a ply, over 1 MB for a long game; gzip makes it ~30 times smaller
    return resp


def setup(app: web.Application) -> None:
    app.router.add_get("/api/games/{game_id}/replay", get_replay)
