"""What a seat may see, as one function (R24): :func:`view` is the only way a game's state
reaches a player or a spectator, so hidden information is decided here and nowhere else
(boardgame.io's ``playerView``). The shapes it fills are in :mod:`mandala.views`."""

from __future__ import annotations

from operator import sub

import msgspec

from .cards import CARDS_PER_COLOR, COLORS, Cards
from .game import Game
from .views import Destruction, MandalaView, PlayerView, Private, Result, View


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
