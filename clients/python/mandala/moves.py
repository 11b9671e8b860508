"""Moves in R22 notation, and their compact integer codes.

A move is one of five small frozen structs whose JSON form is exactly R22::

    {"type": "mountain", "mandala": 0, "color": "red"}            # action A
    {"type": "field", "mandala": 1, "color": "green", "count": 2}   # action B
    {"type": "discard", "color": "black", "count": 3}               # action C
    {"type": "claim", "color": "yellow"}                            # a pick
    {"type": "pass"}                                                # R18

Inside the engine every possible move also has a code, an int below
``MOVE_COUNT``; ``MOVES[code]`` is the one shared instance for that move, so
listing legal moves allocates nothing but the list.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from .cards import COLOR_INDEX, COLORS, Color

MandalaIndex = Literal[0, 1]
Count = Annotated[int, msgspec.Meta(ge=1)]

_STRUCT = dict(frozen=True, tag_field="type", forbid_unknown_fields=True)


class Mountain(msgspec.Struct, tag="mountain", **_STRUCT):
    """Action A (R6): play one card of ``color`` onto the mountain of ``mandala``."""

    mandala: MandalaIndex
    color: Color


class Field(msgspec.Struct, tag="field", **_STRUCT):
    """Action B (R8): play ``count`` cards of ``color`` onto your field of ``mandala``."""

    mandala: MandalaIndex
    color: Color
    count: Count


class Discard(msgspec.Struct, tag="discard", **_STRUCT):
    """Action C (R8a): discard ``count`` cards of ``color`` and draw as many."""

    color: Color
    count: Count


class Claim(msgspec.Struct, tag="claim", **_STRUCT):
    """One pick during a destruction (R12): claim every card of ``color`` in the mountain."""

    color: Color


class Pass(msgspec.Struct, tag="pass", **_STRUCT):
    """Pass a turn with an empty hand (R18)."""


Move = Mountain | Field | Discard | Claim | Pass
"""Any move, as a tagged union on ``type``."""

MAX_FIELD = 7  # R7/R8: a hand holds at most 8 cards and one must stay
MAX_DISCARD = 8  # R7: a hand holds at most 8 cards

# Code layout, in order: mountain (mandala, color); field (mandala, color,
# count); discard (color, count); claim (color); pass.
MOUNTAIN_BASE = 0
FIELD_BASE = MOUNTAIN_BASE + 2 * 6
DISCARD_BASE = FIELD_BASE + 2 * 6 * MAX_FIELD
CLAIM_BASE = DISCARD_BASE + 6 * MAX_DISCARD
PASS_CODE = CLAIM_BASE + 6
MOVE_COUNT = PASS_CODE + 1

# Kinds, as stored in MOVE_PARTS.
MOUNTAIN, FIELD, DISCARD, CLAIM, PASS = range(5)


def mountain_code(mandala: int, color: int) -> int:
    return MOUNTAIN_BASE + mandala * 6 + color


def field_code(mandala: int, color: int, count: int) -> int:
    return FIELD_BASE + (mandala * 6 + color) * MAX_FIELD + count - 1


def discard_code(color: int, count: int) -> int:
    return DISCARD_BASE + color * MAX_DISCARD + count - 1


def claim_code(color: int) -> int:
    return CLAIM_BASE + color


def _build() -> tuple[tuple[Move, ...], tuple[tuple[int, int, int, int], ...]]:
    moves: list[Move] = []
    parts: list[tuple[int, int, int, int]] = []
    for m in range(2):
        for c in range(6):
            moves.append(Mountain(m, COLORS[c]))  # type: ignore[arg-type]
            parts.append((MOUNTAIN, m, c, 1))
    for m in range(2):
        for c in range(6):
            for k in range(1, MAX_FIELD + 1):
                moves.append(Field(m, COLORS[c], k))  # type: ignore[arg-type]
                parts.append((FIELD, m, c, k))
    for c in range(6):
        for k in range(1, MAX_DISCARD + 1):
            moves.append(Discard(COLORS[c], k))  # type: ignore[arg-type]
            parts.append((DISCARD, -1, c, k))
    for c in range(6):
        moves.append(Claim(COLORS[c]))  # type: ignore[arg-type]
        parts.append((CLAIM, -1, c, 0))
    moves.append(Pass())
    parts.append((PASS, -1, -1, 0))
    assert len(moves) == MOVE_COUNT
    return tuple(moves), tuple(parts)


MOVES, MOVE_PARTS = _build()
"""``MOVES[code]`` is the move with that code; ``MOVE_PARTS[code]`` is
``(kind, mandala, color, count)`` with -1 or 0 where a part does not apply."""

# msgspec's stubs type a decoder of a union as Decoder[Any]; the annotation says what it decodes.
_MOVE_DECODER: msgspec.json.Decoder[Move] = msgspec.json.Decoder(Move)


def move_from_json(data: bytes | str) -> Move:
    """Parse one R22 move from JSON; raises ``msgspec.ValidationError`` on bad input."""
    return _MOVE_DECODER.decode(data)


def move_from_dict(obj: object) -> Move:
    """Convert a decoded JSON object to a move; raises ``msgspec.ValidationError``."""
    move: Move = msgspec.convert(obj, Move)  # typed as Any by msgspec for a union
    return move


def move_to_dict(move: Move) -> dict[str, object]:
    """The R22 JSON object of a move."""
    obj: dict[str, object] = msgspec.to_builtins(move)
    return obj


def code_of(move: Move) -> int | None:
    """The code of a well-formed move, or ``None`` if no legal move could ever have it
    (a count above the hand limit, an unknown color, a mandala other than 0 or 1)."""
    t = type(move)
    if t is Pass:
        return PASS_CODE
    c = COLOR_INDEX.get(move.color)  # type: ignore[union-attr]
    if c is None:
        return None
    if t is Claim:
        return CLAIM_BASE + c
    if t is Discard:
        k = move.count  # type: ignore[union-attr]
        return discard_code(c, k) if type(k) is int and 1 <= k <= MAX_DISCARD else None
    m = move.mandala  # type: ignore[union-attr]
    if m not in (0, 1) or type(m) is not int:
        return None
    if t is Mountain:
        return mountain_code(m, c)
    if t is Field:
        k = move.count  # type: ignore[union-attr]
        return field_code(m, c, k) if type(k) is int and 1 <= k <= MAX_FIELD else None
    return None
