"""R24, the view-leak property: a view depends only on what its viewer may know.

Construction. A random game prefix is replayed while following card
*positions*: ``("d", i)`` is index ``i`` of the initial deck order (R3) and
``("r", k, i)`` index ``i`` of the ``k``-th reshuffle order (R16). Since every
card taken from the draw deck is the next position of the stream
``deck[20:] + reshuffles[0] + reshuffles[1] + ...``, the number of positions
taken so far is ``len(stream) - len(game.deck)``; the positions a push takes go
to the mover's hand (action A or C) or face up to a mountain (the refill after
the last claim of a destruction). A position becomes *seen* by the viewer when
it is dealt face up (the initial mountains, refills), dealt or drawn into the
viewer's own hand or cup, or played/discarded by a player (then it is public);
when the other player plays ``k`` cards of a color, the ``k`` earliest-drawn
positions of that color it holds are the ones marked seen (cards of a color
are interchangeable, so any choice is a valid account of the game).

Every position never seen — the other player's starting cup, the cards still
hidden in its hand, the undrawn deck and the undrawn parts of reshuffle
orders — then gets its color permuted, within its own order (so the initial
deck keeps 18 cards per color and each reshuffle stays an order of the same
discard pile). The permuted game is played with the same moves (checked:
each is still legal, since every card played is a seen position) and the
viewer's view must be identical at every ply while the game runs (once it is
over, R24 lets the whole record be published and the leftovers are
discarded face up). For the spectator no hand or cup is seen, so both hands,
both starting cups and the deck vary.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mandala import MOVES, Game, View, view
from mandala.moves import CLAIM, DISCARD, FIELD, MOUNTAIN, MOVE_PARTS
from rules_random import game_plans, play_plan

Pos = tuple[str, int] | tuple[str, int, int]


def color_at(pos: Pos, deck: list[int], reshuffles: list[list[int]]) -> int:
    if pos[0] == "d":
        return deck[pos[1]]
    return reshuffles[pos[1]][pos[2]]  # type: ignore[misc]


def seen_positions(
    deck: list[int], reshuffles: list[list[int]], first: int, codes: list[int], viewer: int | None
) -> set[Pos]:
    """Replay ``codes`` and return the positions the viewer saw (see the module docstring)."""
    game = Game(deck, first, reshuffles=reshuffles)
    held: list[list[Pos]] = [[("d", i) for i in range(4, 10)], [("d", i) for i in range(10, 16)]]
    cups: list[list[Pos]] = [[("d", 16), ("d", 17)], [("d", 18), ("d", 19)]]
    seen: set[Pos] = {("d", i) for i in range(4)}
    if viewer is not None:
        seen |= set(held[viewer]) | set(cups[viewer])
    stream: list[Pos] = [("d", i) for i in range(20, 108)]
    taken = 0
    for code in codes:
        kind, _m, c, k = MOVE_PARTS[code]
        mover = game.to_move
        assert mover is not None
        if kind in (MOUNTAIN, FIELD, DISCARD):
            played = [pos for pos in held[mover] if color_at(pos, deck, reshuffles) == c][:k]
            assert len(played) == k, "the tracker lost a card"
            for pos in played:
                held[mover].remove(pos)
                seen.add(pos)
        shuffles_before = len(game.reshuffles)
        game.push(MOVES[code])
        for index in range(shuffles_before, len(game.reshuffles)):
            stream += [("r", index, i) for i in range(len(game.reshuffles[index]))]
        now = len(stream) - len(game.deck)
        fresh = stream[taken:now]
        if fresh:
            if kind in (MOUNTAIN, DISCARD):
                held[mover] += fresh
                if mover == viewer:
                    seen |= set(fresh)
            elif kind == CLAIM:
                seen |= set(fresh)  # the refill: face up on the mountain
            else:
                raise AssertionError(f"no draw expected after move kind {kind}")
        taken = now
    for p in (0, 1):  # the tracker agrees with the engine's hands
        hand = [0] * 6
        for pos in held[p]:
            hand[color_at(pos, deck, reshuffles)] += 1
        assert hand == game.hands[p] or game.is_over
    return seen


def permute_unseen(
    deck: list[int], reshuffles: list[list[int]], seen: set[Pos], rng: random.Random
) -> tuple[list[int], list[list[int]]]:
    """Permute the colors of the unseen positions, within each order; change something
    whenever an order's unseen positions hold two colors or more."""
    new_deck = list(deck)
    new_shuffles = [list(r) for r in reshuffles]
    groups: list[tuple[list[int], list[int]]] = [
        (new_deck, [i for i in range(108) if ("d", i) not in seen]),
        *((order, [i for i in range(len(order)) if ("r", k, i) not in seen]) for k, order in enumerate(new_shuffles)),
    ]
    for order, indices in groups:
        colors = [order[i] for i in indices]
        permuted = colors[:]
        rng.shuffle(permuted)
        if permuted == colors and len(set(colors)) > 1:
            j = next(j for j in range(1, len(colors)) if colors[j] != colors[0])
            permuted[0], permuted[j] = permuted[j], permuted[0]
        for i, c in zip(indices, permuted, strict=True):
            order[i] = c
    return new_deck, new_shuffles


def views_along(deck: list[int], reshuffles: list[list[int]], first: int, codes: list[int],
                viewer: int | None) -> list[View]:
    """The viewer's view before each move and after the last, while the game runs."""
    game = Game(deck, first, reshuffles=reshuffles)
    out = [view(game, viewer)]
    for code in codes:
        game.push(MOVES[code])  # checked: raises if the permuted game forbids the move
        if game.is_over:
            break
        out.append(view(game, viewer))
    return out


def leak_check(seed: int, first: int, choices: list[int], stop: int, viewer: int | None,
               perm_seed: int) -> tuple[Game, Game]:
    original = play_plan(seed, first, choices, max_plies=stop)
    codes = [code for _, code in original.history]
    deck, shuffles = original.deck_order, original.reshuffles
    seen = seen_positions(deck, shuffles, first, codes, viewer)
    deck2, shuffles2 = permute_unseen(deck, shuffles, seen, random.Random(perm_seed))
    assert views_along(deck2, shuffles2, first, codes, viewer) == views_along(deck, shuffles, first, codes, viewer)
    twin = Game(deck2, first, reshuffles=shuffles2)
    for code in codes:
        twin.push(MOVES[code])
    return original, twin


LEAK_SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@LEAK_SETTINGS
@given(game_plans(), st.integers(0, 200), st.integers(0, 1), st.integers(0, 2**32))
def test_r24_seat_view_does_not_depend_on_hidden_cards(
    plan: tuple[int, int, list[int]], stop: int, viewer: int, perm_seed: int
) -> None:
    seed, first, choices = plan
    leak_check(seed, first, choices, stop, viewer, perm_seed)


@LEAK_SETTINGS
@given(game_plans(), st.integers(0, 200), st.integers(0, 2**32))
def test_r24_spectator_view_does_not_depend_on_hidden_cards(
    plan: tuple[int, int, list[int]], stop: int, perm_seed: int
) -> None:
    seed, first, choices = plan
    leak_check(seed, first, choices, stop, None, perm_seed)


@pytest.mark.parametrize("viewer", [0, 1])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_r24_the_permutation_really_varies_the_hidden_cards(seed: int, viewer: int) -> None:
    """The construction is not vacuous: the other seat's starting cup or hand and the
    deck order differ between the two games, yet the viewer's views are equal."""
    original, twin = leak_check(seed, seed % 2, [], 25, viewer, perm_seed=seed)
    other = 1 - viewer
    assert twin.deck_order != original.deck_order
    assert twin.hands[viewer] == original.hands[viewer]
    assert twin.starting_cups[viewer] == original.starting_cups[viewer]
    assert (twin.starting_cups[other], twin.hands[other], twin.deck) != (
        original.starting_cups[other], original.hands[other], original.deck,
    )


def test_r24_spectator_permutation_varies_both_hands() -> None:
    varied = [0, 0]
    for seed in range(1, 6):
        original, twin = leak_check(seed, 0, [], 15, None, perm_seed=seed)
        for p in (0, 1):
            varied[p] += (twin.hands[p], twin.starting_cups[p]) != (original.hands[p], original.starting_cups[p])
    assert varied[0] > 0 and varied[1] > 0


def test_r24_the_check_detects_a_seen_card() -> None:
    """Negative control: changing a card the viewer holds does change its view."""
    original = play_plan(4, 0, [], max_plies=10)
    codes = [code for _, code in original.history]
    deck = list(original.deck_order)
    # swap seat 1's starting cup card with an undrawn deck card of another color
    j = next(j for j in range(107, 20, -1) if deck[j] != deck[18])
    deck[18], deck[j] = deck[j], deck[18]
    assert views_along(deck, original.reshuffles, 0, codes, 0) == views_along(
        original.deck_order, original.reshuffles, 0, codes, 0
    )
    assert views_along(deck, original.reshuffles, 0, codes, 1) != views_along(
        original.deck_order, original.reshuffles, 0, codes, 1
    )
