"""What each side may see (R24), as msgspec structs.

One function, :func:`view`, decides what reaches whom: ``view(game, seat)``
is that seat's view (the public part plus its own hand and cup) and
``view(game)`` the spectator's (the public part only). The public part also
carries what a careful player would otherwise have to remember: the claimed
cards of each cup, the discard pile by color, and ``unseen``, the cards whose
whereabouts the viewer cannot know (the draw deck, hidden hands, hidden
starting cups).
"""

from __future__ import annotations

from operator import sub
from typing import TYPE_CHECKING, Literal

import msgspec

from .cards import CARDS_PER_COLOR, COLORS, Cards, Color

if TYPE_CHECKING:
    from .game import Game

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


def result(game: Game) -> Result | None:
    """The final result, or ``None`` while the game is running."""
    if game.end_reason is None:
        return None
    return Result(list(game.scores()), list(game.cup_sizes()), game.winner(), game.end_reason)  # type: ignore[arg-type]


def view(game: Game, seat: int | None = None) -> View:
    """What ``seat`` may see now (R24); the spectator's view when ``seat`` is ``None``.

    Views are immutable and kept with the game until its next move, so asking again at the
    same position (a seat's ``update`` and its ``decision``, many spectators) builds nothing;
    a seat's view is the spectator's with that seat's hand, cup and unseen cards added. Views
    are therefore shared, lists included: read them, do not change them.
    """
    if seat not in (None, 0, 1):
        raise ValueError(f"seat is 0, 1 or None, not {seat!r}")
    cache = game._views
    if cache is None:
        cache = game._views = [None, None, None]
    index = 2 if seat is None else seat
    built = cache[index]
    if built is not None:
        return built
    public = cache[2]
    if public is None:
        public = cache[2] = _public_view(game)
    if seat is None:
        return public
    hand, start, u = game.hands[seat], game.starting_cups[seat], public.unseen
    built = cache[seat] = msgspec.structs.replace(
        public,
        seat=seat,
        unseen=Cards(
            u.red - hand[0] - start[0], u.orange - hand[1] - start[1], u.yellow - hand[2] - start[2],
            u.green - hand[3] - start[3], u.purple - hand[4] - start[4], u.black - hand[5] - start[5],
        ),
        private=Private(Cards(*hand), Cards(*game.cups[seat]), game.score(seat)),
    )
    return built


def _public_view(game: Game) -> View:
    """The spectator's view: everything both seats see. Written out pile by pile, without
    loops over seats or mandalas: it is built at every position of every game served."""
    (cup0, cup1), (start0, start1), (river0, river1) = game.cups, game.starting_cups, game.rivers
    claimed0, claimed1 = list(map(sub, cup0, start0)), list(map(sub, cup1, start1))
    (mountain0, mountain1), ((field00, field01), (field10, field11)) = game.mountains, game.fields
    unseen = [
        CARDS_PER_COLOR - (a + b + c + d + e + f + g + h + i)
        for a, b, c, d, e, f, g, h, i in zip(
            mountain0, mountain1, field00, field01, field10, field11, game.discard, claimed0, claimed1, strict=True
        )
    ]
    for c in river0:
        unseen[c] -= 1
    for c in river1:
        unseen[c] -= 1
    sizes = game.hand_sizes
    players = [
        PlayerView(sizes[0], sum(cup0), [COLORS[c] for c in river0], Cards(*claimed0), sum(start0)),  # type: ignore[misc]
        PlayerView(sizes[1], sum(cup1), [COLORS[c] for c in river1], Cards(*claimed1), sum(start1)),  # type: ignore[misc]
    ]
    mandalas = [
        MandalaView(Cards(*mountain0), [Cards(*field00), Cards(*field01)]),
        MandalaView(Cards(*mountain1), [Cards(*field10), Cards(*field11)]),
    ]
    destruction = None
    if game.destroying is not None:
        destruction = Destruction(game.destroying, game.completed_by, game.first_picker)  # type: ignore[arg-type]
    return View(
        None,
        game.phase,  # type: ignore[arg-type]
        game.to_move,  # type: ignore[arg-type]
        game.turns,
        game.first_player,  # type: ignore[arg-type]
        mandalas,
        players,
        Cards(*game.discard),
        len(game.deck),
        len(game.reshuffles),
        game.deck_exhausted,
        game.river_filled,
        destruction,
        Cards(*unseen),
        None,
        result(game),
    )
