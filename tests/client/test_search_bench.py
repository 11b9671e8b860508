"""The search's benchmark (``bench/search.py``) runs as ``make bench`` runs it and reports what
its docstring promises: the positions it decides at, an iteration's cost and its parts, and,
with ``--repo``, the same measured in another checkout alternately with this one.

Its figures are timings, so only their shape is checked here, never their size."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "search.py"
SMALL = ["--every", "40", "--iterations", "20", "--runs", "1"]


def _run(*args: str) -> str:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, check=True, capture_output=True,
                          text=True, timeout=300).stdout


def test_positions_are_turns_with_a_choice_taken_every_kth() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        spec = importlib.util.spec_from_file_location("search_bench", SCRIPT)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "bench"))
    every_one = module.positions(1)
    every_40 = module.positions(40)
    assert len(every_40) == (len(every_one) + 39) // 40
    for game in every_one:
        assert game.phase == "turn" and len(game.legal_codes()) > 1
    assert [g.history for g in every_40] == [g.history for g in every_one[::40]]


def test_prints_an_iteration_and_its_parts() -> None:
    figures = json.loads(_run(*SMALL))
    assert figures["iterations_a_decision"] == 20
    assert figures["positions"] >= 4
    for key in ("iteration_us", "sample_us", "playout_us", "judgement_us"):
        assert figures[key] > 0, key
    parts = figures["sample_us"] + figures["playout_us"] + figures["tree_us"]
    assert abs(parts - figures["iteration_us"]) <= 0.15  # the rest is what the parts leave


def test_repo_compares_two_checkouts_round_by_round() -> None:
    out = _run(*SMALL[:4], "--runs", "2", "--repo", str(ROOT)).splitlines()
    assert [line.split(":")[0] for line in out[:2]] == ["round 1", "round 2"]
    summary = json.loads(out[2])
    assert summary["repo"] == str(ROOT)
    assert summary["this_us"] > 0 and summary["repo_us"] > 0
    assert abs(summary["speedup"] - summary["repo_us"] / summary["this_us"]) < 0.002
