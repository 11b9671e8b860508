"""``GreedyBot``: the best-looking move one ply ahead, judged by :mod:`.heuristics`.

Each legal move is applied to a few sampled games (:mod:`mandala.sample`:
the hidden cards only change what a move draws), a destruction it starts
is played out with greedy picks, and the resulting positions are scored by
:func:`.heuristics.evaluate`. Picks take the claim worth most now plus what
it keeps from the opponent. Fast (a few milliseconds) and far better than
random, which makes it the yardstick for the search bot.
"""

from __future__ import annotations

import random

from mandala import Move, View
from mandala.sample import Sampler

from .base import legal_codes
from .heuristics import evaluate, resolve_picks


class GreedyBot:
    """One-ply lookahead over ``samples`` determinizations; ``budget`` is accepted and unused."""

    def __init__(self, seed: int | None = None, budget: float | None = None, samples: int = 3) -> None:
        self._rng = random.Random(seed)
        self.samples = max(1, samples)

    def choose(self, view: View, legal: list[Move]) -> Move:
        if len(legal) == 1:
            return legal[0]
        me = view.seat
        assert me is not None, "a bot plays a seat"
        codes = legal_codes(legal)
        sampler = Sampler(view)
        games = [sampler.sample(self._rng) for _ in range(self.samples)]
        best, best_value = 0, float("-inf")
        for i, code in enumerate(codes):
            value = 0.0
            for game in games:
                g = game.copy()
                g.push_code(code)
                resolve_picks(g)
                value += evaluate(g, me)
            if value > best_value:
                best, best_value = i, value
        return legal[best]
