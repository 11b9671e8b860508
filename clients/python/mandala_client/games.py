"""What a connected bot knows about each of its games, and how one decision is answered in time.

The server's clock runs from the moment it sends a ``decision`` (PROTOCOL.md §11), and a bot
that misses the deadline loses the game. So the bot's ``choose`` gets the decision's time
minus a safety margin; when it overruns, raises, or returns something that is not one of the
legal moves, a fallback legal move is sent instead and a warning is logged: a weak move is
better than a lost game.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import random
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from mandala import Move
from protocol.messages import Decision, GameResult, GameStart

log = logging.getLogger("mandala_client")

Fallback = Literal["first", "random"]
Outcome = Literal["won", "lost", "draw", "aborted", "unknown"]

MIN_MARGIN_MS = 50.0
MAX_MARGIN_MS = 500.0
MARGIN_SHARE = 0.2
"""The default safety margin is this share of the decision's time, within the bounds above:
it covers the network both ways and the hop to and from the worker thread."""


def default_margin_ms(deadline_ms: float) -> float:
    """The part of a decision's time kept back for the network (see ``MARGIN_SHARE``)."""
    return min(MAX_MARGIN_MS, max(MIN_MARGIN_MS, MARGIN_SHARE * deadline_ms))


@dataclass
class GameState:
    """A running game as this connection sees it.

    ``request_id`` is the decision being answered, ``task`` the ``choose`` working on it and
    ``answer`` the move sent for it: when the server re-sends that decision after a reconnect
    (the move was lost with the connection), the same answer goes out again at once.
    """

    game_id: str
    seat: int
    opponent: str
    kind: str
    rated: bool
    moves: int = 0
    """Decisions answered (with the bot's move or a fallback)."""
    fallbacks: int = 0
    """Decisions answered with a fallback move."""
    request_id: int | None = None
    task: asyncio.Task[None] | None = None
    answer: Move | None = None
    pair_id: str | None = None
    """The duplicate pair (ladder) the game belongs to."""

    @classmethod
    def of(cls, start: GameStart) -> GameState:
        opponent = next((p.name for p in start.players if p.seat != start.seat), "?")
        return cls(start.game_id, start.seat, opponent, start.kind, start.rated, pair_id=start.pair_id)

    def cancel(self) -> None:
        """Stop the ``choose`` in flight, if any (its thread, if it has one, runs on unheard)."""
        if self.task is not None and not self.task.done():
            self.task.cancel()
        self.task = None


@dataclass(frozen=True)
class FinishedGame:
    """One game this client played to its end. ``result`` is ``None`` for a game that ended
    while the bot was disconnected: the server sends no ``game_over`` for it (PROTOCOL.md §13)."""

    game_id: str
    seat: int
    opponent: str
    kind: str
    rated: bool
    result: GameResult | None
    moves: int
    fallbacks: int

    @classmethod
    def of(cls, game: GameState, result: GameResult | None) -> FinishedGame:
        return cls(game.game_id, game.seat, game.opponent, game.kind, game.rated, result, game.moves, game.fallbacks)

    @property
    def outcome(self) -> Outcome:
        """The game from this bot's side."""
        r = self.result
        if r is None:
            return "unknown"
        if r.end_reason == "aborted":
            return "aborted"
        if r.winner is None:
            return "draw"
        return "won" if r.winner == self.seat else "lost"

    def describe(self) -> str:
        """One line for the log: ``won 14-9 (river) against bob, 41 moves of its own`` (its own
        decisions answered, so the two seats of one game may say different numbers)."""
        r = self.result
        if r is None:
            return f"ended while disconnected (against {self.opponent})"
        mine, theirs = r.scores[self.seat], r.scores[1 - self.seat]
        text = f"{self.outcome} {mine}-{theirs} ({r.end_reason}) against {self.opponent}, {self.moves} moves of its own"
        return text + (f", {self.fallbacks} fallback moves" if self.fallbacks else "")


@dataclass
class Chooser:
    """Calls the bot's ``choose`` for one decision and keeps to its deadline; a bot with
    ``decide(decision)`` gets the whole ``decision`` message instead, as offline
    (:mod:`mandala_client.offline`).

    A plain ``choose`` runs in a worker thread (``asyncio.to_thread``), so a slow one never
    stops the connection from reading frames, answering pings or playing other games; an
    ``async def choose`` runs on the event loop and must not block it. With several games at
    once, ``choose`` may run for two games at the same time.
    """

    bot: Any
    margin_ms: float | None = None
    """Time kept back from each decision; ``None``: :func:`default_margin_ms`."""
    fallback: Fallback = "random"
    rng: random.Random = field(default_factory=random.Random)

    def budget_s(self, deadline_ms: float) -> float:
        """Seconds ``choose`` may take for a decision with ``deadline_ms`` left on its clock."""
        margin = default_margin_ms(deadline_ms) if self.margin_ms is None else self.margin_ms
        return max(0.0, (deadline_ms - margin) / 1000)

    async def choose(self, decision: Decision, received: float) -> tuple[Move, str | None]:
        """The move to send, and why it is a fallback (``None`` if the bot chose it).

        ``received`` is the ``time.monotonic()`` at which the decision's frame was read: the
        budget counts from there, not from when this coroutine got to run.
        """
        budget = self.budget_s(decision.deadline_ms) - (time.monotonic() - received)
        started = time.monotonic()
        try:
            move = await asyncio.wait_for(self._call(decision), max(0.0, budget))
        except TimeoutError:
            took = 1000 * (time.monotonic() - started)
            return self._fallback(decision), f"choose() did not answer within {took:.0f} ms"
        except Exception as e:  # the bot's own bug: log it, keep playing
            log.debug("choose() raised", exc_info=True)
            return self._fallback(decision), f"choose() raised {e.__class__.__name__}: {e}"
        legal = _as_legal(move, decision.legal)
        if legal is None:
            return self._fallback(decision), f"choose() returned {move!r}, which is not one of the legal moves"
        return legal, None

    async def _call(self, decision: Decision) -> Any:
        decide = getattr(self.bot, "decide", None)
        call, args = (decide, (decision,)) if decide is not None else (self.bot.choose, (decision.view, decision.legal))
        if inspect.iscoroutinefunction(call):
            return await call(*args)
        result = await asyncio.to_thread(call, *args)
        if inspect.isawaitable(result):  # e.g. a callable object whose __call__ is async
            result = await result
        return result

    def _fallback(self, decision: Decision) -> Move:
        legal = decision.legal
        return legal[0] if self.fallback == "first" else self.rng.choice(legal)


def _as_legal(move: Any, legal: list[Move]) -> Move | None:
    """``move`` as one of ``legal`` (a move struct, or its R22 dict), or ``None``."""
    if isinstance(move, dict):
        try:
            move = msgspec.convert(move, Move)  # type: ignore[arg-type]
        except msgspec.ValidationError:
            return None
    for candidate in legal:
        # Of the same type first: ``==`` with an array (a numpy bot's raw output) is no answer.
        if type(candidate) is type(move) and candidate == move:
            return candidate
    return None


async def call_hook(bot: Any, name: str, message: Any) -> None:
    """Call ``bot.<name>(message)`` if the bot defines it (plain or async); a failing hook is
    logged and the game goes on."""
    hook = getattr(bot, name, None)
    if hook is None:
        return
    try:
        result = hook(message)
        if inspect.isawaitable(result):
            await result
    except Exception:
        log.exception("%s() of %r failed", name, bot)
