"""Wins, draws and losses between each two bots since the last ratings reset: what the standings
are computed from, so that their cost follows the number of pairs of bots, not of games.

Storage keeps the same totals (``pair_results``), updated in the transaction that stores each
rated game, and the ladder reads them at start instead of every rated game ever played.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from ..storage.base import pair_counts

Pair = tuple[str, str]
"""Two bots, in name order (``a < b``)."""
Counts = tuple[int, int, int]
"""``a``'s wins, the draws, ``a``'s losses against ``b``."""


class Tally:
    """W/D/L of each pair of bots (see the module's docstring)."""

    __slots__ = ("counts",)

    def __init__(self, counts: Mapping[Pair, Counts] | None = None) -> None:
        self.counts: dict[Pair, list[int]] = {pair: list(c) for pair, c in (counts or {}).items()}

    @classmethod
    def of(cls, results: Iterable[tuple[str, str, float]]) -> Tally:
        """From games as ``(seat 0, seat 1, seat 0's score)``."""
        tally = cls()
        for a, b, score in results:
            tally.add(a, b, score)
        return tally

    def add(self, seat0: str, seat1: str, score0: float) -> None:
        pair, (w, d, lost) = pair_counts(seat0, seat1, score0)
        c = self.counts.get(pair)
        if c is None:
            self.counts[pair] = [w, d, lost]
        else:
            c[0] += w
            c[1] += d
            c[2] += lost

    def copy(self) -> Tally:
        return Tally({pair: (c[0], c[1], c[2]) for pair, c in self.counts.items()})

    def rows(self) -> list[tuple[str, str, int, int, int]]:
        """``(a, b, a's wins, draws, a's losses)`` of each pair that played, for a fit."""
        return [(a, b, c[0], c[1], c[2]) for (a, b), c in self.counts.items()]

    def games(self) -> Iterator[tuple[str, str, int]]:
        """Each pair that played and how many games it played."""
        for (a, b), c in self.counts.items():
            yield a, b, c[0] + c[1] + c[2]

    def total(self) -> int:
        return sum(n for _, _, n in self.games())

    def per_bot(self) -> tuple[dict[str, list[int]], dict[str, set[str]]]:
        """Each bot's wins, draws and losses, and the opponents it met."""
        wdl: dict[str, list[int]] = {}
        met: dict[str, set[str]] = {}
        for (a, b), (w, d, lose) in self.counts.items():
            for bot, won, lost, other in ((a, w, lose, b), (b, lose, w, a)):
                line = wdl.setdefault(bot, [0, 0, 0])
                line[0] += won
                line[1] += d
                line[2] += lost
                met.setdefault(bot, set()).add(other)
        return wdl, met
