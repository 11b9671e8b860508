"""The protocol's contract cannot drift: the checked-in JSON Schema matches the structs, every
message has a distinct ``type`` tag, and every example message in PROTOCOL.md decodes.

PROTOCOL.md convention: a code block fenced as ```json holds exactly one complete WebSocket
message (a JSON object starting with ``{"type": …``). Everything else (moves, views, records,
HTTP bodies, abbreviated examples with "…") is fenced as ```jsonc, ```text or ```sh.
"""

from __future__ import annotations

import json
import re
import typing
from pathlib import Path

import msgspec
import pytest

from mandala_client.client import _decoder as client_decoder
from protocol import messages, schema
from protocol.live import LiveBatch
from protocol.messages import CLIENT_TYPES, ClientMessage, ServerMessage

DOC = Path(__file__).resolve().parents[2] / "protocol" / "PROTOCOL.md"
BLOCK = re.compile(r"^```(\w*)[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)


def tags(union: object) -> list[str]:
    return [cls.__struct_config__.tag for cls in typing.get_args(union)]


CLIENT_TAGS = tags(ClientMessage)
SERVER_TAGS = tags(ServerMessage)


def doc_text() -> str:
    return DOC.read_text(encoding="utf-8")


def json_blocks() -> list[tuple[int, str]]:
    """(line number, text) of every ```json block in PROTOCOL.md."""
    text = doc_text()
    return [(text.count("\n", 0, m.start()) + 1, m.group(2)) for m in BLOCK.finditer(text) if m.group(1) == "json"]


def is_subset(small: object, big: object) -> bool:
    """``small`` has no key or value that ``big`` lacks (defaults may be left out of ``small``)."""
    if isinstance(small, dict):
        return isinstance(big, dict) and all(k in big and is_subset(v, big[k]) for k, v in small.items())
    if isinstance(small, list):
        return isinstance(big, list) and len(small) == len(big) and all(map(is_subset, small, big))
    return small == big and type(small) is type(big)


# --------------------------------------------------------------------------- schema


def test_checked_in_schema_is_current() -> None:
    stale = schema.stale()
    assert not stale, f"protocol/schema/ is stale ({', '.join(stale)}): run `make schema`"


def test_check_mode_passes_in_process(capsys: pytest.CaptureFixture[str]) -> None:
    assert schema.main(["--check"]) == 0


def test_check_mode_names_a_stale_file(tmp_path: Path) -> None:
    schema.write(tmp_path)
    assert schema.stale(tmp_path) == []
    (tmp_path / "view.json").write_text('{"stale": true}\n', encoding="utf-8")
    (tmp_path / "move.json").unlink()
    assert schema.stale(tmp_path) == ["move.json", "view.json"]


def test_generation_is_deterministic() -> None:
    first, second = schema.generate(), schema.generate()
    assert first == second
    for name, text in first.items():
        assert text.endswith("}\n") and not text.endswith("\n\n"), name
        assert json.loads(text)["x-protocol-version"] == messages.PROTOCOL_VERSION
        assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n", name


def test_schema_covers_every_message_type() -> None:
    for name, wanted in (("client-message.json", CLIENT_TAGS), ("server-message.json", SERVER_TAGS)):
        doc = json.loads(schema.generate()[name])
        assert sorted(doc["discriminator"]["mapping"]) == sorted(wanted)


# --------------------------------------------------------------------------- type tags


def test_type_tags_are_distinct() -> None:
    assert len(CLIENT_TAGS) == len(set(CLIENT_TAGS)), CLIENT_TAGS
    assert len(SERVER_TAGS) == len(set(SERVER_TAGS)), SERVER_TAGS
    assert not set(CLIENT_TAGS) & set(SERVER_TAGS), "a type tag names both a client and a server message"
    assert set(CLIENT_TAGS) == CLIENT_TYPES
    for union in (ClientMessage, ServerMessage):
        for cls in typing.get_args(union):
            assert cls.__struct_config__.tag_field == "type", cls


# --------------------------------------------------------------------------- PROTOCOL.md


def test_doc_has_example_messages() -> None:
    assert len(json_blocks()) >= len(CLIENT_TAGS) + len(SERVER_TAGS)


@pytest.mark.parametrize("line,block", json_blocks(), ids=lambda v: f"line{v}" if isinstance(v, int) else "")
def test_doc_example_decodes(line: int, block: str) -> None:
    assert re.match(r'\s*\{\s*"type"\s*:', block), (
        f"PROTOCOL.md line {line}: a ```json block must be one message starting with {{\"type\": …; "
        "fence other JSON as ```jsonc"
    )
    raw = json.loads(block)
    kind = raw["type"]
    if kind in CLIENT_TAGS:
        msg = msgspec.json.decode(block, type=ClientMessage)
        # Clients may leave optional fields out; nothing else may differ.
        assert is_subset(raw, msgspec.to_builtins(msg)), f"line {line}: {kind} example has fields the type lacks"
    elif kind == "batch":  # /live (§18.7)
        batch = msgspec.json.decode(block, type=LiveBatch)
        assert msgspec.to_builtins(batch) == raw, f"line {line}: the batch example differs from what the server encodes"
    else:
        assert kind in SERVER_TAGS, f"line {line}: unknown message type {kind!r}"
        msg = msgspec.json.decode(block, type=ServerMessage)
        # The server always sends every field: examples must show exactly what it sends.
        assert msgspec.to_builtins(msg) == raw, f"line {line}: {kind} example differs from what the server encodes"


@pytest.mark.parametrize("line,block", json_blocks(), ids=lambda v: f"line{v}" if isinstance(v, int) else "")
def test_a_field_added_later_is_ignored_in_a_server_message_and_refused_in_a_bots(line: int, block: str) -> None:
    """PROTOCOL.md §3: the server refuses a field it does not define; a client reads the
    server's messages tolerantly, so a field a later server adds breaks no client of this
    version (the Python client decodes with :data:`mandala_client.client._decoder`)."""
    raw = json.loads(block)
    later = json.dumps({**raw, "added_later": {"any": [1, "thing"]}})
    if raw["type"] in CLIENT_TAGS:
        with pytest.raises(msgspec.ValidationError, match="added_later"):
            msgspec.json.decode(later, type=ClientMessage)
    elif raw["type"] == "batch":
        assert msgspec.to_builtins(msgspec.json.decode(later, type=LiveBatch)) == raw
    else:
        assert msgspec.to_builtins(client_decoder.decode(later)) == raw


def test_doc_shows_every_message_type() -> None:
    shown = {json.loads(block)["type"] for _, block in json_blocks()}
    missing = (set(CLIENT_TAGS) | set(SERVER_TAGS)) - shown
    assert not missing, f"PROTOCOL.md has no ```json example of: {sorted(missing)}"


def test_doc_has_a_section_per_message_type() -> None:
    headings = re.findall(r"^#{2,4} .*?`(\w+)`", doc_text(), re.M)
    missing = (set(CLIENT_TAGS) | set(SERVER_TAGS)) - set(headings)
    assert not missing, f"PROTOCOL.md has no section for: {sorted(missing)}"


def test_doc_lists_every_error_code() -> None:
    listed = set(re.findall(r"^\| `(\w+)` \|", doc_text(), re.M))
    missing = set(typing.get_args(messages.ErrorCode)) - listed
    assert not missing, f"PROTOCOL.md's error table lacks: {sorted(missing)}"


def test_doc_lists_every_close_code() -> None:
    text = doc_text()
    codes = [v for k, v in vars(messages).items() if k.startswith("CLOSE_")]
    assert codes
    for code in codes:
        assert re.search(rf"^\| {code} \|", text, re.M), f"close code {code} is not in PROTOCOL.md's table"


def test_doc_states_the_protocol_version() -> None:
    assert f"version {messages.PROTOCOL_VERSION}" in doc_text().splitlines()[0]
