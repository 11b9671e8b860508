"""What storage keeps of a game, packed (``server/storage/packing.py``): results and telemetry
come back as the same JSON, byte for byte, whatever their shape; damaged ones are refused."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.games.telemetry import Telemetry
from server.storage.packing import (
    END_REASONS,
    PACKED,
    UnreadableRecord,
    jsonb_order,
    pack_result,
    pack_telemetry,
    unpack_result,
    unpack_telemetry,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
results = st.fixed_dictionaries({
    "winner": st.sampled_from([0, 1, None]),
    "end_reason": st.sampled_from(END_REASONS),
    "scores": st.lists(st.integers(0, 300), min_size=2, max_size=2),
    "cup_sizes": st.lists(st.integers(0, 108), min_size=2, max_size=2),
}).map(lambda r: {k: r[k] for k in ("winner", "end_reason", "scores", "cup_sizes")})  # GameResult's order
odd_results = st.one_of(
    results.map(lambda r: {**r, "winner": True}),  # a bool is not a seat
    results.map(lambda r: {**r, "winner": 0.0}),  # nor a float
    results.map(lambda r: {**r, "end_reason": "score"}),  # a reason this server does not know
    results.map(lambda r: {**r, "scores": [-1, 3]}),
    results.map(lambda r: {**r, "extra": 1}),
    results.map(lambda r: dict(reversed(list(r.items())))),  # another key order
    st.dictionaries(st.text(max_size=6), json_values, max_size=5),
)


def same_json(a: Any, b: Any) -> bool:
    return msgspec.json.encode(a) == msgspec.json.encode(b)


@given(results)
def test_a_result_packs_into_seven_bytes_and_back(result: dict[str, Any]) -> None:
    data = pack_result(result)
    assert data is not None and data[0] == PACKED and len(data) <= 11
    assert same_json(unpack_result("g", data), result)
    assert same_json(unpack_result("g", data, jsonb=True), jsonb_order(result))  # as PostgreSQL's jsonb gave it


@given(odd_results)
def test_a_result_of_another_shape_is_kept_as_json(result: dict[str, Any]) -> None:
    data = pack_result(result)
    assert data is not None and same_json(unpack_result("g", data), result)
    assert same_json(unpack_result("g", data, jsonb=True), jsonb_order(result))


seconds = st.floats(0, 100, allow_nan=False)
incidents = st.lists(st.fixed_dictionaries({"kind": st.sampled_from(["refused", "timeout", "disconnect"]),
                                            "code": st.text(max_size=10)}), max_size=3)


@given(st.lists(st.tuples(st.integers(0, 1), seconds), max_size=120), incidents, st.integers(0, 5),
       st.integers(1, 60000))
@settings(max_examples=200)
def test_telemetry_packs_to_a_few_bytes_a_move_and_back(moves: list[tuple[int, float]],
                                                            noted: list[dict[str, Any]], dropped: int,
                                                            decision_ms: int) -> None:
    t = Telemetry(decision_ms)
    for ply, (seat, s) in enumerate(moves):
        t.moved(seat, ply, s)
    t.incidents, t.dropped = noted, dropped
    telemetry = t.to_json()
    data = pack_telemetry(telemetry)
    assert data is not None and data[0] == PACKED
    assert same_json(unpack_telemetry("g", data), telemetry)
    if not noted and not dropped:
        assert len(data) <= 32 + 3 * len(moves)  # think times up to 100 s here; 1.5 bytes a move in play


@given(st.dictionaries(st.text(max_size=12), json_values, max_size=6))
def test_telemetry_of_another_shape_is_kept_as_json(telemetry: dict[str, Any]) -> None:
    data = pack_telemetry(telemetry)
    assert data is not None and same_json(unpack_telemetry("g", data), telemetry)


def test_think_times_that_tenths_would_change_are_kept_as_json() -> None:
    telemetry = {"decision_ms": 1000, "think_ms": [[12.34], []], "slowest": [[0, 12.34], None], "incidents": [],
                 "dropped": 0}
    data = pack_telemetry(telemetry)
    assert data is not None and data[0] != PACKED and unpack_telemetry("g", data) == telemetry


@pytest.mark.parametrize("data", [b"\x01\x03\x00\x01\x02\x03\x04", b"\x01\x00\x09\x01\x02\x03\x04", b"\x01\x00\x00\x01",
                                  b"\x01\x00\x00\x01\x02\x03\x04\x05", b"\x78\x9c\x0b", b""])
def test_a_damaged_result_is_refused_naming_the_game(data: bytes) -> None:
    with pytest.raises(UnreadableRecord, match="game g7: its stored record does not decode"):
        unpack_result("g7", data)


@pytest.mark.parametrize("data", [b"\x01\x88", b"\x01\x05\x02\x0a", b"\x01\x05\x00\x00\x00\x00\x78\x9c", b"\x78\x9c"])
def test_damaged_telemetry_is_refused_naming_the_game(data: bytes) -> None:
    with pytest.raises(UnreadableRecord, match=r"game g7: .*telemetry"):
        unpack_telemetry("g7", data)
