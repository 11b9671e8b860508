"""``GET /api/games/{id}/replay``: a game that is over, position by position, through the
spectator's eyes or, with ``?seat=0|1``, through one seat's.

The stored record (R23) is replayed with the engine. The spectator's view (R24) is taken
before the first move and after every move, so a viewer can step through the game without
knowing the rules. A seat's replay gives, at each of those positions, the view that seat was
sent in its ``update``, and at each of its decisions what its ``decision`` carried (request
id, legal moves), its answer, the think time the server counted, and what went wrong there
(refused answers with what was sent, a late answer, a time-out, a disconnect), from the
telemetry stored with the game (``server/games/telemetry.py``). Once a game is over its record is
public; a running game is refused before anything is read. So every replay, whatever its eyes,
also gives ``cups``: both cups' whole contents at the end (the starting cards included), which
the final score is counted from (R21).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import msgspec
from aiohttp import web

import mandala

from ..arena import ARENA
from ..games.room import REQUEST_EPOCH
from ..storage import GameRow
from .api import ApiError, over_game, replayed, takes

_json = msgspec.json.Encoder()


def plies(record: dict[str, Any], seat: int | None = None, telemetry: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """``{"ply", "move", "view"}`` for ply 0 (the deal, no move) and after each move of
    ``record``, seen by ``seat`` (``None``: a spectator). A seat's plies also carry its
    ``incidents`` there, and those where it had to decide a ``decision``."""
    return walk(record, seat, telemetry)[0]


def walk(record: dict[str, Any], seat: int | None = None, telemetry: dict[str, Any] | None = None,
         asked_last: bool = True) -> tuple[list[dict[str, Any]], mandala.Game]:
    """:func:`plies`, and the game as it stands at the end of the record. ``asked_last``: whether
    the decision of the record's last position was asked (not in a forfeited game, which no
    bot was asked to play)."""
    moves = record["moves"]
    think = iter((telemetry or {}).get("think_ms", [[], []])[seat] if seat is not None else ())
    incidents: defaultdict[int, list[dict[str, Any]]] = defaultdict(list)
    epochs: dict[int, int] = {}
    """The ply at which each takeover asked its decision again, and the game's new epoch."""
    for incident in (telemetry or {}).get("incidents", []):
        if incident.get("seat") == seat:
            incidents[incident["ply"]].append(incident)
        if incident.get("kind") == "takeover":
            epochs[incident["ply"]] = max(epochs.get(incident["ply"], 0), incident["epoch"])
    out: list[dict[str, Any]] = []
    epoch = 0

    def step(ply: int, game: mandala.Game) -> None:
        nonlocal epoch
        epoch = max(epoch, epochs.get(ply, 0))
        entry: dict[str, Any] = {"ply": ply, "move": moves[ply - 1] if ply else None, "view": mandala.view(game, seat)}
        if seat is not None and not game.is_over and game.to_move == seat and (asked_last or ply < len(moves)):
            answer = moves[ply] if ply < len(moves) else None
            entry["decision"] = {
                "request_id": epoch * REQUEST_EPOCH + ply,
                "legal": game.legal_moves,
                "answer": answer,
                "think_ms": next(think, None) if answer is not None else None,
            }
        if seat is not None:
            entry["incidents"] = incidents.get(ply, [])
        out.append(entry)

    game = mandala.replay(record, on_decision=step)
    step(len(moves), game)
    return out, game


def seat_param(request: web.Request) -> int | None:
    """``?seat=0|1``, or ``None`` for the spectator's eyes; ``400 bad_seat`` otherwise."""
    raw = request.query.get("seat")
    if raw is None or raw == "":
        return None
    if raw not in ("0", "1"):
        raise ApiError(400, "bad_seat", f"seat is 0 or 1 (or left out for the spectator's eyes), not {raw!r}")
    return int(raw)


def replay_body(row: GameRow, seat: int | None) -> bytes:
    """The answer's JSON for the game ``row`` (over, with its record) seen by ``seat``."""
    assert row.record is not None
    body: dict[str, Any] = {"game_id": row.game_id, "players": row.players, "status": row.status,
                            "result": row.result, "seat": seat}
    if seat is not None:
        telemetry = row.telemetry or {}
        body["measured"] = row.telemetry is not None
        body["decision_ms"] = telemetry.get("decision_ms")
        body["dropped_incidents"] = telemetry.get("dropped", 0)
    body["plies"], end = walk(row.record, seat, row.telemetry, asked_last=row.end_reason != "forfeit")
    # Over, so public (R24): both cups as the record leaves them, whatever the eyes.
    body["cups"] = [mandala.view(end, s).private.cup for s in (0, 1)]  # type: ignore[union-attr]
    return _json.encode(body)


async def get_replay(request: web.Request) -> web.Response:
    """``GET /api/games/{id}/replay[?seat=0|1]``: players, result and every ply's move and view,
    replayed off the event loop (``replayed``)."""
    seat = seat_param(request)
    row = await over_game(request.app[ARENA], request.match_info["game_id"])
    resp = web.Response(body=await replayed(request, replay_body, row, seat), content_type="application/json")
    resp.enable_compression()  # ~1.2 kB a ply, over 1 MB for a long game; gzip makes it ~30 times smaller
    return resp


def setup(app: web.Application) -> None:
    app.router.add_get("/api/games/{game_id}/replay", takes(get_replay, "seat"))
