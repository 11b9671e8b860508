"""Colors and per-color card counts (R1).

Cards of one color are interchangeable, so the engine never tracks card
identities: every pile is six counts, indexed by the canonical color order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec

COLORS: tuple[str, ...] = ("red", "orange", "yellow", "green", "purple", "black")
"""The six colors in their canonical order (R1): index 0 is red, 5 is black."""

Color = Literal["red", "orange", "yellow", "green", "purple", "black"]
"""A color name as it appears in moves, views and records."""

COLOR_INDEX: dict[str, int] = {name: i for i, name in enumerate(COLORS)}
CARDS_PER_COLOR = 18
DECK_SIZE = CARDS_PER_COLOR * len(COLORS)
ALL_COLORS_MASK = (1 << len(COLORS)) - 1


class Cards(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How many cards of each color a pile holds (all six colors, zeros included)."""

    red: int = 0
    orange: int = 0
    yellow: int = 0
    green: int = 0
    purple: int = 0
    black: int = 0

    @classmethod
    def of(cls, counts: Sequence[int]) -> Cards:
        """Build from six counts in canonical color order."""
        return cls(*counts)

    def counts(self) -> list[int]:
        """The six counts in canonical color order."""
        return [self.red, self.orange, self.yellow, self.green, self.purple, self.black]

    def total(self) -> int:
        return self.red + self.orange + self.yellow + self.green + self.purple + self.black


def full_deck() -> list[int]:
    """All 108 cards as color indices, sorted by color."""
    return [c for c in range(len(COLORS)) for _ in range(CARDS_PER_COLOR)]


def expand(counts: Sequence[int]) -> list[int]:
    """A list holding each color index as many times as counted."""
    out: list[int] = []
    for c, n in enumerate(counts):
        if n:
            out += [c] * n
    return out
