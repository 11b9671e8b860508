"""A tournament's results from its games: the crosstable, and the ranking by a maximum-likelihood
Bradley–Terry fit with 95% intervals and the likelihood that each bot is stronger than the next.

Pure: the same games give the same numbers, so anyone can recompute them from the exported
records (``GET /api/tournaments/{id}/records``). A game counts once it is over with a result
(``finished``: by the rules, on time, by resigning, or forfeited); aborted games do not.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from protocol.tournaments import CrossCell, Ranked

from ..ratings import bradley_terry
from ..ratings.bradley_terry import rank_key
from ..storage import GameRow
from ..storage.base import score_of_seat0

CENTER = 1500.0
"""The pool's average rating in a tournament's ranking."""


def scored(games: Iterable[GameRow]) -> list[tuple[str, str, float]]:
    """``(seat0, seat1, seat0's score)`` of every game that counts."""
    return [(g.players[0], g.players[1], score_of_seat0(g.result)) for g in games if g.status == "finished"]


def crosstable(participants: Sequence[str], games: Iterable[GameRow]) -> dict[str, dict[str, CrossCell]]:
    """``table[a][b]``: ``a``'s games against ``b`` (pairs that have played only)."""
    table: dict[str, dict[str, CrossCell]] = {p: {} for p in participants}
    for a, b, s in scored(games):
        for bot, other, score in ((a, b, s), (b, a, 1.0 - s)):
            cell = table.setdefault(bot, {}).setdefault(other, CrossCell(games=0, wins=0, draws=0, losses=0, score=0.0))
            cell.games += 1
            cell.score += score
            if score == 1.0:
                cell.wins += 1
            elif score == 0.0:
                cell.losses += 1
            else:
                cell.draws += 1
    return table


def ranking(participants: Sequence[str], games: Sequence[GameRow],
            table: dict[str, dict[str, CrossCell]]) -> list[Ranked]:
    """Every participant, best first by its Bradley–Terry rating (name breaks ties); the
    counts come from the games' ``table`` (:func:`crosstable`)."""
    model = bradley_terry.fit_model(scored(games), participants, CENTER)
    forfeits = {p: 0 for p in participants}
    for g in games:
        if g.status == "finished" and g.end_reason == "forfeit":
            winner = (g.result or {}).get("winner")
            for seat, bot in enumerate(g.players):
                if winner != seat:
                    forfeits[bot] = forfeits.get(bot, 0) + 1
    order = sorted(participants, key=lambda b: rank_key(model.fits[b].rating, b))
    lines = []
    for i, bot in enumerate(order):
        cells = table[bot].values()
        f = model.fits[bot]
        lines.append(Ranked(
            rank=i + 1,
            bot=bot,
            rating=round(f.rating, 1),
            low=round(f.low, 1),
            high=round(f.high, 1),
            score=float(sum(c.score for c in cells)),
            games=sum(c.games for c in cells),
            wins=sum(c.wins for c in cells),
            draws=sum(c.draws for c in cells),
            losses=sum(c.losses for c in cells),
            forfeits=forfeits[bot],
            stronger_than_next=round(model.stronger(bot, order[i + 1]), 4) if i + 1 < len(order) else None,
        ))
    return lines
