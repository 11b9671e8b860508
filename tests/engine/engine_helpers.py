"""Shared helpers for the rules tests: hand-made positions, explicit deck orders,
snapshots of the whole state, and a check that an illegal push names its rule
and leaves the game untouched.

Piles are written as ``{"red": 2, "black": 1}`` (colors missing count 0).
Every position accounts for all 108 cards (R1): the cards not placed in a pile
go where ``rest`` says (the bottom of the deck by default).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pytest

import mandala
from mandala import COLORS, Game, IllegalMove, Move, record_dict, view

Pile = Mapping[str, int]
"""A pile by color name; colors left out count 0."""

EMPTY: Pile = {}

RED, ORANGE, YELLOW, GREEN, PURPLE, BLACK = COLORS


def counts(pile: Pile) -> list[int]:
    """Six counts in canonical color order (R1) for a pile written by color name."""
    unknown = set(pile) - set(COLORS)
    assert not unknown, f"unknown colors {unknown}"
    return [pile.get(c, 0) for c in COLORS]


def pile_of(colors: Iterable[str]) -> dict[str, int]:
    """The pile (by color name, zero counts left out) holding these cards."""
    out: dict[str, int] = {}
    for c in colors:
        out[c] = out.get(c, 0) + 1
    return out


def named(counts6: Sequence[int]) -> dict[str, int]:
    """Six counts back to a pile by color name, zero counts left out."""
    return {COLORS[c]: n for c, n in enumerate(counts6) if n}


def expand(pile: Pile) -> list[str]:
    """The cards of a pile, in canonical color order."""
    return [c for c in COLORS for _ in range(pile.get(c, 0))]


def position(
    *,
    hands: tuple[Pile, Pile] = (EMPTY, EMPTY),
    mountains: tuple[Pile, Pile] = (EMPTY, EMPTY),
    fields: tuple[tuple[Pile, Pile], tuple[Pile, Pile]] = ((EMPTY, EMPTY), (EMPTY, EMPTY)),
    starting_cups: tuple[Pile, Pile] = (EMPTY, EMPTY),
    cups: tuple[Pile, Pile] | None = None,
    rivers: tuple[Sequence[str], Sequence[str]] = ((), ()),
    discard: Pile = EMPTY,
    deck_top: Sequence[str] = (),
    rest: str = "deck",
    to_move: int = 0,
    turns: int = 0,
    deck_exhausted: bool = False,
    reshuffles: Sequence[Sequence[str]] | None = None,
    seed: int | None = None,
    lenient: bool = False,
) -> Game:
    """A hand-made position (``Game.from_position``) from the piles a test cares about.

    ``fields[m][p]`` is seat ``p``'s field of mandala ``m``. ``cups`` are whole cups
    (default: the starting cups). ``deck_top`` lists the top of the draw deck, top
    first. Every other card goes to ``rest``: ``"deck"`` (below ``deck_top``, in
    canonical color order), ``"discard"``, ``"cup0"`` or ``"cup1"`` (added to that
    whole cup, as claimed cards).
    """
    whole_cups = [counts(c) for c in (cups if cups is not None else starting_cups)]
    placed = [0] * 6
    piles: list[list[int]] = [
        counts(hands[0]), counts(hands[1]), *whole_cups,
        counts(mountains[0]), counts(mountains[1]),
        counts(fields[0][0]), counts(fields[0][1]), counts(fields[1][0]), counts(fields[1][1]),
        counts(discard), counts(pile_of(deck_top)),
    ]
    for pile in piles:
        for c in range(6):
            placed[c] += pile[c]
    for river in rivers:
        for name in river:
            placed[COLORS.index(name)] += 1
    left = [18 - n for n in placed]
    assert all(n >= 0 for n in left), f"more than 18 cards of a color placed: {placed}"
    deck = list(deck_top)
    disc = counts(discard)
    if rest == "deck":
        deck += expand(named(left))
    elif rest == "discard":
        disc = [a + b for a, b in zip(disc, left, strict=True)]
    elif rest in ("cup0", "cup1"):
        p = int(rest[-1])
        whole_cups[p] = [a + b for a, b in zip(whole_cups[p], left, strict=True)]
    else:
        raise ValueError(f"rest is deck, discard, cup0 or cup1, not {rest!r}")
    return Game.from_position(
        hands=[counts(h) for h in hands],
        deck=deck,
        starting_cups=[counts(c) for c in starting_cups],
        cups=whole_cups,
        rivers=[list(r) for r in rivers],
        mountains=[counts(m) for m in mountains],
        fields=[[counts(fields[m][0]), counts(fields[m][1])] for m in (0, 1)],
        discard=disc,
        to_move=to_move,
        first_player=to_move,
        turns=turns,
        deck_exhausted=deck_exhausted,
        reshuffles=[list(r) for r in reshuffles] if reshuffles is not None else None,
        seed=seed,
        lenient=lenient,
    )


def deck_order(
    *,
    mountains: tuple[Sequence[str], Sequence[str]],
    hands: tuple[Sequence[str], Sequence[str]],
    cups: tuple[Sequence[str], Sequence[str]],
    deck_top: Sequence[str] = (),
    rest: Sequence[str] | None = None,
) -> list[str]:
    """An explicit 108-card deck order (R3): the deal cards in deal order, then
    ``deck_top``, then ``rest`` (default: every remaining card in canonical color order)."""
    assert len(mountains[0]) == len(mountains[1]) == 2
    assert len(hands[0]) == len(hands[1]) == 6
    assert len(cups[0]) == len(cups[1]) == 2
    head = [*mountains[0], *mountains[1], *hands[0], *hands[1], *cups[0], *cups[1], *deck_top]
    left = {c: 18 - n for c, n in pile_of(head).items()}
    remaining = [c for c in COLORS for _ in range(left.get(c, 18))]
    if rest is None:
        tail = remaining
    else:
        assert sorted(rest) == sorted(remaining), "rest must be exactly the remaining cards"
        tail = list(rest)
    deck = head + tail
    assert len(deck) == 108
    return deck


def move_names(game: Game) -> list[dict[str, Any]]:
    """The legal moves as R22 JSON objects, in the engine's order."""
    return [mandala.move_to_dict(m) for m in game.legal_moves]


def sorted_moves(moves: Iterable[Move | dict[str, Any]]) -> list[dict[str, Any]]:
    """Moves as R22 objects, sorted so two lists compare as sets-with-multiplicity."""
    import json

    dicts = [m if isinstance(m, dict) else mandala.move_to_dict(m) for m in moves]
    return sorted(dicts, key=lambda d: json.dumps(d, sort_keys=True))


def internal_state(game: Game) -> dict[str, Any]:
    """A deep copy of every attribute of the game (the generator's state included)."""
    state: dict[str, Any] = {}
    for name in Game.__slots__:
        value = getattr(game, name, None)
        if name == "_rng":
            state[name] = None if value is None else value.getstate()
        elif name in ("_legal", "_views"):
            continue  # caches: filled in lazily, not part of the state
        elif name == "_rng_owned":
            continue  # whether the generator is shared with a copy: the reshuffles to come are the same
        else:
            state[name] = copy.deepcopy(value)
    return state


def snapshot(game: Game) -> dict[str, Any]:
    """Everything an observer could compare: the three views, the record (if the game
    was dealt from a deck), the legal moves and the whole internal state."""
    snap: dict[str, Any] = {
        "view0": view(game, 0),
        "view1": view(game, 1),
        "spectator": view(game),
        "legal": list(game.legal_codes()),
        "state": internal_state(game),
    }
    if game.deck_order:
        snap["record"] = record_dict(game)
    return snap


def assert_illegal(game: Game, move: Move, rule: str) -> IllegalMove:
    """Pushing ``move`` raises IllegalMove naming ``rule`` and changes nothing."""
    before = snapshot(game)
    assert not game.is_legal(move)
    with pytest.raises(IllegalMove) as info:
        game.push(move)
    assert info.value.rule == rule, f"expected {rule}, got {info.value.rule}: {info.value}"
    assert snapshot(game) == before
    return info.value


def hand(game: Game, p: int) -> dict[str, int]:
    return named(game.hands[p])


def mountain(game: Game, m: int) -> dict[str, int]:
    return named(game.mountains[m])


def field(game: Game, m: int, p: int) -> dict[str, int]:
    return named(game.fields[m][p])


def cup(game: Game, p: int) -> dict[str, int]:
    return named(game.cups[p])


def discard_pile(game: Game) -> dict[str, int]:
    return named(game.discard)


def deck_top_first(game: Game) -> list[str]:
    """The draw deck, top first, as color names."""
    return [COLORS[c] for c in reversed(game.deck)]


def river(game: Game, p: int) -> list[str]:
    return [COLORS[c] for c in game.rivers[p]]


def total_cards(game: Game) -> list[int]:
    """Cards of each color in every pile together (R1: 18 each, always)."""
    out = [0] * 6
    piles = [*game.hands, *game.cups, *game.mountains, *game.fields[0], *game.fields[1], game.discard]
    for pile in piles:
        for c in range(6):
            out[c] += pile[c]
    for r in game.rivers:
        for c in r:
            out[c] += 1
    for c in game.deck:
        out[c] += 1
    return out


def play(game: Game, *moves: Move) -> None:
    """Push each move, asserting it was in the legal list first."""
    for move in moves:
        assert move in game.legal_moves, f"{move} not legal: {game.legal_moves}"
        game.push(move)
