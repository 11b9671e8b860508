"""A tournament as everyone reads it (``GET /api/tournaments…`` and ``/live``), from its stored
row and its games: one function per shape, so the API and the live stream cannot disagree."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from protocol.messages import GameSummary
from protocol.tournaments import (
    Progress,
    TournamentDefinition,
    TournamentInfo,
    TournamentResults,
    TournamentView,
    Waiting,
)

from ..storage import GameRow, TournamentRow
from . import results
from .schedule import planned_games


class TournamentGame(GameSummary, kw_only=True):
    """One game of ``GET /api/tournaments/{id}/games``: a game summary and its place in the
    schedule."""

    slot: int
    """Its index in the schedule (a game cut off by a restart is replayed in the same slot)."""
    round: int
    """Its slot's round, from 1 (a gauntlet has one round; a round robin's rounds are its
    circle method's)."""


def tournament_game(row: TournamentRow, summary: GameSummary, slot: int) -> TournamentGame:
    """``summary`` with its ``slot`` and that slot's round in ``row``'s schedule."""
    return TournamentGame(**msgspec.structs.asdict(summary), slot=slot, round=row.schedule[slot][0])


def _finished(games: Sequence[GameRow]) -> list[GameRow]:
    """One finished game per slot (the one that counts)."""
    by_slot = {g.slot: g for g in games if g.status == "finished"}
    return list(by_slot.values())


def progress(row: TournamentRow, games: Sequence[GameRow], running: int) -> Progress:
    done = _finished(games)
    return Progress(
        planned=planned_games(msgspec.convert(row.definition, TournamentDefinition)),
        played=len(done),
        running=running,
        forfeits=sum(1 for g in done if g.end_reason == "forfeit"),
    )


def participants(row: TournamentRow) -> list[str]:
    return list(row.definition["participants"])


def tournament_info(row: TournamentRow, games: Sequence[GameRow], running: int) -> TournamentInfo:
    return TournamentInfo(
        tournament_id=row.tournament_id, name=row.name, format=row.definition["format"], state=row.state,  # type: ignore[arg-type]
        participants=participants(row), created=row.created, started=row.started, ended=row.ended,
        progress=progress(row, games, running),
    )


def _standing(row: TournamentRow, done: Sequence[GameRow]) -> dict[str, Any]:
    """The ranking and the crosstable it counts from, computed once."""
    table = results.crosstable(participants(row), done)
    return {"ranking": results.ranking(participants(row), done, table), "crosstable": table}


def tournament_results(row: TournamentRow, games: Sequence[GameRow]) -> TournamentResults:
    done = _finished(games)
    return TournamentResults(
        tournament_id=row.tournament_id, name=row.name, state=row.state,  # type: ignore[arg-type]
        planned=progress(row, games, 0).planned, played=len(done),
        **_standing(row, done),
    )


def tournament_view(row: TournamentRow, games: Sequence[GameRow], running: Sequence[GameSummary],
                    waiting: Sequence[Waiting]) -> TournamentView:
    done = _finished(games)
    definition = msgspec.convert(row.definition, TournamentDefinition)
    if row.state not in ("finished", "cancelled"):
        # The seed fixes every deal: shown, it would tell each game's hidden cards before it is played.
        definition = msgspec.structs.replace(definition, seed=None)
    return TournamentView(
        tournament_id=row.tournament_id, name=row.name, format=row.definition["format"], state=row.state,  # type: ignore[arg-type]
        definition=definition,
        created=row.created, started=row.started, ended=row.ended,
        progress=progress(row, games, len(running)),
        rounds=max((e[0] for e in row.schedule), default=0),
        running=list(running), waiting=list(waiting),
        **_standing(row, done),
    )

