"""A tournament's results from its games: the crosstable, and the ranking by a maximum-likelihood
Bradley–Terry fit with 95% intervals and the likelihood that each bot is stronger than the next.

Pure: the same games give the same numbers, so anyone can recompute them from the exported
records (``GET /api/tournaments/{id}/records``). A game counts once it is over with a result
(``finished``: by the rules, on time, by resigning, or forfeited); aborted games do not.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

from protocol.tournaments import CrossCell, Ranked

from ..ratings import bradley_terry
from ..ratings.bradley_terry import rank_key
from ..storage import GameRow
from ..storage.base import score_of_seat0

CENTER = 1500.0
"""The pool's average rating in a tournament's ranking."""


class Tally:
    """A tournament's results, added to one game at a time: the crosstable, each bot's forfeits
    and the games that count, one a slot. The ranking is fitted to the crosstable's totals, a
    cost that follows the pairs, not the games; so a tournament of 15,000 games, whose view is
    read again at each game's end, is not read game by game each time."""

    def __init__(self, participants: Sequence[str]) -> None:
        self.participants = list(participants)
        self.table: dict[str, dict[str, CrossCell]] = {p: {} for p in self.participants}
        self.forfeits = {p: 0 for p in self.participants}
        self.counted: set[int | str] = set()
        """The slots whose game is counted (a game without one: its id)."""
        self.forfeited = 0
        """Counted games that ended by forfeit."""

    def add(self, game: GameRow) -> None:
        """Count ``game`` if it is over with a result and its slot has none counted yet (a slot's
        finished game is the one that counts, and stays so)."""
        key = _key(game)
        if game.status != "finished" or key in self.counted:
            return
        self.counted.add(key)
        a, b = game.players[0], game.players[1]
        s = score_of_seat0(game.result)
        for bot, other, score in ((a, b, s), (b, a, 1.0 - s)):
            cell = self.table.setdefault(bot, {}).setdefault(other, CrossCell(games=0, wins=0, draws=0, losses=0, score=0.0))
            cell.games += 1
            cell.score += score
            if score == 1.0:
                cell.wins += 1
            elif score == 0.0:
                cell.losses += 1
            else:
                cell.draws += 1
        if game.end_reason == "forfeit":
            self.forfeited += 1
            winner = (game.result or {}).get("winner")
            for seat, bot in enumerate(game.players):
                if winner != seat:
                    self.forfeits[bot] = self.forfeits.get(bot, 0) + 1

    def update(self, games: Iterable[GameRow]) -> Tally:
        """Count those of ``games`` not counted yet; ``self``."""
        for game in games:
            self.add(game)
        return self

    @property
    def played(self) -> int:
        return len(self.counted)

    def scores(self) -> dict[str, tuple[float, int]]:
        """Each bot that has played: its points and its games (a Swiss round's pairing)."""
        totals = {bot: (float(sum(c.score for c in row.values())), sum(c.games for c in row.values()))
                  for bot, row in self.table.items()}
        return {bot: total for bot, total in totals.items() if total[1]}

    def crosstable(self) -> dict[str, dict[str, CrossCell]]:
        """``table[a][b]``: ``a``'s games against ``b`` (pairs that have played only), a copy
        that later games leave as it is."""
        return {bot: {other: msgspec.structs.replace(cell) for other, cell in row.items()}
                for bot, row in self.table.items()}

    def ranking(self) -> list[Ranked]:
        """Every participant, best first by its Bradley–Terry rating. Equal ratings share a
        place (the next is skipped: 1, 1, 3), listed by name: a tie is not settled by spelling."""
        pairs = [(a, b, c.wins, c.draws, c.losses) for a, row in self.table.items() for b, c in row.items() if a < b]
        model = bradley_terry.fit_tally_model(pairs, self.participants, CENTER)
        keys = {b: rank_key(model.fits[b].rating, b) for b in self.participants}
        order = sorted(self.participants, key=keys.__getitem__)
        lines = []
        rank = 0
        for i, bot in enumerate(order):
            if i == 0 or keys[bot][0] != keys[order[i - 1]][0]:
                rank = i + 1
            cells = self.table[bot].values()
            f = model.fits[bot]
            lines.append(Ranked(
                rank=rank,
                bot=bot,
                rating=round(f.rating, 1),
                low=round(f.low, 1),
                high=round(f.high, 1),
                score=float(sum(c.score for c in cells)),
                games=sum(c.games for c in cells),
                wins=sum(c.wins for c in cells),
                draws=sum(c.draws for c in cells),
                losses=sum(c.losses for c in cells),
                forfeits=self.forfeits[bot],
                stronger_than_next=round(model.stronger(bot, order[i + 1]), 4) if i + 1 < len(order) else None,
            ))
        return lines


def _key(game: GameRow) -> int | str:
    """What a game is counted under: its slot, or its id if it has none."""
    return game.game_id if game.slot is None else game.slot
