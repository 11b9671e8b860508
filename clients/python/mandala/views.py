"""What each side may see (R24), as msgspec structs: the shapes only.

:func:`mandala.player_view.view` fills them from a game: ``view(game, seat)`` is that seat's
view (the public part plus its own hand and cup) and ``view(game)`` the spectator's (the
public part only). The public part also carries what a careful player would otherwise have
to remember: the claimed cards of each cup, the discard pile by color, and ``unseen``, the
cards whose whereabouts the viewer cannot know (the draw deck, hidden hands, hidden starting
cups).
"""

from __future__ import annotations

from typing import Literal

import msgspec

from .cards import Cards, Color

Seat = Literal[0, 1]
Phase = Literal["turn", "pick", "over"]
EndReason = Literal["river", "deck", "no_moves", "turn_limit"]


class MandalaView(msgspec.Struct, frozen=True):
    """One mandala (R2): its shared mountain and each seat's field, by seat."""

    mountain: Cards
    fields: list[Cards]


class PlayerView(msgspec.Struct, frozen=True):
    """What everyone knows of one seat."""

    hand_size: int
    cup_size: int
    river: list[Color]
    """Colors in river slot order: slot 1 first (R13b)."""
    cup_claimed: Cards
    """The cup's cards that were claimed in destructions, which everyone saw (R24)."""
    cup_unknown: int
    """Cup cards nobody else has seen: the two starting cards (R3)."""


class Destruction(msgspec.Struct, frozen=True):
    """A destruction in progress (R11–R13): ``to_move`` is the picker."""

    mandala: int
    completed_by: Seat
    first_picker: Seat


class Private(msgspec.Struct, frozen=True):
    """What only one seat may know: its hand and the whole of its cup (R24)."""

    hand: Cards
    cup: Cards
    score: int
    """The score the cup would make if the game ended now (R21)."""


class Result(msgspec.Struct, frozen=True):
    """The end of a game (R17–R21). ``winner`` is ``None`` for a draw."""

    scores: list[int]
    cup_sizes: list[int]
    winner: Seat | None
    end_reason: EndReason


class View(msgspec.Struct, frozen=True):
    """A seat's view (``seat`` set, ``private`` present) or a spectator's (both ``None``)."""

    seat: Seat | None
    phase: Phase
    to_move: Seat | None
    """Whose decision it is: the player on turn, or the picker during a destruction."""
    turns: int
    """Turns played so far (actions A, B, C and passes; picks are not turns: R19)."""
    first_player: Seat
    mandalas: list[MandalaView]
    players: list[PlayerView]
    discard: Cards
    deck_size: int
    reshuffles: int
    """How many times the discard pile became the draw deck (R16)."""
    deck_exhausted: bool
    """The draw deck has run out once: the next destruction to finish ends the game (R17b)."""
    river_filled: bool
    """A 6th river slot was filled: the destruction in progress ends the game (R17a)."""
    destruction: Destruction | None
    unseen: Cards
    """Cards whose whereabouts this viewer cannot know, by color (deck, hidden hands and starting cups)."""
    private: Private | None
    result: Result | None
    """Present once the game is over."""
