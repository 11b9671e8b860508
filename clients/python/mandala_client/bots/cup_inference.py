"""What the opponent's claims say about its two hidden starting cup cards (experiment).

The starting cup never changes, so evidence about it adds up over a game, unlike the hand's.
A claim of a color new to the claimer's river scores by its cup cards of that color, hidden
ones included (R13b), so an opponent prefers the colors of its hidden cards. :class:`CupBelief`
keeps a log-likelihood for each of the 21 color pairs the two cards can be, from a softmax
over the greedy claim values (:func:`.heuristics.best_claim`'s) of every claim it made.
``bench/cup_info.py`` measures what that is worth before any sampler uses it.
"""

from __future__ import annotations

import math

from mandala import View
from mandala.moves import CLAIM_BASE
from mandala.sample import Sampler

from .heuristics import DENIAL, claim_gain

PAIRS = tuple((a, b) for a in range(6) for b in range(a, 6))


class CupBelief:
    """Log-likelihoods of the opponent's hidden starting pair, one per entry of :data:`PAIRS`."""

    __slots__ = ("loglik", "temperature")

    def __init__(self, temperature: float) -> None:
        self.loglik = [0.0] * len(PAIRS)
        self.temperature = temperature

    def observe(self, before: View, code: int) -> None:
        """The opponent claimed ``code`` in the position ``before`` (our view, its pick)."""
        if before.seat is None or before.private is None or before.phase != "pick":
            return
        opp = 1 - before.seat
        if before.players[opp].cup_unknown != 2:
            return
        game = Sampler(before)._template.copy()
        m = game.destroying
        if m is None or game.to_move != opp:
            return
        colors = [c for c in range(6) if game.mountains[m][c]]
        if code - CLAIM_BASE not in colors or len(colors) < 2:
            return
        claimed = game.cups[opp][:]
        t = self.temperature
        for i, (a, b) in enumerate(PAIRS):
            cup = claimed[:]
            cup[a] += 1
            cup[b] += 1
            game.cups[opp] = cup
            values = [claim_gain(game, opp, m, c) + DENIAL * claim_gain(game, 1 - opp, m, c) for c in colors]
            top = max(values)
            log_z = math.log(sum(math.exp((v - top) / t) for v in values))
            self.loglik[i] += (values[colors.index(code - CLAIM_BASE)] - top) / t - log_z
