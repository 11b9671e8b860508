"""A game that was due but not played because a bot was away: it is stored as lost by the
bots that were away (a draw if both were), with no moves, on the deal it would have had, so
that it counts where the game would have (a tournament's results, a ladder pair's ratings)."""

from __future__ import annotations

from collections.abc import Collection

import msgspec

import mandala
from protocol.messages import GameKind, GameResult, LiveGameEnded

from ..common.clock import utc_now
from ..common.ids import new_id
from ..storage import GameRow
from .deals import Deal, build_game
from .summary import game_summary


def forfeit_row(players: tuple[str, str], deal: Deal, away: Collection[str], *, kind: GameKind, rated: bool,
                pair_id: str | None = None, tournament: tuple[str, int] | None = None) -> GameRow:
    """The stored row of the game ``players`` (seat 0, seat 1) did not play on ``deal``."""
    game = build_game(deal)
    winner = None if len(away) == 2 else (0 if players[1] in away else 1)
    now = utc_now()
    return GameRow(
        game_id=new_id(6), players=list(players), status="finished", rated=rated,
        first_player=game.first_player, ply=0, started=now, kind=kind, pair_id=pair_id,
        tournament_id=tournament[0] if tournament else None, slot=tournament[1] if tournament else None,
        ended=now, end_reason="forfeit",
        result=msgspec.to_builtins(GameResult(winner, "forfeit", list(game.scores()), list(game.cup_sizes()))),  # type: ignore[arg-type]
        record=msgspec.to_builtins(mandala.record_of(game)),
    )


def forfeit_ended(row: GameRow) -> LiveGameEnded:
    """The ``/live`` event of a forfeit once stored: no room played it, so none announces its
    end, and a viewer following every game (``?games=all``) would miss it."""
    return LiveGameEnded(game_summary(row))
