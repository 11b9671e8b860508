"""Records (R23) in about a hundred and fifty bytes, for storing a season of games.

A record's JSON is some 6 KB, but it holds far less: the deal is an order of 108 cards of six
colors, and each move is one of the :data:`~mandala.moves.MOVES` (151 of them) made by one of
two seats. :func:`pack` writes exactly that — the colors and the move numbers a byte each,
the seats a bit each — deflated, with a CRC-32 that catches a damaged record; :func:`unpack`
gives back a :class:`~mandala.record.Record` equal to the one packed, so its JSON is the same,
byte for byte. Neither replays the game.

The packed bytes: ``0x02``, the CRC-32 of the payload (4 bytes, little-endian), the payload
deflated (raw). Version 1, still read, was the payload in the zlib format (it starts with
``0x78``), whose Adler-32 misses some reorderings of a few colors. The payload (integers as
LEB128 varints)::

    version (1 or 2), first_player, 108 deck colors,
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

VERSION = 2
_COLOR_CODE = {c: i for i, c in enumerate(COLORS)}


def write_varint(n: int, out: bytearray) -> None:
    """Append ``n`` (at least 0) to ``out`` as an LEB128 varint: seven bits a byte, low first."""
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
    write_varint(len(record.reshuffles), out)
    for order in record.reshuffles:
        write_varint(len(order), out)
        _colors(order, out)  # type: ignore[arg-type]
    moves = record.moves
    write_varint(len(moves), out)
    seats = bytearray((len(moves) + 7) // 8)
    for i, m in enumerate(moves):
        out.append(move_code(m))
        if m.player:
            seats[i // 8] |= 1 << (i % 8)
    out += seats
    deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    return bytes((VERSION,)) + zlib.crc32(out).to_bytes(4, "little") + deflate.compress(out) + deflate.flush()


class Reader:
    """Reads packed bytes from ``pos`` on; what is not there raises ``ValueError``."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def take(self, n: int) -> bytes:
        end = self.pos + n
        if end > len(self.data):
            raise ValueError("cut short")
        chunk = self.data[self.pos:end]
        self.pos = end
        return chunk

    def varint(self, bits: int = 35) -> int:
        """A varint of at most ``bits`` bits."""
        n = shift = 0
        while True:
            (byte,) = self.take(1)
            n |= (byte & 0x7F) << shift
            if byte < 0x80:
                return n
            shift += 7
            if shift >= bits:
                raise ValueError("a number out of range")

    def colors(self, n: int) -> list[str]:
        codes = self.take(n)
        if codes and max(codes) >= len(COLORS):
            raise ValueError("a color out of range")
        return [COLORS[c] for c in codes]


def _payload(data: bytes) -> tuple[bytes, int]:
    """The payload of a packed record and its version, checked."""
    try:
        if data[:1] != bytes((VERSION,)):
            return zlib.decompress(data), 1  # version 1: the zlib format, with its Adler-32
        inflate = zlib.decompressobj(-15)
        raw = inflate.decompress(data[5:])
    except zlib.error as e:
        raise ValueError(f"not a compact record ({e})") from None
    if not inflate.eof or inflate.unused_data:
        raise ValueError("not a compact record (cut short, or bytes after it)")
    if zlib.crc32(raw) != int.from_bytes(data[1:5], "little"):
        raise ValueError("not a compact record (its checksum does not match: damaged)")
    return raw, VERSION


def unpack(data: bytes) -> Record:
    """The record :func:`pack` wrote; raises :class:`ValueError` saying what is wrong if
    ``data`` is not one (damaged, cut short, or of an unknown version)."""
    raw, version = _payload(data)
    r = Reader(raw)
    inner, first = r.take(2)
    if inner != version:
        raise ValueError(f"a payload of version {inner} in a record of version {version}")
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
