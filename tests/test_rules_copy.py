"""The rules ship with the project: ``docs/RULES.md`` is the binding RULES.md (R1–R24 with every
Decision), linked from README.md and PROTOCOL.md, and identical to the organizers' copy
(``../shared/rules/RULES.md`` beside the checkout) wherever that copy is present."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "docs" / "RULES.md"
SHARED = ROOT.parent / "shared" / "rules" / "RULES.md"


def test_the_rules_are_in_the_repository_with_every_rule() -> None:
    text = RULES.read_text(encoding="utf-8")
    numbers = {int(n) for n in re.findall(r"\bR(\d+)\b", text)}
    assert set(range(1, 25)) <= numbers
    assert "Decision" in text


def test_readme_and_protocol_link_the_rules_inside_the_repository() -> None:
    for doc, link in ((ROOT / "README.md", "docs/RULES.md"), (ROOT / "protocol" / "PROTOCOL.md", "../docs/RULES.md")):
        text = doc.read_text(encoding="utf-8")
        assert f"]({link})" in text
        assert "shared/rules" not in text
        assert (doc.parent / link).resolve() == RULES


def test_the_copy_is_identical_to_the_binding_rules() -> None:
    if not SHARED.exists():
        pytest.skip(f"no {SHARED} beside this checkout to compare with")
    assert RULES.read_bytes() == SHARED.read_bytes(), f"docs/RULES.md differs from {SHARED}: copy it again"
