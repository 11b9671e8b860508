"""The other seat in the one-agent environments: a shipped bot by name, any bot spec
``mandala match`` takes, a bot object, or a plain callable. It plays from its own seat's view
and the legal moves, and hears the game's messages, exactly as in ``mandala match``
(:func:`mandala_client.offline.play_game`): ``decide(decision)`` if it has it, a coroutine
awaited, and ``game_start``, ``update`` after every move of either seat, and ``game_over``
through ``notify`` or the online client's hooks (so a search keeps its tree between its
decisions as it does on the arena)."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from mandala import Game, Move, View
from mandala.moves import MOVES
from protocol.messages import GameResult

from ..external import BotError
from ..offline import Messages, ask, close_bots, load_bot

Opponent = str | Callable[[View, list[Move]], Move] | Any
"""``"random"``, ``"greedy"``, ``"search,iterations=200"``, ``"policy:module:attr"``, any
``module:Class`` spec, ``cmd:COMMAND`` (a program, started for each game); an object with
``choose(view, legal)`` or ``decide(decision)``; or ``f(view, legal) -> move``."""


class _Function:
    """A plain ``f(view, legal) -> move`` as a bot."""

    __slots__ = ("choose",)

    def __init__(self, f: Callable[[View, list[Move]], Move]) -> None:
        self.choose = f


class Seat:
    """An opponent made ready to play one game after another: :meth:`sit` seats it at a game.

    A bot made from a spec is the Seat's own: it is closed when the Seat is (an external
    program stops). A bot object or function given is the caller's, and is left open."""

    def __init__(self, opponent: Opponent, seed: int | None) -> None:
        self._random: random.Random | None = None
        self._owned = False
        self._games = 0
        if opponent == "random":  # RandomBot's very choices, without building the view it ignores
            self._random = random.Random(seed)
            self.name = "random"
            self.bot: Any = None
            return
        name = opponent if isinstance(opponent, str) else None
        if isinstance(opponent, str):
            opponent = load_bot(opponent, seed=seed)
            self._owned = True
        if not (hasattr(opponent, "choose") or hasattr(opponent, "decide")):
            if not callable(opponent):
                raise ValueError("an opponent is a bot spec, an object with choose(view, legal) or "
                                 f"decide(decision), or a function, not {opponent!r}")
            opponent = _Function(opponent)
        self.bot = opponent
        self.name = name or type(opponent).__name__

    def sit(self, game: Game, seat: int) -> Sitting:
        """The opponent at ``game`` in ``seat``, told that the game starts."""
        self._games += 1
        return Sitting(self, game, seat, f"env-{self._games}")

    def close(self) -> None:
        """Let a bot this Seat made release what it holds (an external program)."""
        if self._owned:
            self._owned = False
            close_bots([self.bot])


class Sitting:
    """The opponent at one game: :meth:`advance` plays its decisions, :meth:`moved` tells it of
    the learner's, :meth:`end` of the game's end (once)."""

    __slots__ = ("_seat", "game", "seat", "game_id", "_messages", "_told_end")

    def __init__(self, owner: Seat, game: Game, seat: int, game_id: str) -> None:
        self._seat = owner
        self.game = game
        self.seat = seat
        self.game_id = game_id
        self._messages: Messages | None = None
        self._told_end = False
        if owner.bot is not None:
            messages = Messages([owner.bot if s == seat else None for s in (0, 1)], game, game_id)
            if messages.listening:
                self._messages = messages
                self._call(messages.started, seat)

    def advance(self) -> None:
        """Play the opponent's decisions until the other seat decides or the game ends."""
        game, seat = self.game, self.seat
        while game.to_move == seat:
            code = self._move()
            game.push_code(code)
            if self._messages is not None:
                self._call(self._messages.moved, MOVES[code], seat)
        if game.to_move is None:
            self.end()

    def moved(self, code: int) -> None:
        """The other seat played ``code``, which the game has just applied."""
        if self._messages is not None:
            self._call(self._messages.moved, MOVES[code], 1 - self.seat)

    def end(self, forfeit: int | None = None) -> None:
        """Tell the opponent the game is over: by the rules, or lost by ``forfeit``'s seat
        (an illegal action, as ``mandala match`` scores it: ``resign``)."""
        if self._told_end or self._messages is None:
            return
        self._told_end = True
        game = self.game
        if forfeit is None:
            result = GameResult(game.winner(), game.end_reason or "", list(game.scores()), list(game.cup_sizes()))  # type: ignore[arg-type]
        else:
            result = GameResult(1 - forfeit, "resign", list(game.scores()), list(game.cup_sizes()))  # type: ignore[arg-type]
        self._call(self._messages.over, result)

    def _move(self) -> int:
        """The code of the opponent's move now (a move it may not make, or a failure, is an
        error in the opponent, named as such)."""
        owner, game = self._seat, self.game
        if owner._random is not None:
            codes = game.legal_codes()
            return codes[owner._random.randrange(len(codes))]
        move = self._call(ask, owner.bot, game, self.game_id)
        try:
            return game.check(move)
        except Exception as e:
            raise RuntimeError(f"the opponent ({owner.name}) chose {move!r}, which is not legal: {e}") from None

    def _call(self, f: Callable[..., Any], *args: Any) -> Any:
        """``f(*args)``, an external program's failure named as the opponent's."""
        try:
            return f(*args)
        except BotError as e:
            raise RuntimeError(f"the opponent ({self._seat.name}) failed: {e}") from None
