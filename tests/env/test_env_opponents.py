"""The one-agent environments' opponent plays as in ``mandala match``: any bot a spec or an
object gives (``decide``, coroutines, the message hooks, external programs), told the game's
messages; and a game ended by a forfeit looks over to both the learner and the opponent."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pettingzoo.test import render_test

from mandala import Game, Move, View
from mandala_client.bots.search import SearchBot
from mandala_client.env import GameBatch, MandalaGymEnv, env
from mandala_client.env.core import SCORE_FORFEIT
from protocol.messages import Decision, GameOver, GameStart, Update

FIRST_LEGAL_BOT = Path(__file__).parents[1] / "client" / "first_legal_bot.py"


class AsyncBot:
    """``choose`` as a coroutine, as the online client allows."""

    async def choose(self, view: View, legal: list[Move]) -> Move:
        return legal[-1]


class DecideBot:
    """Only ``decide(decision)``: the whole message."""

    def __init__(self) -> None:
        self.plies: list[int] = []

    def decide(self, decision: Decision) -> Move:
        self.plies.append(decision.request_id)
        return decision.legal[0]


class ListeningBot:
    """Needs ``on_game_start`` before its first decision, and records what it hears."""

    def __init__(self) -> None:
        self.seat: int | None = None
        self.heard: list[str] = []
        self.over: GameOver | None = None

    def on_game_start(self, start: GameStart) -> None:
        self.seat = start.seat
        self.heard.append("game_start")

    def on_update(self, update: Update) -> None:
        self.heard.append("update")

    def on_game_over(self, over: GameOver) -> None:
        self.heard.append("game_over")
        self.over = over

    def choose(self, view: View, legal: list[Move]) -> Move:
        assert self.seat == view.seat, "on_game_start was not called first"
        return legal[0]


def _play_out(g: MandalaGymEnv, seed: int) -> dict[str, Any]:
    obs, info = g.reset(seed=seed)
    terminated = False
    while not terminated:
        obs, _, terminated, _, info = g.step(int(np.flatnonzero(obs["action_mask"])[0]))
    return info


@pytest.mark.parametrize("opponent", [AsyncBot(), DecideBot(), ListeningBot()], ids=type)
def test_a_bot_object_plays_in_the_gym_environment_as_in_a_match(opponent: Any) -> None:
    info = _play_out(MandalaGymEnv(opponent=opponent), 4)
    assert info["end_reason"] in ("deck", "river")


def test_the_opponent_hears_every_move_and_the_end() -> None:
    bot = ListeningBot()
    g = MandalaGymEnv(opponent=bot)
    info = _play_out(g, 5)
    assert g.game is not None
    plies = len(g.game.history)
    # game_start and its first update, one update after each move of either seat, game_over
    assert bot.heard == ["game_start"] + ["update"] * (plies + 1) + ["game_over"]
    assert bot.over is not None and bot.over.result.end_reason == info["end_reason"]
    assert bot.over.result.scores == info["scores"]


def test_a_learners_forfeit_is_a_resignation_to_the_opponent_and_looks_over() -> None:
    bot = ListeningBot()
    g = MandalaGymEnv(opponent=bot, illegal="forfeit")
    obs, start = g.reset(seed=6)
    obs, reward, terminated, _, info = g.step(int(np.flatnonzero(obs["action_mask"] == 0)[0]))
    assert (reward, terminated, info["end_reason"]) == (-1.0, True, "forfeit")
    assert bot.over is not None
    assert (bot.over.result.winner, bot.over.result.end_reason) == (1 - start["seat"], "resign")
    assert obs["observation"][:4].tolist() == [0.0, 0.0, 1.0, 0.0]  # phase over, not deciding
    assert not obs["action_mask"].any()


def test_a_forfeit_in_the_pettingzoo_environment_looks_over_to_both_agents() -> None:
    e = env(illegal="forfeit")
    e.reset(seed=2)
    agent = e.agent_selection
    e.step(int(np.flatnonzero(e.observe(agent)["action_mask"] == 0)[0]))
    for a in e.possible_agents:
        assert e.observe(a)["observation"][:4].tolist() == [0.0, 0.0, 1.0, 0.0]
    assert e.observe(agent)["observation"][4:].tolist() != [0.0] * (len(e.observe(agent)["observation"]) - 4)


def test_a_forfeit_under_the_score_reward_costs_more_than_any_margin() -> None:
    g = MandalaGymEnv(reward="score", illegal="forfeit")
    obs, _ = g.reset(seed=1)
    _, reward, terminated, _, _ = g.step(int(np.flatnonzero(obs["action_mask"] == 0)[0]))
    assert (reward, terminated) == (-SCORE_FORFEIT, True)
    e = env(reward="score", illegal="forfeit")
    e.reset(seed=1)
    agent = e.agent_selection
    e.step(int(np.flatnonzero(e.observe(agent)["action_mask"] == 0)[0]))
    assert e.rewards[agent] == -SCORE_FORFEIT
    assert env(reward="win", illegal="forfeit").illegal_penalty == 1.0
    assert env(reward="score", illegal="forfeit", illegal_penalty=5).illegal_penalty == 5.0
    with pytest.raises(ValueError, match="illegal_penalty is a finite number"):
        env(illegal="forfeit", illegal_penalty=True)


def test_a_search_opponent_keeps_its_tree_between_its_decisions() -> None:
    search = SearchBot(seed=3, iterations=60)
    g = MandalaGymEnv(opponent=search)
    obs, _ = g.reset(seed=7)
    carried = []
    for _ in range(12):
        obs, _, terminated, _, _ = g.step(int(np.flatnonzero(obs["action_mask"])[0]))
        carried.append(search.last_carried)
        if terminated:
            break
    assert any(c > 0 for c in carried), carried


def test_an_external_program_is_an_opponent_and_stops_with_its_game() -> None:
    g = MandalaGymEnv(opponent=f"cmd:{sys.executable} {FIRST_LEGAL_BOT}", seat=0)
    obs, _ = g.reset(seed=8)
    for _ in range(3):
        obs, *_ = g.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert g._other is not None
    proc = g._other.bot._proc
    assert proc is not None and proc.poll() is None  # playing
    g.reset(seed=9)  # a game left unfinished: its program is stopped, a new one plays the next
    assert proc.wait(timeout=10) is not None
    info = _play_out(g, 10)
    assert info["end_reason"] in ("deck", "river")
    assert g._other.bot._proc is None  # told game_over, the program ended
    obs, _ = g.reset(seed=11)
    obs, *_ = g.step(int(np.flatnonzero(obs["action_mask"])[0]))
    proc = g._other.bot._proc
    g.close()
    assert proc is not None and proc.wait(timeout=10) is not None


class ManyGamesBot(ListeningBot):
    """Plays several games at once, as on the arena: seats by game id, decided by ``decide``."""

    def __init__(self) -> None:
        super().__init__()
        self.seats: dict[str, int] = {}

    def on_game_start(self, start: GameStart) -> None:
        super().on_game_start(start)
        assert start.game_id not in self.seats, "a game id told twice"
        self.seats[start.game_id] = start.seat

    def decide(self, decision: Decision) -> Move:
        assert self.seats[decision.game_id] == decision.seat, "its game_start was not told first"
        return decision.legal[0]


def test_a_batch_tells_each_rows_opponent_its_own_game() -> None:
    bot = ManyGamesBot()
    batch = GameBatch(3, seed=2, opponent=bot)
    _, mask = batch.observations()
    while batch.finished < 3:
        _, mask, _ = batch.step(np.array([int(np.flatnonzero(m)[0]) for m in mask]))
    assert bot.heard.count("game_over") == batch.finished
    assert bot.heard.count("game_start") == batch.finished + 3  # the games still on
    batch.close()


def test_render_human_prints_the_spectators_view(capsys: pytest.CaptureFixture[str]) -> None:
    render_test(lambda render_mode=None: env(render_mode=render_mode))
    e = env(render_mode="human")
    e.reset(seed=1)
    assert e.render() is None
    assert '"private":null' in capsys.readouterr().out
    g = MandalaGymEnv(render_mode="human")
    g.reset(seed=1)
    assert g.render() is None
    with pytest.raises(ValueError, match="render_mode is None, 'ansi' or 'human'"):
        env(render_mode="rgb_array")


def test_last_and_agent_iter_before_reset_say_reset_first() -> None:
    e = env()
    with pytest.raises(AssertionError, match=r"reset\(\) needs to be called before last"):
        e.last()
    with pytest.raises(AssertionError, match=r"reset\(\) needs to be called before agent_iter"):
        e.agent_iter()
    with pytest.raises(AssertionError, match=r"reset\(\) needs to be called before view"):
        e.view("player_0")


def test_a_game_from_a_position_ends_with_its_moves_told() -> None:
    bot = ListeningBot()
    position = Game.new(seed=3)
    g = MandalaGymEnv(opponent=bot)
    obs, _ = g.reset(seed=3, options={"game": position})
    terminated = False
    while not terminated:
        obs, _, terminated, _, _ = g.step(int(np.flatnonzero(obs["action_mask"])[0]))
    assert bot.over is not None and len(bot.over.record.moves) == len(g.game.history)  # type: ignore[union-attr]
