"""A seat's view as a fixed-size vector, and every R22 move as an action index.

One function turns what a seat sees into what a policy reads: :func:`encode` takes the
:class:`mandala.View` the server sends in a ``decision`` (or that ``mandala.view(game, seat)``
builds offline) and nothing else, so a policy trained on it can know no more than the arena
shows (R24), and the bot that plays it on the arena (:class:`~mandala_client.env.policy.PolicyBot`)
calls the same function on the frames it receives.

The vector is written from the viewer's side: "me" is the view's seat, "opponent" the other,
so one policy plays either seat. Every entry is an integer count or flag divided by a fixed
scale (:data:`SCALES`), so values stay near 0–1; :data:`LAYOUT` names each entry and
:data:`HIGH` bounds it. docs/training.md has the table.

Actions are the engine's move codes (:mod:`mandala.moves`): 0–11 mountain, 12–95 field,
96–143 discard, 144–149 claim, 150 pass. :func:`action_of` and :func:`move_of` are the two
directions, :func:`action_mask` the legal ones as 0/1.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

import msgspec
import numpy as np
import numpy.typing as npt

from mandala import COLOR_INDEX, COLORS, Move, View, code_of
from mandala.moves import MOVE_COUNT, MOVES

ACTION_COUNT: Final = MOVE_COUNT
"""Every move R22 allows, numbered as the engine codes them (151)."""

RESHUFFLES_CAP: Final = 10
"""Reshuffles past this many are encoded as this many (only the first one ends the game, R17b)."""

_astuple = msgspec.structs.astuple
_UINT8: Final = np.dtype(np.uint8)

# (name, entries, scale, largest raw value): the vector in order. A raw value divided by its
# scale is the entry; ``largest`` bounds the raw value, so ``largest / scale`` bounds the entry.
_SEGMENTS: Final[tuple[tuple[str, tuple[str, ...], float, float], ...]] = (
    ("phase", ("turn", "pick", "over"), 1, 1),
    ("my_decision", ("",), 1, 1),
    ("i_moved_first", ("",), 1, 1),
    ("turns", ("",), 1000, 1000),
    ("deck_size", ("",), 108, 108),
    ("reshuffles", ("",), RESHUFFLES_CAP, RESHUFFLES_CAP),
    ("deck_exhausted", ("",), 1, 1),
    ("river_filled", ("",), 1, 1),
    ("destruction_mandala", ("0", "1"), 1, 1),
    ("destruction_completed_by_me", ("",), 1, 1),
    ("destruction_first_picker_me", ("",), 1, 1),
    *(
        (f"mandala{m}_{area}", COLORS, 6, 18)
        for m in (0, 1)
        for area in ("mountain", "my_field", "opponent_field")
    ),
    *(
        segment
        for who in ("my", "opponent")
        for segment in (
            (f"{who}_hand_size", ("",), 8, 8),
            (f"{who}_cup_size", ("",), 36, 108),
            (f"{who}_cup_claimed", COLORS, 6, 18),
            (f"{who}_cup_unknown", ("",), 2, 2),
            (f"{who}_river_length", ("",), 6, 6),
            *((f"{who}_river_slot{k}", COLORS, 1, 1) for k in range(1, 7)),
        )
    ),
    ("discard", COLORS, 6, 18),
    ("unseen", COLORS, 6, 18),
    ("my_hand", COLORS, 6, 8),
    ("my_cup", COLORS, 6, 18),
    ("my_score", ("",), 50, 612),
)


def _flatten() -> tuple[tuple[str, ...], npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    names: list[str] = []
    scales: list[float] = []
    highs: list[float] = []
    for name, entries, scale, largest in _SEGMENTS:
        for entry in entries:
            names.append(f"{name}.{entry}" if entry else name)
            scales.append(1.0 / scale)
            highs.append(largest / scale)
    return tuple(names), np.array(scales, dtype=np.float32), np.array(highs, dtype=np.float32)


LAYOUT, SCALES, HIGH = _flatten()
"""``LAYOUT[i]`` names entry ``i`` of the observation (``mandala0_mountain.red``, ...);
``SCALES[i]`` is what its raw count is multiplied by; ``HIGH[i]`` is the largest it can be."""
OBS_SIZE: Final = len(LAYOUT)
"""The observation's length (167)."""
_TURNS, _SCORE = LAYOUT.index("turns"), LAYOUT.index("my_score")
_TURNS_SCALE, _SCORE_SCALE = float(SCALES[_TURNS]), float(SCALES[_SCORE])

def _river(colors: Sequence[str]) -> list[int]:
    """The river as 6 slots × 6 colors, one-hot per filled slot, and its length first."""
    out = [len(colors)] + [0] * 36
    for slot, color in enumerate(colors):
        out[1 + slot * 6 + COLOR_INDEX[color]] = 1
    return out


def _counts(view: View) -> tuple[list[int], int, int]:
    """The observation before scaling, with ``turns`` and ``my_score`` (the two entries that
    can pass 255) left at 0 and returned beside it, so the rest converts as bytes."""
    me = view.seat
    private = view.private
    if me is None or private is None:
        raise ValueError("encode() takes a seat's view (seat and private part set), not a spectator's")
    op = 1 - me
    phase = view.phase
    destruction = view.destruction
    out = [
        phase == "turn", phase == "pick", phase == "over",
        view.to_move == me, view.first_player == me,
        0, view.deck_size, min(view.reshuffles, RESHUFFLES_CAP),
        view.deck_exhausted, view.river_filled,
    ]
    if destruction is None:
        out += (0, 0, 0, 0)
    else:
        m = destruction.mandala
        out += (m == 0, m == 1, destruction.completed_by == me, destruction.first_picker == me)
    for mandala in view.mandalas:
        fields = mandala.fields
        out += _astuple(mandala.mountain)
        out += _astuple(fields[me])
        out += _astuple(fields[op])
    for player in (view.players[me], view.players[op]):
        out.append(player.hand_size)
        out.append(player.cup_size)
        out += _astuple(player.cup_claimed)
        out.append(player.cup_unknown)
        out += _river(player.river)
    out += _astuple(view.discard)
    out += _astuple(view.unseen)
    out += _astuple(private.hand)
    out += _astuple(private.cup)
    out.append(0)
    return out, view.turns, private.score  # type: ignore[return-value]  # bools are ints


def raw_counts(view: View) -> list[int]:
    """The observation before scaling: integer counts and 0/1 flags in :data:`LAYOUT` order.

    Reads only ``view`` (what the seat was sent). A spectator's view has no seat and no
    private part, so it cannot be encoded: only a seat decides.
    """
    out, turns, score = _counts(view)
    out[_TURNS] = turns
    out[_SCORE] = score
    return out


def encode(view: View) -> npt.NDArray[np.float32]:
    """A seat's view as the observation vector (``float32``, :data:`OBS_SIZE` entries).

    The environment builds every observation with this function and
    :class:`~mandala_client.env.policy.PolicyBot` calls it on the server's frames.
    """
    return scaled(*_counts(view))


def encode_batch(views: Sequence[View]) -> npt.NDArray[np.float32]:
    """Several views as one ``(len(views), OBS_SIZE)`` array: row ``i`` is ``encode(views[i])``,
    converted to numbers in one step."""
    return scaled_batch(map(_counts, views))


def scaled(counts: list[int], turns: int, score: int) -> npt.NDArray[np.float32]:
    """One observation's counts (:func:`_counts`' form: ``turns`` and ``my_score`` beside, as
    they may pass 255) divided by their scales: the observation."""
    obs = np.frombuffer(bytearray(counts), _UINT8) * SCALES  # bytearray: faster from a list
    obs[_TURNS] = turns * _TURNS_SCALE
    obs[_SCORE] = score * _SCORE_SCALE
    return obs


def scaled_batch(counts: Iterable[tuple[list[int], int, int]]) -> npt.NDArray[np.float32]:
    """:func:`scaled` of each, as the rows of one array, converted to numbers in one step."""
    rows = bytearray()
    turns: list[int] = []
    scores: list[int] = []
    for out, t, s in counts:
        rows += bytes(out)
        turns.append(t)
        scores.append(s)
    obs = np.frombuffer(rows, dtype=np.uint8).reshape(len(turns), OBS_SIZE) * SCALES
    obs[:, _TURNS] = np.array(turns, dtype=np.float32) * _TURNS_SCALE
    obs[:, _SCORE] = np.array(scores, dtype=np.float32) * _SCORE_SCALE
    return obs


def action_of(move: Move) -> int:
    """The action index of an R22 move (its engine code); ``ValueError`` for a move no
    position could allow (an unknown color, a count past the hand limit)."""
    code = code_of(move)
    if code is None:
        raise ValueError(f"no action is the move {move!r}")
    return code


def move_of(action: int) -> Move:
    """The R22 move of an action index; ``ValueError`` outside ``0 .. ACTION_COUNT - 1``."""
    if isinstance(action, bool) or not isinstance(action, int | np.integer) or not 0 <= action < ACTION_COUNT:
        raise ValueError(f"an action is an integer from 0 to {ACTION_COUNT - 1}, not {action!r}")
    return MOVES[int(action)]


def action_mask(legal: Iterable[int] | Iterable[Move]) -> npt.NDArray[np.int8]:
    """1 at each legal action, 0 elsewhere (``int8``, :data:`ACTION_COUNT` entries), from the
    legal moves of a ``decision`` or from the engine's legal codes."""
    mask = bytearray(ACTION_COUNT)
    for m in legal:
        mask[m if isinstance(m, int) else action_of(m)] = 1
    return np.frombuffer(mask, dtype=np.int8)


def describe(action: int) -> str:
    """An action as its R22 JSON, for messages: ``37 {"type":"field","mandala":0,...}``."""
    return f"{action} {msgspec.json.encode(move_of(action)).decode()}"


__all__ = [
    "ACTION_COUNT", "OBS_SIZE", "LAYOUT", "SCALES", "HIGH", "RESHUFFLES_CAP",
    "encode", "encode_batch", "raw_counts", "action_of", "move_of", "action_mask", "describe",
]
