"""Graded house bots ``house:1`` … ``house:5``: fixed strengths a bot author can climb.

Each level is one of the shipped bots with a fixed amount of work per decision
(never a time budget) and its settings written out, so a level plays the same on a fast
or a slow machine and stays put when the shipped bots' defaults change,
its games are reproducible from the seed, and even the strongest costs a fraction
of a second a decision, cheap enough to run many at once. The measured gaps
between neighbours are in ``docs/writing-a-bot.md``.

* ``house:1``: uniformly random legal moves;
* ``house:2``: a random move half the time, else the greedy one;
* ``house:3``: greedy (one ply, :class:`.GreedyBot`);
* ``house:4``: search, 100 iterations a decision;
* ``house:5``: search, 1,000 iterations a decision.
"""

from __future__ import annotations

import random
from typing import Any

from mandala import Move, View

from .greedy import GreedyBot
from .random import RandomBot
from .search import SearchBot

LEVELS = (1, 2, 3, 4, 5)

def _search(seed: int | None, iterations: int) -> SearchBot:
    """The levels' search, its settings written out so that a level stays put when the
    shipped ``search``'s defaults change."""
    return SearchBot(seed=seed, iterations=iterations, exploration=0.2, policy="weighted", depth=10, evaluation="hand",
                     reuse=False)


class NoisyGreedyBot:
    """:class:`.GreedyBot` that plays a uniformly random legal move with probability ``noise``."""

    def __init__(self, seed: int | None = None, budget: float | None = None, noise: float = 0.5) -> None:
        if not 0.0 <= noise <= 1.0:
            raise ValueError(f"noise is a probability, not {noise!r}")
        self._rng = random.Random(seed)
        self.noise = noise
        self._greedy = GreedyBot(seed=self._rng.getrandbits(63))

    def choose(self, view: View, legal: list[Move]) -> Move:
        if self._rng.random() < self.noise:
            return legal[self._rng.randrange(len(legal))]
        return self._greedy.choose(view, legal)


def house(level: int, seed: int | None = None, budget: float | None = None) -> Any:
    """The bot of house level ``level`` (1–5); ``budget`` is accepted and ignored: a level's
    strength is its fixed work per decision, not the time it is given."""
    if level == 1:
        return RandomBot(seed=seed)
    if level == 2:
        return NoisyGreedyBot(seed=seed, noise=0.5)
    if level == 3:
        return GreedyBot(seed=seed)
    if level == 4:
        return _search(seed, 100)
    if level == 5:
        return _search(seed, 1000)
    raise ValueError(f"house levels are {LEVELS[0]} to {LEVELS[-1]}, not {level!r}")


def _level_factory(level: int) -> Any:
    def make(seed: int | None = None, budget: float | None = None) -> Any:
        return house(level, seed=seed, budget=budget)

    make.__name__ = f"house_{level}"
    make.__doc__ = f"House level {level} (see :mod:`mandala_client.bots.levels`)."
    return make


HOUSE_LEVELS: dict[str, Any] = {f"house:{n}": _level_factory(n) for n in LEVELS}
"""The spec names of the levels, for :data:`mandala_client.bots.SHORTCUTS`."""
