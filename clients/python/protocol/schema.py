"""Generate the JSON Schema files in the checkout's ``protocol/schema/`` from the msgspec structs.

The structs in :mod:`protocol.messages` and :mod:`mandala` are the single
source of truth; the schema files are derived from them so that bots in other
languages can validate or generate code without reading Python. The files are
checked in, so a change to a struct must come with regenerated files::

    python -m protocol.schema          # write protocol/schema/*.json
    python -m protocol.schema --check  # exit 1, naming stale files, if they differ

The server encodes every field of every struct it sends (``omit_defaults=False``), so in the
documents of what the server sends every property is required: a bot in another language can
rely on each one being there. A client's messages may leave out the fields that have defaults.

Output is deterministic (sorted keys, two-space indent, trailing newline, and
docstrings dedented the same way on every Python version), so the check is a
plain text comparison.
"""

from __future__ import annotations

import argparse
import inspect
import json
import sys
from pathlib import Path
from typing import Any

import msgspec

from mandala.moves import Move
from mandala.record import Record
from mandala.views import View

from .live import LiveMessage
from .messages import PROTOCOL_VERSION, ClientMessage, ServerMessage

SCHEMA_DIR = Path(__file__).resolve().parents[3] / "protocol" / "schema"
"""The checkout's ``protocol/schema/``, beside PROTOCOL.md: the contract for bots in every
language lives at the top of the checkout, these types in the client distribution
(``clients/python/protocol/``). Installed from a wheel, this module still builds the documents
(:func:`generate`); ``--dir`` says where to write them."""
DIALECT = "https://json-schema.org/draft/2020-12/schema"

SCHEMAS: dict[str, tuple[Any, str, str, bool]] = {
    "client-message.json": (
        ClientMessage,
        "ClientMessage",
        "Any message a client (bot or spectator) may send over the WebSocket; the `type` field names it.",
        False,
    ),
    "server-message.json": (
        ServerMessage,
        "ServerMessage",
        "Any message the server sends over the WebSocket; the `type` field names it.",
        True,
    ),
    "live-message.json": (
        LiveMessage,
        "LiveMessage",
        "Any message the server pushes to viewers of the /live WebSocket; the `type` field names it.",
        True,
    ),
    "move.json": (Move, "Move", "A move in R22 notation: the `move` of a `move` message, the items of `legal`.",
                  False),
    "view.json": (View, "View", "What a seat (or a spectator) may see of a game (R24).", True),
    "record.json": (Record, "Record", "A whole game (R23), as `game_over` and GET /api/games/{id}/record give it.",
                    True),
}
"""File name -> (type, title, description, whether only the server writes it: then every
property is required)."""


def _clean(node: Any) -> Any:
    """Dedent every ``description`` the same way (Python 3.13 dedents docstrings itself)."""
    if isinstance(node, dict):
        return {k: inspect.cleandoc(v) if k == "description" and isinstance(v, str) else _clean(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_clean(v) for v in node]
    return node


def _require_all(node: Any) -> Any:
    """Every object's properties required (what the server sends carries each field)."""
    if isinstance(node, dict):
        out = {k: _require_all(v) for k, v in node.items()}
        if isinstance(out.get("properties"), dict):
            out["required"] = list(out["properties"])
        return out
    if isinstance(node, list):
        return [_require_all(v) for v in node]
    return node


def build(tp: Any, title: str, description: str, sent_by_server: bool = False) -> dict[str, Any]:
    """The JSON Schema document for ``tp``."""
    schema: dict[str, Any] = _clean(msgspec.json.schema(tp))
    if sent_by_server:
        schema = _require_all(schema)
    schema["$schema"] = DIALECT
    schema["title"] = title
    schema["description"] = description
    schema["x-protocol-version"] = PROTOCOL_VERSION
    return schema


def render(schema: dict[str, Any]) -> str:
    """Stable text: sorted keys, two-space indent, UTF-8 as is, one trailing newline."""
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def generate() -> dict[str, str]:
    """File name -> the text that file must hold."""
    return {name: render(build(*spec)) for name, spec in SCHEMAS.items()}


def stale(directory: Path = SCHEMA_DIR) -> list[str]:
    """Names of the schema files in ``directory`` that are missing or differ from the structs."""
    out = []
    for name, text in generate().items():
        path = directory / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            out.append(name)
    return out


def write(directory: Path = SCHEMA_DIR) -> list[str]:
    """Write every schema file that changed; return the names written."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in generate().items():
        path = directory / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8", newline="\n")
            written.append(name)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m protocol.schema", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="do not write; exit 1 if a checked-in file is stale")
    parser.add_argument("--dir", type=Path, default=SCHEMA_DIR, help=f"where the files are (default {SCHEMA_DIR})")
    args = parser.parse_args(argv)
    directory: Path = args.dir
    if args.check:
        names = stale(directory)
        if names:
            print(f"stale JSON Schema in {directory}: {', '.join(names)}", file=sys.stderr)
            print("regenerate with: make schema", file=sys.stderr)
            return 1
        print(f"{len(SCHEMAS)} schema files up to date")
        return 0
    written = write(directory)
    for name in written:
        print(f"wrote {directory / name}")
    if not written:
        print(f"{len(SCHEMAS)} schema files up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
