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
    assert llr([0.5, 0.5], 0, 20) == 0.0  # no spread: no evidence
