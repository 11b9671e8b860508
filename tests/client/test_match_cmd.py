"""``mandala match``: the command runs, rates and writes records."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from mandala import replay

BOT = str(Path(__file__).with_name("first_legal_bot.py"))
KEYS = {"a", "b", "seed", "games", "deals", "wins", "draws", "losses", "score", "elo", "elo_low", "elo_high",
        "end_reasons", "forfeits", "seconds", "stopped_early", "sprt", "games_planned"}


def _match(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mandala_cli.main", "match", *args],
                          capture_output=True, text=True, timeout=120)


def test_match_prints_the_json_line(tmp_path: Path) -> None:
    done = _match("random", "random", "--games", "4", "--jobs", "2", "--records", str(tmp_path))
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(figures) >= KEYS
    assert figures["games"] == 4 and figures["deals"] == 2
    assert figures["wins"] + figures["draws"] + figures["losses"] == 4
    assert "4/4" in done.stderr  # the progress bar
    records = sorted(tmp_path.glob("game-*.json"))
    assert len(records) == 4
    first, second = (json.loads(p.read_text()) for p in records[:2])
    assert first["deck"] == second["deck"] and first["first_player"] == second["first_player"]  # duplicate deal
    assert replay(records[0].read_bytes()).is_over


def test_match_rounds_games_up_and_runs_sprt() -> None:
    done = _match("greedy", "random", "--games", "3", "--jobs", "1", "--sprt", "0", "20", "--seed", "2")
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["games_planned"] == 4
    assert figures["sprt"]["verdict"] in ("H1 accepted", "H0 accepted", "continue")
    assert "LLR" in done.stdout


def test_match_with_an_external_program() -> None:
    done = _match(f"cmd:{sys.executable} {BOT}", "random", "--games", "2", "--jobs", "1")
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["games"] == 2 and figures["forfeits"] == {"A": 0, "B": 0}


def test_match_refuses_an_unknown_bot() -> None:
    done = _match("nosuchbot", "random", "--games", "2")
    assert done.returncode == 2 and "unknown bot" in done.stderr
