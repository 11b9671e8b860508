"""PROTOCOL.md's transcript (§9.2) and its complete game examples are what the real server
sends: replay the scripted game of ``scripts/transcript.py`` and compare, frame by frame."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import transcript

DOC = Path(__file__).resolve().parents[2] / "protocol" / "PROTOCOL.md"
DOC_GAME_ID = "sH3f9QkB"
DOC_TOKEN = "mdl_o4mZB2n8v1uJc3Qx6V0yHkTq9sWdLpEa7fNrGtYbKiM"
ELAPSED = re.compile(r'"elapsed_ms": [0-9.]+')


def doc_section(title: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    start = text.index(title)
    return text[start : text.index("\n## ", start)]


def as_in_doc(obj: Any, result: dict[str, Any]) -> Any:
    """A captured frame with the doc's game id and token in place of the random ones."""
    text = json.dumps(obj, ensure_ascii=False)
    text = text.replace(result["game_id"], DOC_GAME_ID).replace(result["tokens"]["alice"], DOC_TOKEN)
    return json.loads(text)


async def test_transcript_and_examples_match_the_server() -> None:
    result = await transcript.capture()
    frames = [(d, as_in_doc(m, result)) for d, m in result["alice"]]

    block = re.search(r"```text\n(.*?)```", doc_section("### 9.2"), re.S)
    assert block is not None
    documented = [line for line in block.group(1).splitlines() if line and not line.startswith("#")]
    captured = [transcript.abbreviate(d, m) for d, m in frames]
    assert [ELAPSED.sub('"elapsed_ms": …', x) for x in documented] == [ELAPSED.sub('"elapsed_ms": …', x) for x in captured]

    # Every complete example of this game (decision, update, game_over) is a frame the server sent.
    sent = [m for _, m in frames] + [as_in_doc(m, result) for m in result["spectator"]]
    text = DOC.read_text(encoding="utf-8")
    examples = [json.loads(b) for b in re.findall(r"^```json\n(.*?)^```", text, re.S | re.M)]
    checked = 0
    for ex in examples:
        if ex.get("game_id") == DOC_GAME_ID and ex["type"] in ("decision", "update", "game_over"):
            assert ex in sent, f"PROTOCOL.md's {ex['type']} example is not what the server sends"
            checked += 1
    assert checked >= 3
