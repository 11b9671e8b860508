"""Rules R11–R15: destroying a complete mandala — who picks first, the picks,
where claimed cards go, clearing the fields, the refill and the next turn.

All positions are hand-made with ``engine_helpers.position``; outcomes are
asserted pile by pile.
"""

from __future__ import annotations

from collections.abc import Mapping

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
    field,
    hand,
    mountain,
    move_names,
    play,
    position,
    river,
    sorted_moves,
)
from mandala import Claim, Discard, Field, Game, Mountain, Pass, RecordError, replay, view
from mandala.views import Destruction


def _tied_destruction() -> Game:
    """Seat 0 completes mandala 0 with a black card; both fields hold 2 cards.

    Mandala 0: mountain red 2 + orange; seat 0's field yellow 2; seat 1's field green +
    purple. Deck top: orange, yellow, green (seat 0's draw), then red, black (refill)."""
    return position(
        hands=({BLACK: 1, RED: 1, YELLOW: 1}, {ORANGE: 1, GREEN: 2}),
        mountains=({RED: 2, ORANGE: 1}, {PURPLE: 1}),
        fields=(({YELLOW: 2}, {GREEN: 1, PURPLE: 1}), ({}, {})),
        deck_top=[ORANGE, YELLOW, GREEN, RED, BLACK],
    )


def test_r11_tie_non_completer_picks_first_and_full_destruction() -> None:
    game = _tied_destruction()
    play(game, Mountain(0, BLACK))
    assert hand(game, 0) == {RED: 1, YELLOW: 2, ORANGE: 1, GREEN: 1}
    assert (game.phase, game.to_move, game.first_picker, game.completed_by) == ("pick", 1, 1, 0)
    assert view(game, 0).destruction == Destruction(mandala=0, completed_by=0, first_picker=1)
    assert sorted_moves(move_names(game)) == sorted_moves([Claim(RED), Claim(ORANGE), Claim(BLACK)])

    play(game, Claim(RED))  # seat 1: 1 red to the river, 1 to the cup (R13b)
    assert (river(game, 1), cup(game, 1)) == ([RED], {RED: 1})
    assert game.to_move == 0
    play(game, Claim(BLACK))  # seat 0: the single black goes to the river
    assert (river(game, 0), cup(game, 0)) == ([BLACK], {})
    assert game.to_move == 1
    assert move_names(game) == [{"type": "claim", "color": ORANGE}]  # R12: still a decision
    play(game, Claim(ORANGE))
    assert (river(game, 1), cup(game, 1)) == ([RED, ORANGE], {RED: 1})
    # R14: both fields to the discard pile; R15: refill 2 from the top; seat 1 moves next
    assert discard_pile(game) == {YELLOW: 2, GREEN: 1, PURPLE: 1}
    assert field(game, 0, 0) == {} and field(game, 0, 1) == {}
    assert mountain(game, 0) == {RED: 1, BLACK: 1}
    assert mountain(game, 1) == {PURPLE: 1}
    assert (game.phase, game.to_move, game.turns, game.destroying) == ("turn", 1, 1, None)
    assert view(game).destruction is None


def _completion(completer: int, completer_field: Mapping[str, int], opponent_field: Mapping[str, int]) -> Game:
    """``completer`` is to move and completes mandala 0 by playing black to its mountain
    (red, orange, yellow; the fields bring green and purple)."""
    fields = [dict(completer_field), dict(opponent_field)]
    if completer == 1:
        fields.reverse()
    hands = [{BLACK: 1, RED: 1}, {RED: 2}]
    if completer == 1:
        hands.reverse()
    return position(
        hands=(hands[0], hands[1]),
        mountains=({RED: 1, ORANGE: 1, YELLOW: 1}, {}),
        fields=((fields[0], fields[1]), ({}, {})),
        to_move=completer,
    )


@pytest.mark.parametrize(
    ("completer", "completer_field", "opponent_field", "first"),
    [
        (0, {GREEN: 3}, {PURPLE: 1}, 0),  # the completer has more: the completer picks first
        (1, {GREEN: 3}, {PURPLE: 1}, 1),
        (0, {GREEN: 1}, {PURPLE: 3}, 1),  # the opponent has more
        (1, {GREEN: 1}, {PURPLE: 3}, 0),
        (0, {GREEN: 1, PURPLE: 1}, {}, 0),  # more against an empty field
        (1, {}, {GREEN: 2, PURPLE: 1}, 0),
    ],
)
def test_r11_more_field_cards_picks_first(
    completer: int, completer_field: dict[str, int], opponent_field: dict[str, int], first: int
) -> None:
    game = _completion(completer, completer_field, opponent_field)
    play(game, Mountain(0, BLACK))
    assert (game.phase, game.completed_by, game.first_picker, game.to_move) == ("pick", completer, first, first)


@pytest.mark.parametrize("completer", [0, 1])
@pytest.mark.parametrize(
    ("completer_field", "opponent_field"),
    [({GREEN: 2}, {PURPLE: 2}), ({GREEN: 1}, {PURPLE: 1}), ({GREEN: 4}, {PURPLE: 4})],
)
def test_r11_tie_goes_to_the_non_completer(
    completer: int, completer_field: dict[str, int], opponent_field: dict[str, int]
) -> None:
    game = _completion(completer, completer_field, opponent_field)
    play(game, Mountain(0, BLACK))
    assert (game.first_picker, game.to_move) == (1 - completer, 1 - completer)


@pytest.mark.parametrize("completer", [0, 1])
def test_r11_tie_with_both_fields_empty(completer: int) -> None:
    game = position(
        hands=({BLACK: 1, RED: 1}, {RED: 2}) if completer == 0 else ({RED: 2}, {BLACK: 1, RED: 1}),
        mountains=({RED: 1, ORANGE: 1, YELLOW: 1, GREEN: 1, PURPLE: 1}, {}),
        to_move=completer,
    )
    play(game, Mountain(0, BLACK))
    assert (game.phase, game.first_picker, game.to_move) == ("pick", 1 - completer, 1 - completer)


def test_r11_action_b_completion_counts_the_cards_just_played() -> None:
    # Seat 0 has 1 field card, seat 1 has 2; seat 0 plays 2 more to its field and completes:
    # 3 against 2, seat 0 picks first.
    game = position(
        hands=({BLACK: 2, RED: 1}, {RED: 2}),
        mountains=({RED: 1, ORANGE: 1}, {}),
        fields=(({YELLOW: 1}, {GREEN: 1, PURPLE: 1}), ({}, {})),
    )
    play(game, Field(0, BLACK, 2))
    assert (game.phase, game.first_picker, game.to_move) == ("pick", 0, 0)


# --------------------------------------------------------------------------- R12 picking


def _four_color_mountain() -> Game:
    """Seat 0 completes mandala 0; the mountain then holds red 3, orange 1, yellow 2, black 1;
    the fields are green (seat 0) and purple (seat 1): a tie, so seat 1 picks first."""
    game = position(
        hands=({BLACK: 1, RED: 1}, {RED: 2}),
        mountains=({RED: 3, ORANGE: 1, YELLOW: 2}, {}),
        fields=(({GREEN: 1}, {PURPLE: 1}), ({}, {})),
    )
    play(game, Mountain(0, BLACK))
    return game


def test_r12_picks_strictly_alternate_until_the_mountain_is_empty() -> None:
    game = _four_color_mountain()
    order = []
    for color in (YELLOW, RED, BLACK, ORANGE):
        assert game.phase == "pick"
        order.append(game.to_move)
        play(game, Claim(color))
    assert order == [1, 0, 1, 0]
    assert game.phase == "turn" and mountain(game, 0) != {}  # refilled
    assert (river(game, 1), cup(game, 1)) == ([YELLOW, BLACK], {YELLOW: 1})
    assert (river(game, 0), cup(game, 0)) == ([RED, ORANGE], {RED: 2})


def test_r12_a_pick_claims_all_cards_of_the_color() -> None:
    game = _four_color_mountain()
    play(game, Claim(RED))
    assert mountain(game, 0) == {ORANGE: 1, YELLOW: 2, BLACK: 1}
    assert (river(game, 1), cup(game, 1)) == ([RED], {RED: 2})
    assert sorted_moves(move_names(game)) == sorted_moves([Claim(ORANGE), Claim(YELLOW), Claim(BLACK)])


def test_r12_every_pick_is_a_decision_even_with_one_color_left() -> None:
    game = _four_color_mountain()
    play(game, Claim(RED), Claim(ORANGE), Claim(YELLOW))
    assert mountain(game, 0) == {BLACK: 1}
    assert (game.phase, game.to_move) == ("pick", 0)
    assert game.legal_moves == [Claim(BLACK)]
    assert view(game, 0).to_move == 0 and view(game).phase == "pick"
    play(game, Claim(BLACK))
    assert game.phase == "turn"


def test_r12_claim_of_a_color_not_in_the_mountain_is_illegal() -> None:
    game = _four_color_mountain()
    assert_illegal(game, Claim(GREEN), "R12")
    play(game, Claim(RED))
    assert_illegal(game, Claim(RED), "R12")


@pytest.mark.parametrize("move", [Mountain(1, RED), Field(1, RED, 1), Discard(RED, 1), Pass()])
def test_r12_only_claims_during_a_destruction(move: object) -> None:
    game = _four_color_mountain()
    assert_illegal(game, move, "R12")  # type: ignore[arg-type]


def test_r12_record_claim_by_the_wrong_picker_is_rejected() -> None:
    game = Game.new(seed=5)
    while game.phase != "pick":
        game.push_code(game.legal_codes()[0])
    from mandala import record_dict

    record = record_dict(game)
    ply = len(record["moves"])
    record["moves"].append({"type": "claim", "color": "red", "player": 1 - game.to_move})
    with pytest.raises(RecordError) as info:
        replay(record)
    assert (info.value.rule, info.value.ply) == ("R12", ply)


# --------------------------------------------------------------------------- R13 claimed cards


def test_r13a_empty_field_discards_claim() -> None:
    # Seat 0 completes with an empty field of its own; seat 1 (2 field cards) picks first.
    game = position(
        hands=({BLACK: 1, RED: 1}, {RED: 2}),
        mountains=({RED: 2, ORANGE: 1, YELLOW: 1}, {}),
        fields=(({}, {GREEN: 1, PURPLE: 1}), ({}, {})),
        starting_cups=({ORANGE: 1, GREEN: 1}, {}),
    )
    play(game, Mountain(0, BLACK))
    assert game.to_move == 1
    play(game, Claim(RED))
    assert (river(game, 1), cup(game, 1)) == ([RED], {RED: 1})
    assert game.to_move == 0  # seat 0 still takes its picks
    play(game, Claim(YELLOW))
    assert discard_pile(game) == {YELLOW: 1}
    assert (river(game, 0), cup(game, 0)) == ([], {ORANGE: 1, GREEN: 1})
    assert game.to_move == 1
    play(game, Claim(BLACK))
    assert river(game, 1) == [RED, BLACK]
    assert game.to_move == 0
    play(game, Claim(ORANGE))
    assert (river(game, 0), cup(game, 0)) == ([], {ORANGE: 1, GREEN: 1})
    # the two discarded claims plus seat 1's field (R14)
    assert discard_pile(game) == {YELLOW: 1, ORANGE: 1, GREEN: 1, PURPLE: 1}


def test_r13a_both_fields_empty_all_claims_discarded() -> None:
    game = position(
        hands=({BLACK: 1, RED: 1}, {RED: 2}),
        mountains=({RED: 1, ORANGE: 2, YELLOW: 1, GREEN: 1, PURPLE: 1}, {}),
        deck_top=[GREEN, GREEN, GREEN, PURPLE, PURPLE],
    )
    play(game, Mountain(0, BLACK))
    for color in (ORANGE, RED, YELLOW, GREEN, PURPLE, BLACK):
        play(game, Claim(color))
    assert game.rivers == [[], []] and cup(game, 0) == {} and cup(game, 1) == {}
    assert discard_pile(game) == {RED: 1, ORANGE: 2, YELLOW: 1, GREEN: 1, PURPLE: 1, BLACK: 1}
    assert mountain(game, 0) == {PURPLE: 2}
    assert game.to_move == 1


def test_r13b_first_card_of_a_new_color_goes_to_the_lowest_empty_slot() -> None:
    game = position(
        hands=({BLACK: 1, RED: 1}, {RED: 2}),
        mountains=({RED: 3, ORANGE: 1, YELLOW: 1}, {}),
        fields=(({GREEN: 2}, {PURPLE: 1}), ({}, {})),
        rivers=((BLACK, GREEN), ()),
        cups=({GREEN: 2}, {}),
    )
    play(game, Mountain(0, BLACK))
    assert game.to_move == 0  # 2 field cards against 1
    play(game, Claim(RED))
    assert river(game, 0) == [BLACK, GREEN, RED]  # slot 3
    assert cup(game, 0) == {GREEN: 2, RED: 2}  # the rest into the cup


def test_r13c_color_already_in_the_river_goes_to_the_cup() -> None:
    game = position(
        hands=({BLACK: 1, RED: 1}, {RED: 2}),
        mountains=({RED: 2, ORANGE: 1, YELLOW: 1}, {}),
        fields=(({GREEN: 2}, {PURPLE: 1}), ({}, {})),
        rivers=((RED,), ()),
    )
    play(game, Mountain(0, BLACK))
    play(game, Claim(RED))
    assert river(game, 0) == [RED]
    assert cup(game, 0) == {RED: 2}
    play(game, Claim(BLACK))  # seat 1: new color, single card: river, nothing to the cup
    assert (river(game, 1), cup(game, 1)) == ([BLACK], {})
    play(game, Claim(YELLOW))
    assert (river(game, 0), cup(game, 0)) == ([RED, YELLOW], {RED: 2})


def test_r13_fields_are_judged_as_they_stood_at_completion() -> None:
    # The picks do not touch the fields: seat 0's field stays until the mountain is empty.
    game = position(
        hands=({BLACK: 1, RED: 1}, {RED: 2}),
        mountains=({RED: 2, ORANGE: 1, YELLOW: 1}, {}),
        fields=(({GREEN: 2}, {PURPLE: 1}), ({}, {})),
    )
    play(game, Mountain(0, BLACK), Claim(RED))
    assert field(game, 0, 0) == {GREEN: 2} and field(game, 0, 1) == {PURPLE: 1}
    play(game, Claim(BLACK), Claim(YELLOW))
    assert field(game, 0, 0) == {GREEN: 2} and field(game, 0, 1) == {PURPLE: 1}
    play(game, Claim(ORANGE))
    assert field(game, 0, 0) == {} and field(game, 0, 1) == {}


# --------------------------------------------------------------------------- R14 clearing


def test_r14_fields_of_the_destroyed_mandala_go_to_the_discard_pile() -> None:
    game = position(
        hands=({BLACK: 1, RED: 1}, {RED: 2}),
        mountains=({RED: 1, ORANGE: 1}, {YELLOW: 1}),
        fields=(({GREEN: 3, YELLOW: 2}, {PURPLE: 4}), ({RED: 2}, {ORANGE: 1})),
        discard={BLACK: 1},
    )
    play(game, Mountain(0, BLACK))
    assert game.to_move == 0  # 5 against 4
    play(game, Claim(RED), Claim(ORANGE), Claim(BLACK))
    assert discard_pile(game) == {BLACK: 1, GREEN: 3, YELLOW: 2, PURPLE: 4}
    assert field(game, 0, 0) == {} and field(game, 0, 1) == {}
    assert field(game, 1, 0) == {RED: 2} and field(game, 1, 1) == {ORANGE: 1}  # untouched
    assert mountain(game, 1) == {YELLOW: 1}


# --------------------------------------------------------------------------- R15 refill and next turn


@pytest.mark.parametrize("completer", [0, 1])
def test_r15_refill_two_and_next_turn_to_the_completers_opponent(completer: int) -> None:
    # The completer has more field cards: it picks first and also makes the last pick.
    fields = [{GREEN: 2}, {PURPLE: 1}]
    hands = [{BLACK: 1, RED: 1}, {RED: 2}]
    if completer:
        fields.reverse()
        hands.reverse()
    game = position(
        hands=(hands[0], hands[1]),
        mountains=({RED: 1, ORANGE: 1, YELLOW: 1}, {}),
        fields=((fields[0], fields[1]), ({}, {})),
        deck_top=[ORANGE, ORANGE, ORANGE, GREEN, YELLOW, PURPLE],
        to_move=completer,
    )
    play(game, Mountain(0, BLACK))
    turns = game.turns
    pickers = []
    for color in (RED, ORANGE, YELLOW, BLACK):
        pickers.append(game.to_move)
        play(game, Claim(color))
    assert pickers == [completer, 1 - completer] * 2  # the completer made the first pick...
    assert pickers[-1] == 1 - completer  # ...and its opponent the last
    assert mountain(game, 0) == {GREEN: 1, YELLOW: 1}  # the next 2 cards of the deck
    assert deck_top_first(game)[0] == PURPLE
    assert (game.phase, game.to_move, game.current) == ("turn", 1 - completer, 1 - completer)
    assert game.turns == turns == 1  # picks are not turns


def test_r15_next_turn_after_the_completer_made_the_last_pick() -> None:
    game = position(
        hands=({BLACK: 1, RED: 1}, {RED: 2}),
        mountains=({RED: 1, ORANGE: 1}, {}),
        fields=(({GREEN: 1}, {YELLOW: 1, PURPLE: 1}), ({}, {})),
        deck_top=[ORANGE, ORANGE, ORANGE, RED, RED],
    )
    play(game, Mountain(0, BLACK))
    assert game.to_move == 1
    play(game, Claim(RED), Claim(ORANGE), Claim(BLACK))  # seat 1, seat 0, seat 1
    assert (river(game, 1), river(game, 0)) == ([RED, BLACK], [ORANGE])
    assert mountain(game, 0) == {RED: 2}
    assert (game.phase, game.to_move) == ("turn", 1)
    game = position(
        hands=({BLACK: 1, RED: 1}, {RED: 2}),
        mountains=({RED: 1, ORANGE: 1, YELLOW: 1}, {}),
        fields=(({GREEN: 1}, {PURPLE: 2}), ({}, {})),
        deck_top=[ORANGE, ORANGE, ORANGE, RED, RED],
    )
    play(game, Mountain(0, BLACK))
    play(game, Claim(RED), Claim(ORANGE), Claim(BLACK), Claim(YELLOW))  # seat 1, 0, 1, 0 (completer last)
    assert (game.phase, game.to_move) == ("turn", 1)
