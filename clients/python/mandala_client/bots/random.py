"""``RandomBot``: a uniformly random legal move, the baseline every bot must beat."""

from __future__ import annotations

import random

from mandala import Move, View


class RandomBot:
    """Chooses uniformly among the legal moves; ``budget`` is accepted and unused."""

    def __init__(self, seed: int | None = None, budget: float | None = None) -> None:
        self._rng = random.Random(seed)

    def choose(self, view: View, legal: list[Move]) -> Move:
        return legal[self._rng.randrange(len(legal))]
