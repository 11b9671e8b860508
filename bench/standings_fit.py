"""The standings' Bradley–Terry fit (``server/ratings/bradley_terry.py``) on synthetic ladders,
against the pure-Python fit it replaced where that one can run, in one run::

    .venv/bin/python bench/standings_fit.py
    .venv/bin/python bench/standings_fit.py --sizes 100,1000,10000 --opponents 100 --accuracy 300

Each ladder has bots of normal strengths (σ 200 Elo), each meeting about ``--opponents``
opponents (all of them when there are fewer) 1 to 4 times, one game in ten a draw: the pairs'
totals as ``Tally.rows()`` gives them. ``random`` draws the opponents from the whole pool;
``near`` from the bots nearest in strength (as a ladder that pairs by rating does, whose
comparison graph is long and thin and so harder to solve). For each it prints the fit's CPU
time (``time.process_time``, every thread of the process) and wall time from the rows
(``fit_tally``), the best of ``--repeat`` runs; the CPU time of the server's fitting worker's
part alone (the totals already packed into arrays, as ``server/ladder/fitting.py`` hands them
over from a thread of the server); the same, started from the ratings of the fit of the
ladder ``--refresh-games`` games earlier (*warm*: as the server refits, from the last refresh's
ratings), and its largest difference from the cold fit; the reference fit (``tests/ladder/bt_reference.py``) at the sizes in
``--reference``; the largest difference between the two; and with ``--accuracy K``, for
ladders past ``DENSE_MAX``, the estimated intervals against exact ones for K bots (each an
exact sparse solve).

BLAS runs on one thread, as in the server's fitting worker (``server/ladder/fitting.py``);
``--blas-threads`` changes that. The first lines say which BLAS and kernel ran, and whether
``OPENBLAS_CORETYPE`` was set (it selects an older, slower kernel).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "ladder"))

import bt_reference  # noqa: E402

from server.ladder import fitting  # noqa: E402
from server.ratings import bradley_terry  # noqa: E402

Rows = list[tuple[str, str, int, int, int]]


def ladder(size: int, opponents: int, kind: str, seed: int) -> tuple[Rows, list[str]]:
    """A synthetic ladder's per-pair totals (see the module's docstring) and its bots."""
    rng = np.random.default_rng(seed)
    strength = np.sort(rng.normal(0.0, 200.0, size)) * bradley_terry.LN10_400  # index = strength order
    wanted = min(size * opponents // 2, size * (size - 1) // 2)
    found = np.empty(0, np.int64)
    while found.size < wanted:
        a = rng.integers(0, size, 2 * wanted)
        if kind == "random":
            b = rng.integers(0, size, 2 * wanted)
        else:
            b = a + rng.integers(1, opponents + 1, 2 * wanted) * rng.choice([-1, 1], 2 * wanted)
            inside = (b >= 0) & (b < size)
            a, b = a[inside], b[inside]
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        found = np.unique(np.concatenate([found, (lo * size + hi)[lo != hi]]))
    keys = rng.permutation(found)[:wanted]
    lo, hi = keys // size, keys % size
    games = rng.integers(1, 5, keys.size)
    draws = rng.binomial(games, 0.1)
    p = 1.0 / (1.0 + np.exp(strength[hi] - strength[lo]))
    wins = rng.binomial(games - draws, p)
    names = [f"bot{k:05d}" for k in range(size)]
    rows = [(names[x], names[y], int(w), int(d), int(g - d - w))
            for x, y, w, d, g in zip(lo.tolist(), hi.tolist(), wins.tolist(), draws.tolist(), games.tolist(), strict=True)]
    return rows, names


def earlier(rows: Rows, games: int, seed: int) -> Rows:
    """``rows`` as they stood ``games`` games before (one game fewer for as many pairs): the
    totals the last refresh fitted, whose ratings the next fit starts from."""
    rng = np.random.default_rng(seed + 1)
    out = list(rows)
    for k in rng.choice(len(rows), min(games, len(rows)), replace=False).tolist():
        a, b, w, d, lost = out[k]
        if w + d + lost > 1:
            out[k] = (a, b, w - 1, d, lost) if w else (a, b, w, d - 1, lost) if d else (a, b, w, d, lost - 1)
    return out


def timed(fn: Callable[[], Any], repeat: int) -> tuple[Any, float, float]:
    """``fn()``'s result, and its best CPU and wall time over ``repeat`` runs."""
    best_cpu = best_wall = float("inf")
    out = None
    for _ in range(repeat):
        cpu, wall = time.process_time(), time.perf_counter()
        out = fn()
        best_cpu = min(best_cpu, time.process_time() - cpu)
        best_wall = min(best_wall, time.perf_counter() - wall)
    return out, best_cpu, best_wall


def accuracy(rows: Rows, names: list[str], fits: dict[str, bradley_terry.Fit], count: int) -> tuple[float, float]:
    """The largest relative error of the estimated variance and half-width of ``count`` bots
    (the extremes of strength and a random sample) against the exact ones, each an exact
    sparse solve of ``A x = P eᵢ`` (``P`` removes the pool's mean)."""
    model = bradley_terry.fit_tally_model(rows, names, 1500.0)
    assert model.solve is not None
    n = len(names)
    rng = np.random.default_rng(1)
    chosen = np.unique(np.r_[0, n - 1, rng.choice(n, count, replace=False)])[:count]
    rhs = -np.ones((n, chosen.size)) / n
    rhs[chosen, np.arange(chosen.size)] += 1.0
    exact = np.einsum("ik,ik->k", rhs, model.solve(rhs))
    half = np.array([fits[names[k]].high - fits[names[k]].rating for k in chosen])
    estimated = (half * bradley_terry.LN10_400 / bradley_terry.Z95) ** 2
    rel = estimated / exact - 1.0
    return float(np.abs(rel).max()), float(np.abs(np.sqrt(estimated / exact) - 1.0).max())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="100,200,1000,10000")
    p.add_argument("--opponents", type=int, default=100)
    p.add_argument("--kinds", default="random,near")
    p.add_argument("--reference", default="100,200", help="sizes at which the pure-Python fit runs too")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--accuracy", type=int, default=0, help="bots whose estimated interval is checked")
    p.add_argument("--blas-threads", type=int, default=1)
    p.add_argument("--refresh-games", type=int, default=20,
                   help="games between two refreshes: the warm fit starts from the fit without them (default 20)")
    args = p.parse_args()
    threadpool_limits(args.blas_threads)
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "?")
    print(f"# {os.cpu_count()} cores, {cpu}; Python {sys.version.split()[0]}, numpy {np.__version__}")
    for lib in threadpool_info():
        print(f"# {lib['internal_api']} {lib.get('version')} {lib.get('architecture')}, {lib['num_threads']} thread(s):"
              f" {Path(lib['filepath']).name}")
    print(f"# OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')};"
          f" DENSE_MAX={bradley_terry.DENSE_MAX}")
    reference = {int(x) for x in args.reference.split(",") if x}
    print(f"{'bots':>6} {'kind':>6} {'pairs':>8} {'path':>6} {'CPU s':>7} {'wall s':>7} {'worker CPU':>10}"
          f" {'warm CPU':>8} {'warm diff':>9}"
          f" {'ref CPU s':>9} {'ref wall s':>10} {'max diff':>9}  accuracy")
    for size in (int(x) for x in args.sizes.split(",")):
        for kind in args.kinds.split(","):
            rows, names = ladder(size, args.opponents, kind, seed=size)
            fits, cpu, wall = timed(lambda rows=rows, names=names: bradley_terry.fit_tally(rows, names, 1500.0), args.repeat)
            packed = fitting._pack(rows, names)
            _, worker_cpu, _ = timed(lambda packed=packed: fitting._fit_packed(packed, 1500.0), args.repeat)
            before = fitting._fit_packed(fitting._pack(earlier(rows, args.refresh_games, size), names), 1500.0)[0]
            warm = fitting._pack(rows, names, dict(zip(names, before.tolist(), strict=True)), 1500.0)
            warm_fit, warm_cpu, _ = timed(lambda warm=warm: fitting._fit_packed(warm, 1500.0), args.repeat)
            warm_diff = max(float(np.abs(np.array([[f.rating, f.low, f.high] for f in fits.values()])
                                         - np.column_stack(warm_fit[:3])).max()), 0.0)
            line = (f"{size:>6} {kind:>6} {len(rows):>8} {'dense' if size <= bradley_terry.DENSE_MAX else 'sparse':>6}"
                    f" {cpu:>7.3f} {wall:>7.3f} {worker_cpu:>10.3f} {warm_cpu:>8.3f} {warm_diff:>9.1e}")
            if size in reference:
                ref, rcpu, rwall = timed(lambda rows=rows, names=names: bt_reference.fit_tally(rows, names, 1500.0), 1)
                diff = max(max(abs(ref[b].rating - f.rating), abs(ref[b].low - f.low), abs(ref[b].high - f.high))
                           for b, f in fits.items())
                line += f" {rcpu:>9.2f} {rwall:>10.2f} {diff:>9.1e}"
            else:
                line += f" {'':>9} {'':>10} {'':>9}"
            if args.accuracy and size > bradley_terry.DENSE_MAX:
                var_err, half_err = accuracy(rows, names, fits, args.accuracy)
                line += f"  variance ±{100 * var_err:.2f} %, half-width ±{100 * half_err:.2f} %"
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
