"""A policy trained in the environment plays unchanged: as a bot it makes, from the frames'
views, the observations the environment made; ``mandala match`` rates it; and ``mandala-bot
--bot policy:...`` plays it on a real server (``mandala serve`` and ``mandala-bot`` as
processes, real sockets): the example's committed weights, and a policy a trainer written
against PettingZoo's API alone has just learned."""

from __future__ import annotations

import asyncio
import json
import random
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pettingzoo_trainer
from arena_testkit import BIN, create_bot_at, exit_of, mandala_bot, mandala_serve
from mandala import Game, view
from mandala_cli.main import main as mandala_main
from mandala_client import Client
from mandala_client.env import AGENTS, IllegalAction, MLPPolicy, PolicyBot, env, move_of
from mandala_client.offline import SpecError, load_bot

ROOT = Path(__file__).resolve().parents[2]
WEIGHTS = ROOT / "clients" / "python" / "examples" / "mlp.npz"
SPEC = f"policy:mandala_client.env.mlp:MLPPolicy,weights={WEIGHTS}"
HERE = Path(__file__).resolve().parent


def test_the_bot_makes_the_environments_observations_from_views_and_plays_the_policys_action() -> None:
    policy = MLPPolicy(WEIGHTS)
    bot = load_bot(SPEC)
    assert isinstance(bot, PolicyBot)
    e = env()
    rng = random.Random(1)
    for seed in range(4):
        e.reset(seed=seed)
        for agent in e.agent_iter():
            obs, _r, terminated, _t, _i = e.last()
            if terminated:
                e.step(None)
                continue
            game = e.game
            assert game is not None
            action = policy.act(obs)
            assert bot.choose(view(game, AGENTS.index(agent)), game.legal_moves) == move_of(action)
            e.step(action if rng.random() < 0.5 else int(rng.choice(np.flatnonzero(obs["action_mask"]))))


def test_a_policy_that_leaves_the_mask_is_named_and_bad_specs_are_refused(tmp_path: Path) -> None:
    game = Game.new(seed=2)
    legal = game.legal_moves
    bot = PolicyBot(lambda obs: int(np.flatnonzero(obs["action_mask"] == 0)[0]))
    with pytest.raises(IllegalAction, match=r"the policy returned action \d+ \{\"type\":.*not legal here"):
        bot.choose(view(game, 0), legal)
    with pytest.raises(IllegalAction, match="the policy returned 999"):
        PolicyBot(lambda obs: 999).choose(view(game, 0), legal)
    assert PolicyBot(lambda obs: np.int64(np.flatnonzero(obs["action_mask"])[0])).choose(view(game, 0), legal) in legal
    with pytest.raises(TypeError, match="a policy is a function or has act"):
        PolicyBot(42)
    with pytest.raises(SpecError, match=r"cannot load 'nosuch\.module:X'"):
        load_bot("policy:nosuch.module:X")
    with pytest.raises(SpecError, match=r"is not package\.module:attr"):
        load_bot("policy:mlp")
    np.savez(tmp_path / "bad.npz", w1=np.zeros((3, 3)))
    with pytest.raises(ValueError, match="not an MLPPolicy's weights"):
        MLPPolicy(tmp_path / "bad.npz")


def test_the_committed_example_policy_beats_random_in_a_match(capsys: pytest.CaptureFixture[str]) -> None:
    assert mandala_main(["match", SPEC, "random", "--games", "60", "--seed", "1", "--jobs", "1"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["games"] == 60 and result["forfeits"] == {"A": 0, "B": 0}
    assert result["wins"] >= 50 and result["elo_low"] > 200, result  # seeded: the same games every run


# ------------------------------------------------------------------ on a running arena


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``mandala serve`` as a process; its base URL."""
    with mandala_serve(tmp_path_factory.mktemp("served")) as base:
        yield base


class RandomBot:
    def __init__(self) -> None:
        self.rng = random.Random(3)

    def choose(self, view: Any, legal: list[Any]) -> Any:
        return self.rng.choice(legal)


async def test_mandala_bot_plays_the_trained_policy_on_the_ladder(served: str) -> None:
    token = await asyncio.to_thread(create_bot_at, served, "mlp-policy")
    code, log = await exit_of(await mandala_bot(served, token, "--bot", SPEC, "--ladder", "--games", "2", pythonpath=HERE))
    assert code == 0, log
    assert log.count("(qualification, unrated)") == 2 and "[2/2]" in log
    assert "WARNING" not in log and "fallback" not in log, log  # every move was the policy's own
    with urllib.request.urlopen(f"{served}/api/bots/mlp-policy", timeout=10) as resp:
        profile = json.load(resp)
    assert profile["name"] == "mlp-policy"


async def test_a_policy_from_a_pettingzoo_only_trainer_plays_on_the_arena_unchanged(served: str, tmp_path: Path) -> None:
    values = pettingzoo_trainer.train(env(), games=60, seed=0)
    (tmp_path / "values.json").write_text(json.dumps(values))
    opponent = Client(RandomBot(), url=served.replace("http", "ws", 1) + "/ws",
                      token=await asyncio.to_thread(create_bot_at, served, "pz-opponent"), games=2)
    task = asyncio.create_task(opponent.run())
    await asyncio.wait_for(opponent.connected.wait(), 20)
    token = await asyncio.to_thread(create_bot_at, served, "pz-policy")
    spec = f"policy:pettingzoo_trainer:PreferencePolicy,values={tmp_path / 'values.json'}"
    code, log = await exit_of(await mandala_bot(served, token, "--bot", spec, "--challenge", "pz-opponent", "--games", "2",
                                                pythonpath=HERE))
    played = await asyncio.wait_for(task, 60)
    assert code == 0, log
    assert "[2/2]" in log and "WARNING" not in log and "fallback" not in log, log
    assert len(played) == 2 and all(g.result is not None and g.result.end_reason != "aborted" for g in played)


@pytest.mark.parametrize("form", [[], ["--arrays", "--batch", "256"]])
def test_the_example_trainer_trains_on_either_batch_and_writes_weights_a_bot_plays(tmp_path: Path, form: list[str]) -> None:
    """``examples/train_numpy.py`` as its documentation runs it (a process), on a ``GameBatch`` and
    with ``--arrays`` on an ``ArrayBatch``: a few hundred games, then weights that load as a
    policy whose bot plays legal moves in a match."""
    weights = tmp_path / "mlp.npz"
    out = subprocess.run([sys.executable, str(ROOT / "clients" / "python" / "examples" / "train_numpy.py"),
                          "--games", "400", "--update-games", "64", "--report", "200", "--out", str(weights), *form],
                         capture_output=True, text=True, timeout=300, check=True).stdout
    assert "games  won" in out and f"weights written to {weights}" in out
    trained = int(out.split("trained on ")[1].split(" games")[0])
    assert trained >= 400
    match = subprocess.run([str(BIN / "mandala"), "match", f"policy:mandala_client.env.mlp:MLPPolicy,weights={weights}",
                            "random", "--games", "20", "--seed", "1", "--jobs", "1"],
                           capture_output=True, text=True, timeout=300, check=True).stdout
    result = json.loads(match.strip().splitlines()[-1])
    assert result["games"] == 20 and result["forfeits"] == {"A": 0, "B": 0}
