"""Determinization (mandala.sample): a sampled game must agree with the seat's view (R24).

Hypothesis plays random games to random points and checks that the sampled
game shows the seat exactly the real view, offers the same legal moves when
the seat (or a picker, R12) decides, keeps all 108 cards (R1), deals the
hidden piles with the sizes the view announces, and plays on to the end.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mandala import Game, view
from mandala.cards import CARDS_PER_COLOR
from mandala.sample import Sampler, determinize


def _random_game(seed: int, plies: int) -> Game:
    game = Game.new(seed=seed, first_player=seed % 2)
    rng = random.Random(seed)
    for _ in range(plies):
        if game.is_over:
            break
        codes = game.legal_codes()
        game.push_code(codes[rng.randrange(len(codes))])
    return game


def _card_totals(game: Game) -> list[int]:
    piles = [*game.hands, *game.cups, *game.mountains, *game.fields[0], *game.fields[1], game.discard]
    totals = [sum(pile[c] for pile in piles) for c in range(6)]
    for c in [*game.rivers[0], *game.rivers[1], *game.deck]:
        totals[c] += 1
    return totals


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 10**6), plies=st.integers(0, 160), seat=st.sampled_from([0, 1]), sample_seed=st.integers(0, 10**6))
def test_r24_sample_matches_the_view(seed: int, plies: int, seat: int, sample_seed: int) -> None:
    real = _random_game(seed, plies)
    if real.is_over:
        return
    seen = view(real, seat)
    game = determinize(seen, random.Random(sample_seed))
    assert view(game, seat) == seen
    assert _card_totals(game) == [CARDS_PER_COLOR] * 6
    opp = 1 - seat
    assert game.hand_sizes[opp] == real.hand_sizes[opp]
    assert sum(game.starting_cups[opp]) == sum(real.starting_cups[opp])
    assert len(game.deck) == len(real.deck)
    assert game.phase == real.phase and game.to_move == real.to_move
    if real.phase == "pick" or real.to_move == seat:
        assert game.legal_moves == real.legal_moves
    rng = random.Random(sample_seed)
    while not game.is_over:  # the sample is a full game: it plays on to the end
        codes = game.legal_codes()
        game.push_code(codes[rng.randrange(len(codes))])
    assert _card_totals(game) == [CARDS_PER_COLOR] * 6


def test_samples_differ_only_in_hidden_cards() -> None:
    real = _random_game(11, 40)
    seen = view(real, 0)
    sampler = Sampler(seen)
    rng = random.Random(5)
    hands = set()
    for _ in range(30):
        game = sampler.sample(rng)
        assert view(game, 0) == seen
        hands.add(tuple(game.hands[1]))
    assert len(hands) > 1  # the opponent's hand really is sampled


def test_same_rng_same_sample() -> None:
    seen = view(_random_game(3, 25), 1)
    a, b = determinize(seen, random.Random(9)), determinize(seen, random.Random(9))
    assert a.hands == b.hands and a.deck == b.deck and a.cups == b.cups
    while not a.is_over:  # reshuffles come from the sample's own seeded generator
        code = a.legal_codes()[-1]
        a.push_code(code)
        b.push_code(code)
    assert a.reshuffles == b.reshuffles and a.scores() == b.scores()


def test_spectator_and_finished_views_are_refused() -> None:
    game = _random_game(1, 5)
    with pytest.raises(ValueError):
        determinize(view(game), random.Random(0))
    game = _random_game(1, 10_000)
    assert game.is_over
    with pytest.raises(ValueError):
        determinize(view(game, 0), random.Random(0))
