"""Elo updates and the Bradley–Terry fit behind the ladder's intervals."""

from __future__ import annotations

import math
import random

import pytest

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
