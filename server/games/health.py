"""A bot's health: what its recent games say about its clock, its answers and its connection.

Read from the telemetry stored with each game (``server/games/telemetry.py``), over the bot's last
:data:`HEALTH_GAMES` games, for ``GET /api/bots/{name}`` and the profile page. Every
incident and every game it cost links to the game (``game_id``) and the decision (``ply``),
so an author goes from "my bot lost on time" to the seat replay of that decision in one click.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from ..storage import GameRow

HEALTH_GAMES = 100
"""The bot's most recent games its health is read from."""
INCIDENTS_SHOWN = 50
"""The most recent incidents listed (all are counted)."""

COUNTED = {"timeout": "timeouts", "late": "late_answers", "disconnect": "disconnects", "resign": "resignations"}


def percentile(ordered: list[float], q: float) -> float:
    """The ``q``-quantile of a sorted list by the nearest rank (the value itself, not an
    interpolation, so the figure is a think time that happened)."""
    rank = max(1, -(-len(ordered) * q // 1))
    return ordered[int(rank) - 1]


def _cause(row: GameRow, seat: int) -> str | None:
    """Why the bot lost ``row`` other than by the rules: ``timeout``, ``disconnect`` (it ran
    out of time while away), ``resign`` or ``forfeit``; ``None`` if it did not lose so."""
    winner = (row.result or {}).get("winner")
    if row.status != "finished" or winner != 1 - seat or row.end_reason not in ("timeout", "resign", "forfeit"):
        return None
    if row.end_reason == "timeout":
        incidents = (row.telemetry or {}).get("incidents", [])
        away = any(i.get("kind") == "timeout" and i.get("seat") == seat and i.get("away") for i in incidents)
        return "disconnect" if away else "timeout"
    return row.end_reason


def health(bot: str, rows: list[GameRow], held: Collection[str] = ()) -> dict[str, Any]:
    """The health of ``bot`` from its games ``rows`` (most recent first). The incidents of the
    games in ``held``, whose records are held (``holds.py``), are counted but not listed: what
    a bot sent, and the refusal's words, tell its hand, and so the deal still to be played."""
    think: list[float] = []
    slowest: dict[str, Any] | None = None
    counts = dict.fromkeys(("timeouts", "late_answers", "illegal_moves", "invalid_answers", "disconnects",
                            "resignations", "forfeits"), 0)
    incidents: list[dict[str, Any]] = []
    lost: list[dict[str, Any]] = []
    measured = 0
    for row in rows:
        if bot not in row.players or row.status == "running":
            continue
        seat = row.players.index(bot)
        cause = _cause(row, seat)
        if cause is not None:
            lost.append({"game_id": row.game_id, "ended": row.ended, "kind": row.kind, "cause": cause,
                         "ply": row.ply, "opponent": row.players[1 - seat]})
        if cause == "forfeit":
            counts["forfeits"] += 1
        telemetry = row.telemetry
        if telemetry is None:
            continue
        measured += 1
        think.extend(telemetry["think_ms"][seat])
        mine = telemetry.get("slowest", [None, None])[seat]
        if mine is not None and (slowest is None or mine[1] > slowest["think_ms"]):
            slowest = {"game_id": row.game_id, "ply": mine[0], "think_ms": mine[1]}
        taken_over = {i["ply"] for i in telemetry["incidents"] if i["kind"] == "takeover"}
        for incident in telemetry["incidents"]:
            if incident["seat"] != seat:
                continue
            kind = incident["kind"]
            if kind == "refused":
                if incident.get("code") == "stale_request" and incident["ply"] in taken_over:
                    pass  # an answer to the decision asked before a takeover: not the bot's fault
                else:
                    counts["illegal_moves" if incident.get("code") == "illegal_move" else "invalid_answers"] += 1
            elif kind in COUNTED:
                counts[COUNTED[kind]] += 1
            if kind != "reconnect" and len(incidents) < INCIDENTS_SHOWN and row.game_id not in held:
                incidents.append({"game_id": row.game_id, "started": row.started, **incident})
    think.sort()
    return {
        "games": measured,
        "decisions": len(think),
        "think_ms": None if not think else {
            "p50": percentile(think, 0.5), "p95": percentile(think, 0.95), "max": think[-1], "slowest": slowest,
        },
        **counts,
        "games_lost": len(lost),
        "lost": lost,
        "incidents": incidents,
    }
