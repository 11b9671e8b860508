"""R23 records in their compact form (``mandala/compact.py``): any game packs and unpacks to the
same record — the same JSON, byte for byte — in a few hundred bytes, and damaged bytes are
refused, never read as another record."""

from __future__ import annotations

import random
import zlib

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mandala import Game, compact, record_of


def random_game(seed: int, max_plies: int | None = None) -> Game:
    rng = random.Random(seed)
    game = Game.new(seed=seed, first_player=rng.randrange(2))
    while game.to_move is not None and (max_plies is None or len(game.history) < max_plies):
        game.push(rng.choice(game.legal_moves))
    return game


@given(st.integers(0, 2**63 - 1), st.one_of(st.none(), st.integers(0, 60)))
@settings(max_examples=200, deadline=None)
def test_r23_a_record_packs_and_unpacks_to_the_same_json(seed: int, max_plies: int | None) -> None:
    record = record_of(random_game(seed, max_plies))
    packed = compact.pack(record)
    assert compact.unpack(packed) == record
    assert msgspec.json.encode(compact.unpack(packed)) == msgspec.json.encode(record)
    assert len(packed) < 400 or len(record.reshuffles) > 3


@given(st.integers(0, 2**63 - 1), st.data())
@settings(max_examples=200, deadline=None)
def test_r23_damaged_compact_records_are_refused(seed: int, data: st.DataObject) -> None:
    packed = bytearray(compact.pack(record_of(random_game(seed))))
    cut = data.draw(st.integers(0, len(packed) - 1))
    with pytest.raises(ValueError):
        compact.unpack(bytes(packed[:cut]))
    i = data.draw(st.integers(0, len(packed) - 1))
    packed[i] ^= data.draw(st.integers(1, 255))
    try:
        back = compact.unpack(bytes(packed))
    except ValueError:
        return
    # A flipped bit the checksum cannot see would have to leave a valid record: never observed.
    assert back == record_of(random_game(seed))


def test_r23_pack_refuses_what_is_not_a_record() -> None:
    from mandala.errors import RecordError

    record = record_of(random_game(3))
    with pytest.raises(RecordError):
        compact.pack(msgspec.structs.replace(record, deck=record.deck[:100]))
    with pytest.raises(ValueError, match="not a compact record"):
        compact.unpack(b'{"deck": []}')


def payload(packed: bytes) -> bytes:
    """What a packed record holds, inflated (its version byte first)."""
    return zlib.decompressobj(-15).decompress(packed[5:])


def deflated(raw: bytes) -> bytes:
    d = zlib.compressobj(9, zlib.DEFLATED, -15)
    return d.compress(raw) + d.flush()


def test_r23_records_packed_by_version_1_still_unpack() -> None:
    """Databases of schema 8 hold records in version 1 (the zlib format): still read."""
    record = record_of(random_game(11))
    v1 = zlib.compress(b"\x01" + payload(compact.pack(record))[1:], 9)
    assert v1[0] == 0x78 and compact.unpack(v1) == record
    with pytest.raises(ValueError, match="payload of version 2 in a record of version 1"):
        compact.unpack(zlib.compress(payload(compact.pack(record)), 9))


def test_r23_damage_the_zlib_checksum_misses_is_refused() -> None:
    """Three cards of the deck rotated, (g, b, p) → (p, g, b) with 2p = g + b, leave zlib's
    Adler-32 as it was: version 1 would serve a wrong deal. The CRC-32 refuses it."""
    for seed in range(100):
        record = record_of(random_game(seed))
        raw = bytearray(payload(compact.pack(record)))
        deck = raw[2:110]
        i = next((i for i in range(106) if deck[i] != deck[i + 1] and 2 * deck[i + 2] == deck[i] + deck[i + 1]), None)
        if i is not None:
            break
    assert i is not None
    damaged = bytearray(raw)
    damaged[2 + i:5 + i] = bytes((raw[4 + i], raw[2 + i], raw[3 + i]))
    assert zlib.adler32(bytes(damaged)) == zlib.adler32(bytes(raw))  # what version 1 checked
    v1 = b"\x01" + bytes(damaged[1:])
    assert compact.unpack(zlib.compress(v1, 9)).deck != record.deck  # version 1: served wrong
    v2 = compact.pack(record)
    with pytest.raises(ValueError, match="checksum does not match"):
        compact.unpack(v2[:5] + deflated(bytes(damaged)))
