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


def _cards(counts: list[int]) -> Cards:
    return Cards(*counts)


def result(game: Game) -> Result | None:
    """The final result, or ``None`` while the game is running."""
    if game.end_reason is None:
        return None
    return Result(list(game.scores()), list(game.cup_sizes()), game.winner(), game.end_reason)  # type: ignore[arg-type]


def view(game: Game, seat: int | None = None) -> View:
    """What ``seat`` may see now (R24); the spectator's view when ``seat`` is ``None``."""
    if seat not in (None, 0, 1):
        raise ValueError(f"seat is 0, 1 or None, not {seat!r}")
    claimed = [[game.cups[p][c] - game.starting_cups[p][c] for c in range(6)] for p in (0, 1)]
    seen = [0] * 6
    piles = [*game.mountains, *game.fields[0], *game.fields[1], game.discard, *claimed]
    if seat is not None:
        piles += [game.hands[seat], game.starting_cups[seat]]
    for pile in piles:
        for c in range(6):
            seen[c] += pile[c]
    for p in (0, 1):
        for c in game.rivers[p]:
            seen[c] += 1
    players = [
        PlayerView(
            hand_size=game.hand_sizes[p],
            cup_size=sum(game.cups[p]),
            river=[COLORS[c] for c in game.rivers[p]],  # type: ignore[misc]
            cup_claimed=_cards(claimed[p]),
            cup_unknown=sum(game.starting_cups[p]),
        )
        for p in (0, 1)
    ]
    private = None
    if seat is not None:
        private = Private(hand=_cards(game.hands[seat]), cup=_cards(game.cups[seat]), score=game.score(seat))
    destruction = None
    if game.destroying is not None:
        destruction = Destruction(game.destroying, game.completed_by, game.first_picker)  # type: ignore[arg-type]
    return View(
        seat=seat,  # type: ignore[arg-type]
        phase=game.phase,  # type: ignore[arg-type]
        to_move=game.to_move,  # type: ignore[arg-type]
        turns=game.turns,
        first_player=game.first_player,  # type: ignore[arg-type]
        mandalas=[
            MandalaView(_cards(game.mountains[m]), [_cards(game.fields[m][0]), _cards(game.fields[m][1])])
            for m in (0, 1)
        ],
        players=players,
        discard=_cards(game.discard),
        deck_size=len(game.deck),
        reshuffles=len(game.reshuffles),
        deck_exhausted=game.deck_exhausted,
        river_filled=game.river_filled,
        destruction=destruction,
        unseen=_cards([CARDS_PER_COLOR - n for n in seen]),
        private=private,
        result=result(game),
    )
