"""The search's learned evaluation: one judgement from either seat, used where the search's
option says, and its training script recovers a model it is shown and fits searched games."""

from __future__ import annotations

import importlib.util
import json
import random
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mandala import Game, view
from mandala_client.bots import SearchBot, heuristics
from mandala_client.bots import search as search_module
from mandala_client.bots.heuristics import WIN_WEIGHTS, win_chance, win_features
from mandala_client.offline import load_bot

ROOT = Path(__file__).resolve().parents[2]


def _fit_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fit_win_chance", ROOT / "bench" / "fit_win_chance.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _turn_after(seed: int, plies: int) -> Game:
    """A random game played ``plies`` decisions on, then to the start of a turn."""
    rng = random.Random(seed)
    game = Game.new(seed=seed, first_player=seed % 2)
    while game.to_move is not None and (plies > 0 or game.phase != "turn"):
        codes = game.legal_codes()
        game.push_code(codes[rng.randrange(len(codes))])
        plies -= 1
    return game


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 120))
def test_win_chance_is_one_judgement_seen_from_either_seat(seed: int, plies: int) -> None:
    game = _turn_after(seed, plies)
    if game.to_move is None:
        return
    assert win_features(game, 1) == tuple(-x for x in win_features(game, 0))
    assert win_chance(game, 0) + win_chance(game, 1) == pytest.approx(1.0)
    assert len(win_features(game, 0)) == len(WIN_WEIGHTS)


def test_win_chance_reads_the_unscored_cup_and_the_progress() -> None:
    game = _turn_after(5, 30)
    assert game.to_move is not None
    before = win_features(game, 0)
    missing = next(c for c in range(6) if not game.river_masks[0] >> c & 1)
    game.cups[0][missing] += 2  # two cup cards of a color not in the river yet: they score nothing now
    after = win_features(game, 0)
    assert after[0] == before[0]  # the score (R21) did not move
    assert after[3] == before[3] + 2
    progress = 1.0 if game.deck_exhausted else (heuristics.DEALT_DECK - len(game.deck)) / heuristics.DEALT_DECK
    assert after[8] == pytest.approx(before[8] + 2 * progress)
    # Prospects: two unscored cards would score the next river slot's number each.
    nxt = len(game.rivers[0]) + 1
    assert after[11] == before[11] + 2 * nxt and after[16] == before[16] + 2  # the cup is two cards bigger
    assert after[19] == pytest.approx(before[19] + 2 * nxt * progress)


def test_win_chance_reads_cards_in_hand_of_the_rivers_colors_by_their_slots() -> None:
    game = _turn_after(9, 60)
    assert game.to_move is not None and game.rivers[0]
    before = win_features(game, 0)
    slot = len(game.rivers[0])
    game.hands[0][game.rivers[0][-1]] += 1
    game.hand_sizes[0] += 1
    after = win_features(game, 0)
    assert after[2] == before[2] + 1  # one more card in hand
    assert (after[13], after[14]) == (before[13] + 1, before[14] + slot)  # of a river color, in slot ``slot``
    assert win_features(game, 1)[13:15] == (-after[13], -after[14])


def test_the_search_judges_cut_off_playouts_as_its_evaluation_option_says(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"learned": 0}
    real = search_module.win_chance

    def counted(game: Game, me: int) -> float:
        calls["learned"] += 1
        return real(game, me)

    monkeypatch.setattr(search_module, "win_chance", counted)
    game = Game.new(seed=8)
    assert SearchBot().evaluation == "learned"  # the shipped default
    SearchBot(seed=1, iterations=40, evaluation="hand").choose(view(game, 0), game.legal_moves)
    assert calls["learned"] == 0
    SearchBot(seed=1, iterations=40).choose(view(game, 0), game.legal_moves)
    assert calls["learned"] == 40  # every iteration's playout stops at the depth, before the end
    assert load_bot("search,evaluation=hand", seed=1).evaluation == "hand"
    with pytest.raises(ValueError, match="evaluation"):
        SearchBot(evaluation="oracle")


def test_the_fit_recovers_the_model_that_made_the_outcomes() -> None:
    fit = _fit_script().fit
    rng = np.random.default_rng(3)
    x = rng.normal(size=(20000, 4))
    true = np.array([1.5, -0.7, 0.0, 0.3])
    chance = 1.0 / (1.0 + np.exp(-(x @ true)))
    assert np.allclose(fit(x, (rng.random(20000) < chance).astype(float)), true, atol=0.08)
    assert np.allclose(fit(x, chance), true, atol=1e-3)  # outcomes between 0 and 1 (a draw is ½) are fitted as such


def test_the_script_plays_reproducible_games_and_fits_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = _fit_script()
    games = [script.play_one(k, iterations=4) for k in range(8)]
    assert script.play_one(3, iterations=4) == games[3]  # a game is its number
    for row in games:
        replay = Game.new(seed=row["seed"], first_player=row["first"])
        for code in row["codes"]:
            replay.push_code(code)
        assert replay.is_over and replay.winner() == row["winner"]
    data = tmp_path / "games.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in games))
    assert script.main(["fit", str(data)]) == 0
    out = capsys.readouterr().out
    line = next(s for s in out.splitlines() if s.startswith("WIN_WEIGHTS = ("))
    assert len(line[len("WIN_WEIGHTS = ("):-1].split(", ")) == len(WIN_WEIGHTS)
    assert "8 games" in out and "held-out log-loss" in out


def test_the_script_plays_with_the_evaluation_it_is_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``play --evaluation learned``: the games of the learned search, numbered from ``--first``."""
    script = _fit_script()
    monkeypatch.setitem(sys.modules, "fit_win_chance", script)  # the worker process finds play_one by name
    out = tmp_path / "learned.jsonl"
    assert script.main(["play", "--games", "2", "--first", "5", "--iterations", "4", "--evaluation", "learned",
                        "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows == [script.play_one(k, iterations=4, evaluation="learned") for k in (5, 6)]
    with pytest.raises(SystemExit):
        script.main(["play", "--evaluation", "oracle", "--out", str(out)])
