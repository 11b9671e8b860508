"""Property tests over random games (hypothesis): conservation of the 108 cards
(R1), the hand limit (R7), the rule of color (R9), distinct river colors (R13b),
legal-move lists against an independent reading of R6–R9/R12/R18/R22, the
``push``/``legal_codes`` agreement with untouched state on every illegal code,
replay of records (R23), and the public part of the views (R24).
"""

from __future__ import annotations

import json
import random

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine_helpers import internal_state, total_cards
from mandala import MOVES, Cards, Game, IllegalMove, encode_record, record_dict, replay, view
from mandala.moves import MOVE_COUNT, PASS_CODE, claim_code, discard_code, field_code, mountain_code
from rules_random import game_plans, play_plan

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def expected_codes(game: Game) -> list[int]:
    """The legal moves, read from the rules text against the piles alone."""
    if game.is_over:
        return []
    if game.phase == "pick":
        m = game.destroying
        assert m is not None
        return sorted(claim_code(c) for c in range(6) if game.mountains[m][c])  # R12
    p = game.current
    hand = game.hands[p]
    size = sum(hand)
    if size == 0:
        return [PASS_CODE]  # R18
    codes = []
    for m in (0, 1):
        mountain = game.mountains[m]
        mine, theirs = game.fields[m][p], game.fields[m][1 - p]
        for c in range(6):
            if not hand[c]:
                continue
            if not mine[c] and not theirs[c]:  # R6 + R9
                codes.append(mountain_code(m, c))
            if not mountain[c] and not theirs[c]:  # R8 + R9: at least one card stays
                codes += [field_code(m, c, k) for k in range(1, min(hand[c], size - 1) + 1)]
    for c in range(6):
        codes += [discard_code(c, k) for k in range(1, hand[c] + 1)]  # R8a
    return sorted(codes)


def check_invariants(game: Game) -> None:
    assert total_cards(game) == [18] * 6  # R1
    assert all(n >= 0 for pile in (*game.hands, *game.cups, game.discard) for n in pile)
    assert game.hand_sizes == [sum(h) for h in game.hands]
    assert max(game.hand_sizes) <= 8  # R7
    for m in (0, 1):  # R9
        areas = (game.mountains[m], game.fields[m][0], game.fields[m][1])
        for c in range(6):
            assert sum(1 for area in areas if area[c]) <= 1, (m, c, areas)
        assert game.mountain_sizes[m] == sum(game.mountains[m])
        assert game.field_sizes[m] == [sum(game.fields[m][0]), sum(game.fields[m][1])]
    for r in game.rivers:  # R13b: one card per color, at most 6 slots
        assert len(set(r)) == len(r) <= 6
    assert game.turns <= 1000  # R19
    assert game.river_filled == any(len(r) == 6 for r in game.rivers)
    codes = list(game.legal_codes())
    assert len(set(codes)) == len(codes)  # listed once each (R22)
    assert sorted(codes) == expected_codes(game)
    if game.is_over:
        assert game.to_move is None and game.end_reason in ("river", "deck", "no_moves", "turn_limit")
        assert game.hand_sizes == [0, 0] and game.mountain_sizes == [0, 0]  # R20
    else:
        assert game.to_move in (0, 1) and game.end_reason is None
        assert game.winner() is None


def public(v: msgspec.Struct) -> msgspec.Struct:
    return msgspec.structs.replace(v, seat=None, private=None, unseen=Cards())


def check_views(game: Game) -> None:
    spectator = view(game)
    assert spectator.seat is None and spectator.private is None
    for seat in (0, 1):
        v = view(game, seat)
        assert public(v) == public(spectator)  # R24: same public part
        assert v.seat == seat
        assert v.private is not None
        assert v.private.hand == Cards(*game.hands[seat]) and v.private.cup == Cards(*game.cups[seat])
        assert v.private.score == game.score(seat)
        # what the seat cannot place: everything but the public piles, its hand and cup
        assert sum(msgspec.structs.astuple(v.unseen)) == (
            len(game.deck) + game.hand_sizes[1 - seat] + sum(game.starting_cups[1 - seat])
        )
    assert sum(msgspec.structs.astuple(spectator.unseen)) == (
        len(game.deck) + sum(game.hand_sizes) + sum(map(sum, game.starting_cups))
    )


@SETTINGS
@given(game_plans())
def test_r1_r7_r9_invariants_after_every_move(plan: tuple[int, int, list[int]]) -> None:
    seed, first, choices = plan
    game = Game.new(seed=seed, first_player=first)
    check_invariants(game)
    game = play_plan(seed, first, choices, after=lambda g, code: (check_invariants(g), check_views(g)))
    assert game.is_over


@settings(SETTINGS, max_examples=10)
@given(game_plans())
def test_r22_push_and_check_succeed_exactly_for_the_legal_codes(plan: tuple[int, int, list[int]]) -> None:
    seed, first, choices = plan

    def probe(game: Game, _code: int) -> None:
        legal = set(game.legal_codes())
        before = internal_state(game)
        views = (view(game, 0), view(game, 1), view(game))
        record = record_dict(game)
        for code in range(MOVE_COUNT):
            move = MOVES[code]
            assert game.is_legal(move) == (code in legal)
            if code in legal:
                assert game.check(move) == code
                trial = game.copy()
                trial.push(move)
                assert trial.history[-1][1] == code
            else:
                with pytest.raises(IllegalMove) as info:
                    game.push(move)
                assert info.value.rule.startswith("R")
                with pytest.raises(IllegalMove) as checked:
                    game.check(move)
                assert (checked.value.rule, checked.value.message) == (info.value.rule, info.value.message)
        assert internal_state(game) == before
        assert (view(game, 0), view(game, 1), view(game)) == views
        assert record_dict(game) == record
        assert set(game.legal_codes()) == legal

    game = play_plan(seed, first, choices, before=probe)
    for code in range(MOVE_COUNT):  # once over, nothing is legal
        with pytest.raises(IllegalMove):
            game.push(MOVES[code])


@SETTINGS
@given(game_plans(), st.integers(0, 400), st.booleans())
def test_r23_replaying_the_record_reproduces_the_game(
    plan: tuple[int, int, list[int]], stop: int, as_json: bool
) -> None:
    seed, first, choices = plan
    for max_plies in (stop, None):  # a prefix, then the whole game
        game = play_plan(seed, first, choices, max_plies=max_plies)
        data = encode_record(game) if as_json else record_dict(game)
        again = replay(data)
        for seat in (0, 1, None):
            assert view(again, seat) == view(game, seat)
        assert again.history == game.history
        assert again.reshuffles == game.reshuffles
        assert (again.scores(), again.cup_sizes(), again.winner(), again.end_reason) == (
            game.scores(), game.cup_sizes(), game.winner(), game.end_reason,
        )
        assert internal_state(again) | {"_rng": None, "_given": None} == internal_state(game) | {
            "_rng": None, "_given": None,
        }
        assert json.loads(encode_record(again)) == record_dict(game)


@SETTINGS
@given(game_plans(), st.integers(0, 200))
def test_r23_copy_continues_like_the_original(plan: tuple[int, int, list[int]], stop: int) -> None:
    seed, first, choices = plan
    game = play_plan(seed, first, choices, max_plies=stop)
    twin = game.copy()
    rest = play_plan(seed, first, choices)  # the full game, same choices
    for p, code in rest.history[len(game.history):]:
        assert twin.to_move == p
        twin.push(MOVES[code])
    for seat in (0, 1, None):
        assert view(twin, seat) == view(rest, seat)
    assert twin.history == rest.history and twin.reshuffles == rest.reshuffles


@SETTINGS
@given(game_plans(), st.integers(0, 200), st.booleans())
def test_r16_r23_a_copy_and_its_original_deal_the_same_reshuffles_whichever_plays_on_first(
        plan: tuple[int, int, list[int]], stop: int, original_first: bool) -> None:
    # A copy shares its original's generator of new decks until one of them draws from it:
    # whichever plays on first, and a copy of the copy, must each deal what the game dealt.
    seed, first, choices = plan
    game = play_plan(seed, first, choices, max_plies=stop)
    twin = game.copy()
    grandchild = twin.copy()
    rest = play_plan(seed, first, choices)
    for g in (game, twin, grandchild) if original_first else (grandchild, twin, game):
        for _, code in rest.history[len(g.history):]:
            g.push(MOVES[code])
        assert g.history == rest.history and g.reshuffles == rest.reshuffles


def test_r16_copies_deal_the_reshuffles_the_original_dealt_whichever_draws_first() -> None:
    played = Game.new(seed=7)
    rng = random.Random(7)
    while played.to_move is not None:
        codes = played.legal_codes()
        played.push_code(codes[rng.randrange(len(codes))])
    assert len(played.reshuffles) >= 1  # the deck ran out at least once: a generator dealt it
    moves = [code for _, code in played.history]
    half = len(moves) // 2
    game = Game.new(seed=7)
    twin = game.copy()
    for code in moves:  # the copy plays to the end first
        twin.push_code(code)
    for code in moves[:half]:
        game.push_code(code)
    late = game.copy()  # a copy made halfway, of a game whose generator is still shared
    for g in (game, late):
        for code in moves[half:]:
            g.push_code(code)
    assert twin.reshuffles == game.reshuffles == late.reshuffles == played.reshuffles


def test_r7_r8a_build_move_tables_covers_every_hand_once() -> None:
    # A server builds every table at start: one per hand of 1–8 cards (R7), each listing the
    # discards that hand allows (R8a: 1 to all of a held color); a second build adds nothing.
    from mandala.game import _HAND_MOVES, build_move_tables

    build_move_tables()
    assert build_move_tables() == 0
    hands = {key for key in _HAND_MOVES}
    assert len(hands) == 3002 and all(1 <= sum(h) <= 8 and len(h) == 6 for h in hands)
    for hand in hands:
        listed = [MOVES[code] for code in _HAND_MOVES[hand].discard]
        expected = [(color, n) for color, held in zip(Cards.__struct_fields__, hand, strict=True)
                    for n in range(1, held + 1)]
        assert sorted((m.color, m.count) for m in listed) == sorted(expected)  # type: ignore[union-attr]
