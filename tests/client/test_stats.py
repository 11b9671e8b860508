"""mandala_client.stats: Elo from a score, its interval, and the SPRT verdicts."""

from __future__ import annotations

import math

import pytest

from mandala_client.stats import elo_interval, elo_of, llr, pair_units, score_of, sprt, sprt_bounds, summarize


def test_elo_of_known_scores() -> None:
    assert elo_of(0.5) == 0.0
    assert elo_of(0.75) == pytest.approx(190.85, abs=0.01)
    assert elo_of(0.25) == pytest.approx(-190.85, abs=0.01)
    assert elo_of(1.0) == math.inf and elo_of(0.0) == -math.inf


def test_score_of_inverts_elo_of() -> None:
    for score in (0.1, 0.3, 0.5, 0.64, 0.9):
        assert score_of(elo_of(score)) == pytest.approx(score)


def test_interval_contains_the_estimate_and_shrinks_with_more_games() -> None:
    pattern = [1.0, 1.0, 0.0, 0.5, 1.0, 0.0, 1.0, 0.5]
    widths = []
    for repeat in (5, 20, 80):
        units = pair_units(pattern * repeat)
        low, high = elo_interval(units)
        assert low < elo_of(sum(units) / len(units)) < high
        widths.append(high - low)
    assert widths[0] > widths[1] > widths[2]
    assert widths[1] == pytest.approx(widths[0] / 2, rel=0.1)  # about 1/sqrt(n)


def test_pair_units_average_each_duplicate_deal() -> None:
    assert pair_units([1.0, 0.0, 1.0, 1.0, 0.5]) == [0.5, 1.0, 0.5]


def test_summarize_counts() -> None:
    s = summarize([1.0, 0.5, 0.0, 1.0])
    assert (s.games, s.wins, s.draws, s.losses) == (4, 2, 1, 1)
    assert s.score == 0.625
    assert s.elo == pytest.approx(elo_of(0.625))


def test_sprt_bounds_for_five_percent_errors() -> None:
    lower, upper = sprt_bounds(0.05, 0.05)
    assert lower == pytest.approx(-2.944, abs=1e-3) and upper == pytest.approx(2.944, abs=1e-3)


def test_sprt_accepts_h1_for_a_clearly_stronger_side() -> None:
    result = sprt(pair_units([1.0, 1.0, 1.0, 0.0] * 100), elo0=0, elo1=50)  # 75 %
    assert result.llr > result.upper and result.verdict == "H1 accepted"


def test_sprt_accepts_h0_for_equal_sides() -> None:
    result = sprt(pair_units([1.0, 1.0, 0.0, 0.0, 1.0, 0.0] * 100), elo0=0, elo1=50)  # 50 %
    assert result.llr < result.lower and result.verdict == "H0 accepted"


def test_sprt_continues_on_little_evidence() -> None:
    result = sprt(pair_units([1.0, 0.0, 1.0, 0.5]), elo0=0, elo1=50)
    assert result.verdict == "continue"


def test_llr_matches_the_gsprt_formula() -> None:
    units = [1.0, 0.5, 0.5, 0.0, 1.0, 1.0]
    n, mean = len(units), sum(units) / len(units)
    var = sum((x - mean) ** 2 for x in units) / n
    s0, s1 = score_of(0), score_of(20)
    assert llr(units, 0, 20) == pytest.approx(n * (s1 - s0) * (2 * mean - s0 - s1) / (2 * var))
    # No spread: a prior of one lost and one won unit (draws only: a little for H0, not nothing).
    assert llr([0.5, 0.5], 0, 20) == llr([0.5, 0.5, 0.0, 1.0], 0, 20) < 0.0


def test_a_clean_sweep_and_a_match_of_forfeits_are_decided() -> None:
    """Units without spread decide the test too, where the normal approximation alone said nothing."""
    assert sprt(pair_units([1.0] * 60), elo0=0, elo1=10).verdict == "H1 accepted"
    assert sprt(pair_units([0.0] * 40), elo0=0, elo1=10).verdict == "H0 accepted"


Z = 1.959963984540054  # the two-sided 95 % normal quantile, written out independently of the module


def _wilson_by_hand(p: float, n: float) -> tuple[float, float]:
    """The Wilson score interval, written out from its formula."""
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z / (1 + Z * Z / n) * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return centre - half, centre + half


def _elo_by_hand(score: float) -> float:
    return 400 * math.log10(score / (1 - score))


def test_a_perfect_score_has_a_finite_lower_bound_and_no_upper_one() -> None:
    # 20-0 over 10 deals: no spread, so the 20 games count as 20; Wilson's lower end at a
    # score of 1 is n / (n + z²), whose Elo is 400·log10(n / z²) = 400·log10(20 / 3.84146) = +286.6.
    low, high = elo_interval(pair_units([1.0] * 20), games=20)
    assert low == pytest.approx(400 * math.log10(20 / Z**2)) and round(low, 1) == 286.6
    assert high == math.inf
    s = summarize([1.0] * 20)
    assert s.elo == math.inf and s.elo_low == pytest.approx(low) and s.elo_high == math.inf


def test_a_zero_score_has_a_finite_upper_bound_and_no_lower_one() -> None:
    s = summarize([0.0] * 20)
    assert s.elo == -math.inf and s.elo_low == -math.inf
    assert s.elo_high == pytest.approx(-400 * math.log10(20 / Z**2)) and round(s.elo_high, 1) == -286.6


def test_one_loss_in_twenty_is_bounded_on_both_sides_and_below_a_perfect_score() -> None:
    # 19-1: nine deals won twice, one split. Pair scores: nine 1.0, one 0.5; mean 0.95, variance
    # 0.0225 against 0.95·0.05/2 = 0.02375 for two independent games a deal, so the design
    # effect is below 1 and taken as 1: the 20 games count as 20.
    scores = [1.0] * 18 + [1.0, 0.0]
    lo, hi = _wilson_by_hand(0.95, 20)
    s = summarize(scores)
    assert (s.elo_low, s.elo_high) == (pytest.approx(_elo_by_hand(lo)), pytest.approx(_elo_by_hand(hi)))
    assert round(s.elo_low, 1) == 203.9 and round(s.elo_high, 1) == 819.1
    assert s.elo_low < summarize([1.0] * 20).elo_low  # one loss more, a lower bound no higher


def test_the_interval_counts_fewer_games_when_deals_spread_more_than_games() -> None:
    # Deals won or lost twice (pair scores 1, 0, 1, 0, ... ): variance 0.25 per deal against
    # 0.125 for two independent games, a design effect of 2, so 40 games count as 20.
    scores = [1.0, 1.0, 0.0, 0.0] * 10
    lo, hi = _wilson_by_hand(0.5, 20)
    low, high = elo_interval(pair_units(scores), games=len(scores))
    assert (low, high) == (pytest.approx(_elo_by_hand(lo)), pytest.approx(_elo_by_hand(hi)))
    assert summarize(scores).elo_low == pytest.approx(low)
    # The same 40 games as singles count as 40.
    lo40, hi40 = _wilson_by_hand(0.5, 40)
    single = summarize(scores, paired=False)
    assert (single.elo_low, single.elo_high) == (pytest.approx(_elo_by_hand(lo40)), pytest.approx(_elo_by_hand(hi40)))


def test_no_games_no_interval() -> None:
    assert elo_interval([]) == (-math.inf, math.inf)
