"""What storage keeps of a finished game, in the fewest bytes that give back the same JSON.

A season's ladder stores millions of games, so each column that grows with them is kept
packed: the record (R23) by :mod:`mandala.compact`, the result in a few bytes, the telemetry
as its think times in tenths of a millisecond (and on PostgreSQL the times as milliseconds). Each ``unpack_*`` gives back objects whose JSON
is the one that was packed, byte for byte; a value of another shape than the one packed here
is kept as (compressed) JSON instead, so nothing is ever lost to the packing. A stored value
that does not decode raises :class:`UnreadableRecord`, naming the game: refused, never served
wrong.

Byte layouts (integers as LEB128 varints, like :mod:`mandala.compact`)::

    result     0x01, winner (0, 1, 2 for none), end reason (its index in END_REASONS),
               score 0, score 1, cup size 0, cup size 1
    telemetry  0x01, decision_ms, each seat's move count, each seat's slowest move (0 for
               none, else ply + 1, then its think time in tenths of a millisecond), the
               length of the incidents, the width w in bytes of the longest think time; the
               incidents and the dropped count as compressed JSON (if any); each move's think
               time in tenths, its lowest byte (seat 0's moves, then seat 1's); if w > 1, the
               higher bytes plane by plane, compressed (they are mostly zeros: about a byte
               and a half a move in all, read back at C speed)
    either     anything else: zlib-compressed JSON (a zlib stream starts with 0x78)
"""

from __future__ import annotations

import zlib
from datetime import UTC, datetime, timedelta
from typing import Any, get_args

import msgspec

from mandala import compact
from mandala.compact import Reader, write_varint
from mandala.errors import RecordError
from protocol.messages import EndReason

PACKED = 0x01
"""The first byte of a packed result or telemetry (JSON kept compressed starts with 0x78)."""
END_REASONS: tuple[str, ...] = get_args(EndReason)
"""End reasons by their stored number: new ones are appended, never reordered."""
_RESULT_KEYS = ["winner", "end_reason", "scores", "cup_sizes"]
_TELEMETRY_KEYS = ["decision_ms", "think_ms", "slowest", "incidents", "dropped"]
_MAX_TENTHS = 1 << 40
"""Think times above this many tenths of a millisecond (three years) are kept as JSON."""


class UnreadableRecord(Exception):
    """A stored record, result or telemetry that does not decode: refused, never served wrong."""

    def __init__(self, game_id: str, why: str) -> None:
        super().__init__(f"game {game_id}: its stored record does not decode ({why})")
        self.game_id = game_id


def pack_record(record: dict[str, Any] | None) -> bytes | None:
    """A record as storage keeps it: compact (``mandala/compact.py``), about 200 bytes
    instead of 6 KB; ``None`` for no record, or one that is not a valid R23 record (kept as
    JSON instead, as it came)."""
    if record is None:
        return None
    try:
        return compact.pack_dict(record)
    except (RecordError, msgspec.ValidationError, KeyError, TypeError):
        return None


def unpack_record(game_id: str, data: bytes) -> dict[str, Any]:
    """The record :func:`pack_record` stored, as the JSON objects the API serves."""
    try:
        return msgspec.to_builtins(compact.unpack(data))  # type: ignore[no-any-return]
    except ValueError as e:
        raise UnreadableRecord(game_id, str(e)) from None


def _small_int(v: Any) -> bool:
    return type(v) is int and v >= 0


def _tenths(v: Any) -> int | None:
    """``v`` milliseconds as whole tenths, if that gives back exactly ``v``."""
    if type(v) is not float or not 0 <= v < _MAX_TENTHS / 10:
        return None
    t = round(v * 10)
    return t if t / 10 == v else None


def _json(value: Any) -> bytes:
    return zlib.compress(msgspec.json.encode(value), 9)


def _unjson(data: bytes) -> Any:
    return msgspec.json.decode(zlib.decompress(data))


# ---------------------------------------------------------------------- results


def pack_result(result: dict[str, Any] | None) -> bytes | None:
    """A game's result (protocol ``GameResult`` as JSON objects) in seven bytes, or as
    compressed JSON if it has another shape."""
    if result is None:
        return None
    if list(result) == _RESULT_KEYS and result["end_reason"] in END_REASONS:
        winner, scores, cups = result["winner"], result["scores"], result["cup_sizes"]
        if ((winner is None or (type(winner) is int and winner in (0, 1)))
                and isinstance(scores, list) and isinstance(cups, list) and len(scores) == len(cups) == 2
                and all(_small_int(n) for n in (*scores, *cups))):
            out = bytearray((PACKED, 2 if winner is None else winner, END_REASONS.index(result["end_reason"])))
            for n in (*scores, *cups):
                write_varint(n, out)
            return bytes(out)
    return _json(result)


def unpack_result(game_id: str, data: bytes, *, jsonb: bool = False) -> dict[str, Any]:
    """The result :func:`pack_result` stored; with ``jsonb``, its keys in the order PostgreSQL's
    ``jsonb`` gave them (see :func:`jsonb_order`)."""
    try:
        if data[:1] != bytes((PACKED,)):
            value = _unjson(data)
            return jsonb_order(value) if jsonb else value  # type: ignore[no-any-return]
        if len(data) == 7 and max(data[3:]) < 0x80:  # every number in one byte: the usual case
            numbers: list[int] | bytes = data[3:]
        else:
            r = Reader(data, 3)
            numbers = [r.varint(64) for _ in range(4)]
            if r.pos != len(data):
                raise ValueError("bytes after the result")
        if len(data) < 3 or data[1] > 2 or data[2] >= len(END_REASONS):
            raise ValueError("a winner or end reason out of range")
        winner, reason = None if data[1] == 2 else data[1], END_REASONS[data[2]]
        scores, cups = [numbers[0], numbers[1]], [numbers[2], numbers[3]]
        if jsonb:
            return {"scores": scores, "winner": winner, "cup_sizes": cups, "end_reason": reason}
        return {"winner": winner, "end_reason": reason, "scores": scores, "cup_sizes": cups}
    except (ValueError, IndexError, zlib.error, msgspec.DecodeError) as e:
        raise UnreadableRecord(game_id, f"result: {e}") from None


# ---------------------------------------------------------------------- telemetry


def _packed_telemetry(t: dict[str, Any]) -> bytes | None:
    """``t`` packed, or ``None`` if it is not of the shape ``server/games/telemetry.py`` writes."""
    if list(t) != _TELEMETRY_KEYS or not _small_int(t["decision_ms"]) or not _small_int(t["dropped"]):
        return None
    think, slowest, incidents = t["think_ms"], t["slowest"], t["incidents"]
    if not (isinstance(think, list) and len(think) == 2 and all(isinstance(seat, list) for seat in think)
            and isinstance(slowest, list) and len(slowest) == 2 and isinstance(incidents, list)):
        return None
    checked = [_tenths(v) for seat in think for v in seat]
    if None in checked:
        return None
    tenths = [v for v in checked if v is not None]
    out = bytearray((PACKED,))
    for n in (t["decision_ms"], len(think[0]), len(think[1])):
        write_varint(n, out)
    for s in slowest:
        if s is None:
            out.append(0)
            continue
        slow = _tenths(s[1]) if isinstance(s, list) and len(s) == 2 and _small_int(s[0]) else None
        if slow is None:
            return None
        write_varint(s[0] + 1, out)
        write_varint(slow, out)
    noted = _json([incidents, t["dropped"]]) if incidents or t["dropped"] else b""
    write_varint(len(noted), out)
    width = max(1, (max(tenths, default=0).bit_length() + 7) // 8)
    out.append(width)
    out += noted
    out += bytes(v & 0xFF for v in tenths)
    if width > 1:
        out += zlib.compress(bytes((v >> 8 * k) & 0xFF for k in range(1, width) for v in tenths), 9)
    return bytes(out)


def pack_telemetry(telemetry: dict[str, Any] | None) -> bytes | None:
    """A game's telemetry as storage keeps it: about two bytes a move."""
    if telemetry is None:
        return None
    return _packed_telemetry(telemetry) or _json(telemetry)


def unpack_telemetry(game_id: str, data: bytes) -> dict[str, Any]:
    """The telemetry :func:`pack_telemetry` stored."""
    try:
        if data[:1] != bytes((PACKED,)):
            return _unjson(data)  # type: ignore[no-any-return]
        r = Reader(data, 1)
        decision_ms, n0, n1 = r.varint(64), r.varint(64), r.varint(64)
        slowest: list[list[Any] | None] = []
        for _ in range(2):
            ply = r.varint(64)
            slowest.append([ply - 1, r.varint(64) / 10] if ply else None)
        noted, width = r.varint(64), r.varint(64)
        incidents, dropped = _unjson(data[r.pos:r.pos + noted]) if noted else ([], 0)
        start = r.pos + noted
        end = start + n0 + n1
        values: list[int] | bytes = data[start:end]
        if len(values) != n0 + n1 or not 1 <= width <= 8:
            raise ValueError("cut short")
        if width > 1:  # the higher bytes of each think time, plane by plane
            high = zlib.decompress(data[end:])
            if len(high) != (width - 1) * (n0 + n1):
                raise ValueError("think times cut short")
            for k in range(1, width):
                plane = high[(k - 1) * (n0 + n1):k * (n0 + n1)]
                values = [v | b << 8 * k for v, b in zip(values, plane, strict=True)]
        elif end != len(data):
            raise ValueError("bytes after the telemetry")
        return {"decision_ms": decision_ms, "think_ms": [[v / 10 for v in values[:n0]], [v / 10 for v in values[n0:]]],
                "slowest": slowest, "incidents": incidents, "dropped": dropped}
    except (ValueError, TypeError, zlib.error, msgspec.DecodeError) as e:
        raise UnreadableRecord(game_id, f"telemetry: {e}") from None


# ---------------------------------------------------------------------- times

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)


def ms_of_iso(iso: str) -> int:
    """A stored time as the server writes it (ISO 8601, UTC, to the millisecond: ``…T12:00:00.000Z``)
    in milliseconds since 1970, which PostgreSQL keeps in 8 bytes instead of 25 (in the row
    and in every index that orders by it). Raises ``ValueError`` for a time that is not one."""
    return (datetime.fromisoformat(iso) - _EPOCH) // _MS


_NAIVE_EPOCH = datetime(1970, 1, 1)


def iso_of_ms(ms: int) -> str:
    """The time :func:`ms_of_iso` took, as the server wrote it."""
    return (_NAIVE_EPOCH + ms * _MS).isoformat(timespec="milliseconds") + "Z"


def jsonb_order(value: Any) -> Any:
    """``value`` with its objects' keys in the order PostgreSQL's ``jsonb`` gives them back
    (shorter keys first, then by bytes), so a value decoded from its packed form is the
    same JSON, byte for byte, as one read back from a ``jsonb`` column."""
    if isinstance(value, dict):
        return {k: jsonb_order(value[k]) for k in sorted(value, key=lambda k: (len(k.encode()), k.encode()))}
    if isinstance(value, list):
        return [jsonb_order(v) for v in value]
    return value
