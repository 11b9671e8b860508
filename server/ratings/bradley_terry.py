"""Maximum-likelihood Bradley–Terry ratings with 95% intervals, as BayesElo and Ordo give.

Elo after each game depends on the order of the games; a Bradley–Terry fit over all of them
does not, and its curvature gives an honest uncertainty (against the pool's average, as those
programs report it). Each bot also plays ``prior_draws`` virtual draws against a phantom rated
``center``: this keeps a bot that has only won (or only lost) finite, anchors the scale, and
makes the information matrix invertible. Draws count as half a win for each side.

**How it is computed.** The fit reads per-pair totals, so its cost follows the pairs, not the
games. Newton's method on the log-likelihood, from every bot at ``center`` or from the ratings
of the last fit (``start``: a refresh's totals differ from the last one's by a few games, and
from there Newton takes 4 steps instead of 7): the gradient and the
information matrix ``A`` are assembled from arrays of the pairs (numpy), ``A`` being the graph
Laplacian of the pair counts weighted by p(1−p) plus the prior's diagonal. Each step solves ``A``;
the steps stop when no strength moves by more than 1e-10 (natural-log units). How ``A`` is
solved depends on the pool's size:

- up to :data:`DENSE_MAX` bots (1,000): the intervals from the exact diagonal of the
  covariance ``C = A⁻¹``, by LAPACK (scipy's): ``A``'s Cholesky factor ``L`` and the column
  norms of ``L⁻¹``. Newton's steps solve the same dense matrix up to :data:`DENSE_STEPS_MAX`
  bots, and above that the sparse path's conjugate gradients (below), so that a fit of 1,000
  bots factors one dense matrix, at the optimum, instead of one per step. Exact to rounding;
  0.1–0.2 s of CPU at 1,000 bots, a third to a sixth of what a factorization a step and the
  whole inverse cost (measured alternately, ``docs/performance.md``), but cubic (3.4 times as much at 1,500 bots), where the sparse path takes 0.1–0.25 s (``bench/standings_fit.py``).
- above: ``A`` stays sparse (scipy.sparse) and each step is a conjugate-gradient solve with a
  two-level preconditioner (:class:`_TwoLevel`: Jacobi, plus an exact solve on aggregates of
  bots that are neighbours in the graph, which carries the slow, pool-wide modes that Jacobi
  alone converges on slowly). The ratings are the dense path's (1e-12 apart, measured; the
  tests hold them to 1e-6). A sparse factorization was measured too: 0.3 s for a ladder whose bots meet
  opponents near in strength, but 88 s for random opponents (its fill is the whole matrix).

**The intervals.** A bot's interval is ±Z95 σ, where σ² is the variance of its strength relative
to the pool's mean: ``C[i,i] − 2·m[i] + mean(m)``, ``m = C·1/n`` the covariance's row means. ``m``
is one solve, exact at every size. ``C[i,i]`` is exact up to :data:`DENSE_MAX` bots. Above,
inverting ``A`` (cubic: about a minute at 10,000 bots) or one solve per bot (10,000 solves)
would not fit a refresh, so the diagonal is *estimated* (:func:`_estimated_diagonal`):
``diag(C) = diag(M) + E[z ∘ (C − M)z]``, where ``M`` is a known approximate inverse (the
preconditioner's aggregates, exact, plus three terms of ``A``'s Neumann series on what they
leave) whose diagonal is computed exactly, and the expectation is Hutchinson's unbiased
estimate over random ±1 vectors ``z``, solved :data:`PROBES` at a time as one block. ``M`` is
close to ``C``, so the estimate's spread is small. Probes are added until each bot's relative
variance has a standard error within :data:`PROBE_TARGET` of it, or a budget of work is spent
(16 probes at 10,000 bots and 500,000 pairs; more on sparser or smaller ladders, whose probes
cost less). Measured against exact variances (the figures: ``bench/standings_fit.py --accuracy
300``, an exact solve for each of 300 bots of a ladder, the two extremes of strength among
them; ``tests/ladder/test_ratings.py`` forces the estimate on 400-bot ladders, which the dense
path solves exactly, and holds it to the bounds below):

- bots meeting about 100 opponents (random ones, or the nearest in strength): every sampled
  bot's interval half-width within 0.3 % of the exact one, a tenth of an Elo point on
  intervals of ±45;
- about 20 opponents: within 0.6 % at 3,000 bots, 1.4 % at 10,000 (fewer probes for the same
  budget), 1–2 Elo points on intervals of ±110 (tests, 400 bots: bound 1 %);
- about 5 opponents: within 3 % at 3,000 bots, 7 % at 10,000, up to 15 Elo points on
  intervals of ±230 (tests, 400 bots: bound 5 %).

The probes are seeded, so the same totals give the same intervals. A bot without games gets
its exact interval at every size (to the solves' tolerance), and so does a bot in a small
connected part of the graph (at most :data:`MIN_AGGREGATE` bots with games, as most are in a
large ladder's first games): ``A`` is block-diagonal over the parts, and each small part's
block is inverted on its own. Before, each small part took an aggregate of its own, and a
ladder of 10,000 bots a game or two old had thousands of them: a refresh took 4–17 s of CPU
instead of half a second.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import chain
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import scipy.sparse

LN10_400 = math.log(10.0) / 400.0
Z95 = 1.959963984540054

DENSE_MAX = 1000
"""Up to this many bots the exact variances (a dense factorization), above it estimated ones
(the module's docstring): the dense factorization costs 0.1–0.2 s of CPU here and grows with
the cube of the bots beyond, where the sparse path costs 0.1–0.3 s (``bench/standings_fit.py``)."""

DENSE_STEPS_MAX = 200
"""Up to this many bots Newton's steps solve the dense matrix too; above (up to
:data:`DENSE_MAX`), the sparse path's conjugate gradients, and the one dense factorization
is the covariance's, at the optimum: at 1,000 bots a factorization costs more than all of a
step's conjugate gradients (``bench/standings_fit.py``)."""

PROBES = 16
"""Random vectors per block of the diagonal's estimate above :data:`DENSE_MAX` bots."""

PROBE_TARGET = 0.002
"""The estimate stops adding probes once each bot's relative variance has this standard
error (relative)…"""

PROBE_WORK = 19_200_000
"""…or once it has as many probes as this budget pays for, a probe's conjugate-gradient
iteration costing a read of the matrix (two entries a pair) and of a score of vectors (20
entries a bot): 16 probes at 10,000 bots and 500,000 pairs, 80 at 10,000 bots and 25,000
pairs…"""

MOST_PROBES = 1024
"""…and at most this many probes (a small ladder's are cheap)."""

MIN_AGGREGATE = 16
"""The two-level preconditioner's smallest aggregate…"""

MOST_AGGREGATES = 512
"""…and its largest number of aggregates (its coarse matrix is dense)."""

SWEEPS = 2
"""Breadth-first walks to the farthest bot before the one that orders the aggregates: with one,
the near-in-strength ladders' variances were four times as far off (1.3–1.5 % of the
half-width at 400 bots, 0.2–0.3 % with two)."""

DENSE_COARSE = 64
"""Up to this many aggregates, the diagonal's exact part takes dense products with them."""

WARM_STEPS = 10
"""Newton's steps from a given start (the last refresh's ratings: 4 steps when they are near)
before the fit starts again from the center…"""

WARM_MOVE_MAX = 1.0
"""…or as soon as a step from it moves a strength by more than this (natural-log units, 174
Elo): the start was far (a reset, a bot's totals rewritten), and Newton's method, undamped,
may run off from there, where from the center it always has converged."""

STEP_TOLERANCE = 1e-10
"""Newton stops once no strength moves by more than this (natural-log units)."""

_Array = np.ndarray[Any, np.dtype[np.float64]]
_Ints = np.ndarray[Any, np.dtype[np.int64]]


@dataclass(frozen=True)
class Fit:
    """One bot's fitted rating and its 95% interval (``low``–``high``)."""

    rating: float
    low: float
    high: float
    games: int


def rank_key(rating: float, bot: str) -> tuple[float, str]:
    """How a table ranks bots: by rating, highest first, equal ratings by name. Equal to a
    millionth of a point: two bots whose results are alike get ratings that differ only by the
    fit's rounding (1e-13), which must not order them."""
    return -round(rating, 6), bot


@dataclass(frozen=True, eq=False)
class Model:
    """A whole fit: each bot's :class:`Fit`, and how sure the fit is that one bot is stronger
    than another (from the covariance of the strengths)."""

    fits: dict[str, Fit]
    index: dict[str, int]
    covariance: _Array | None
    """Of the natural-log strengths, in the order of ``index``; ``None`` above
    :data:`DENSE_MAX` bots, where :meth:`stronger` solves for the one variance it needs."""
    solve: Callable[[_Array], _Array] | None = None
    """The information matrix's solve, for :meth:`stronger` without the covariance."""

    def stronger(self, a: str, b: str) -> float:
        """The likelihood that ``a`` is stronger than ``b``: Φ(d / σ), where d is the fitted
        strength difference and σ² its variance, ``(eᵢ − eⱼ)ᵀ C (eᵢ − eⱼ)``."""
        i, j = self.index[a], self.index[b]
        diff = (self.fits[a].rating - self.fits[b].rating) * LN10_400
        if self.covariance is not None:
            c = self.covariance
            var = float(c[i, i] + c[j, j] - 2.0 * c[i, j])
        elif i == j:
            var = 0.0
        else:
            assert self.solve is not None
            e = np.zeros(len(self.index))
            e[i], e[j] = 1.0, -1.0
            x = self.solve(e)
            var = float(x[i] - x[j])
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
    index: dict[str, int] = {}
    for bot in players:
        index.setdefault(bot, len(index))
    totals: dict[tuple[int, int], list[float]] = defaultdict(lambda: [0.0, 0.0])  # (i, j), i < j -> games, i's points
    for a, b, score in results:
        i, j = index.setdefault(a, len(index)), index.setdefault(b, len(index))
        if i == j:
            continue
        t = totals[min(i, j), max(i, j)]
        t[0] += 1.0
        t[1] += score if i < j else 1.0 - score
    pairs = np.array(list(totals), dtype=np.int64).reshape(-1, 2)
    counts = np.array(list(totals.values()), dtype=np.float64).reshape(-1, 2)
    return _fit(index, pairs[:, 0], pairs[:, 1], counts[:, 0], counts[:, 1], center, prior_draws, iterations)


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
    return fit_tally_model(rows, players, center, prior_draws, iterations).fits


def fit_tally_model(
    rows: Iterable[tuple[str, str, int, int, int]],
    players: Sequence[str] = (),
    center: float = 1500.0,
    prior_draws: float = 2.0,
    iterations: int = 50,
) -> Model:
    """:func:`fit_tally`, with the covariance or the information matrix's solve kept."""
    rows = rows if isinstance(rows, list) else list(rows)
    first = list(map(itemgetter(0), rows))
    second = list(map(itemgetter(1), rows))
    index: dict[str, int] = {}
    for bot in players:
        index.setdefault(bot, len(index))
    if not index.keys() >= set(first).union(second):
        # Bots numbered as they turn up: ``players`` first, then each pair's two in turn.
        for bot in chain.from_iterable(zip(first, second, strict=True)):
            index.setdefault(bot, len(index))
    i = np.fromiter(map(index.__getitem__, first), np.int64, len(rows))
    j = np.fromiter(map(index.__getitem__, second), np.int64, len(rows))
    w, d, lost = (np.fromiter(map(itemgetter(k), rows), np.float64, len(rows)) for k in (2, 3, 4))
    points = w + 0.5 * d  # what i took from j
    return _fit(index, i, j, w + d + lost, points, center, prior_draws, iterations)


def fit_arrays(size: int, first: np.ndarray[Any, Any], second: np.ndarray[Any, Any], counts: np.ndarray[Any, Any],
               center: float = 1500.0, prior_draws: float = 2.0, iterations: int = 50,
               start: np.ndarray[Any, Any] | None = None) -> tuple[_Array, _Array, _Array, _Array]:
    """:func:`fit_tally` with bots numbered ``0 … size − 1`` and the totals as arrays:
    ``counts[k]`` is ``(wins, draws, losses)`` of ``first[k]`` against ``second[k]``. Returns
    each bot's rating, low, high and games, for a caller that moves the numbers on (a worker
    process) rather than reading them. ``start``: each bot's rating to start Newton's method
    from (the last fit's, for a refresh): the same answer in fewer steps when it is close."""
    counts = np.asarray(counts, dtype=np.float64).reshape(-1, 3)
    points = counts[:, 0] + 0.5 * counts[:, 1]
    s0 = None
    if start is not None:
        s0 = (np.asarray(start, dtype=np.float64).reshape(-1) - center) * LN10_400
        if s0.shape != (size,):
            raise ValueError(f"start gives {s0.size} ratings for {size} bots")
    ratings, low, high, played, _ = _solve(size, np.asarray(first, np.int64), np.asarray(second, np.int64),
                                           counts.sum(axis=1), points, center, prior_draws, iterations, s0,
                                           keep_covariance=False)
    return ratings, low, high, played


def _fit(index: dict[str, int], i: _Ints, j: _Ints, games: _Array, points: _Array,
         center: float, prior_draws: float, iterations: int) -> Model:
    """The fit of pairs ``(i, j)`` that played ``games`` games in which ``i`` took ``points``."""
    ratings, low, high, played, solution = _solve(len(index), i, j, games, points, center, prior_draws, iterations)
    fits = {name: Fit(rating=r, low=lo, high=hi, games=int(g)) for name, r, lo, hi, g in zip(
        index, ratings.tolist(), low.tolist(), high.tolist(), played.tolist(), strict=True)}
    return Model(fits, index, solution.covariance, solution.solve)


def _solve(size: int, i: _Ints, j: _Ints, games: _Array, points: _Array, center: float, prior_draws: float,
           iterations: int, start: _Array | None = None, keep_covariance: bool = True,
           ) -> tuple[_Array, _Array, _Array, _Array, _Solution]:
    """Ratings, lows, highs and games of bots ``0 … size − 1`` from pairs ``(i, j)`` that played
    ``games`` games in which ``i`` took ``points`` (a pair may come more than once, in either
    order; a bot against itself and a pair without games count for nothing); Newton's method
    starts from the strengths ``start`` if given (``keep_covariance``: :func:`_newton`)."""
    if not prior_draws > 0.0:
        raise ValueError(f"prior_draws must be positive (it makes the fit unique), not {prior_draws!r}")
    if len(i) and (min(i.min(), j.min()) < 0 or max(i.max(), j.max()) >= size):
        raise ValueError(f"a pair names a bot outside 0 … {size - 1}")
    if np.any(games < 0) or np.any(points < 0) or np.any(points > games):
        raise ValueError("a pair's totals are negative, or it took more points than it played games")
    keep = (i != j) & (games > 0)
    i, j, games, points = i[keep], j[keep], games[keep], points[keep]
    played = (np.bincount(i, games, size) + np.bincount(j, games, size)).astype(np.float64)
    pairs = _Pairs(size, np.minimum(i, j), np.maximum(i, j), games, np.where(i < j, points, games - points))
    solution = None
    if start is not None and np.all(np.isfinite(start)):
        try:
            solution = _newton(pairs, prior_draws, min(iterations, WARM_STEPS), start, keep_covariance)
        except np.linalg.LinAlgError:
            solution = None
    if solution is None:  # no start, or Newton did not settle from it
        solution = _newton(pairs, prior_draws, iterations, keep_covariance=keep_covariance)
        assert solution is not None
    ratings = center + solution.strengths / LN10_400
    halves = Z95 * np.sqrt(solution.variances) / LN10_400
    return ratings, ratings - halves, ratings + halves, played, solution


class _Pairs:
    """The pairs that played, one entry each, in order: ``(lo[k], hi[k])``, ``lo < hi``, played
    ``games[k]`` games in which ``lo`` took ``points[k]`` (a pair that came more than once is
    summed)."""

    def __init__(self, size: int, lo: _Ints, hi: _Ints, games: _Array, points: _Array) -> None:
        key, at = np.unique(lo * size + hi, return_inverse=True)
        self.size = size
        self.lo, self.hi = key // size, key % size
        self.games = np.bincount(at, games, len(key))
        self.points = np.bincount(at, points, len(key))
        self._structure: tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], _Ints] | None = None

    def matrix(self, values: _Array) -> scipy.sparse.csr_array:
        """The symmetric sparse matrix with ``values[k]`` at pair ``k``'s two entries."""
        import scipy.sparse

        if self._structure is None:  # once: where each pair's two entries go
            count, n = len(self.lo), self.size
            index = np.int32 if 2 * count < 2**31 else np.int64  # 32 bits: the products read half as much
            # The upper triangle is the pairs in their order (+k + 1), the lower its transpose (−k − 1).
            upper = scipy.sparse.csr_array(
                (np.arange(1.0, count + 1), self.hi.astype(index),
                 np.r_[0, np.cumsum(np.bincount(self.lo, minlength=n))].astype(index)), shape=(n, n))
            both = (upper - upper.T.tocsr()).tocsr()
            self._structure = (both.indices.astype(index), both.indptr.astype(index),
                               np.abs(both.data).astype(np.int64) - 1)
        indices, indptr, entry_pair = self._structure
        return scipy.sparse.csr_array((values[entry_pair], indices, indptr), shape=(self.size, self.size))


def _logistic(x: _Array) -> _Array:
    """1 / (1 + e⁻ˣ), as ½(1 + tanh(x/2)): no overflow for any x, one transcendental."""
    return 0.5 + 0.5 * np.tanh(0.5 * x)


@dataclass(frozen=True)
class _Solution:
    strengths: _Array
    """Natural-log strengths relative to the phantom."""
    variances: _Array
    """Of each strength relative to the pool's mean."""
    covariance: _Array | None
    solve: Callable[[_Array], _Array] | None


def _newton(pairs: _Pairs, prior_draws: float, iterations: int, start: _Array | None = None,
            keep_covariance: bool = True) -> _Solution | None:
    """Newton's method on the log-likelihood from ``start`` (or every bot at 0), then the
    variances (module docstring); ``None`` if from ``start`` it did not settle
    (:data:`WARM_MOVE_MAX`; the caller starts again from 0, where it always has). Up to :data:`DENSE_MAX` bots the exact
    variances come without the whole covariance, which is computed only if
    ``keep_covariance`` (for :meth:`Model.stronger`; a third more work)."""
    size = pairs.size
    s = np.zeros(size) if start is None else start.copy()
    if size == 0:
        return _Solution(s, s, np.zeros((0, 0)), None)
    system: _Dense | _Sparse | None = None
    levels: _TwoLevel | None = None
    moved = 1.0
    for _ in range(iterations):
        grad, h, diagonal = _derivatives(pairs, s, prior_draws)
        if size <= min(DENSE_STEPS_MAX, DENSE_MAX):
            system = _Dense(pairs, h, diagonal)
        else:
            levels = levels or _TwoLevel.of(pairs)
            system = _Sparse(pairs, h, diagonal, levels)
        # Inexact Newton: a loose solve while far from the optimum, tighter as the steps shrink.
        step = system.solve(grad, rtol=min(1e-3, max(moved * moved, 1e-12)))
        s += step
        moved = float(np.abs(step).max())
        if moved < STEP_TOLERANCE:
            break
        if start is not None and not moved <= WARM_MOVE_MAX:
            return None  # the start was far: undamped Newton may run off from there
    else:
        if start is not None:
            return None
    assert system is not None
    if size <= DENSE_MAX:
        if not isinstance(system, _Dense):  # the steps were sparse: the exact covariance, at the optimum
            system = _Dense(pairs, *_derivatives(pairs, s, prior_draws)[1:])
        diag, m = system.inverse_diagonal()
        return _Solution(s, _relative(diag, m), system.covariance() if keep_covariance else None, None)
    assert isinstance(system, _Sparse)
    m = system.solve(np.ones(size), rtol=1e-10) / size
    variances = _relative(_estimated_diagonal(system, m), m)
    return _Solution(s, variances, None, partial(system.solve, rtol=1e-10))


def _derivatives(pairs: _Pairs, s: _Array, prior_draws: float) -> tuple[_Array, _Array, _Array]:
    """At strengths ``s``: the log-likelihood's gradient, each pair's weight ``h`` in the
    information matrix (off its diagonal, negated) and that matrix's diagonal."""
    size, lo, hi, games, points = pairs.size, pairs.lo, pairs.hi, pairs.games, pairs.points
    p = _logistic(s[lo] - s[hi])  # lo's expected score against hi
    g = points - games * p
    q = _logistic(s)  # against the phantom, at strength 0
    grad = np.bincount(lo, g, size) - np.bincount(hi, g, size) + prior_draws * (0.5 - q)
    h = games * p * (1.0 - p)
    diagonal = np.bincount(lo, h, size) + np.bincount(hi, h, size) + prior_draws * q * (1.0 - q)
    return grad, h, diagonal


def _relative(diag: _Array, m: _Array) -> _Array:
    """Variance of each strength relative to the pool's mean, ``C[i,i] − 2 m[i] + mean(m)``.

    Games fix only differences between bots; the absolute level rests on the weak prior
    alone. As Ordo and BayesElo do, the interval is taken against the pool average, which the
    games do determine.
    """
    if len(diag) == 1:
        return np.maximum(diag, 0.0)
    return np.maximum(diag - 2.0 * m + m.mean(), 0.0)


class _Dense:
    """The information matrix as a dense array, solved by LAPACK (scipy's): it is symmetric
    positive definite (a weighted Laplacian plus the prior's positive diagonal), so by its
    Cholesky factor, half the work of numpy's LU, and the covariance from the same factor
    (``potri``) instead of a second factorization."""

    def __init__(self, pairs: _Pairs, h: _Array, diagonal: _Array) -> None:
        n = pairs.size
        a = np.zeros((n, n))
        a[pairs.lo, pairs.hi] = -h  # one entry per pair
        a[pairs.hi, pairs.lo] = -h
        a[np.diag_indices(n)] = diagonal
        self.a = a
        self._factor: _Array | None = None

    def _cholesky(self) -> _Array | None:
        """The lower Cholesky factor (in place of ``a``'s copy), ``None`` if LAPACK finds the
        matrix not positive definite to rounding (then LU, as numpy solves)."""
        if self._factor is None:
            from scipy.linalg import lapack

            factor, info = lapack.dpotrf(self.a, lower=1, clean=0)
            self._factor = factor if info == 0 else np.zeros((0, 0))
        return self._factor if len(self._factor) == len(self.a) else None

    def solve(self, b: _Array, rtol: float = 0.0) -> _Array:
        factor = self._cholesky()
        if factor is None:
            return np.asarray(np.linalg.solve(self.a, b), dtype=np.float64)
        from scipy.linalg import lapack

        x, info = lapack.dpotrs(factor, b, lower=1)
        assert info == 0
        return np.asarray(x, dtype=np.float64)

    def inverse_diagonal(self) -> tuple[_Array, _Array]:
        """``C``'s diagonal and row means (``C = A⁻¹``) without ``C``: with ``A = LLᵀ``,
        ``C[i,i]`` is the squared norm of ``L⁻¹``'s column ``i`` (one triangular inverse, half
        of what ``C`` itself costs beyond the factor), and the means are one solve."""
        factor = self._cholesky()
        n = len(self.a)
        if factor is None:
            cov = self.covariance()
            return np.diag(cov).copy(), cov.mean(axis=1)
        from scipy.linalg import lapack

        inverse, info = lapack.dtrtri(factor, lower=1)
        assert info == 0
        inverse = np.tril(inverse)  # the factor's upper triangle is what ``a`` had there
        return np.einsum("ki,ki->i", inverse, inverse), self.solve(np.ones(n)) / n

    def covariance(self) -> _Array:
        factor = self._cholesky()
        if factor is None:
            return np.asarray(np.linalg.inv(self.a), dtype=np.float64)
        from scipy.linalg import lapack

        inverse, info = lapack.dpotri(factor, lower=1)
        assert info == 0
        lower = np.tril(inverse)  # potri fills the lower triangle only
        return np.asarray(lower + np.tril(lower, -1).T, dtype=np.float64)


class _TwoLevel:
    """Aggregates of bots that are neighbours in the graph of pairs: ``aggregate[i]``, or −1 for
    a bot without games (which the diagonal alone solves exactly); ``z`` their indicator
    columns.

    The Laplacian's slow modes (the pool's mean, each connected part's, and differences between
    distant parts of a long graph) are what Jacobi's conjugate gradients converge on slowly and
    what makes the diagonal's random estimate noisy; an exact solve on the aggregates carries
    them. The aggregates are consecutive in a breadth-first order of each connected part from
    a peripheral bot (the order of reverse Cuthill–McKee, whose start scipy takes at the least
    degree instead, which can be the middle of a long graph: aggregates then joined its two
    far ends, and some bots' variances were 30 % off), as long as three quarters of a pair's
    typical distance in that order: a graph of opponents near in strength, long and thin,
    gets small aggregates along its length; a graph of random opponents, whose slow mode is
    little more than the mean, a few large ones.
    """

    def __init__(self, aggregate: _Ints, count: int, small: _Ints) -> None:
        self.aggregate = aggregate
        self.count = count
        self.small = small
        """Each bot's connected part when that part has at most :data:`MIN_AGGREGATE` bots with
        games (else −1): such a part is its own small block of ``A``, inverted exactly
        (:meth:`_Sparse.exact_small`) instead of taking an aggregate (an early ladder has
        thousands of them, and the coarse matrix would be thousands wide)."""
        import scipy.sparse

        self.rows = np.flatnonzero(aggregate >= 0)
        size = len(aggregate)
        self.z = scipy.sparse.csr_array((np.ones(len(self.rows)), (self.rows, aggregate[self.rows])),
                                        shape=(size, count))
        self.zt = self.z.T.tocsr()

    @classmethod
    def of(cls, pairs: _Pairs) -> _TwoLevel:
        from scipy.sparse.csgraph import breadth_first_order, connected_components

        size = pairs.size
        graph = pairs.matrix(np.ones(len(pairs.lo)))
        has_games = np.diff(graph.indptr) > 0
        rank = np.zeros(size, np.int64)

        def walk(start: int) -> _Ints:
            """Breadth first from a peripheral bot (the last one reached from ``start``, and so
            on :data:`SWEEPS` times): consecutive bots are then close in the graph, and a long
            graph is walked along its length."""
            for _ in range(SWEEPS):
                start = int(breadth_first_order(graph, start, directed=False, return_predecessors=False)[-1])
            order: _Ints = breadth_first_order(graph, start, directed=False, return_predecessors=False)
            rank[order] = np.arange(len(order))
            return order

        order = walk(int(np.argmax(has_games))) if has_games.any() else np.zeros(0, np.int64)
        small = np.full(size, -1, np.int64)
        if len(order) == has_games.sum():  # one connected part (and bots without games)
            label = np.zeros(size, np.int64)
        else:
            parts, label = connected_components(graph, directed=False)
            bots = np.bincount(label, has_games, parts)
            for part in np.flatnonzero(bots > MIN_AGGREGATE):
                if part != label[order[0]]:
                    walk(int(np.argmax(label == part)))
            in_small = has_games & (bots[label] <= MIN_AGGREGATE)
            small[in_small] = label[in_small]
            has_games = has_games & ~in_small  # a small part takes no aggregate
        spread = float(np.abs(rank[pairs.lo] - rank[pairs.hi]).mean()) if len(pairs.lo) else 0.0
        width = max(MIN_AGGREGATE, round(0.75 * spread), -(-size // MOST_AGGREGATES))
        by = np.lexsort((rank, label))
        by = by[has_games[by]]  # a bot without games stays out
        # Consecutive blocks of ``width`` within each connected part.
        parts = label[by]
        first = np.r_[True, parts[1:] != parts[:-1]]
        position = np.arange(len(by)) - np.maximum.accumulate(np.where(first, np.arange(len(by)), 0))
        new = first | (position % width == 0)
        aggregate = np.full(size, -1, np.int64)
        aggregate[by] = np.cumsum(new) - 1
        return cls(aggregate, int(new.sum()), small)


class _Sparse:
    """The information matrix ``A = D − W`` kept sparse: ``D`` its diagonal, ``W`` the pairs'
    weights ``h`` (``weights``), solved by conjugate gradients with a two-level preconditioner
    on ``levels``' aggregates."""

    def __init__(self, pairs: _Pairs, h: _Array, diagonal: _Array, levels: _TwoLevel) -> None:
        self.pairs, self.h, self.diagonal, self.levels = pairs, h, diagonal, levels
        self.inv_diagonal = 1.0 / diagonal
        self.weights = pairs.matrix(h)
        self.coarse_inverse: _Array | None = None  # E⁻¹, dense: r is small
        r = levels.count
        if r:
            # E = ZᵀAZ, from the pairs: each pair's weight off the diagonal of its two aggregates.
            a = levels.aggregate
            al, ah = a[pairs.lo], a[pairs.hi]  # a pair's two bots are in aggregates, or both in a small part
            big = al >= 0
            al, ah, hb = al[big], ah[big], h[big]
            e = np.diag(np.bincount(a[levels.rows], diagonal[levels.rows], r))
            e -= np.bincount(al * r + ah, hb, r * r).reshape(r, r) + np.bincount(ah * r + al, hb, r * r).reshape(r, r)
            self.coarse_inverse = np.linalg.inv(e)

    def scale(self, v: _Array, x: _Array) -> _Array:
        return v[:, None] * x if x.ndim == 2 else v * x

    def w(self, x: _Array) -> _Array:
        return np.asarray(self.weights @ x)

    def apply(self, x: _Array) -> _Array:
        """``A·x``, for a vector or a block of columns."""
        return self.scale(self.diagonal, x) - self.w(x)

    def coarse(self, x: _Array) -> _Array:
        """``Q·x``, ``Q = Z E⁻¹ Zᵀ``: the exact solve on the aggregates."""
        if self.coarse_inverse is None:
            return np.zeros_like(x)
        return np.asarray(self.levels.z @ (self.coarse_inverse @ (self.levels.zt @ x)))

    def precondition(self, r: _Array) -> _Array:
        """``(D⁻¹ + Q)·r``: Jacobi for the fast modes, the aggregates for the slow ones, at no
        product with the matrix."""
        return self.scale(self.inv_diagonal, r) + self.coarse(r)

    def solve(self, b: _Array, rtol: float) -> _Array:
        """``A⁻¹·b``, each column of a block to ``rtol`` of its norm, by preconditioned
        conjugate gradients. scipy's ``cg`` takes one right-hand side; the diagonal's probes are
        a block, solved together so that each product reads the matrix once."""
        def dot(x: _Array, y: _Array) -> _Array:
            return np.einsum("i...,i...->...", x, y)

        x = np.zeros_like(b)
        r = b.copy()
        z = self.precondition(r)
        p = z.copy()
        rz = dot(r, z)
        limit = rtol * np.sqrt(dot(b, b))
        for _ in range(10 * len(b) + 100):
            if np.all(np.sqrt(dot(r, r)) <= limit):
                break
            ap = self.apply(p)
            alpha = rz / dot(p, ap)
            x += alpha * p
            r -= alpha * ap
            z = self.precondition(r)
            rz, rz_before = dot(r, z), rz
            p = z + (rz / rz_before) * p
        return x

    def exact_small(self) -> tuple[_Ints, _Array]:
        """The bots of small parts (:attr:`_TwoLevel.small`) and their ``C[i,i]``, exactly:
        ``A`` is block-diagonal over the graph's parts, so each small part's block is inverted
        on its own (all the parts of one size at once)."""
        small, pairs = self.levels.small, self.pairs
        bots = np.flatnonzero(small >= 0)
        values = np.empty(len(bots))
        if not len(bots):
            return bots, values
        by = bots[np.argsort(small[bots], kind="stable")]
        starts = np.flatnonzero(np.r_[True, small[by][1:] != small[by][:-1]])
        sizes = np.diff(np.r_[starts, len(by)])
        block, local, width = (np.full(self.pairs.size, -1, np.int64) for _ in range(3))
        block[by] = np.repeat(np.arange(len(starts)), sizes)
        local[by] = np.arange(len(by)) - np.repeat(starts, sizes)
        width[by] = np.repeat(sizes, sizes)
        at = np.empty(self.pairs.size, np.int64)
        at[bots] = np.arange(len(bots))
        for k in np.unique(sizes).tolist():
            number = np.full(len(starts), -1, np.int64)
            number[sizes == k] = np.arange(int((sizes == k).sum()))
            mine = by[width[by] == k]
            mats = np.zeros((int((sizes == k).sum()), k, k))
            mats[number[block[mine]], local[mine], local[mine]] = self.diagonal[mine]
            inside = width[pairs.lo] == k  # a pair's two bots are in the same part
            lo, hi, h = pairs.lo[inside], pairs.hi[inside], self.h[inside]
            mats[number[block[lo]], local[lo], local[hi]] -= h  # each pair once: no repeats
            mats[number[block[lo]], local[hi], local[lo]] -= h
            inverse = np.linalg.inv(mats)
            values[at[mine]] = inverse[number[block[mine]], local[mine], local[mine]]
        return bots, values

    def neumann(self, x: _Array) -> _Array:
        """``N·x``, ``N = D⁻¹ + D⁻¹WD⁻¹ + D⁻¹WD⁻¹WD⁻¹``: the first terms of ``A⁻¹``'s series."""
        y = self.scale(self.inv_diagonal, x)
        out = y.copy()
        for _ in range(2):
            y = self.scale(self.inv_diagonal, self.w(y))
            out += y
        return out

    def approximate(self, x: _Array) -> _Array:
        """``M·x``, ``M = Q + (I − QA)·N·(I − AQ)``: the balancing two-level approximate
        inverse, exact on the aggregates and the Neumann series on what they leave."""
        y = self.coarse(x)
        n = self.neumann(x - self.apply(y))
        return y + n - self.coarse(self.apply(n))

    def approximate_diagonal(self) -> _Array:
        """``M``'s diagonal, exactly: ``N + Q − NAQ − QAN + QANAQ`` on the diagonal, with
        ``Q = Z E⁻¹ Zᵀ`` of low rank, so that only ``N·A·Z`` is needed, as a sparse product
        (a few columns, or local ones)."""
        pairs, inv = self.pairs, self.inv_diagonal
        hh = self.h * self.h
        # N's diagonal: 1/dᵢ + Σⱼ Wᵢⱼ²/dⱼ / dᵢ² (W has none).
        around = np.bincount(pairs.lo, hh * inv[pairs.hi], pairs.size) + np.bincount(pairs.hi, hh * inv[pairs.lo], pairs.size)
        diag = inv + around * inv**2
        if self.coarse_inverse is None:
            return diag
        import scipy.sparse

        levels = self.levels
        w = self.weights
        z = levels.z
        e_inv = self.coarse_inverse
        a = levels.aggregate
        # (NAQ)ᵢᵢ = Σ_c (NAZ)[i, c]·E⁻¹[c, a(i)]; Q A N A Q's is E⁻¹ (ZᵀANAZ) E⁻¹ at a(i), a(i).
        f = scipy.sparse.diags_array(self.diagonal) @ z - w @ z  # A·Z
        if levels.count <= DENSE_COARSE:  # a few columns: dense products are cheaper
            f = f.toarray()
            nf = self.neumann(f)
            naq = (nf @ e_inv)[np.arange(pairs.size), np.maximum(a, 0)]
            ztanaz = f.T @ nf
        else:  # many local columns: sparse ones
            f = f.tocsr()
            y = (scipy.sparse.diags_array(inv) @ f).tocsr()
            nfs = y
            for _ in range(2):
                y = (scipy.sparse.diags_array(inv) @ (w @ y)).tocsr()
                nfs = nfs + y  # N·A·Z
            coo = nfs.tocoo()
            naq = np.bincount(coo.row, coo.data * e_inv[coo.col, a[coo.row]], pairs.size).astype(np.float64)
            ztanaz = (f.T @ nfs.tocsr()).toarray()
        qanaq = e_inv @ ztanaz @ e_inv
        rows = levels.rows
        ra = a[rows]
        diag[rows] += e_inv[ra, ra] - 2.0 * naq[rows] + qanaq[ra, ra]
        return diag


def _estimated_diagonal(system: _Sparse, m: _Array) -> _Array:
    """The diagonal of ``C = A⁻¹``, estimated without ``C``: ``diag(C) = diag(M) + E[z ∘ (C − M)z]``
    for random ±1 vectors ``z`` (Hutchinson), ``M`` the two-level approximate inverse
    (:meth:`_Sparse.approximate`) whose diagonal is computed exactly. The estimate's spread is
    that of ``C − M``'s off-diagonal entries, small since ``M`` carries both the slow modes and
    the near neighbours; a bot without games has none, and its value is exact.

    Probes come in blocks of :data:`PROBES` until the standard error of every bot's relative
    variance (``m``: the covariance's row means) is within :data:`PROBE_TARGET`, or a budget of
    products with the matrix is spent (:data:`PROBE_WORK`; a denser graph is estimated well by
    fewer probes, a sparser one costs less per probe).
    """
    n = system.pairs.size
    diag = system.approximate_diagonal()
    rng = np.random.default_rng(20240528)
    most = min(max(PROBES, PROBE_WORK // (2 * len(system.pairs.lo) + 20 * n)), MOST_PROBES)
    total, squares, done = np.zeros(n), np.zeros(n), 0
    level = m.mean() - 2.0 * m  # what turns C[i,i] into the relative variance
    small, exact = system.exact_small()
    estimated = np.ones(n, dtype=bool)
    estimated[small] = False
    while done < most:
        z = rng.choice(np.array([-1.0, 1.0]), size=(n, PROBES))
        sample = z * (system.solve(z, rtol=1e-4) - system.approximate(z))
        total += sample.sum(axis=1)
        squares += (sample * sample).sum(axis=1)
        done += PROBES
        mean = total / done
        error = np.sqrt(np.maximum(squares / done - mean * mean, 0.0) / (done - 1))
        if np.all((error <= PROBE_TARGET * (diag + mean + level))[estimated]):
            break
    out = diag + total / done
    out[small] = exact
    return out
