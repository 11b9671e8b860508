"""Games as lists show them (the HTTP API, the live stream and the page all use this one shape),
and running games as they stand: the one place that knows where a running game's state is —
its room on this node, or, in a cluster, what its host last told."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import msgspec

from protocol.messages import GameResult, GameSummary

from ..storage import GameRow

if TYPE_CHECKING:
    from ..arena import Arena


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


def as_it_stands(arena: Arena, row: GameRow) -> GameSummary:
    """A stored game as it stands now. Storage keeps a running game as it started (ply 0):
    one this node runs, or ended lately, is taken from its room, one another node of a
    cluster runs from what its host last told (:meth:`ClusterNode.summary_of`)."""
    room = arena.manager.lookup(row.game_id)
    if room is not None and not room.lost:
        return room.summary()
    if row.status == "running" and arena.cluster is not None:
        known = arena.cluster.summary_of(row.game_id)
        if known is not None:
            return known
    return game_summary(row)


def as_they_stand(arena: Arena, rows: Iterable[GameRow]) -> list[GameSummary]:
    return [as_it_stands(arena, row) for row in rows]


def running_games(arena: Arena) -> list[GameSummary]:
    """The running games of the whole cluster (of this server, on one node) as they stand,
    newest first."""
    games = [room.summary() for room in arena.manager.running.values()]
    if arena.cluster is not None:
        games += arena.cluster.summaries()
    return sorted(games, key=lambda g: g.started, reverse=True)


async def heard_out(arena: Arena) -> None:
    """Before running games are listed: in a cluster, learn how far the games of the other
    nodes went (:meth:`ClusterNode.hear_out`); on one node the rooms say it already."""
    if arena.cluster is not None:
        await arena.cluster.hear_out()
