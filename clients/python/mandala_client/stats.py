"""Match statistics: score fraction, Elo difference with its interval, and the SPRT.

Pure functions over game scores (1 win, 0.5 draw, 0 loss, from one bot's
side). Duplicate deals come in pairs whose two games are correlated (same
cards), so the interval and the SPRT use the pair as the unit of
observation, the *pentanomial* model of chess engine testers; single games
(the *trinomial* model) work with the same functions by passing one score
per unit.

The SPRT is the generalized SPRT approximation (as in fishtest/cutechess):
with ``n`` units of mean ``x̄`` and variance ``σ²`` (per unit, each unit's
score scaled to 0–1), and ``s0``, ``s1`` the expected scores under the two
hypotheses' Elo,

    LLR ≈ n · (s1 − s0) · (2·x̄ − s0 − s1) / (2·σ²)

compared with ``ln(β/(1−α))`` and ``ln((1−β)/α)``.

The Elo interval is the Wilson score interval of the score over an
*effective* number of games (Kish's design effect, as Korn and Graubard use
for clustered samples): the spread of the units against that of as many
independent games says what the games are worth, never more than their
number. Unlike the plain normal interval it stays inside 0–1 and needs no
spread, so a perfect score still has a finite lower bound (and a zero score
a finite upper one); the other end is then unbounded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054
"""The two-sided 95 % quantile of the normal distribution."""


def elo_of(score: float) -> float:
    """The logistic Elo difference that gives this expected score (±inf at 1 and 0)."""
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


def score_of(elo: float) -> float:
    """The expected score of a side that is ``elo`` points stronger (logistic model)."""
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def mean_var(units: Sequence[float]) -> tuple[float, float]:
    """Mean and (population) variance of the unit scores."""
    n = len(units)
    if not n:
        return 0.5, 0.0
    mean = sum(units) / n
    return mean, sum((x - mean) ** 2 for x in units) / n


def pair_units(scores: Sequence[float]) -> list[float]:
    """Average consecutive games two by two: each duplicate deal becomes one unit (0–1).

    An odd trailing game stands alone as a unit of its own.
    """
    return [sum(scores[i:i + 2]) / len(scores[i:i + 2]) for i in range(0, len(scores), 2)]


def effective_games(units: Sequence[float], games: int | None = None) -> float:
    """How many independent games the units are worth: their ``games`` over the design effect.

    ``games`` is how many games the units hold (default one each). The design
    effect is the units' variance over that of a unit of as many independent
    games of the same mean, taken as at least 1 (a deal's seat swap may make
    it steadier than two independent games; the interval does not count on
    it) and as 1 when there is no spread to measure (all units at 0 or 1, or
    all alike).
    """
    n = len(units)
    mean, var = mean_var(units)
    games = n if games is None else games
    binomial = mean * (1.0 - mean) * n / games
    if binomial <= 0.0 or var <= binomial:
        return float(games)
    return games * binomial / var


def wilson(score: float, n: float, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a score over ``n`` games: exactly 0 and 1 at the extremes."""
    z2 = z * z
    centre = (score + z2 / (2.0 * n)) / (1.0 + z2 / n)
    half = z / (1.0 + z2 / n) * math.sqrt(score * (1.0 - score) / n + z2 / (4.0 * n * n))
    low = 0.0 if score <= 0.0 else centre - half
    high = 1.0 if score >= 1.0 else centre + half
    return low, high


def elo_interval(units: Sequence[float], games: int | None = None, z: float = Z95) -> tuple[float, float]:
    """The Elo interval of the mean unit score: Wilson's over the units' effective games.

    ``-inf`` or ``+inf`` at an end only when the score is 0 or 1 (that end
    is unbounded), and both without games.
    """
    if not units:
        return -math.inf, math.inf
    mean, _ = mean_var(units)
    low, high = wilson(mean, effective_games(units, games), z)
    return elo_of(low), elo_of(high)


@dataclass(frozen=True)
class Sprt:
    """The state of a sequential probability ratio test."""

    llr: float
    lower: float
    upper: float
    elo0: float
    elo1: float
    alpha: float
    beta: float

    @property
    def verdict(self) -> str:
        """``"H1 accepted"``, ``"H0 accepted"`` or ``"continue"`` (not enough evidence yet)."""
        if self.llr >= self.upper:
            return "H1 accepted"
        if self.llr <= self.lower:
            return "H0 accepted"
        return "continue"


def sprt_bounds(alpha: float = 0.05, beta: float = 0.05) -> tuple[float, float]:
    """Wald's bounds on the log-likelihood ratio for error rates ``alpha`` and ``beta``."""
    return math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)


def llr(units: Sequence[float], elo0: float, elo1: float) -> float:
    """The GSPRT log-likelihood ratio of H1 (``elo1``) against H0 (``elo0``). Units without any
    spread (a clean sweep, every game forfeited) get a prior of one lost and one won unit: the
    normal approximation would take them as no evidence at all, and the test would never end."""
    if not units:
        return 0.0
    mean, var = mean_var(units)
    if var <= 0.0:
        units = [*units, 0.0, 1.0]
        mean, var = mean_var(units)
    n = len(units)
    s0, s1 = score_of(elo0), score_of(elo1)
    return n * (s1 - s0) * (2.0 * mean - s0 - s1) / (2.0 * var)


def sprt(units: Sequence[float], elo0: float, elo1: float, alpha: float = 0.05, beta: float = 0.05) -> Sprt:
    """Test H0: Elo = ``elo0`` against H1: Elo = ``elo1`` on the unit scores so far."""
    lower, upper = sprt_bounds(alpha, beta)
    return Sprt(llr(units, elo0, elo1), lower, upper, elo0, elo1, alpha, beta)


@dataclass(frozen=True)
class Summary:
    """Wins, draws and losses of one side, its score and its Elo with a 95 % interval.

    At a score of 1 ``elo`` and ``elo_high`` are ``+inf`` and ``elo_low`` is
    finite; at 0, ``elo`` and ``elo_low`` are ``-inf`` and ``elo_high`` finite.
    """

    games: int
    wins: int
    draws: int
    losses: int
    score: float
    elo: float
    elo_low: float
    elo_high: float


def summarize(scores: Sequence[float], paired: bool = True) -> Summary:
    """Figures for one side from its game scores, in play order.

    With ``paired`` (duplicate deals: games ``2i`` and ``2i+1`` share a
    deal) the interval uses pair averages as its units; otherwise single
    games.
    """
    wins = sum(1 for s in scores if s == 1.0)
    losses = sum(1 for s in scores if s == 0.0)
    draws = len(scores) - wins - losses
    score = sum(scores) / len(scores) if scores else 0.5
    units = pair_units(scores) if paired else list(scores)
    low, high = elo_interval(units, games=len(scores))
    return Summary(len(scores), wins, draws, losses, score, elo_of(score), low, high)
