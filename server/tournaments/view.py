"""A tournament as everyone reads it (``GET /api/tournaments…`` and ``/live``), from its stored
row and its games: one function per shape, so the API and the live stream cannot disagree."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple, Protocol

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


OVER = ("finished", "cancelled")
"""The states of a tournament that plays no more games."""


class Counts(Protocol):
    """What a tournament's progress counts of its results: a :class:`~.results.Tally`, or the
    :class:`FinalCounts` kept of one that is over."""

    @property
    def played(self) -> int: ...

    @property
    def forfeited(self) -> int: ...


class FinalCounts(NamedTuple):
    """The counts of a tournament that is over, which never change."""

    played: int
    forfeited: int


class Tallies:
    """Each tournament's :class:`~.results.Tally`, kept between reads and brought up to date
    with the games read each time (those already counted are skipped), for the few tournaments
    read last; and the counts of every tournament over, which the list of tournaments shows
    (two numbers each: a season's hundreds of tournaments, listed every few seconds, must not
    push each other's tallies out and be read again at every request)."""

    def __init__(self, size: int = 256) -> None:
        self.size = size
        self._by_id: OrderedDict[str, results.Tally] = OrderedDict()
        self._over: set[str] = set()
        """Tournaments whose tally was brought up to date with games read once they were over:
        nothing changes it any more."""
        self._final_counts: dict[str, FinalCounts] = {}

    def of(self, row: TournamentRow, games: Iterable[GameRow]) -> results.Tally:
        """``row``'s tally with ``games`` counted (each slot's finished game), ``games`` read
        after ``row``."""
        tally = self._by_id.pop(row.tournament_id, None) or results.Tally(participants(row))
        self._by_id[row.tournament_id] = tally.update(games)
        if row.state in OVER:
            self._over.add(row.tournament_id)
            self._final_counts[row.tournament_id] = FinalCounts(tally.played, tally.forfeited)
        while len(self._by_id) > self.size:
            gone, _ = self._by_id.popitem(last=False)
            self._over.discard(gone)
        return tally

    def final(self, row: TournamentRow) -> results.Tally | None:
        """The tally of a tournament that is over, if its games were read since it ended (then
        they need not be read again: a page that lists the tournaments asks every few seconds)."""
        if row.state not in OVER or row.tournament_id not in self._over:
            return None
        self._by_id.move_to_end(row.tournament_id)
        return self._by_id[row.tournament_id]

    def final_counts(self, row: TournamentRow) -> FinalCounts | None:
        """The counts of a tournament that is over, if its games were read since it ended, even
        if its tally is no longer kept."""
        return self._final_counts.get(row.tournament_id) if row.state in OVER else None


def progress(row: TournamentRow, tally: Counts, running: int) -> Progress:
    return Progress(
        planned=planned_games(msgspec.convert(row.definition, TournamentDefinition)),
        played=tally.played,
        running=running,
        forfeits=tally.forfeited,
    )


def participants(row: TournamentRow) -> list[str]:
    return list(row.definition["participants"])


def tournament_info(row: TournamentRow, tally: Counts, running: int) -> TournamentInfo:
    return TournamentInfo(
        tournament_id=row.tournament_id, name=row.name, format=row.definition["format"], state=row.state,  # type: ignore[arg-type]
        participants=participants(row), created=row.created, started=row.started, ended=row.ended,
        progress=progress(row, tally, running),
    )


def _standing(tally: results.Tally) -> dict[str, Any]:
    """The ranking and the crosstable it counts from."""
    return {"ranking": tally.ranking(), "crosstable": tally.crosstable()}


def tournament_results(row: TournamentRow, tally: results.Tally) -> TournamentResults:
    return TournamentResults(
        tournament_id=row.tournament_id, name=row.name, state=row.state,  # type: ignore[arg-type]
        planned=progress(row, tally, 0).planned, played=tally.played,
        **_standing(tally),
    )


def tournament_view(row: TournamentRow, tally: results.Tally, running: Sequence[GameSummary],
                    waiting: Sequence[Waiting]) -> TournamentView:
    definition = msgspec.convert(row.definition, TournamentDefinition)
    if row.state not in ("finished", "cancelled"):
        # The seed fixes every deal: shown, it would tell each game's hidden cards before it is played.
        definition = msgspec.structs.replace(definition, seed=None)
    return TournamentView(
        tournament_id=row.tournament_id, name=row.name, format=row.definition["format"], state=row.state,  # type: ignore[arg-type]
        definition=definition,
        created=row.created, started=row.started, ended=row.ended,
        progress=progress(row, tally, len(running)),
        rounds=max((e[0] for e in row.schedule), default=0),
        running=list(running), waiting=list(waiting),
        **_standing(tally),
    )
