"""Game records (R23): export a game at any point, and replay one move by move.

A record is ``deck`` (108 colors, top first), ``reshuffles`` (the order of
each new draw deck, top first), ``first_player`` and ``moves`` (every
decision's R22 move plus the ``player`` who made it). Replaying validates
every move; any fault raises :class:`~mandala.errors.RecordError` naming the
ply and the rule.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from .cards import COLORS, Color
from .errors import IllegalMove, RecordError
from .game import Game, SetupError
from .moves import MOVES, Claim, Discard, Field, Mountain, Move, Pass, move_from_dict
from .views import Seat


class PlayedMountain(Mountain, tag="mountain"):
    player: Seat


class PlayedField(Field, tag="field"):
    player: Seat


class PlayedDiscard(Discard, tag="discard"):
    player: Seat


class PlayedClaim(Claim, tag="claim"):
    player: Seat


class PlayedPass(Pass, tag="pass"):
    player: Seat


PlayedMove = PlayedMountain | PlayedField | PlayedDiscard | PlayedClaim | PlayedPass
"""A move of R22 with the seat that made it, as records list them."""


class Record(msgspec.Struct):
    """A whole game, finished or not (R23)."""

    deck: list[Color]
    reshuffles: list[list[Color]]
    first_player: Seat
    moves: list[PlayedMove]


_MOVE_DICTS: tuple[dict[str, Any], ...] = tuple(msgspec.to_builtins(m) for m in MOVES)
_PLAYED: tuple[tuple[PlayedMove, ...], ...] = tuple(
    tuple(msgspec.convert({**d, "player": seat}, PlayedMove) for d in _MOVE_DICTS)
    for seat in (0, 1)
)
"""Every move with every seat, built once: played moves are frozen and shared like ``MOVES``."""
_CODES: dict[PlayedMove, int] = {m: code for seat in _PLAYED for code, m in enumerate(seat)}


def played(game: Game, ply: int = -1) -> PlayedMove:
    """The move made at ``ply`` (the last one by default), with the seat that made it."""
    seat, code = game.history[ply]
    return _PLAYED[seat][code]


def played_move(seat: int, code: int) -> PlayedMove:
    """The move with code ``code`` (:meth:`Game.check`) made by ``seat``, as records list it
    (one shared, frozen instance)."""
    return _PLAYED[seat][code]


def move_code(entry: PlayedMove) -> int:
    """The number of ``entry``'s move in :data:`~mandala.moves.MOVES`."""
    try:
        return _CODES[entry]
    except KeyError:
        raise RecordError("R22", f"not a move: {entry!r}") from None


def move_of(entry: PlayedMove) -> Move:
    """The R22 move of a played move (without its player), for :meth:`Game.push`."""
    return MOVES[_CODES[entry]]


def record_of(game: Game) -> Record:
    """The record of ``game`` so far, as a :class:`Record`."""
    if not game.deck_order:
        raise ValueError("a game set up with Game.from_position has no record (R23 starts from the deal)")
    return Record(
        deck=[COLORS[c] for c in game.deck_order],  # type: ignore[misc]
        reshuffles=[[COLORS[c] for c in order] for order in game.reshuffles],  # type: ignore[misc]
        first_player=game.first_player,  # type: ignore[arg-type]
        moves=[_PLAYED[p][code] for p, code in game.history],
    )


def record_dict(game: Game) -> dict[str, Any]:
    """The record of ``game`` so far, as plain JSON-ready objects."""
    return msgspec.to_builtins(record_of(game))  # type: ignore[no-any-return]


def encode_record(game: Game) -> bytes:
    """The record of ``game`` so far, as JSON."""
    return msgspec.json.encode(record_of(game))


class _RawRecord(msgspec.Struct):
    deck: list[Any]
    reshuffles: list[list[Any]]
    first_player: Any
    moves: list[dict[str, Any]]


def parse_record(data: bytes | str | dict[str, Any]) -> _RawRecord:
    """Check a record's outer shape; moves are checked one by one when replayed."""
    try:
        if isinstance(data, dict):
            return msgspec.convert(data, _RawRecord)
        return msgspec.json.decode(data, type=_RawRecord)
    except msgspec.DecodeError as e:
        raise RecordError("R23", f"not a JSON record: {e}") from None
    except msgspec.ValidationError as e:
        raise RecordError("R23", f"malformed record: {e}") from None


def replay(
    data: bytes | str | dict[str, Any] | Record,
    on_decision: Callable[[int, Game], None] | None = None,
) -> Game:
    """Rebuild a game from its record, validating every move.

    ``on_decision(ply, game)`` is called before each move is applied, with the
    game at the decision that move answers.
    """
    raw = parse_record(msgspec.to_builtins(data) if isinstance(data, Record) else data)
    try:
        game = Game(raw.deck, raw.first_player, reshuffles=raw.reshuffles)
    except SetupError as e:
        raise RecordError(e.rule, e.message) from None
    for ply, obj in enumerate(raw.moves):
        if on_decision is not None:
            on_decision(ply, game)
        obj = dict(obj)
        player = obj.pop("player", None)
        if player not in (0, 1) or type(player) is not int:
            raise RecordError("R23", f"each move names its player (0 or 1), not {player!r}", ply)
        try:
            move = move_from_dict(obj)
        except msgspec.ValidationError as e:
            raise RecordError("R22", f"malformed move {obj}: {e}", ply) from None
        if game.to_move is not None and player != game.to_move:
            rule = "R12" if game.phase == "pick" else "R5"
            raise RecordError(rule, f"it is seat {game.to_move}'s decision, not seat {player}'s", ply)
        try:
            game.push(move)
        except IllegalMove as e:
            raise RecordError(e.rule, f"{e.message} (move {obj})", ply) from None
        except RecordError as e:
            raise RecordError(e.rule, e.message, ply) from None
    left = len(game._given or ())
    if left:
        raise RecordError("R23", f"the record lists {left} reshuffle(s) that never happened")
    return game
