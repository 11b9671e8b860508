"""Turning a requested deal (explicit deck, reshuffles, seed, first player) into an engine game.

Checked up front so a bad deck is refused before any game starts, naming the rule it breaks.
"""

from __future__ import annotations

import secrets
from typing import Annotated, Literal

import msgspec

from mandala import COLOR_INDEX, Game, SetupError


class Deal(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """How a game is dealt. No ``deck``: a random deal. ``reshuffles`` fix the order of the
    first new draw decks (R16); later ones come from ``reshuffle_seed`` (random if absent)."""

    deck: list[str] | None = None
    first_player: Literal[0, 1] = 0
    reshuffle_seed: int | None = None
    reshuffles: Annotated[list[list[str]], msgspec.Meta(max_length=100)] | None = None


def build_game(deal: Deal) -> Game:
    """The engine game for ``deal``; raises :class:`SetupError` (with ``rule``) if it is invalid."""
    seed = deal.reshuffle_seed if deal.reshuffle_seed is not None else secrets.randbits(64)
    if deal.deck is None:
        if deal.reshuffles:
            raise SetupError("R3", "reshuffles need an explicit deck")
        return Game.new(seed=seed, first_player=deal.first_player)
    for i, order in enumerate(deal.reshuffles or ()):
        if len(order) > 108:
            raise SetupError("R16", f"reshuffle {i} has {len(order)} cards: a discard pile never holds more than 108")
        for color in order:
            if color not in COLOR_INDEX:
                raise SetupError("R1", f"reshuffle {i}: unknown color {color!r}")
    # A seed always goes along: the engine then continues randomly once the given orders are
    # used up instead of failing mid-move (it only fails for lack of orders when replaying).
    return Game(deal.deck, deal.first_player, seed=seed, reshuffles=deal.reshuffles)
