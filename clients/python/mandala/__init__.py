"""Mandala: the rules engine of Mandala Arena (pure: no I/O, no asyncio).

>>> import mandala
>>> game = mandala.Game.new(seed=1)
>>> game.push(game.legal_moves[0])
>>> v = mandala.view(game, seat=1)     # what seat 1 may see (R24)
>>> record = mandala.record_dict(game)   # R23, replayable with mandala.replay
"""

from .cards import COLOR_INDEX, COLORS, Cards, Color
from .errors import IllegalMove, MandalaError, RecordError
from .game import HAND_LIMIT, TURN_LIMIT, Game, SetupError
from .moves import (
    MOVES,
    Claim,
    Discard,
    Field,
    Mountain,
    Move,
    Pass,
    code_of,
    move_from_dict,
    move_from_json,
    move_to_dict,
)
from .player_view import result, view
from .record import Record, encode_record, record_dict, record_of, replay
from .views import Private, Result, View

__all__ = [
    "COLORS", "COLOR_INDEX", "Cards", "Color",
    "IllegalMove", "MandalaError", "RecordError", "SetupError",
    "Game", "HAND_LIMIT", "TURN_LIMIT",
    "MOVES", "Move", "Mountain", "Field", "Discard", "Claim", "Pass",
    "code_of", "move_from_dict", "move_from_json", "move_to_dict",
    "Record", "record_dict", "record_of", "encode_record", "replay",
    "View", "Private", "Result", "view", "result",
]
