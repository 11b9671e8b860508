"""mandala_client.external: an external program plays through JSON lines on stdin/stdout."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from mandala import Game, record_dict, replay
from mandala_client.bots import RandomBot
from mandala_client.external import ExternalBot
from mandala_client.offline import SpecError, load_bot, play_game

BOT = str(Path(__file__).with_name("first_legal_bot.py"))


def test_external_program_plays_a_whole_game(tmp_path: Path) -> None:
    log = tmp_path / "messages.txt"
    external = ExternalBot([sys.executable, BOT, str(log)])
    game = Game.new(seed=4, first_player=1)
    outcome = play_game([RandomBot(seed=1), external], game)
    assert outcome.forfeit is None and game.is_over
    decisions = []
    replay(record_dict(game), on_decision=lambda ply, g: decisions.append((g.to_move, g.legal_moves[0])))
    ours = [(seat, first) for seat, first in decisions if seat == 1]
    played = [m for m in record_dict(game)["moves"] if m["player"] == 1]
    assert [first for _, first in ours] == [load(m) for m in played]  # always the first legal move
    kinds = log.read_text().split()
    assert kinds[0] == "game_start" and kinds[-1] == "game_over"
    assert kinds.count("decision") == len(played)
    assert kinds.count("update") == len(game.history) + 1  # one per move, plus the opening one


def load(obj: dict[str, object]) -> object:
    from mandala import move_from_dict

    return move_from_dict({k: v for k, v in obj.items() if k != "player"})


def test_garbage_output_forfeits() -> None:
    bot = ExternalBot([sys.executable, "-c", "import sys; sys.stdin.readline(); print('hello?', flush=True)"])
    outcome = play_game([bot, RandomBot(seed=0)], Game.new(seed=2, first_player=0))
    assert outcome.forfeit == 0 and outcome.winner == 1 and "not JSON" in (outcome.error or "")


def test_program_that_exits_forfeits() -> None:
    bot = ExternalBot([sys.executable, "-c", "pass"])
    outcome = play_game([RandomBot(seed=0), bot], Game.new(seed=2, first_player=1))
    assert outcome.forfeit == 1 and outcome.winner == 0 and outcome.end_reason == "forfeit"


def test_silent_program_times_out() -> None:
    bot = ExternalBot([sys.executable, "-c", "import time; time.sleep(30)"])
    outcome = play_game([bot, RandomBot(seed=0)], Game.new(seed=2, first_player=0), decision_ms=50)
    assert outcome.forfeit == 0 and "deadline" in (outcome.error or "")


def test_cmd_spec_loads_an_external_bot() -> None:
    bot = load_bot(f"cmd:{sys.executable} {BOT}")
    assert isinstance(bot, ExternalBot) and bot.argv == [sys.executable, BOT]


def test_a_program_behind_a_wrapper_script_is_stopped_with_it(tmp_path: Path) -> None:
    """``cmd:./my-bot`` is often a shell script that starts the real bot: when the driver
    stops the script (here the bot hangs and times out), the bot it started stops too."""
    pid_file = tmp_path / "bot.pid"
    hang = f"import os, sys, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); sys.stdin.readline(); time.sleep(600)"
    wrapper = tmp_path / "wrap.sh"
    wrapper.write_text(f'#!/bin/sh\n{sys.executable} -c "{hang}"\n')
    wrapper.chmod(0o755)
    bot = ExternalBot([str(wrapper)])
    outcome = play_game([bot, RandomBot(seed=0)], Game.new(seed=2, first_player=0), decision_ms=200)
    assert outcome.forfeit == 0 and "deadline" in (outcome.error or "")
    bot.close()
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while running(pid):  # killed, it is gone as soon as the kernel has delivered the signal
        assert time.monotonic() < deadline, f"the wrapped bot {pid} runs on"
        time.sleep(0.05)


def running(pid: int) -> bool:
    """Whether the process is alive (not gone, not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def test_a_bot_whose_choice_raises_forfeits_its_game_not_the_match() -> None:
    class Broken:
        def choose(self, view: object, legal: list[object]) -> object:
            raise RuntimeError("out of ideas")

    outcome = play_game([Broken(), RandomBot(seed=0)], Game.new(seed=2, first_player=0))
    assert (outcome.forfeit, outcome.winner, outcome.end_reason) == (0, 1, "forfeit")
    assert outcome.error == "its choice failed: RuntimeError: out of ideas"


def test_a_cmd_spec_naming_no_program_is_refused_before_any_game() -> None:
    with pytest.raises(SpecError, match="no such program"):
        load_bot("cmd:./no-such-bot --offline")
