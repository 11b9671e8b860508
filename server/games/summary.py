"""Games as lists show them: the HTTP API, the live stream and the page all use this one shape.
A running game is summarized as it stands by its room (:meth:`GameRoom.summary`) or, wherever
it runs, by :meth:`GameManager.as_it_stands`."""

from __future__ import annotations

import msgspec

from protocol.messages import GameResult, GameSummary

from ..storage import GameRow


def game_summary(row: GameRow) -> GameSummary:
    return GameSummary(
        game_id=row.game_id,
        players=list(row.players),
        kind=row.kind,  # type: ignore[arg-type]
        rated=row.rated,
        pair_id=row.pair_id,
        status=row.status,
        started=row.started,
        ended=row.ended,
        ply=row.ply,
        result=msgspec.convert(row.result, GameResult) if row.result is not None else None,
        tournament_id=row.tournament_id,
    )
