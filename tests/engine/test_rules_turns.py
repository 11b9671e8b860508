"""Rules R3–R10: the deal, the first player, and the three actions of a turn.

Every test builds its position by hand (an explicit 108-card deck order or
``Game.from_position`` through ``engine_helpers.position``) and asserts exact
piles, exact legal-move lists and, for illegal moves, the rule named in the
error and an untouched state.
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
    deck_order,
    deck_top_first,
    discard_pile,
    field,
    hand,
    mountain,
    move_names,
    named,
    play,
    position,
    snapshot,
    sorted_moves,
)
from mandala import (
    Claim,
    Discard,
    Field,
    Game,
    IllegalMove,
    Mountain,
    Pass,
    RecordError,
    SetupError,
    record_dict,
    replay,
    view,
)
from mandala.cards import COLORS

# --------------------------------------------------------------------------- R3 deal order


def _deal_example() -> list[str]:
    return deck_order(
        mountains=([RED, ORANGE], [YELLOW, GREEN]),
        hands=([PURPLE] * 3 + [RED] * 3, [BLACK] * 6),
        cups=([RED, RED], [ORANGE, BLACK]),
        deck_top=[GREEN, YELLOW, BLACK, ORANGE],
    )


def test_r3_deal_order_from_the_top() -> None:
    deck = _deal_example()
    game = Game(deck, 0)
    assert mountain(game, 0) == {RED: 1, ORANGE: 1}
    assert mountain(game, 1) == {YELLOW: 1, GREEN: 1}
    assert hand(game, 0) == {RED: 3, PURPLE: 3}
    assert hand(game, 1) == {BLACK: 6}
    assert named(game.starting_cups[0]) == {RED: 2}
    assert named(game.starting_cups[1]) == {ORANGE: 1, BLACK: 1}
    assert named(game.cups[0]) == {RED: 2} and named(game.cups[1]) == {ORANGE: 1, BLACK: 1}
    assert deck_top_first(game) == deck[20:]
    assert len(game.deck) == 88
    assert game.rivers == [[], []]
    assert game.fields == [[[0] * 6, [0] * 6], [[0] * 6, [0] * 6]]
    assert discard_pile(game) == {}
    assert (game.phase, game.to_move, game.turns) == ("turn", 0, 0)


def test_r3_remaining_deck_starts_at_index_20() -> None:
    deck = _deal_example()
    game = Game(deck, 0)
    play(game, Mountain(1, PURPLE))  # 5 cards left: draw 3 = deck[20], deck[21], deck[22]
    assert deck[20:23] == [GREEN, YELLOW, BLACK]
    assert hand(game, 0) == {RED: 3, PURPLE: 2, GREEN: 1, YELLOW: 1, BLACK: 1}
    assert deck_top_first(game) == deck[23:]


def test_r3_seeded_deal_follows_the_same_order() -> None:
    game = Game.new(seed=12345)
    d = [COLORS[c] for c in game.deck_order]
    replayed = Game(d, 0)
    assert view(replayed, 0) == view(game, 0) and view(replayed, 1) == view(game, 1)
    assert mountain(game, 0) == named([d[0:2].count(c) for c in COLORS])
    assert hand(game, 1) == named([d[10:16].count(c) for c in COLORS])
    assert named(game.starting_cups[1]) == named([d[18:20].count(c) for c in COLORS])


@pytest.mark.parametrize(
    ("deck", "rule"),
    [
        (_deal_example()[:-1], "R3"),  # 107 cards
        (_deal_example() + [RED], "R3"),  # 109 cards
        (_deal_example()[:-1] + [RED if _deal_example()[-1] != RED else ORANGE], "R1"),  # 19 of one color
        (_deal_example()[:-1] + ["blue"], "R1"),  # not a color
    ],
)
def test_r3_deck_must_be_108_cards_18_per_color(deck: list[str], rule: str) -> None:
    with pytest.raises(SetupError) as info:
        Game(deck, 0)
    assert info.value.rule == rule


# --------------------------------------------------------------------------- R4 first player


def test_r4_first_player_moves_first() -> None:
    game = Game(_deal_example(), 1)
    assert game.to_move == 1 and game.current == 1
    assert view(game).to_move == 1 and view(game).first_player == 1
    assert record_dict(game)["first_player"] == 1
    play(game, Mountain(0, BLACK))
    assert game.history == [(1, 0 * 6 + 5)]
    assert record_dict(game)["moves"] == [{"type": "mountain", "mandala": 0, "color": BLACK, "player": 1}]


@pytest.mark.parametrize("first", [2, -1, None, "0", True])
def test_r4_first_player_is_seat_0_or_1(first: object) -> None:
    with pytest.raises(SetupError) as info:
        Game(_deal_example(), first)  # type: ignore[arg-type]
    assert info.value.rule == "R4"


def test_r4_record_with_bad_first_player_is_rejected() -> None:
    record = record_dict(Game(_deal_example(), 0))
    record["first_player"] = 2
    with pytest.raises(RecordError) as info:
        replay(record)
    assert info.value.rule == "R4"


# --------------------------------------------------------------------------- R5 one action


def test_r5_one_action_then_the_opponent_moves() -> None:
    game = Game(_deal_example(), 0)
    for expected_turns, mover, move in [
        (1, 0, Discard(RED, 1)),
        (2, 1, Mountain(0, BLACK)),
        (3, 0, Field(1, RED, 2)),
    ]:
        assert game.to_move == mover
        play(game, move)
        assert game.turns == expected_turns
        assert game.to_move == 1 - mover
        assert game.history[-1][0] == mover


def test_r5_claim_outside_a_destruction_is_illegal() -> None:
    game = Game(_deal_example(), 0)
    assert_illegal(game, Claim(RED), "R5")


def test_r5_record_move_by_the_wrong_seat_is_rejected() -> None:
    game = Game(_deal_example(), 0)
    record = record_dict(game)
    record["moves"] = [
        {"type": "discard", "color": RED, "count": 1, "player": 0},
        {"type": "discard", "color": RED, "count": 1, "player": 0},  # seat 1's turn
    ]
    with pytest.raises(RecordError) as info:
        replay(record)
    assert (info.value.rule, info.value.ply) == ("R5", 1)


# --------------------------------------------------------------------------- R6 action A


def test_r6_mountain_play_then_draw_from_the_top() -> None:
    game = position(
        hands=({RED: 2, GREEN: 2}, {BLACK: 4}),
        mountains=({YELLOW: 1}, {ORANGE: 1}),
        deck_top=[PURPLE, BLACK, RED, ORANGE],
    )
    play(game, Mountain(0, RED))
    assert mountain(game, 0) == {RED: 1, YELLOW: 1}
    assert mountain(game, 1) == {ORANGE: 1}
    assert hand(game, 0) == {RED: 2, GREEN: 2, PURPLE: 1, BLACK: 1}
    assert deck_top_first(game)[:1] == [ORANGE]
    assert (game.phase, game.to_move, game.turns) == ("turn", 1, 1)


def test_r6_cannot_play_a_color_not_in_hand() -> None:
    game = position(hands=({RED: 2}, {BLACK: 4}))
    assert_illegal(game, Mountain(0, GREEN), "R6")


def test_r6_completion_is_checked_after_the_draw() -> None:
    # The draw brings nothing to the mandala, but the play completes it: the check
    # happens after the 3 cards are drawn, so the hand already holds them.
    game = position(
        hands=({BLACK: 1, RED: 1}, {GREEN: 1}),
        mountains=({RED: 1, ORANGE: 1}, {}),
        fields=(({YELLOW: 1}, {GREEN: 1, PURPLE: 1}), ({}, {})),
        deck_top=[GREEN, GREEN, GREEN],
    )
    play(game, Mountain(0, BLACK))
    assert hand(game, 0) == {RED: 1, GREEN: 3}
    assert game.phase == "pick" and game.destroying == 0


# --------------------------------------------------------------------------- R7 hand limit


@pytest.mark.parametrize(
    ("hand_before", "drawn"),
    [
        ({RED: 8}, 1),  # 7 left after the play: draw 1
        ({RED: 7}, 2),  # 6 left: draw 2
        ({RED: 6}, 3),  # 5 left: draw 3
        ({RED: 1}, 3),  # 0 left: draw 3
        ({RED: 3}, 3),
    ],
)
def test_r7_draw_count_after_a_mountain_play(hand_before: dict[str, int], drawn: int) -> None:
    game = position(hands=(hand_before, {BLACK: 1}), deck_top=[GREEN, YELLOW, PURPLE, ORANGE])
    deck_before = len(game.deck)
    play(game, Mountain(0, RED))
    expected = dict(hand_before)
    expected[RED] -= 1
    for c in [GREEN, YELLOW, PURPLE][:drawn]:
        expected[c] = expected.get(c, 0) + 1
    assert hand(game, 0) == {c: n for c, n in expected.items() if n}
    assert len(game.deck) == deck_before - drawn
    assert game.hand_sizes[0] == min(8, sum(hand_before.values()) - 1 + 3)


def test_r7_hand_never_exceeds_8_on_discard() -> None:
    game = position(hands=({RED: 5, GREEN: 3}, {BLACK: 1}), deck_top=[YELLOW, YELLOW, YELLOW])
    play(game, Discard(GREEN, 3))
    assert hand(game, 0) == {RED: 5, YELLOW: 3}
    assert game.hand_sizes[0] == 8


def test_r7_position_with_more_than_8_cards_is_rejected() -> None:
    with pytest.raises(SetupError) as info:
        position(hands=({RED: 9}, {}))
    assert info.value.rule == "R7"


# --------------------------------------------------------------------------- R8 action B


def test_r8_field_play_draws_nothing() -> None:
    game = position(hands=({RED: 3, GREEN: 1}, {BLACK: 2}), deck_top=[YELLOW])
    deck = deck_top_first(game)
    play(game, Field(1, RED, 2))
    assert field(game, 1, 0) == {RED: 2}
    assert hand(game, 0) == {RED: 1, GREEN: 1}
    assert deck_top_first(game) == deck
    assert (game.to_move, game.turns) == (1, 1)


def test_r8_at_least_one_card_stays_even_of_one_color() -> None:
    game = position(hands=({RED: 4}, {BLACK: 2}))
    fields = [m for m in move_names(game) if m["type"] == "field"]
    assert sorted_moves(fields) == sorted_moves(
        [{"type": "field", "mandala": mm, "color": RED, "count": k} for mm in (0, 1) for k in (1, 2, 3)]
    )
    assert_illegal(game, Field(0, RED, 4), "R8")


def test_r8_cannot_field_more_than_held() -> None:
    game = position(hands=({RED: 2, GREEN: 3}, {BLACK: 2}))
    assert_illegal(game, Field(0, RED, 3), "R8")
    assert_illegal(game, Field(0, YELLOW, 1), "R8")


def test_r8_single_card_hand_has_no_field_move() -> None:
    game = position(hands=({RED: 1}, {BLACK: 2}))
    assert sorted_moves(move_names(game)) == sorted_moves(
        [Mountain(0, RED), Mountain(1, RED), Discard(RED, 1)]
    )
    assert_illegal(game, Field(0, RED, 1), "R8")


@pytest.mark.parametrize("count", [0, -1])
def test_r8_count_must_be_positive(count: int) -> None:
    game = position(hands=({RED: 3}, {BLACK: 2}))
    assert_illegal(game, Field(0, RED, count), "R22")
    assert_illegal(game, Discard(RED, count), "R22")


# --------------------------------------------------------------------------- R8a action C


def test_r8a_discard_then_draw_the_same_number() -> None:
    game = position(hands=({RED: 3, GREEN: 2}, {BLACK: 2}), deck_top=[PURPLE, ORANGE, BLACK])
    play(game, Discard(RED, 2))
    assert hand(game, 0) == {RED: 1, GREEN: 2, PURPLE: 1, ORANGE: 1}
    assert discard_pile(game) == {RED: 2}
    assert deck_top_first(game)[0] == BLACK
    assert (game.phase, game.to_move, game.turns) == ("turn", 1, 1)


def test_r8a_whole_hand_may_be_discarded_and_redrawn() -> None:
    game = position(hands=({GREEN: 4}, {BLACK: 2}), deck_top=[RED, ORANGE, YELLOW, PURPLE, BLACK])
    discards = [m for m in move_names(game) if m["type"] == "discard"]
    assert discards == [{"type": "discard", "color": GREEN, "count": k} for k in (1, 2, 3, 4)]
    play(game, Discard(GREEN, 4))
    assert hand(game, 0) == {RED: 1, ORANGE: 1, YELLOW: 1, PURPLE: 1}
    assert discard_pile(game) == {GREEN: 4}


def test_r8a_rule_of_color_does_not_apply_and_no_completion_check() -> None:
    # Mandala 0 already holds all 6 colors (a hand-made position); a discard of a color
    # that stands in a field there is legal, and no completion check follows.
    game = position(
        hands=({RED: 2, YELLOW: 1}, {BLACK: 2}),
        mountains=({ORANGE: 1, GREEN: 1, PURPLE: 1, BLACK: 1}, {}),
        fields=(({RED: 1}, {YELLOW: 1}), ({}, {})),
        deck_top=[BLACK],
    )
    assert {"type": "discard", "color": YELLOW, "count": 1} in move_names(game)
    play(game, Discard(YELLOW, 1))
    assert (game.phase, game.to_move) == ("turn", 1)
    assert hand(game, 0) == {RED: 2, BLACK: 1}


def test_r8a_cannot_discard_more_than_held() -> None:
    game = position(hands=({RED: 2, GREEN: 1}, {BLACK: 2}))
    assert_illegal(game, Discard(RED, 3), "R8a")
    assert_illegal(game, Discard(YELLOW, 1), "R8a")


# --------------------------------------------------------------------------- R9 rule of color


def _color_example(to_move: int) -> Game:
    """Mandala 0: seat 0's field holds red, seat 1's field purple, the mountain green.
    Mandala 1: mountain black and orange, no fields."""
    return position(
        hands=({RED: 2, YELLOW: 1, GREEN: 1, PURPLE: 1}, {RED: 1, ORANGE: 1, GREEN: 1, PURPLE: 2}),
        mountains=({GREEN: 1}, {BLACK: 1, ORANGE: 1}),
        fields=(({RED: 1}, {PURPLE: 1}), ({}, {})),
        to_move=to_move,
    )


def test_r9_rule_of_color_rulebook_example_exact_legal_moves() -> None:
    game = _color_example(0)
    expected = (
        # mountain 0: not red (seat 0's field), not purple (seat 1's field); more green is fine
        [Mountain(0, YELLOW), Mountain(0, GREEN)]
        # mountain 1: fields empty, everything held may go
        + [Mountain(1, c) for c in (RED, YELLOW, GREEN, PURPLE)]
        # own field 0: more red is fine; not green (mountain) nor purple (opponent's field)
        + [Field(0, RED, 1), Field(0, RED, 2), Field(0, YELLOW, 1)]
        # own field 1: only orange and black are blocked, and seat 0 holds neither
        + [Field(1, RED, 1), Field(1, RED, 2), Field(1, YELLOW, 1), Field(1, GREEN, 1), Field(1, PURPLE, 1)]
        + [Discard(RED, 1), Discard(RED, 2), Discard(YELLOW, 1), Discard(GREEN, 1), Discard(PURPLE, 1)]
    )
    assert sorted_moves(move_names(game)) == sorted_moves(expected)
    assert len(game.legal_moves) == len(expected)  # each listed once (R22)


def test_r9_rule_of_color_rulebook_example_for_the_opponent() -> None:
    game = _color_example(1)
    expected = (
        [Mountain(0, ORANGE), Mountain(0, GREEN)]  # red blocked by seat 0's field, purple by its own
        + [Mountain(1, c) for c in (RED, ORANGE, GREEN, PURPLE)]
        + [Field(0, PURPLE, 1), Field(0, PURPLE, 2), Field(0, ORANGE, 1)]  # red: opponent's field; green: mountain
        + [Field(1, RED, 1), Field(1, GREEN, 1), Field(1, PURPLE, 1), Field(1, PURPLE, 2)]  # orange: mountain 1
        + [Discard(RED, 1), Discard(ORANGE, 1), Discard(GREEN, 1), Discard(PURPLE, 1), Discard(PURPLE, 2)]
    )
    assert sorted_moves(move_names(game)) == sorted_moves(expected)
    assert len(game.legal_moves) == len(expected)


@pytest.mark.parametrize(
    ("to_move", "move"),
    [
        (0, Mountain(0, RED)),  # own field holds red
        (0, Mountain(0, PURPLE)),  # opponent's field holds purple
        (0, Field(0, GREEN, 1)),  # the mountain holds green
        (0, Field(0, PURPLE, 1)),  # the opponent's field holds purple
        (1, Mountain(0, RED)),
        (1, Field(0, RED, 1)),
        (1, Field(0, GREEN, 1)),
        (1, Field(1, ORANGE, 1)),  # mountain 1 holds orange
    ],
)
def test_r9_rule_of_color_violations_are_illegal(to_move: int, move: object) -> None:
    assert_illegal(_color_example(to_move), move, "R9")  # type: ignore[arg-type]


def test_r9_the_other_mandala_is_independent() -> None:
    game = _color_example(0)
    play(game, Mountain(1, RED))  # red stands in seat 0's field of mandala 0
    assert mountain(game, 1) == {RED: 1, BLACK: 1, ORANGE: 1}
    game = _color_example(1)
    play(game, Field(1, RED, 1))
    assert field(game, 1, 1) == {RED: 1}


def test_r9_adding_to_the_area_that_holds_the_color() -> None:
    game = _color_example(0)
    play(game, Field(0, RED, 2))
    assert field(game, 0, 0) == {RED: 3}
    game = _color_example(1)
    play(game, Field(0, PURPLE, 2))
    assert field(game, 0, 1) == {PURPLE: 3}
    game = _color_example(0)
    play(game, Mountain(0, GREEN))
    assert mountain(game, 0) == {GREEN: 2}


# --------------------------------------------------------------------------- R10 completion


def test_r10_action_a_completes_the_mandala() -> None:
    game = position(
        hands=({BLACK: 1, RED: 2}, {GREEN: 2}),
        mountains=({RED: 1, ORANGE: 1}, {}),
        fields=(({YELLOW: 1}, {GREEN: 1, PURPLE: 1}), ({}, {})),
    )
    play(game, Mountain(0, BLACK))
    assert game.phase == "pick" and game.destroying == 0 and game.completed_by == 0
    assert view(game).destruction is not None


def test_r10_action_b_completes_the_mandala() -> None:
    game = position(
        hands=({BLACK: 2, RED: 2}, {GREEN: 2}),
        mountains=({RED: 1, ORANGE: 1}, {}),
        fields=(({YELLOW: 1}, {GREEN: 1, PURPLE: 1}), ({}, {})),
        to_move=0,
    )
    deck = deck_top_first(game)
    play(game, Field(0, BLACK, 2))
    assert game.phase == "pick" and game.destroying == 0 and game.completed_by == 0
    assert deck_top_first(game) == deck  # action B draws nothing, even when completing


def test_r10_five_colors_do_not_complete() -> None:
    game = position(
        hands=({BLACK: 1, RED: 2}, {GREEN: 2}),
        mountains=({RED: 1, ORANGE: 1}, {}),
        fields=(({YELLOW: 1}, {GREEN: 1}), ({}, {})),
    )
    play(game, Mountain(0, BLACK))
    assert (game.phase, game.to_move, game.destroying) == ("turn", 1, None)


def test_r10_only_the_mandala_played_to_is_checked() -> None:
    # Mandala 1 holds all 6 colors (hand-made), but playing to mandala 0 does not check it.
    game = position(
        hands=({RED: 3}, {GREEN: 3}),
        mountains=({}, {RED: 1, ORANGE: 1, YELLOW: 1, GREEN: 1, PURPLE: 1, BLACK: 1}),
    )
    play(game, Mountain(0, RED))
    assert (game.phase, game.to_move, game.destroying) == ("turn", 1, None)
    play(game, Field(0, GREEN, 1))
    assert (game.phase, game.to_move, game.destroying) == ("turn", 0, None)
    play(game, Discard(RED, 1))
    assert (game.phase, game.to_move, game.destroying) == ("turn", 1, None)
    play(game, Mountain(1, GREEN))  # now mandala 1 is played to: checked, destroyed
    assert (game.phase, game.destroying, game.completed_by) == ("pick", 1, 1)


def test_r10_destruction_comes_before_the_next_turn() -> None:
    game = position(
        hands=({BLACK: 1, RED: 2}, {GREEN: 2}),
        mountains=({RED: 1, ORANGE: 1}, {}),
        fields=(({YELLOW: 1}, {GREEN: 1, PURPLE: 1}), ({}, {})),
    )
    play(game, Mountain(0, BLACK))
    assert sorted_moves(move_names(game)) == sorted_moves([Claim(RED), Claim(ORANGE), Claim(BLACK)])
    before = snapshot(game)
    for move in (Mountain(1, GREEN), Field(1, GREEN, 1), Discard(GREEN, 1), Pass()):
        with pytest.raises(IllegalMove) as info:
            game.push(move)
        assert info.value.rule == "R12"
    assert snapshot(game) == before


# --------------------------------------------------------------------------- malformed move objects (R1, R2, R22)


@pytest.mark.parametrize(
    ("move", "rule"),
    [
        (Mountain(2, RED), "R2"),  # type: ignore[arg-type]
        (Field(-1, RED, 1), "R2"),  # type: ignore[arg-type]
        (Mountain(0, "blue"), "R1"),  # type: ignore[arg-type]
        (Discard("blue", 1), "R1"),  # type: ignore[arg-type]
        (Field(0, RED, 9), "R8"),
        (Discard(RED, 9), "R8a"),
        ("mountain", "R22"),
    ],
)
def test_r22_malformed_moves_are_illegal_and_change_nothing(move: object, rule: str) -> None:
    game = Game(_deal_example(), 0)
    assert_illegal(game, move, rule)  # type: ignore[arg-type]
