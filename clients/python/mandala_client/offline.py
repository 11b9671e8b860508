"""Playing bots against each other offline, in one process, as a server would.

:func:`load_bot` turns a bot spec into a bot and :func:`play_game` plays one
game between two bots. A bot needs only ``choose(view, legal)``; a bot that
also has ``notify(message)``, or the online client's hooks (``on_game_start``,
``on_update``, ``on_game_over``), receives the server's ``game_start``,
``update`` and ``game_over`` messages (:mod:`protocol.messages`), and a bot
with ``decide(decision)`` gets the whole ``decision`` message instead of
``choose``'s two arguments. ``choose`` and ``decide`` may be coroutines.

A bot that breaks the rules (an illegal or malformed move) or, for external
programs, the protocol (:class:`BotError`) forfeits the game, as it would on
a server that runs out its clock.

Bot specs:

* ``random``, ``greedy``, ``search``: the shipped bots; ``house:1`` … ``house:5``: the
  graded house levels (:mod:`mandala_client.bots.levels`);
* ``package.module:Class``: any importable class (the current directory is searched too);
* ``policy:package.module:attr``: a policy trained in the environment
  (:mod:`mandala_client.env.policy`), played by a :class:`~mandala_client.env.policy.PolicyBot`;
* either followed by ``,key=value`` options passed to the constructor
  (``search,iterations=400``; values are read as JSON when they parse);
* ``cmd:COMMAND ...``: an external program speaking JSON lines
  (:mod:`mandala_client.external`).
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
import logging
import os
import shlex
import shutil
import sys
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from mandala import Game, IllegalMove, Move, move_to_dict, record_of, view
from mandala.record import PlayedMove, Record, played
from protocol.messages import Decision, GameOver, GameResult, GameStart, Player, Update

from .bots import SHORTCUTS
from .external import BotError, ExternalBot

log = logging.getLogger("mandala_client")

DECISION_MS = 5000
"""The per-decision limit announced to bots when no budget is given (the server's default)."""


class SpecError(ValueError):
    """A bot spec that names no loadable bot."""


def _option(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key.isidentifier():
        raise SpecError(f"bot option {text!r} is not key=value")
    try:
        return key, json.loads(raw)
    except json.JSONDecodeError:
        return key, raw


def _import(module_name: str) -> Any:
    """Import a bot's module. The current directory is searched too (last, so it shadows
    nothing), as it is for ``python -m``: console scripts do not put it on ``sys.path``."""
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.append(cwd)
    return importlib.import_module(module_name)


def bot_factory(spec: str) -> Callable[..., Any]:
    """The class (or factory) a spec names, with its ``,key=value`` options bound.

    Raises :class:`SpecError` if the spec names nothing loadable, so a match
    fails before it starts rather than in every worker.
    """
    if spec.startswith("cmd:"):
        argv = shlex.split(spec[4:])
        if not argv:
            raise SpecError("cmd: needs a command")
        if shutil.which(argv[0]) is None:  # a typo would play a whole match of forfeits
            raise SpecError(f"cmd: cannot run {argv[0]!r}: no such program, or it is not executable")
        return lambda seed=None, budget=None: ExternalBot(argv, budget=budget)
    name, *opts = spec.split(",")
    options = dict(_option(o) for o in opts)
    if name.startswith("policy:"):
        return _policy_factory(name[len("policy:"):], options)
    cls: Any
    if name in SHORTCUTS:
        cls = SHORTCUTS[name]
    elif name.startswith("house:"):
        levels = [s for s in SHORTCUTS if s.startswith("house:")]
        raise SpecError(f"unknown house level {name!r}: the levels are {levels[0]} to {levels[-1]}")
    elif ":" in name:
        module_name, _, attr = name.partition(":")
        try:
            cls = getattr(_import(module_name), attr)
        except (ImportError, AttributeError) as e:
            raise SpecError(f"cannot load bot {name!r}: {e}") from None
    else:
        raise SpecError(f"unknown bot {name!r}: use {', '.join(SHORTCUTS)}, package.module:Class, "
                        "policy:package.module:attr (a trained policy) or cmd:COMMAND")
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        params = {}  # type: ignore[assignment]
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    if params and not takes_any:
        _check_options(name, cls, params, options)

    def make(seed: int | None = None, budget: float | None = None) -> Any:
        kwargs = dict(options)
        if seed is not None and (takes_any or "seed" in params):
            kwargs.setdefault("seed", seed)
        if budget is not None and (takes_any or "budget" in params):
            kwargs.setdefault("budget", budget)
        return cls(**kwargs)

    return make


def _check_options(name: str, cls: Any, params: Any, options: dict[str, Any]) -> None:
    """Refuse an option the bot does not take, or a word where it takes a number
    (``search,budgt=0.5``, ``search,budget=abc``), naming the options it does take."""
    for key, value in options.items():
        if key not in params:
            takes = ", ".join(p for p in params if p not in ("self", "seed")) or "none"
            raise SpecError(f"bot {name!r} takes no option {key!r} (its options: {takes})")
        if isinstance(value, str) and _numeric(cls, key, params[key].default):
            raise SpecError(f"bot {name!r}: option {key} takes a number, not {value!r}")


def _numeric(cls: Any, key: str, default: Any) -> bool:
    """Whether option ``key`` of ``cls`` is a number and not a word: by its type hint where it
    can be read, else by its default."""
    try:
        hint = typing.get_type_hints(cls.__init__ if inspect.isclass(cls) else cls).get(key)
    except Exception:  # hints that cannot be resolved say nothing
        hint = None
    kinds = {type(default)} if hint is None else set(typing.get_args(hint)) or {hint}
    return bool(kinds & {int, float}) and str not in kinds and bool not in kinds


def _named(name: str) -> Any:
    """The object ``package.module:attr`` names."""
    module_name, sep, attr = name.partition(":")
    if not sep or not module_name or not attr:
        raise SpecError(f"{name!r} is not package.module:attr")
    try:
        return getattr(_import(module_name), attr)
    except (ImportError, AttributeError) as e:
        raise SpecError(f"cannot load {name!r}: {e}") from None


def _policy_factory(name: str, options: dict[str, Any]) -> Callable[..., Any]:
    """A bot factory for ``policy:package.module:attr`` (a policy over the environment's
    observations; :mod:`mandala_client.env.policy` says how the options build it)."""
    from .env.policy import PolicyBot, make_policy

    target = _named(name)

    def make(seed: int | None = None, budget: float | None = None) -> Any:
        return PolicyBot(make_policy(target, options, seed))

    return make


def load_bot(spec: str, seed: int | None = None, budget: float | None = None) -> Any:
    """A fresh bot for ``spec`` (see the module docstring), seeded and budgeted if it takes them.

    Raises :class:`SpecError` if its constructor refuses the spec's options too (a value of the
    wrong kind, say), naming the spec: a command reports it in one line, not a traceback.
    """
    make = bot_factory(spec)
    try:
        return make(seed=seed, budget=budget)
    except Exception as e:
        raise SpecError(f"cannot create bot {spec!r}: {e.__class__.__name__}: {e}") from e


def check_bot(spec: str, budget: float | None = None) -> None:
    """Make a bot for ``spec`` once and let it go: whatever its constructor refuses ends a match
    before it starts (:class:`SpecError`), not in every worker."""
    close_bots([load_bot(spec, seed=0, budget=budget)])


@dataclass(frozen=True)
class Outcome:
    """How one offline game ended; ``forfeit`` names the seat that broke the rules, if any."""

    winner: int | None
    end_reason: str
    scores: tuple[int, int]
    plies: int
    forfeit: int | None = None
    error: str | None = None


_loop: asyncio.AbstractEventLoop | None = None


def _resolve(value: Any) -> Any:
    """Await a coroutine returned by an async bot, on one loop kept for the process."""
    global _loop
    if not inspect.isawaitable(value):
        return value
    if _loop is None:
        _loop = asyncio.new_event_loop()
    return _loop.run_until_complete(value)


def _played(move: Move, player: int) -> PlayedMove:
    return msgspec.convert({**move_to_dict(move), "player": player}, PlayedMove)  # type: ignore[arg-type]


HOOKS: dict[type, str] = {GameStart: "on_game_start", Update: "on_update", GameOver: "on_game_over"}
"""The hook of the online client (``mandala_client.client``) that hears each message."""


def _listener(bot: Any) -> Callable[[Any], None] | None:
    """How ``bot`` hears a game's messages: its ``notify(message)`` and its online client's
    hooks (``on_game_start``, ``on_update``, ``on_game_over``), whichever it has; ``None``
    if it has neither. A hook that fails is logged, as the online client does; ``notify``'s
    :class:`BotError` (an external program gone) forfeits the game."""
    notify = getattr(bot, "notify", None)
    hooks = {tp: h for tp, name in HOOKS.items() if (h := getattr(bot, name, None)) is not None}
    if notify is None and not hooks:
        return None

    def hear(message: Any) -> None:
        if notify is not None:
            _resolve(notify(message))
        hook = hooks.get(type(message))
        if hook is not None:
            try:
                _resolve(hook(message))
            except Exception:  # as on a server (``games.call_hook``): logged, and the game goes on
                log.exception("%s() of %r failed", HOOKS[type(message)], bot)

    return hear


def _record(game: Game) -> Record:
    """The record ``game_over`` carries: the whole record (R23), or for a game set up from a
    position (which has no deal to record) its first player and the moves played since."""
    if game.deck_order:
        return record_of(game)
    return Record([], [], game.first_player, [played(game, ply) for ply in range(len(game.history))])  # type: ignore[arg-type]


class Messages:
    """Tells the bots that listen what a server would send them about ``game``:
    ``game_start`` and a first ``update``, an ``update`` after each move, each with the seat's
    own view, and ``game_over``. ``bots[p]`` plays seat ``p``; a bot hears them through
    ``notify(message)`` or the online client's hooks (:func:`_listener`), so that a bot
    written for a server follows its games offline the same way."""

    def __init__(self, bots: list[Any], game: Game, game_id: str = "offline",
                 names: tuple[str, str] = ("seat0", "seat1"), decision_ms: int = DECISION_MS) -> None:
        self.hooks = [_listener(b) for b in bots]
        self.listening = any(h is not None for h in self.hooks)
        self.game = game
        self.game_id = game_id
        self.names = names
        self.decision_ms = decision_ms

    def started(self, seat: int) -> None:
        """Tell ``seat`` that the game starts (each seat in turn, so that a failing bot is known)."""
        hear = self.hooks[seat]
        if hear is not None:
            players = [Player(self.names[0], 0), Player(self.names[1], 1)]
            hear(GameStart(self.game_id, seat, players, self.game.first_player,  # type: ignore[arg-type]
                           self.decision_ms, False))
            hear(Update(self.game_id, 0, None, view(self.game, seat)))

    def moved(self, move: Move, seat: int) -> None:
        """``seat`` played ``move``, which the game has just applied."""
        if self.listening:
            played = _played(move, seat)
            ply = len(self.game.history)
            for p, hear in enumerate(self.hooks):
                if hear is not None:
                    hear(Update(self.game_id, ply, played, view(self.game, p)))

    def over(self, result: GameResult) -> None:
        if self.listening:
            message = GameOver(self.game_id, result, _record(self.game))
            for hear in self.hooks:
                if hear is not None:
                    try:
                        hear(message)
                    except BotError:
                        pass  # the game is decided; a bot that fails to hear it changes nothing


def ask(bot: Any, game: Game, game_id: str = "offline", decision_ms: int = DECISION_MS) -> Move:
    """``bot``'s move at ``game``'s decision, asked as a server asks: the whole ``decision``
    message to a bot with ``decide``, else ``choose(view, legal)``; a coroutine is awaited.
    What the bot raises is raised (the move itself is not checked)."""
    seat = game.to_move
    assert seat is not None, "the game is over: there is no decision to ask for"
    legal = game.legal_moves
    decide = getattr(bot, "decide", None)
    if decide is not None:
        decision = Decision(game_id, len(game.history), seat, view(game, seat), legal, decision_ms)  # type: ignore[arg-type]
        return _resolve(decide(decision))  # type: ignore[no-any-return]
    return _resolve(bot.choose(view(game, seat), legal))  # type: ignore[no-any-return]


def play_game(
    bots: list[Any],
    game: Game,
    game_id: str = "offline",
    names: tuple[str, str] = ("seat0", "seat1"),
    decision_ms: int = DECISION_MS,
) -> Outcome:
    """Play ``game`` to its end, ``bots[p]`` deciding for seat ``p``; the game is left finished
    (or, after a forfeit, where it stopped)."""
    messages = Messages(bots, game, game_id, names, decision_ms)
    seat = 0
    try:
        for seat in (0, 1):
            messages.started(seat)
        while game.to_move is not None:
            seat = game.to_move
            try:
                move = ask(bots[seat], game, game_id, decision_ms)
            except BotError:
                raise
            except Exception as e:  # the bot's own failure loses its game, not the whole match
                raise BotError(f"its choice failed: {e.__class__.__name__}: {e}") from None
            try:
                game.push(move)
            except IllegalMove as e:
                raise BotError(f"illegal move {move!r}: {e}") from None
            messages.moved(move, seat)
        outcome = Outcome(game.winner(), game.end_reason or "", game.scores(), len(game.history))
        reason = outcome.end_reason
    except BotError as e:
        outcome = Outcome(1 - seat, "forfeit", game.scores(), len(game.history), seat, str(e))
        reason = "timeout" if e.timeout else "resign"
    messages.over(GameResult(outcome.winner, reason, list(outcome.scores), list(game.cup_sizes())))  # type: ignore[arg-type]
    return outcome


def close_bots(bots: list[Any]) -> None:
    """Let bots that hold resources (external programs) release them."""
    for bot in bots:
        close = getattr(bot, "close", None)
        if close is not None:
            _resolve(close())
