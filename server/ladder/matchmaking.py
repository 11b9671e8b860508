"""Who plays whom next on the ladder: one pairing round over the seeking bots.

Pure (no I/O, no clock), so the properties the ladder promises are tested directly: close
ratings are preferred but any two seekers can meet (the weight falls off with the rating gap
and never reaches zero), nobody is paired twice in a round, and nobody meets its last
opponent again while someone else is free to play it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Seeker:
    """A bot that may start a ladder pair now."""

    name: str
    rating: float
    last_opponent: str | None = None


def weight(a: Seeker, b: Seeker, spread: float) -> float:
    """How much more likely ``a`` meets ``b`` than a bot ``spread`` Elo further away (×e)."""
    return math.exp(-abs(a.rating - b.rating) / spread)


def rematch(a: Seeker, b: Seeker) -> bool:
    return a.last_opponent == b.name or b.last_opponent == a.name


def pair_round(seekers: Sequence[Seeker], rng: random.Random, spread: float = 200.0) -> list[tuple[str, str]]:
    """Pairs for one round, each seeker in at most one.

    Seekers are taken in random order; each picks an opponent among those still unpaired,
    weighted by :func:`weight`. A rematch of the last game is chosen only when no one else is
    left for it, and is then undone by swapping partners with another pair where that makes
    two fresh pairs.
    """
    order = list(seekers)
    rng.shuffle(order)
    free = {s.name: s for s in order}
    pairs: list[tuple[Seeker, Seeker]] = []
    for a in order:
        if a.name not in free:
            continue
        others = [b for b in free.values() if b.name != a.name]
        if not others:
            continue
        fresh = [b for b in others if not rematch(a, b)]
        pool = fresh or others
        b = rng.choices(pool, weights=[weight(a, c, spread) for c in pool])[0]
        del free[a.name], free[b.name]
        pairs.append((a, b))
    return [(a.name, b.name) for a, b in _undo_rematches(pairs)]


def _undo_rematches(pairs: list[tuple[Seeker, Seeker]]) -> list[tuple[Seeker, Seeker]]:
    pairs = list(pairs)
    for i, (a, b) in enumerate(pairs):
        if not rematch(a, b):
            continue
        for j, (c, d) in enumerate(pairs):
            if j == i:
                continue
            for x, y in (((a, c), (b, d)), ((a, d), (b, c))):
                if not rematch(*x) and not rematch(*y):
                    pairs[i], pairs[j] = x, y
                    break
            else:
                continue
            break
    return pairs
