"""Random games for the property tests: a seeded deal plus a sequence of choices
among the legal moves (drawn by hypothesis), falling back to a seeded generator
when the drawn choices run out."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from hypothesis import strategies as st

from mandala import Game


@st.composite
def game_plans(draw: st.DrawFn, max_choices: int = 120) -> tuple[int, int, list[int]]:
    """``(seed, first_player, choices)`` for :func:`play_plan`."""
    seed = draw(st.integers(0, 2**32 - 1))
    first = draw(st.integers(0, 1))
    choices = draw(st.lists(st.integers(0, 2**16), max_size=max_choices))
    return seed, first, choices


def play_plan(
    seed: int,
    first: int,
    choices: Sequence[int],
    *,
    max_plies: int | None = None,
    before: Callable[[Game, int], None] | None = None,
    after: Callable[[Game, int], None] | None = None,
) -> Game:
    """Play ``Game.new(seed, first)``: ply ``i`` takes legal move ``choices[i] % n``
    (or a seeded random one once the choices run out), calling ``before(game, code)``
    and ``after(game, code)`` around each push."""
    game = Game.new(seed=seed, first_player=first)
    rng = random.Random(seed)
    ply = 0
    while not game.is_over and (max_plies is None or ply < max_plies):
        codes = game.legal_codes()
        assert codes, "a running game always has a legal move"
        pick = choices[ply] if ply < len(choices) else rng.randrange(1 << 16)
        code = codes[pick % len(codes)]
        if before is not None:
            before(game, code)
        game.push_code(code)
        if after is not None:
            after(game, code)
        ply += 1
    return game
