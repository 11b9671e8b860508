"""Rules R16–R21: the draw deck running out, the end of the game and the score.

The rare paths are built by hand: exhaustion during action A followed by a
completion in the same turn, exhaustion during a refill, exhaustion with an
empty discard pile, skipped draws, the 6th river slot, passes, the turn limit.
Reshuffle orders are given explicitly (``reshuffles=``) so every outcome is exact.
"""

from __future__ import annotations

import pytest

from engine_helpers import (
    BLACK,
    GREEN,
    ORANGE,
    PURPLE,
    RED,
    YELLOW,
    assert_illegal,
    cup,
    deck_top_first,
    discard_pile,
    hand,
    internal_state,
    mountain,
    named,
    play,
    position,
    river,
    snapshot,
    total_cards,
)
from mandala import COLORS, Claim, Discard, Field, Game, Mountain, Pass, RecordError, record_dict, replay, result, view
from mandala.moves import PASS_CODE

# --------------------------------------------------------------------------- R16 exhaustion


def _exhaust_then_complete(deck_exhausted_before: bool = False, turns: int = 0) -> Game:
    """Seat 0 plays black to mountain 0 with 1 card left in hand, draws the deck's last
    3 cards (yellow, yellow, red) and completes mandala 0. The discard pile holds black 2
    and orange 1; every other card is in seat 1's cup."""
    return position(
        hands=({BLACK: 1, RED: 1}, {GREEN: 2}),
        mountains=({RED: 1, ORANGE: 1}, {PURPLE: 1}),
        fields=(({YELLOW: 1}, {GREEN: 1, PURPLE: 1}), ({}, {})),
        discard={BLACK: 2, ORANGE: 1},
        deck_top=[YELLOW, YELLOW, RED],
        rest="cup1",
        reshuffles=[[BLACK, ORANGE, BLACK]],
        deck_exhausted=deck_exhausted_before,
        turns=turns,
    )


def test_r16_last_card_drawn_in_action_a_then_completion_ends_the_game() -> None:
    game = _exhaust_then_complete()
    play(game, Mountain(0, BLACK))
    # R16: exhausted by the 3rd card; the discard pile became the new deck right then
    assert hand(game, 0) == {RED: 2, YELLOW: 2}
    assert game.deck_exhausted
    assert game.reshuffles == [[5, 1, 5]]
    assert deck_top_first(game) == [BLACK, ORANGE, BLACK]
    assert discard_pile(game) == {}
    assert view(game).deck_exhausted and view(game).reshuffles == 1 and view(game).deck_size == 3
    # R17b: the destruction begun in the same turn ends the game
    assert (game.phase, game.to_move) == ("pick", 1)  # 2 field cards against 1
    play(game, Claim(RED), Claim(ORANGE), Claim(BLACK))
    assert game.is_over and game.end_reason == "deck"
    assert (river(game, 1), river(game, 0)) == ([RED, BLACK], [ORANGE])
    # no refill: the new deck is untouched, no further reshuffle
    assert deck_top_first(game) == [BLACK, ORANGE, BLACK]
    assert len(game.reshuffles) == 1
    # the fields (yellow; green, purple) reached the discard pile after the shuffle,
    # then the leftovers (R20): hands red 2 yellow 2 / green 2, mountain 1 purple
    assert discard_pile(game) == {RED: 2, YELLOW: 3, GREEN: 3, PURPLE: 2}
    assert total_cards(game) == [18] * 6
    assert game.legal_moves == []
    assert_illegal(game, Pass(), "R17")


def test_r16_reshuffle_happens_at_exhaustion_even_when_no_card_is_needed() -> None:
    # Action A draws exactly the last 3 cards: the discard pile is shuffled right then,
    # without completing anything, and the deck holds exactly those cards.
    game = position(
        hands=({BLACK: 1, RED: 1}, {GREEN: 2}),
        discard={ORANGE: 2, PURPLE: 1},
        deck_top=[YELLOW, YELLOW, RED],
        rest="cup1",
        reshuffles=[[PURPLE, ORANGE, ORANGE]],
    )
    play(game, Mountain(1, BLACK))
    assert hand(game, 0) == {RED: 2, YELLOW: 2}
    assert deck_top_first(game) == [PURPLE, ORANGE, ORANGE]
    assert discard_pile(game) == {}
    assert game.deck_exhausted and (game.phase, game.to_move, game.end_reason) == ("turn", 1, None)


def _deck_runs_out(reshuffles: list[list[str]] | None, seed: int | None = None, lenient: bool = False) -> Game:
    """Seat 0's action A on mountain 1 draws the deck's last 3 cards: the discard pile (orange
    2, purple 1) becomes the new deck then (R16)."""
    return position(
        hands=({BLACK: 1, RED: 1}, {GREEN: 2}),
        discard={ORANGE: 2, PURPLE: 1},
        deck_top=[YELLOW, YELLOW, RED],
        rest="cup1",
        reshuffles=reshuffles,
        seed=seed,
        lenient=lenient,
    )


@pytest.mark.parametrize("seed", [None, 5])
def test_r16_a_reshuffle_order_must_match_the_discard_pile(seed: int | None) -> None:
    game = _deck_runs_out([[PURPLE, ORANGE, BLACK]], seed=seed)
    before = snapshot(game)
    with pytest.raises(RecordError) as info:
        game.push(Mountain(1, BLACK))
    assert info.value.rule == "R16"
    assert snapshot(game) == before  # the card played and the cards drawn are all back
    with pytest.raises(RecordError):  # the order is still there, and still does not fit
        game.push_code(game.check(Mountain(1, BLACK)))
    assert snapshot(game) == before


def test_r23_a_record_out_of_reshuffle_orders_refuses_the_move_and_changes_nothing() -> None:
    game = _deck_runs_out([])
    before = snapshot(game)
    with pytest.raises(RecordError) as info:
        game.push(Mountain(1, BLACK))
    assert info.value.rule == "R23"
    assert snapshot(game) == before


def test_r16_a_lenient_game_that_leaves_its_record_deals_on_from_its_seed() -> None:
    fits = _deck_runs_out([[PURPLE, ORANGE, ORANGE], [RED]], lenient=True)
    play(fits, Mountain(1, BLACK))
    assert fits.reshuffles == [[COLORS.index(c) for c in (PURPLE, ORANGE, ORANGE)]]  # the record's order, while it fits
    left = _deck_runs_out([[PURPLE, ORANGE, BLACK], [RED]], seed=5, lenient=True)
    seeded = _deck_runs_out(None, seed=5)
    play(left, Mountain(1, BLACK))
    play(seeded, Mountain(1, BLACK))
    assert left.reshuffles == seeded.reshuffles  # the seed's shuffle of orange 2, purple 1
    assert internal_state(left)["_given"] is None  # the record's later order is dropped too
    assert deck_top_first(left) == deck_top_first(seeded)


def test_r16_seeded_reshuffle_holds_exactly_the_discard_pile() -> None:
    game = position(
        hands=({BLACK: 1, RED: 1}, {GREEN: 2}),
        discard={ORANGE: 2, PURPLE: 1, GREEN: 4},
        deck_top=[YELLOW, YELLOW, RED],
        rest="cup1",
        seed=3,
    )
    play(game, Mountain(1, BLACK))
    assert len(game.reshuffles) == 1
    assert named([game.reshuffles[0].count(c) for c in range(6)]) == {ORANGE: 2, PURPLE: 1, GREEN: 4}
    assert game.deck == game.reshuffles[0][::-1]


def test_r16_exhaustion_mid_draw_continues_from_the_new_deck() -> None:
    game = position(
        hands=({BLACK: 1, RED: 1}, {GREEN: 2}),
        discard={ORANGE: 2, PURPLE: 3},
        deck_top=[YELLOW],
        rest="cup1",
        reshuffles=[[PURPLE, ORANGE, PURPLE, ORANGE, PURPLE]],
    )
    play(game, Mountain(1, BLACK))
    assert hand(game, 0) == {RED: 1, YELLOW: 1, PURPLE: 1, ORANGE: 1}
    assert deck_top_first(game) == [PURPLE, ORANGE, PURPLE]
    assert game.deck_exhausted and len(game.reshuffles) == 1


def test_r16_discarded_cards_are_in_the_reshuffle_of_their_own_redraw() -> None:
    # Action C puts the cards on the discard pile first, then draws: the last deck card
    # exhausts the deck and the pile, with the cards just discarded, becomes the new deck.
    game = position(
        hands=({RED: 2, GREEN: 1}, {GREEN: 2}),
        discard={BLACK: 1},
        deck_top=[YELLOW],
        rest="cup1",
        reshuffles=[[RED, BLACK, RED]],
    )
    play(game, Discard(RED, 2))
    assert hand(game, 0) == {GREEN: 1, YELLOW: 1, RED: 1}
    assert deck_top_first(game) == [BLACK, RED]
    assert game.deck_exhausted and game.reshuffles == [[0, 5, 0]]


def test_r16_exhaustion_during_refill_game_goes_on_until_the_next_destruction() -> None:
    game = position(
        hands=({BLACK: 2, RED: 1}, {RED: 2, YELLOW: 1}),
        mountains=({RED: 1, ORANGE: 1}, {YELLOW: 1, GREEN: 1, ORANGE: 1, PURPLE: 1, BLACK: 1}),
        fields=(({YELLOW: 1}, {GREEN: 1, PURPLE: 1}), ({}, {})),
        deck_top=[GREEN, ORANGE],
        rest="cup1",
        reshuffles=[[PURPLE, BLACK, YELLOW, GREEN]],
    )
    play(game, Field(0, BLACK, 1))  # completes mandala 0; no draw
    assert (game.phase, game.to_move) == ("pick", 1)  # 2 against 2: the non-completer
    play(game, Claim(RED), Claim(ORANGE))
    # R14 then R15: the refill deals the last 2 cards, exhausting the deck; the fields
    # just discarded are shuffled into the new deck; the game goes on.
    assert mountain(game, 0) == {GREEN: 1, ORANGE: 1}
    assert game.deck_exhausted and game.end_reason is None
    assert deck_top_first(game) == [PURPLE, BLACK, YELLOW, GREEN]
    assert discard_pile(game) == {}
    assert (game.phase, game.to_move) == ("turn", 1)
    # The next destruction ends the game (seat 1 completes mandala 1).
    play(game, Mountain(1, RED))
    assert hand(game, 1) == {RED: 1, YELLOW: 2, PURPLE: 1, BLACK: 1}
    assert (game.phase, game.to_move) == ("pick", 0)  # 0 against 0: the non-completer
    for color in (RED, ORANGE, YELLOW, GREEN, PURPLE, BLACK):
        play(game, Claim(color))  # both fields empty: every claim is discarded (R13a)
    assert game.is_over and game.end_reason == "deck"
    assert deck_top_first(game) == [GREEN]  # no refill
    assert len(game.reshuffles) == 1


def _empty_discard_position() -> Game:
    return position(
        hands=({RED: 1, ORANGE: 1}, {GREEN: 1, YELLOW: 1}),
        deck_top=[PURPLE, PURPLE, BLACK],
        rest="cup1",
        reshuffles=[[PURPLE, PURPLE]],
    )


def test_r16_exhaustion_with_empty_discard_pile_then_skipped_draw_then_late_shuffle() -> None:
    game = _empty_discard_position()
    play(game, Mountain(0, RED))
    assert hand(game, 0) == {ORANGE: 1, PURPLE: 2, BLACK: 1}
    # exhausted with an empty discard pile: the deck stays empty, no reshuffle entry
    assert game.deck_exhausted and game.deck == [] and game.reshuffles == []
    assert (game.phase, game.to_move, game.end_reason) == ("turn", 1, None)
    # both the deck and the discard pile are empty: action A draws nothing
    play(game, Mountain(1, GREEN))
    assert hand(game, 1) == {YELLOW: 1}
    assert game.deck == [] and game.reshuffles == []
    # a draw from the empty deck shuffles the then non-empty discard pile first
    play(game, Discard(PURPLE, 2))
    assert game.reshuffles == [[4, 4]]
    assert hand(game, 0) == {ORANGE: 1, PURPLE: 2, BLACK: 1}
    assert game.deck == [] and discard_pile(game) == {}
    assert (game.phase, game.to_move, game.end_reason) == ("turn", 1, None)


def test_r16_draw_skipped_partially() -> None:
    # Deck: 1 card, discard pile empty: action A draws 1 of its 3 cards.
    game = position(hands=({RED: 2}, {GREEN: 1}), deck_top=[BLACK], rest="cup1")
    play(game, Mountain(0, RED))
    assert hand(game, 0) == {RED: 1, BLACK: 1}
    assert game.deck_exhausted and game.reshuffles == [] and game.deck == []


# --------------------------------------------------------------------------- R17 triggers


def _sixth_slot(deck_top: list[str], rest: str, deck_exhausted: bool = False) -> Game:
    """Seat 0 (river of 5 colors) completes mandala 0 and picks first (2 field cards
    against 1); claiming black fills its 6th river slot."""
    return position(
        hands=({PURPLE: 1, RED: 1}, {RED: 2}),
        mountains=({BLACK: 2, RED: 1, ORANGE: 1}, {}),
        fields=(({YELLOW: 2}, {GREEN: 1}), ({}, {})),
        rivers=((RED, ORANGE, YELLOW, GREEN, PURPLE), ()),
        deck_top=deck_top,
        rest=rest,
        deck_exhausted=deck_exhausted,
    )


def test_r17a_sixth_river_slot_ends_after_the_destruction() -> None:
    game = _sixth_slot([GREEN, GREEN, GREEN], "deck")
    deck_size = len(game.deck)
    play(game, Mountain(0, PURPLE))
    assert len(game.deck) == deck_size - 3
    assert game.to_move == 0
    play(game, Claim(BLACK))
    assert river(game, 0) == [RED, ORANGE, YELLOW, GREEN, PURPLE, BLACK]
    assert cup(game, 0) == {BLACK: 1}
    assert game.river_filled and view(game).river_filled
    # the destruction in progress is played out
    assert (game.phase, game.to_move) == ("pick", 1)
    play(game, Claim(RED), Claim(ORANGE), Claim(PURPLE))
    assert (river(game, 1), cup(game, 0)) == ([RED, PURPLE], {BLACK: 1, ORANGE: 1})
    assert game.is_over and game.end_reason == "river"
    assert len(game.deck) == deck_size - 3  # no refill
    assert game.scores() == (2 + 6, 0) and game.winner() == 0
    assert result(game).end_reason == "river"  # type: ignore[union-attr]


def test_r17b_deck_exhausted_in_the_same_turn_wins_over_the_sixth_slot() -> None:
    game = _sixth_slot([GREEN, GREEN, GREEN], "cup1")
    play(game, Mountain(0, PURPLE))
    assert game.deck_exhausted and game.deck == []
    play(game, Claim(BLACK), Claim(RED), Claim(ORANGE), Claim(PURPLE))
    assert len(river(game, 0)) == 6
    assert game.is_over and game.end_reason == "deck"


def test_r17b_deck_exhausted_earlier_wins_over_the_sixth_slot() -> None:
    game = _sixth_slot([GREEN, GREEN, GREEN], "deck", deck_exhausted=True)
    play(game, Mountain(0, PURPLE), Claim(BLACK), Claim(RED), Claim(ORANGE), Claim(PURPLE))
    assert game.is_over and game.end_reason == "deck"


def test_r17b_exhaustion_alone_does_not_end_the_game() -> None:
    game = _empty_discard_position()
    play(game, Mountain(0, RED))
    assert game.deck_exhausted and not game.is_over
    play(game, Mountain(1, GREEN), Discard(PURPLE, 2))
    assert not game.is_over and game.to_move == 1


# --------------------------------------------------------------------------- R18 no legal action


def _empty_hands(turns: int = 0) -> Game:
    """Deck and discard pile empty, exhausted; seat 0 holds red 2, seat 1 holds nothing."""
    return position(
        hands=({RED: 2}, {}),
        mountains=({ORANGE: 1}, {YELLOW: 1}),
        rest="cup1",
        deck_exhausted=True,
        turns=turns,
    )


def test_r18_empty_hand_passes() -> None:
    game = _empty_hands()
    play(game, Mountain(0, RED))
    assert hand(game, 0) == {RED: 1}  # the draw was skipped
    assert game.to_move == 1
    assert game.legal_moves == [Pass()]
    assert_illegal(game, Discard(RED, 1), "R18")
    assert_illegal(game, Mountain(0, RED), "R18")
    play(game, Pass())
    assert (game.turns, game.to_move, game.phase) == (2, 0, "turn")
    assert game.history[-1] == (1, PASS_CODE)


def test_r18_pass_with_cards_in_hand_is_illegal() -> None:
    game = _empty_hands()
    assert_illegal(game, Pass(), "R18")


def test_r18_both_hands_empty_ends_the_game() -> None:
    game = _empty_hands()
    play(game, Mountain(0, RED), Pass(), Mountain(0, RED))
    assert game.is_over and game.end_reason == "no_moves" and game.turns == 3
    assert game.legal_moves == []
    assert_illegal(game, Pass(), "R18")


def test_r18_destruction_begun_by_the_emptying_action_is_played_out_first() -> None:
    game = position(
        hands=({BLACK: 1}, {}),
        mountains=({RED: 1, ORANGE: 1, YELLOW: 1, GREEN: 1, PURPLE: 1}, {}),
        fields=(({}, {}), ({}, {})),
        rest="cup1",
        deck_exhausted=True,
    )
    play(game, Mountain(0, BLACK))
    assert game.hand_sizes == [0, 0]
    assert (game.phase, game.to_move) == ("pick", 1)
    for color in (RED, ORANGE, YELLOW, GREEN, PURPLE, BLACK):
        play(game, Claim(color))
    assert game.is_over and game.end_reason == "deck"  # R17 ends it (exhausted earlier)


def test_r18_destruction_then_no_moves_when_not_exhausted() -> None:
    # Hand-made (unreachable in a dealt game): deck and discard pile empty but the deck
    # not yet exhausted. The destruction is played out; the refill finds the deck empty,
    # so the discard pile (seat 1's discarded claims and the fields) becomes the deck
    # first; then both hands are empty when the next turn is about to begin.
    game = position(
        hands=({BLACK: 1}, {}),
        mountains=({RED: 1, ORANGE: 1, YELLOW: 1, GREEN: 1}, {}),
        fields=(({PURPLE: 1}, {}), ({}, {})),
        rest="cup1",
        reshuffles=[[PURPLE, RED, YELLOW]],
    )
    play(game, Mountain(0, BLACK))
    assert (game.phase, game.to_move) == ("pick", 0)
    play(game, Claim(BLACK), Claim(RED), Claim(ORANGE), Claim(YELLOW), Claim(GREEN))
    assert river(game, 0) == [BLACK, ORANGE, GREEN]
    assert game.reshuffles == [[4, 0, 2]]
    assert deck_top_first(game) == [YELLOW] and not game.deck_exhausted
    assert game.end_reason == "no_moves"


# --------------------------------------------------------------------------- R19 turn limit


def test_r19_game_ends_when_1000_turns_were_played() -> None:
    game = position(hands=({RED: 2}, {GREEN: 2}), turns=998)
    play(game, Discard(RED, 1))
    assert not game.is_over and game.turns == 999
    play(game, Discard(GREEN, 1))
    assert game.turns == 1000 and game.is_over and game.end_reason == "turn_limit"
    assert result(game).end_reason == "turn_limit"  # type: ignore[union-attr]


def test_r19_destruction_begun_by_the_1000th_turn_is_played_out() -> None:
    game = position(
        hands=({BLACK: 1, RED: 1}, {RED: 2}),
        mountains=({RED: 1, ORANGE: 1}, {}),
        fields=(({YELLOW: 1}, {GREEN: 1, PURPLE: 1}), ({}, {})),
        deck_top=[GREEN, GREEN, GREEN, ORANGE, ORANGE],
        turns=999,
    )
    play(game, Mountain(0, BLACK))
    assert game.turns == 1000 and (game.phase, game.to_move) == ("pick", 1)
    play(game, Claim(RED), Claim(ORANGE))
    assert not game.is_over
    play(game, Claim(BLACK))
    assert (river(game, 1), river(game, 0)) == ([RED, BLACK], [ORANGE])
    assert game.end_reason == "turn_limit"


def test_r19_r17_end_reason_stands_for_the_1000th_turn_destruction() -> None:
    game = _exhaust_then_complete(turns=999)  # the 1000th turn exhausts the deck and completes
    play(game, Mountain(0, BLACK), Claim(RED), Claim(ORANGE), Claim(BLACK))
    assert game.turns == 1000 and game.end_reason == "deck"


def test_r19_judged_before_r18() -> None:
    game = _empty_hands(turns=997)
    play(game, Mountain(0, RED), Pass(), Mountain(0, RED))  # turn 1000 empties the last hand
    assert game.end_reason == "turn_limit"
    game = _empty_hands(turns=996)
    play(game, Mountain(0, RED), Pass(), Mountain(0, RED))
    assert game.end_reason == "no_moves"


def test_r19_discarding_forever_from_a_real_deal() -> None:
    game = Game.new(seed=11)
    while not game.is_over:
        move = next(m for m in game.legal_moves if isinstance(m, Discard))
        game.push(move)
    assert game.turns == 1000 and len(game.history) == 1000
    assert game.end_reason == "turn_limit"
    assert game.deck_exhausted and len(game.reshuffles) > 0
    replayed = replay(record_dict(game))
    assert view(replayed) == view(game) and replayed.end_reason == "turn_limit"


# --------------------------------------------------------------------------- R20 leftovers


def test_r20_leftovers_are_discarded_and_score_nothing() -> None:
    game = position(
        hands=({RED: 3, GREEN: 1}, {GREEN: 2, BLACK: 1}),
        mountains=({ORANGE: 2}, {YELLOW: 1}),
        fields=(({PURPLE: 1}, {}), ({}, {BLACK: 2})),
        rivers=((RED,), (GREEN,)),
        cups=({RED: 1}, {GREEN: 1}),
        discard={YELLOW: 1},
        turns=999,
    )
    deck = list(game.deck)
    play(game, Discard(RED, 1))  # the deck's top card (red: canonical order) comes back
    assert game.end_reason == "turn_limit"
    assert game.hands == [[0] * 6, [0] * 6] and game.hand_sizes == [0, 0]
    assert game.mountains == [[0] * 6, [0] * 6]
    assert game.fields == [[[0] * 6, [0] * 6], [[0] * 6, [0] * 6]]
    assert discard_pile(game) == {
        YELLOW: 1 + 1, RED: 1 + 3, GREEN: 1 + 2, BLACK: 1 + 2, ORANGE: 2, PURPLE: 1,
    }
    assert game.deck == deck[:-1]
    assert (river(game, 0), cup(game, 0), river(game, 1), cup(game, 1)) == ([RED], {RED: 1}, [GREEN], {GREEN: 1})
    assert game.scores() == (1, 1)
    assert total_cards(game) == [18] * 6


# --------------------------------------------------------------------------- R21 score


def _ended(rivers: tuple[tuple[str, ...], tuple[str, ...]], cups: tuple[dict[str, int], dict[str, int]],
           starting_cups: tuple[dict[str, int], dict[str, int]] = ({}, {})) -> Game:
    """A position with these rivers and cups, ended at once by the turn limit (R19)."""
    game = position(hands=({RED: 1}, {RED: 1}), rivers=rivers, cups=cups, starting_cups=starting_cups, turns=999)
    play(game, Discard(RED, 1))
    assert game.end_reason == "turn_limit"
    return game


def test_r21_rulebook_example_53_points() -> None:
    game = position(
        hands=({RED: 1}, {RED: 1}),
        rivers=((RED, ORANGE, YELLOW, GREEN, PURPLE, BLACK), ()),
        cups=({RED: 4, ORANGE: 5, YELLOW: 6, GREEN: 0, PURPLE: 3, BLACK: 1}, {}),
        turns=999,
    )
    assert game.score(0) == 4 * 1 + 5 * 2 + 6 * 3 + 0 * 4 + 3 * 5 + 1 * 6 == 53
    assert view(game, 0).private.score == 53  # type: ignore[union-attr]
    assert game.winner() is None  # still running
    play(game, Discard(RED, 1))
    assert game.scores() == (53, 0) and game.winner() == 0
    assert result(game) is not None and result(game).scores == [53, 0]  # type: ignore[union-attr]


def test_r21_slot_order_matters() -> None:
    game = _ended(((BLACK, RED), (RED, BLACK)), ({RED: 3, BLACK: 1}, {RED: 3, BLACK: 1}))
    assert game.scores() == (3 * 2 + 1 * 1, 3 * 1 + 1 * 2)
    assert game.winner() == 0


def test_r21_cup_colors_not_in_the_river_score_zero() -> None:
    # Seat 1's starting cup cards (green, purple) are not in its river.
    game = _ended(((), (RED,)), ({}, {RED: 2, GREEN: 1, PURPLE: 1}), starting_cups=({}, {GREEN: 1, PURPLE: 1}))
    assert game.scores() == (0, 2)
    assert game.winner() == 1


def test_r21_river_cards_score_nothing() -> None:
    game = _ended(((RED, ORANGE, YELLOW), ()), ({}, {}))
    assert game.scores() == (0, 0)
    assert game.cup_sizes() == (0, 0)
    assert game.winner() is None


def test_r21_tie_fewer_cup_cards_wins() -> None:
    game = _ended(((RED,), (RED, ORANGE)), ({RED: 2}, {ORANGE: 1}))
    assert game.scores() == (2, 2) and game.cup_sizes() == (2, 1)
    assert game.winner() == 1
    game = _ended(((RED, ORANGE), (RED,)), ({ORANGE: 1, PURPLE: 2}, {RED: 2}))
    assert game.scores() == (2, 2) and game.cup_sizes() == (3, 2)
    assert game.winner() == 1
    game = _ended(((RED,), (RED, ORANGE)), ({RED: 2}, {ORANGE: 1, GREEN: 2}))
    assert game.scores() == (2, 2) and game.cup_sizes() == (2, 3)
    assert game.winner() == 0


def test_r21_equal_score_and_cup_size_is_a_draw() -> None:
    game = _ended(((RED,), (GREEN,)), ({RED: 2}, {GREEN: 2}))
    assert game.scores() == (2, 2) and game.cup_sizes() == (2, 2)
    assert game.winner() is None
    res = result(game)
    assert res is not None and res.winner is None and res.scores == [2, 2] and res.cup_sizes == [2, 2]


def test_r21_higher_total_wins_even_with_more_cup_cards() -> None:
    game = _ended(((RED,), (RED,)), ({RED: 5, GREEN: 4}, {RED: 1}))
    assert game.scores() == (5, 1) and game.winner() == 0
