"""``mandala match``: the command runs, rates and writes records."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from mandala import replay

BOT = str(Path(__file__).with_name("first_legal_bot.py"))
KEYS = {"a", "b", "seed", "games", "deals", "wins", "draws", "losses", "score", "elo", "elo_low", "elo_high",
        "end_reasons", "forfeits", "seconds", "stopped_early", "sprt", "games_planned", "elo_bounded"}


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


def test_a_spec_whose_options_the_bot_refuses_stops_the_match_in_one_line(tmp_path: Path) -> None:
    """A misspelt option, a word for a number, an option a class of the user's does not take:
    each is named before a game starts, never a worker's traceback (with one job or several)."""
    (tmp_path / "plain_bot.py").write_text("class PlainBot:\n    def choose(self, view, legal):\n        return legal[0]\n")
    cases = {
        "search,budgt=0.5": "bot 'search' takes no option 'budgt' (its options: budget, iterations, exploration, "
                            "policy, depth, clock, evaluation, tree_depth, reuse)",
        "search,budget=abc": "bot 'search': option budget takes a number, not 'abc'",
        "house:3,depth=2": "bot 'house:3' takes no option 'depth' (its options: budget)",
        "search,policy=best": "cannot create bot 'search,policy=best': ValueError: policy is 'random' or 'weighted', "
                              "not 'best'",
        "plain_bot:PlainBot,depth=3": "cannot create bot 'plain_bot:PlainBot,depth=3': TypeError: PlainBot() takes no "
                                      "arguments",
    }
    for spec, said in cases.items():
        for jobs in ("1", "2"):
            done = subprocess.run([sys.executable, "-m", "mandala_cli.main", "match", spec, "random", "--games", "2",
                                   "--jobs", jobs], capture_output=True, text=True, timeout=120, cwd=tmp_path)
            assert (done.returncode, done.stdout, done.stderr) == (2, "", f"mandala match: {said}\n"), (spec, jobs)


def test_the_unknown_bot_error_and_the_help_name_the_policy_spec() -> None:
    """A trained policy plays as ``policy:module:attr`` (docs/training.md): the refusal of a
    misspelt spec and ``--help`` list that form beside the others."""
    done = _match("nosuchbot", "random", "--games", "2")
    assert done.returncode == 2 and "policy:package.module:attr" in done.stderr
    helped = _match("--help")
    assert helped.returncode == 0 and "policy:package.module:attr" in " ".join(helped.stdout.split())


def test_a_perfect_score_reports_its_finite_lower_bound_in_text_and_json() -> None:
    # greedy beats random in all 20 games of seed 1 (10 deals). Wilson's lower end at a score of
    # 1 over 20 games is 20 / (20 + z²), whose Elo is 400·log10(20 / z²) with z = 1.95996: +286.6.
    done = _match("greedy", "random", "--games", "20", "--seed", "1", "--jobs", "1")
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert (figures["wins"], figures["draws"], figures["losses"]) == (20, 0, 0)
    bound = round(400 * math.log10(20 / 1.959963984540054**2), 1)
    assert bound == 286.6
    assert (figures["elo"], figures["elo_low"], figures["elo_high"], figures["elo_bounded"]) == (None, bound, None, "below")
    assert "Elo difference A - B: at least +286.6 (95% interval bounded below only: A won every game)" in done.stdout
    assert "inf" not in done.stdout


def test_a_zero_score_reports_its_finite_upper_bound() -> None:
    done = _match("random", "greedy", "--games", "20", "--seed", "1", "--jobs", "1")
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert (figures["wins"], figures["draws"], figures["losses"]) == (0, 0, 20)
    assert (figures["elo"], figures["elo_low"], figures["elo_high"], figures["elo_bounded"]) == (None, None, -286.6, "above")
    assert "Elo difference A - B: at most -286.6 (95% interval bounded above only: A lost every game)" in done.stdout
    assert "inf" not in done.stdout


def test_the_text_and_the_json_give_the_same_figures() -> None:
    done = _match("random", "random", "--games", "40", "--seed", "3", "--jobs", "2")
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["elo_bounded"] == "both"
    line = f"Elo difference A - B: {figures['elo']:+.1f} (95% interval {figures['elo_low']:+.1f} to {figures['elo_high']:+.1f})"
    assert line in done.stdout
    assert figures["elo_low"] < figures["elo"] < figures["elo_high"]


def test_ctrl_c_ends_a_parallel_match_at_once_with_the_deals_played_out(tmp_path: Path) -> None:
    """Ctrl-C reaches the match's whole process group, as a terminal sends it: the games under
    way end, none more starts, and the deals played out are reported (exit 130). So also when
    the match started with SIGINT ignored (from a script, with `&`)."""
    ignored = lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)  # noqa: E731 - as a script's `&` starts it
    proc = subprocess.Popen([sys.executable, "-m", "mandala_cli.main", "match", "greedy", "random", "--games",
                             "4000", "--jobs", "2", "--records", str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=ignored)
    try:
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob("game-*.json"))) < 10:  # under way
            assert time.monotonic() < deadline and proc.poll() is None, "the match never got going"
            time.sleep(0.05)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    figures = json.loads(out.strip().splitlines()[-1])
    written = len(list(tmp_path.glob("game-*.json")))
    assert written < 200  # nothing went on being played
    # Whole deals only, of the games the driver heard of (a worker may have written a record
    # for a game whose result was still on its way when Ctrl-C came).
    assert 2 <= figures["games"] <= written and figures["games"] % 2 == 0
    assert "interrupted" in err and "Traceback" not in err
