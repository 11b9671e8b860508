"""Records (R23) in about a hundred and fifty bytes, for storing a season of games.

A record's JSON is some 6 KB, but it holds far less: the deal is an order of 108 cards of six
colors, and each move is one of the :data:`~mandala.moves.MOVES` (151 of them) made by one of
two seats. :func:`pack` writes exactly that — the colors and the move numbers a byte each,
the seats a bit each — and compresses it with zlib (whose checksum catches a damaged record);
:func:`unpack` gives back a :class:`~mandala.record.Record` equal to the one packed, so its
JSON is the same, byte for byte. Neither replays the game.

Layout before compression (integers as LEB128 varints)::

    version=1, first_player, 108 deck colors,
    reshuffle count, then each reshuffle: length, colors,
    move count, move numbers, seats (one bit a move, least significant bit first)
"""

from __future__ import annotations

import zlib

import msgspec

from .cards import COLORS
from .errors import RecordError
from .moves import MOVES
from .record import PlayedMove, Record, move_code, played_move

VERSION = 1
_COLOR_CODE = {c: i for i, c in enumerate(COLORS)}


def _varint(n: int, out: bytearray) -> None:
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _colors(colors: list[str], out: bytearray) -> None:
    try:
        out.extend(_COLOR_CODE[c] for c in colors)
    except KeyError as e:
        raise RecordError("R1", f"unknown color {e.args[0]!r}") from None


def pack(record: Record) -> bytes:
    """``record`` in its compact form (see the module's docstring)."""
    out = bytearray((VERSION, record.first_player))
    if len(record.deck) != 108:
        raise RecordError("R3", f"a deck has 108 cards, not {len(record.deck)}")
    _colors(record.deck, out)  # type: ignore[arg-type]
    _varint(len(record.reshuffles), out)
    for order in record.reshuffles:
        _varint(len(order), out)
        _colors(order, out)  # type: ignore[arg-type]
    moves = record.moves
    _varint(len(moves), out)
    seats = bytearray((len(moves) + 7) // 8)
    for i, m in enumerate(moves):
        out.append(move_code(m))
        if m.player:
            seats[i // 8] |= 1 << (i % 8)
    out += seats
    return zlib.compress(bytes(out), 9)


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if end > len(self.data):
            raise ValueError("cut short")
        chunk = self.data[self.pos:end]
        self.pos = end
        return chunk

    def varint(self) -> int:
        n = shift = 0
        while True:
            (byte,) = self.take(1)
            n |= (byte & 0x7F) << shift
            if byte < 0x80:
                return n
            shift += 7
            if shift > 28:
                raise ValueError("a count out of range")

    def colors(self, n: int) -> list[str]:
        codes = self.take(n)
        if codes and max(codes) >= len(COLORS):
            raise ValueError("a color out of range")
        return [COLORS[c] for c in codes]


def unpack(data: bytes) -> Record:
    """The record :func:`pack` wrote; raises :class:`ValueError` saying what is wrong if
    ``data`` is not one (damaged, cut short, or of an unknown version)."""
    try:
        raw = zlib.decompress(data)
    except zlib.error as e:
        raise ValueError(f"not a compact record ({e})") from None
    r = _Reader(raw)
    version, first = r.take(2)
    if version != VERSION:
        raise ValueError(f"compact record version {version}, this server reads {VERSION}")
    if first not in (0, 1):
        raise ValueError(f"first player {first}")
    deck = r.colors(108)
    reshuffles = [r.colors(r.varint()) for _ in range(r.varint())]
    count = r.varint()
    codes = r.take(count)
    seats = r.take((count + 7) // 8)
    if r.pos != len(raw):
        raise ValueError(f"{len(raw) - r.pos} bytes after the record")
    if codes and max(codes) >= len(MOVES):
        raise ValueError("a move out of range")
    moves: list[PlayedMove] = [played_move((seats[i >> 3] >> (i & 7)) & 1, code) for i, code in enumerate(codes)]
    return Record(deck=deck, reshuffles=reshuffles, first_player=first, moves=moves)  # type: ignore[arg-type]


def pack_dict(record: dict[str, object]) -> bytes:
    """:func:`pack` of a record as plain JSON objects (as storage holds them); raises
    :class:`~mandala.errors.RecordError` or ``msgspec.ValidationError`` if it is not one."""
    return pack(msgspec.convert(record, Record))
