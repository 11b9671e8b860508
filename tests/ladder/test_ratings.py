"""Elo updates and the Bradley–Terry fit behind the ladder's intervals: the fit against the
pure-Python one it replaced (``bt_reference.py``) on random ladders, and the large ladders'
estimated intervals against exact ones."""

from __future__ import annotations

import math
import random

import bt_reference
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.ratings import bradley_terry, elo


def test_expected_score_is_logistic_on_the_400_scale() -> None:
    assert elo.expected_score(1500, 1500) == 0.5
    assert elo.expected_score(1900, 1500) == pytest.approx(10 / 11)
    assert elo.expected_score(1500, 1900) == pytest.approx(1 / 11)


def test_update_uses_k32_while_provisional_then_k16() -> None:
    assert elo.update((1500, 1500), (0, 0), 1.0) == (1516.0, 1484.0)
    assert elo.update((1500, 1500), (30, 30), 1.0) == (1508.0, 1492.0)
    new0, new1 = elo.update((1500, 1500), (29, 30), 0.0)
    assert (new0, new1) == (1484.0, 1508.0)


def test_draw_between_equals_changes_nothing_and_draw_moves_toward_each_other() -> None:
    assert elo.update((1500, 1500), (5, 5), 0.5) == (1500.0, 1500.0)
    low, high = elo.update((1400, 1600), (40, 40), 0.5)
    assert low > 1400 and high < 1600 and low - 1400 == pytest.approx(1600 - high)


def test_provisional_flag_follows_the_game_count() -> None:
    assert elo.is_provisional(29) and not elo.is_provisional(30)


def test_fit_of_equal_bots_is_centered_with_symmetric_intervals() -> None:
    results = [("a", "b", 1.0), ("a", "b", 0.0)] * 20
    fits = bradley_terry.fit(results)
    assert fits["a"].rating == pytest.approx(1500, abs=1e-6)
    assert fits["b"].rating == pytest.approx(1500, abs=1e-6)
    assert fits["a"].high - fits["a"].rating == pytest.approx(fits["a"].rating - fits["a"].low)
    assert fits["a"].games == 40


def test_fit_recovers_the_rating_gap_of_a_75_percent_score() -> None:
    results = [("a", "b", 1.0)] * 750 + [("a", "b", 0.0)] * 250
    fits = bradley_terry.fit(results, prior_draws=0.0001)
    gap = fits["a"].rating - fits["b"].rating
    assert gap == pytest.approx(400 * math.log10(3), abs=0.5)  # 190.85


def test_intervals_shrink_with_more_games() -> None:
    few = bradley_terry.fit([("a", "b", 1.0), ("a", "b", 0.0)] * 5)
    many = bradley_terry.fit([("a", "b", 1.0), ("a", "b", 0.0)] * 500)
    assert (many["a"].high - many["a"].low) < (few["a"].high - few["a"].low) / 5


def test_unbeaten_bot_stays_finite_and_ahead() -> None:
    fits = bradley_terry.fit([("a", "b", 1.0)] * 10)
    assert math.isfinite(fits["a"].rating) and fits["a"].rating > fits["b"].rating
    assert fits["a"].low > 1500 > fits["b"].high


def test_fit_orders_bots_by_strength_over_random_games() -> None:
    strength = {"weak": 1300.0, "mid": 1500.0, "strong": 1700.0}
    rng = random.Random(3)
    names = list(strength)
    results = []
    for _ in range(900):
        a, b = rng.sample(names, 2)
        p = elo.expected_score(strength[a], strength[b])
        results.append((a, b, 1.0 if rng.random() < p else 0.0))
    fits = bradley_terry.fit(results, players=["idle"])
    assert fits["weak"].rating < fits["mid"].rating < fits["strong"].rating
    assert fits["weak"].high < fits["strong"].low
    assert fits["idle"].games == 0 and fits["idle"].rating == pytest.approx(1500, abs=1e-6)


def test_the_likelihood_of_superiority_is_symmetric_and_grows_with_the_evidence() -> None:
    few = bradley_terry.fit_model([("a", "b", 1.0)] * 3 + [("a", "b", 0.0)])
    many = bradley_terry.fit_model([("a", "b", 1.0)] * 30 + [("a", "b", 0.0)] * 10)
    for model in (few, many):
        assert model.stronger("a", "b") + model.stronger("b", "a") == pytest.approx(1.0)
        assert model.stronger("a", "b") > 0.5
    assert many.stronger("a", "b") > few.stronger("a", "b")
    even = bradley_terry.fit_model([("a", "b", 0.5)] * 4)
    assert even.stronger("a", "b") == pytest.approx(0.5)


# The fit against the pure-Python one it replaced (bt_reference), and the large ladders' intervals.

Row = tuple[str, str, int, int, int]


@st.composite
def ladders(draw: st.DrawFn) -> tuple[list[Row], list[str]]:
    """Up to 100 bots: random totals (wins, draws, losses, a pair named twice or in either
    order, a bot against itself), bots listed without games, sometimes a bot that only won."""
    size = draw(st.integers(1, 100))
    names = [f"bot{k}" for k in range(size)]
    bot = st.integers(0, size - 1)
    rows = [(names[a], names[b], w, d, lost) for a, b, w, d, lost in draw(st.lists(
        st.tuples(bot, bot, st.integers(0, 6), st.integers(0, 3), st.integers(0, 6)), max_size=250))]
    if size > 1 and draw(st.booleans()):
        rows += [("champion", names[k], draw(st.integers(1, 9)), 0, 0) for k in draw(st.sets(bot, min_size=1, max_size=5))]
    return rows, draw(st.lists(st.sampled_from(names), unique=True))


def assert_same_fits(fits: dict[str, bradley_terry.Fit], reference: dict[str, bt_reference.Fit],
                     interval: float = 1e-6) -> None:
    """Ratings to 1e-6; lows and highs to ``interval`` of the half-width."""
    assert list(fits) == list(reference)
    for bot, want in reference.items():
        got = fits[bot]
        assert got.games == want.games, bot
        assert got.rating == pytest.approx(want.rating, abs=1e-6), bot
        half = want.high - want.rating
        tolerance = max(1e-6, interval * half)
        assert got.low == pytest.approx(want.low, abs=tolerance) and got.high == pytest.approx(want.high, abs=tolerance), bot


@given(ladders())
@settings(max_examples=40, deadline=None)
def test_the_fit_is_the_pure_python_fit(ladder: tuple[list[Row], list[str]]) -> None:
    rows, players = ladder
    assert_same_fits(bradley_terry.fit_tally(rows, players, 1487.5), bt_reference.fit_tally(rows, players, 1487.5))


@given(ladders())
@settings(max_examples=25, deadline=None)
def test_the_large_ladders_method_gives_the_same_ratings_and_close_intervals(
        ladder: tuple[list[Row], list[str]]) -> None:
    """Forced on small ladders: the sparse solves and the estimated diagonal. Ratings as
    exact; on these small, sparse ladders (a few opponents each) every interval within 5 % of
    its half-width (the estimate's claim for such sparse ladders; denser ones below)."""
    rows, players = ladder
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bradley_terry, "DENSE_MAX", 0)
        fits = bradley_terry.fit_tally(rows, players, 1487.5)
    assert_same_fits(fits, bt_reference.fit_tally(rows, players, 1487.5), interval=0.05)


def test_the_fit_of_games_is_the_pure_python_fit_with_its_likelihood_of_superiority() -> None:
    rng = random.Random(8)
    names = [f"bot{k}" for k in range(12)]
    results = [(*rng.sample(names, 2), rng.choice([1.0, 0.5, 0.0])) for _ in range(150)]
    results += [("champion", names[0], 1.0)] * 3
    model = bradley_terry.fit_model(results, ["idle", *names])
    reference = bt_reference.fit_model(results, ["idle", *names])
    assert_same_fits(model.fits, reference.fits)
    for a in model.fits:
        for b in model.fits:
            assert model.stronger(a, b) == pytest.approx(reference.stronger(a, b), abs=1e-9), (a, b)


def synthetic(size: int, opponents: int, near: bool, seed: int) -> list[Row]:
    """Bots of normal strengths, each meeting about ``opponents`` others 1 to 4 times, drawn at
    random or among the nearest in strength (a long, thin graph: the harder case)."""
    rng = random.Random(seed)
    strength = sorted(rng.gauss(0.0, 200.0) for _ in range(size))
    pairs: set[tuple[int, int]] = set()
    while len(pairs) < size * opponents // 2:
        a = rng.randrange(size)
        b = min(size - 1, max(0, a + rng.choice([-1, 1]) * rng.randint(1, opponents))) if near else rng.randrange(size)
        if a != b:
            pairs.add((min(a, b), max(a, b)))
    rows = []
    for a, b in sorted(pairs):
        p = elo.expected_score(strength[a], strength[b])
        outcomes = [rng.random() for _ in range(rng.randint(1, 4))]
        draws = sum(1 for x in outcomes if x < 0.1)
        wins = sum(1 for x in outcomes if 0.1 <= x < 0.1 + 0.9 * p)
        rows.append((f"bot{a}", f"bot{b}", wins, draws, len(outcomes) - wins - draws))
    return rows


@pytest.mark.parametrize(("opponents", "near", "bound"), [(20, False, 0.01), (20, True, 0.01), (60, False, 0.01),
                                                          (60, True, 0.01), (5, True, 0.05)])
def test_the_estimated_intervals_are_within_their_bound_of_the_exact_ones(opponents: int, near: bool,
                                                                          bound: float) -> None:
    """400 bots: the exact fit (dense) against the large ladders' method forced on it. The
    module's claim: 1 % of the half-width where bots meet 20 opponents or more, 5 % where
    they meet a handful."""
    rows = synthetic(400, opponents, near, seed=opponents)
    exact = bradley_terry.fit_tally(rows)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bradley_terry, "DENSE_MAX", 0)
        model = bradley_terry.fit_tally_model(rows)
    assert model.covariance is None and model.solve is not None
    assert_same_fits(model.fits, exact, interval=bound)
    worst = max(abs((model.fits[b].high - model.fits[b].rating) / (f.high - f.rating) - 1.0) for b, f in exact.items())
    assert 0.0 < worst < bound
    # The likelihood of superiority, by one solve each, is the dense covariance's.
    dense = bradley_terry.fit_tally_model(rows)
    assert dense.covariance is not None
    for a, b in [("bot0", "bot1"), ("bot5", "bot300"), ("bot399", "bot398")]:
        assert model.stronger(a, b) == pytest.approx(dense.stronger(a, b), abs=1e-9)


def test_an_early_ladder_of_many_small_parts_has_their_exact_intervals() -> None:
    """A ladder a game or two old: a few hundred small parts (pairs, chains, a triangle) beside
    one large part. Each small part's block is inverted exactly, so its bots' intervals are the
    dense fit's to the solves' tolerance; the large part's are estimated within 5 %."""
    rng = random.Random(4)
    rows: list[Row] = []
    for k in range(0, 600, 3):  # 200 parts of three bots: a chain, or a triangle
        a, b, c = (f"s{k + d}" for d in range(3))
        rows += [(a, b, rng.randint(0, 2), 0, 1), (b, c, 1, rng.randint(0, 1), 0)]
        if k % 2:
            rows.append((a, c, 0, 1, rng.randint(0, 2)))
    rows += [(f"s{k}", f"s{k + 1}", 1, 0, 0) for k in range(600, 700, 2)]  # 50 pairs
    rows += synthetic(200, 6, False, seed=3)  # one large part
    players = ["idle"] + [f"s{k}" for k in range(700)]
    exact = bradley_terry.fit_tally(rows, players)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bradley_terry, "DENSE_MAX", 0)
        fits = bradley_terry.fit_tally(rows, players)
    small = {b: f for b, f in exact.items() if b.startswith("s") or b == "idle"}
    assert len(small) == 701
    assert_same_fits({b: fits[b] for b in small}, small, interval=1e-6)
    assert_same_fits(fits, exact, interval=0.05)


def test_the_same_totals_give_the_same_intervals() -> None:
    """The probes are seeded: a refresh of unchanged totals changes nothing."""
    rows = synthetic(300, 20, False, seed=1)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bradley_terry, "DENSE_MAX", 0)
        assert bradley_terry.fit_tally(rows) == bradley_terry.fit_tally(rows)


def test_bad_totals_are_refused() -> None:
    with pytest.raises(ValueError, match="prior_draws"):
        bradley_terry.fit_tally([("a", "b", 1, 0, 0)], prior_draws=0.0)
    with pytest.raises(ValueError, match="negative"):
        bradley_terry.fit_tally([("a", "b", -1, 0, 2)])
    with pytest.raises(ValueError, match="outside"):
        bradley_terry.fit_arrays(2, np.array([0]), np.array([2]), np.array([[1, 0, 0]]))


def test_a_fit_as_arrays_is_the_fit_of_the_rows() -> None:
    rows = synthetic(50, 10, False, seed=4)
    fits = bradley_terry.fit_tally(rows, ["idle"])
    names = list(fits)
    index = {b: k for k, b in enumerate(names)}
    rating, low, high, games = bradley_terry.fit_arrays(
        len(names), np.array([index[r[0]] for r in rows]), np.array([index[r[1]] for r in rows]),
        np.array([r[2:] for r in rows]))
    for k, bot in enumerate(names):
        assert (rating[k], low[k], high[k], games[k]) == (fits[bot].rating, fits[bot].low, fits[bot].high, fits[bot].games)


@pytest.mark.parametrize("bots", [50, 300])
def test_a_fit_started_from_any_ratings_is_the_fit_from_the_center(bots: int) -> None:
    """A refresh starts the fit from the last one's ratings: near ones (a few games earlier),
    far ones (every bot 800 points off, some up, some down) and a bad one (not finite) all end
    at the fit from the center. 300 bots: Newton's steps by conjugate gradients, the intervals
    from the dense factor (``DENSE_STEPS_MAX`` < 300 ≤ ``DENSE_MAX``)."""
    rows = synthetic(bots, 8, False, seed=bots)
    fits = bradley_terry.fit_tally(rows)
    names = list(fits)
    index = {b: k for k, b in enumerate(names)}
    first, second = np.array([index[r[0]] for r in rows]), np.array([index[r[1]] for r in rows])
    counts = np.array([r[2:] for r in rows])
    cold = np.array([[f.rating, f.low, f.high] for f in fits.values()])
    rng = np.random.default_rng(1)
    near = cold[:, 0] + rng.normal(0.0, 20.0, len(names))
    far = 1500.0 + rng.choice([-800.0, 800.0], len(names))
    bad = np.full(len(names), np.nan)
    for start in (near, far, bad):
        rating, low, high, _ = bradley_terry.fit_arrays(len(names), first, second, counts, start=start)
        assert np.abs(np.column_stack([rating, low, high]) - cold).max() < 1e-6
    with pytest.raises(ValueError, match="start"):
        bradley_terry.fit_arrays(len(names), first, second, counts, start=near[:-1])
