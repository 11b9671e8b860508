"""The other seat in the one-agent environments: a shipped bot by name, any bot spec
``mandala match`` takes, a bot object, or a plain callable. It plays from its own seat's view
and the legal moves, exactly as a bot on the arena does."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from mandala import Game, Move, View, view

from ..offline import load_bot

Opponent = str | Callable[[View, list[Move]], Move] | Any
"""``"random"``, ``"greedy"``, ``"search,iterations=200"``, ``"policy:module:attr"``, any
``module:Class`` spec; an object with ``choose(view, legal)``; or ``f(view, legal) -> move``."""


class Seat:
    """An opponent made ready to play: ``move(game)`` is its move at ``game``'s decision."""

    def __init__(self, opponent: Opponent, seed: int | None) -> None:
        self._random: random.Random | None = None
        if opponent == "random":  # RandomBot's very choices, without building the view it ignores
            self._random = random.Random(seed)
            self.name = "random"
            return
        if isinstance(opponent, str):
            if opponent.startswith("cmd:"):
                raise ValueError("cmd: opponents are programs for `mandala-bot match`; give a bot spec, an object or a function")
            opponent = load_bot(opponent, seed=seed)
        choose = getattr(opponent, "choose", None)
        if choose is None and not callable(opponent):
            raise ValueError(f"an opponent is a bot spec, an object with choose(view, legal) or a function, not {opponent!r}")
        self._choose: Callable[[View, list[Move]], Any] = choose if choose is not None else opponent
        self.name = opponent if isinstance(opponent, str) else type(opponent).__name__

    def move(self, game: Game) -> int:
        """The code of the opponent's move at ``game``'s decision (a move it may not make is
        an error in the opponent, named as such)."""
        if self._random is not None:
            codes = game.legal_codes()
            return codes[self._random.randrange(len(codes))]
        seat = game.to_move
        assert seat is not None
        legal = game.legal_moves
        move = self._choose(view(game, seat), legal)
        try:
            return game.check(move)
        except Exception as e:
            raise RuntimeError(f"the opponent ({self.name}) chose {move!r}, which is not legal: {e}") from None
