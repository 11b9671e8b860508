"""The standings' Bradley–Terry fit as it was first written: pure Python, dense Newton steps by
Gaussian elimination and the covariance by a Gauss–Jordan inverse (cubic in bots).

Kept in the test tree only, as the reference the shipped fit (``server/ratings/bradley_terry.py``,
numpy and scipy.sparse) is compared with: the same likelihood and the same intervals, written
the plainest way. Unchanged but for this docstring.

Maximum-likelihood Bradley–Terry ratings with 95% intervals, as BayesElo and Ordo give.

Elo after each game depends on the order of the games; a Bradley–Terry fit over all
of them does not, and its curvature gives an honest uncertainty (against the
pool's average, as those programs report it). Each bot also
plays ``prior_draws`` virtual draws against a phantom rated ``center``: this keeps
a bot that has only won (or only lost) finite, anchors the scale, and makes the
information matrix invertible. Draws count as half a win for each side.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

LN10_400 = math.log(10.0) / 400.0
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Fit:
    """One bot's fitted rating and its 95% interval (``low``–``high``)."""

    rating: float
    low: float
    high: float
    games: int


@dataclass(frozen=True)
class Model:
    """A whole fit: each bot's :class:`Fit`, and the covariance of the strengths (for how
    sure the fit is that one bot is stronger than another)."""

    fits: dict[str, Fit]
    index: dict[str, int]
    covariance: list[list[float]]
    """Of the natural-log strengths, in the order of ``index``."""

    def stronger(self, a: str, b: str) -> float:
        """The likelihood that ``a`` is stronger than ``b``: Φ(d / σ), where d is the fitted
        strength difference and σ² its variance from the covariance."""
        i, j = self.index[a], self.index[b]
        c = self.covariance
        diff = (self.fits[a].rating - self.fits[b].rating) * LN10_400
        var = c[i][i] + c[j][j] - 2.0 * c[i][j]
        if var <= 0.0:
            return 0.5 if diff == 0.0 else 1.0 if diff > 0.0 else 0.0
        return 0.5 * math.erfc(-diff / math.sqrt(2.0 * var))


def fit(
    results: Iterable[tuple[str, str, float]],
    players: Sequence[str] = (),
    center: float = 1500.0,
    prior_draws: float = 2.0,
    iterations: int = 50,
) -> dict[str, Fit]:
    """Fit ratings to ``results``: ``(a, b, score of a)`` with score 1, ½ or 0.

    ``players`` lists bots to rate even without games (they get ``center`` and a
    wide interval).
    """
    return fit_model(results, players, center, prior_draws, iterations).fits


def fit_model(
    results: Iterable[tuple[str, str, float]],
    players: Sequence[str] = (),
    center: float = 1500.0,
    prior_draws: float = 2.0,
    iterations: int = 50,
) -> Model:
    """:func:`fit`, with the covariance kept (:meth:`Model.stronger`)."""
    pool = _Pool(players)
    games = pool.games
    wins: dict[tuple[int, int], float] = defaultdict(float)  # (i, j) -> points i took from j
    counts: dict[tuple[int, int], float] = defaultdict(float)  # (i, j) with i < j -> games
    for a, b, score in results:
        i, j = pool.of(a), pool.of(b)
        if i == j:
            continue
        wins[i, j] += score
        wins[j, i] += 1.0 - score
        counts[min(i, j), max(i, j)] += 1.0
        games[i] += 1
        games[j] += 1
    pairs = [(i, j, c, wins[i, j]) for (i, j), c in counts.items()]
    return _solve_model(pool.names, pool.index, pairs, games, center, prior_draws, iterations)


def fit_tally(
    rows: Iterable[tuple[str, str, int, int, int]],
    players: Sequence[str] = (),
    center: float = 1500.0,
    prior_draws: float = 2.0,
    iterations: int = 50,
) -> dict[str, Fit]:
    """:func:`fit` from totals instead of games: ``(a, b, a's wins, draws, a's losses)`` per
    pair (``server/ladder/tally.py``). The same likelihood, so the same ratings, at a cost that
    follows the number of pairs, not of games."""
    pool = _Pool(players)
    games = pool.games
    pairs: list[tuple[int, int, float, float]] = []
    for a, b, w, d, lost in rows:
        i, j = pool.of(a), pool.of(b)
        n = w + d + lost
        if i == j or n == 0:
            continue
        points = w + 0.5 * d  # what i took from j
        pairs.append((i, j, float(n), points) if i < j else (j, i, float(n), n - points))
        games[i] += n
        games[j] += n
    return _solve_model(pool.names, pool.index, pairs, games, center, prior_draws, iterations).fits


class _Pool:
    """The bots of a fit, numbered: ``players`` first, then each other one as it turns up."""

    def __init__(self, players: Sequence[str]) -> None:
        self.names: list[str] = list(dict.fromkeys(players))
        self.index: dict[str, int] = {n: i for i, n in enumerate(self.names)}
        self.games = [0] * len(self.names)

    def of(self, bot: str) -> int:
        i = self.index.get(bot)
        if i is None:
            i = self.index[bot] = len(self.names)
            self.names.append(bot)
            self.games.append(0)
        return i


def _solve_model(names: list[str], index: dict[str, int], pairs: list[tuple[int, int, float, float]],
                 games: list[int], center: float, prior_draws: float, iterations: int) -> Model:
    """Newton's method on the log-likelihood: ``pairs`` are ``(i, j, games, points i took)``."""
    n = len(names)
    s = [0.0] * n  # natural-log strengths relative to the phantom
    info = [[0.0] * n for _ in range(n)]
    for _ in range(iterations):
        grad = [0.0] * n
        info = [[0.0] * n for _ in range(n)]
        for i in range(n):  # the virtual draws against the phantom at strength 0
            p = 1.0 / (1.0 + math.exp(-s[i]))
            grad[i] += prior_draws * (0.5 - p)
            info[i][i] += prior_draws * p * (1.0 - p)
        for i, j, c, w in pairs:
            p = 1.0 / (1.0 + math.exp(s[j] - s[i]))
            g = w - c * p
            grad[i] += g
            grad[j] -= g
            h = c * p * (1.0 - p)
            info[i][i] += h
            info[j][j] += h
            info[i][j] -= h
            info[j][i] -= h
        step = _solve(info, grad)
        for i in range(n):
            s[i] += step[i]
        if max((abs(x) for x in step), default=0.0) < 1e-10:
            break
    cov = _inverse(info) if n else []
    variances = _relative_variances(cov) if n else []
    out: dict[str, Fit] = {}
    for i, name in enumerate(names):
        rating = center + s[i] / LN10_400
        half = Z95 * math.sqrt(variances[i]) / LN10_400
        out[name] = Fit(rating=rating, low=rating - half, high=rating + half, games=games[i])
    return Model(out, index, cov)


def _relative_variances(cov: list[list[float]]) -> list[float]:
    """Variance of each strength relative to the pool's mean.

    Games fix only differences between bots; the absolute level rests on the
    weak prior alone. As Ordo and BayesElo do, the interval is taken against
    the pool average, which the games do determine.
    """
    n = len(cov)
    if n == 1:
        return [max(cov[0][0], 0.0)]
    row_means = [sum(row) / n for row in cov]
    grand = sum(row_means) / n
    return [max(cov[i][i] - 2.0 * row_means[i] + grand, 0.0) for i in range(n)]


def _solve(matrix: list[list[float]], vector: list[float]) -> list[float]:
    """Solve ``matrix · x = vector`` by Gaussian elimination with partial pivoting."""
    n = len(vector)
    a = [row[:] + [vector[i]] for i, row in enumerate(matrix)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        a[col], a[pivot] = a[pivot], a[col]
        d = a[col][col]
        if d == 0.0:
            continue
        for r in range(col + 1, n):
            f = a[r][col] / d
            if f:
                row, top = a[r], a[col]
                for k in range(col, n + 1):
                    row[k] -= f * top[k]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        acc = a[r][n] - sum(a[r][k] * x[k] for k in range(r + 1, n))
        x[r] = acc / a[r][r] if a[r][r] else 0.0
    return x


def _inverse(matrix: list[list[float]]) -> list[list[float]]:
    """The inverse by Gauss–Jordan elimination with partial pivoting (one pass, O(n³)); a
    singular direction is left at zero."""
    n = len(matrix)
    a = [row[:] + [1.0 if r == c else 0.0 for c in range(n)] for r, row in enumerate(matrix)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        a[col], a[pivot] = a[pivot], a[col]
        d = a[col][col]
        if d == 0.0:
            continue
        top = a[col] = [x / d for x in a[col]]
        for r in range(n):
            if r != col and (f := a[r][col]):
                row = a[r]
                a[r] = [x - f * t for x, t in zip(row, top, strict=True)]
    return [row[n:] for row in a]
