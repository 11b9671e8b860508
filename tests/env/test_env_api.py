"""The training environments keep PettingZoo's and Gymnasium's contracts (their own checkers),
repeat a game for a seed, number the moves one way in both directions, reward the end, and
refuse bad input with a typed error that names the move and changes nothing."""

from __future__ import annotations

import json
import random
import warnings
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from pettingzoo.test import api_test, seed_test

import mandala
from mandala import COLORS, Claim, Discard, Field, Game, Mountain, Pass, view
from mandala_client.env import (
    ACTION_COUNT,
    AGENTS,
    LAYOUT,
    OBS_SIZE,
    GameBatch,
    IllegalAction,
    MandalaGymEnv,
    action_mask,
    action_of,
    encode,
    env,
    move_of,
)
from mandala_client.env.encoding import HIGH, SCALES, encode_batch, raw_counts


@pytest.fixture(autouse=True)
def _quiet_checkers() -> Any:
    """The checkers' advice for other kinds of environment (a Dict observation "probably
    should be" a Box; the options they pass) is not under test."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


def play_random(e: Any, rng: random.Random) -> list[tuple[str, dict[str, Any]]]:
    """Play one game in the AEC env with random legal actions; each step's agent and observation."""
    seen = []
    for agent in e.agent_iter():
        obs, _reward, terminated, truncated, _info = e.last()
        seen.append((agent, obs))
        if terminated or truncated:
            e.step(None)
        else:
            e.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    return seen


# ------------------------------------------------------------------ the API checkers


def test_pettingzoo_api_test_and_seed_test_pass() -> None:
    api_test(env(), num_cycles=3000)
    api_test(env(reward="score", render_mode="ansi"), num_cycles=1000)
    seed_test(env, num_cycles=1000)


def test_gymnasium_check_env_passes() -> None:
    # check_env steps with unmasked random actions, so it runs with the documented penalty
    check_env(MandalaGymEnv(opponent="random", illegal="forfeit"), skip_render_check=True)
    check_env(MandalaGymEnv(opponent="greedy", seat=1, reward="score", illegal="forfeit"), skip_render_check=True)
    made = gymnasium.make("mandala/Mandala-v0", illegal="forfeit", render_mode="ansi")
    check_env(made.unwrapped)
    obs, info = made.reset(seed=3)
    assert obs["observation"].shape == (OBS_SIZE,) and info["seat"] in (0, 1)
    assert json.loads(made.render())["seat"] is None  # the spectator's view: nothing private


def test_gymnasium_check_env_has_no_render_advice() -> None:
    """Gymnasium's checker, run on the environment made with its one render mode, has nothing
    to say about rendering (it asks for ``render_fps``, as the PettingZoo environment gives)."""
    made = gymnasium.make("mandala/Mandala-v0", illegal="forfeit", render_mode="ansi")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(made.unwrapped)
    assert [str(w.message) for w in caught if "render" in str(w.message)] == []
    assert made.metadata["render_fps"] == env().metadata["render_fps"]


# ------------------------------------------------------------------ numbering, layout, seeds


def test_action_numbering_is_one_to_one_and_covers_every_r22_move() -> None:
    assert ACTION_COUNT == 151
    moves = [move_of(a) for a in range(ACTION_COUNT)]
    assert [action_of(m) for m in moves] == list(range(ACTION_COUNT))
    assert len({json.dumps(mandala.move_to_dict(m), sort_keys=True) for m in moves}) == ACTION_COUNT
    assert moves[0] == Mountain(0, "red") and moves[11] == Mountain(1, "black")
    assert moves[12] == Field(0, "red", 1) and moves[95] == Field(1, "black", 7)
    assert moves[96] == Discard("red", 1) and moves[143] == Discard("black", 8)
    assert [moves[144 + c] for c in range(6)] == [Claim(c) for c in COLORS]  # type: ignore[arg-type]
    assert moves[150] == Pass()
    # every legal move of many random positions has an action, and the mask is exactly them
    rng = random.Random(4)
    for seed in range(30):
        game = Game.new(seed=seed)
        while game.to_move is not None:
            legal = game.legal_moves
            mask = action_mask(legal)
            assert sorted(np.flatnonzero(mask)) == sorted(action_of(m) for m in legal)
            assert np.array_equal(mask, action_mask(game.legal_codes()))
            game.push(rng.choice(legal))
    for bad in (-1, 151, 3.0, True, None, "7"):
        with pytest.raises(ValueError, match="an action is an integer from 0 to 150"):
            move_of(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no action is the move"):
        action_of(Field(0, "red", 8))


def test_observation_layout_is_named_scaled_and_bounded() -> None:
    assert OBS_SIZE == len(LAYOUT) == len(SCALES) == len(HIGH) == 167 and len(set(LAYOUT)) == OBS_SIZE
    assert LAYOUT[:3] == ("phase.turn", "phase.pick", "phase.over") and LAYOUT[-1] == "my_score"
    rng = random.Random(2)
    views = []
    for seed in range(20):
        game = Game.new(seed=seed)
        while True:
            for seat in (0, 1):
                v = view(game, seat)
                raw = raw_counts(v)
                obs = encode(v)
                assert obs.dtype == np.float32 and obs.shape == (OBS_SIZE,)
                assert np.allclose(obs, np.array(raw, dtype=np.float32) * SCALES)
                assert (obs >= 0).all() and (obs <= HIGH).all()
                views.append(v)
            if game.to_move is None:
                break
            game.push(rng.choice(game.legal_moves))
    assert np.array_equal(encode_batch(views[:50]), np.stack([encode(v) for v in views[:50]]))
    v = view(game, 0)
    named = dict(zip(LAYOUT, raw_counts(v), strict=True))
    assert named["phase.over"] == 1 and named["turns"] == game.turns and named["my_score"] == game.score(0)
    assert [named[f"my_hand.{c}"] for c in COLORS] == game.hands[0]
    assert named["my_river_length"] == len(game.rivers[0]) and named["opponent_river_length"] == len(game.rivers[1])
    with pytest.raises(ValueError, match="a seat's view"):
        encode(view(game))


def test_a_seed_repeats_the_game_and_reset_without_one_goes_on() -> None:
    a, b = env(), env()
    a.reset(seed=7)
    b.reset(seed=7)
    assert a.game is not None
    dealt = list(a.game.deck_order)
    first = play_random(a, random.Random(1))
    assert [(x, o["observation"].tolist()) for x, o in first] == [
        (x, o["observation"].tolist()) for x, o in play_random(b, random.Random(1))]
    a.reset()
    b.reset(seed=8)
    assert a.game is not None and b.game is not None and a.game.deck_order != b.game.deck_order
    a.reset(seed=np.int64(7))  # type: ignore[arg-type]  # a numpy integer seeds the same way
    assert a.game.deck_order == dealt  # dealt again
    g1, g2 = MandalaGymEnv(seat=None), MandalaGymEnv(seat=None)
    o1, i1 = g1.reset(seed=5)
    o2, i2 = g2.reset(seed=5)
    assert np.array_equal(o1["observation"], o2["observation"]) and i1 == i2
    seats = {MandalaGymEnv().reset(seed=s)[1]["seat"] for s in range(12)}
    assert seats == {0, 1}


def test_reset_options_give_the_deal_or_a_position() -> None:
    deck = Game.new(seed=3).deck_order
    e = env()
    e.reset(options={"deck": [COLORS[c] for c in deck], "first_player": 1})
    assert e.game is not None and e.game.deck_order == deck and e.agent_selection == "player_1"
    g = Game.new(seed=4)
    g.push(g.legal_moves[0])
    e.reset(options={"game": g})
    assert e.game is not g and e.game is not None and e.game.history == g.history
    assert e.agent_selection == AGENTS[g.to_move]  # type: ignore[index]
    before = e.game
    with pytest.raises(mandala.MandalaError, match="R1"):
        e.reset(options={"deck": ["red"] * 108})
    with pytest.raises(ValueError, match=r"'game' is a mandala\.Game"):
        e.reset(options={"game": "no"})
    assert e.game is before  # a refused reset changed nothing
    with pytest.warns(UserWarning, match="reset ignores the option"):
        e.reset(options={"decks": deck})


def _random_game(e: Any, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for _agent in e.agent_iter():
        obs, _r, terminated, _t, _i = e.last()
        e.step(None if terminated else int(rng.choice(np.flatnonzero(obs["action_mask"]))))


def test_a_given_deal_played_otherwise_than_its_record_goes_on_to_its_end() -> None:
    """A lost game's deal, tried with other moves: a reshuffle whose recorded order does not
    fit the discard pile any more, and every later one, come from the reset's seed."""
    tried = left = 0
    for seed in range(200):
        first = env()
        first.reset(seed=seed)
        _random_game(first, seed)
        played = first.game
        assert played is not None
        if not played.reshuffles:
            continue  # ended before the deck ran out: nothing to leave
        tried += 1
        deal = {"deck": played.deck_order, "first_player": played.first_player, "reshuffles": played.reshuffles}
        again = env()
        again.reset(seed=seed, options=deal)
        _random_game(again, seed)  # the same moves: the record's orders, every one
        assert again.game is not None and again.game.reshuffles == played.reshuffles
        other = env()
        other.reset(seed=1, options=deal)
        _random_game(other, 1000 + seed)  # other moves, to the end
        assert other.game is not None and other.game.is_over
        left += not other.game.reshuffles or other.game.reshuffles[0] != played.reshuffles[0]
        if tried == 8:
            break
    assert tried == 8 and left >= 4  # most tries left the record before its first reshuffle


# ------------------------------------------------------------------ rewards and the end


@pytest.mark.parametrize("reward", ["win", "score"])
def test_rewards_come_at_the_end_and_info_says_how_it_ended(reward: str) -> None:
    e = env(reward=reward)
    for seed in range(6):
        e.reset(seed=seed)
        totals = dict.fromkeys(AGENTS, 0.0)
        rng = random.Random(seed)
        for agent in e.agent_iter():
            obs, r, terminated, _truncated, info = e.last()
            totals[agent] += r
            if terminated:
                assert set(info) >= {"end_reason", "winner", "scores", "cup_sizes", "turns"}
                assert info["end_reason"] in ("river", "deck", "no_moves", "turn_limit")
                assert not obs["action_mask"].any() and obs["observation"][LAYOUT.index("phase.over")] == 1
                e.step(None)
                continue
            assert r == 0 and info == {}
            e.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        game = e.game
        assert game is not None and game.is_over
        s0, s1 = game.scores()
        w = game.winner()
        if reward == "win":
            assert totals == {"player_0": 0.0 if w is None else 1.0 if w == 0 else -1.0,
                              "player_1": 0.0 if w is None else 1.0 if w == 1 else -1.0}
        else:
            assert totals == {"player_0": float(s0 - s1), "player_1": float(s1 - s0)}


def test_only_the_agent_on_move_has_a_mask() -> None:
    e = env()
    e.reset(seed=1)
    rng = random.Random(1)
    for _ in range(60):
        agent = e.agent_selection
        other = AGENTS[1 - AGENTS.index(agent)]
        assert e.observe(agent)["action_mask"].any() and not e.observe(other)["action_mask"].any()
        e.step(int(rng.choice(np.flatnonzero(e.observe(agent)["action_mask"]))))


# ------------------------------------------------------------------ bad input


def _state(e: Any) -> tuple[Any, ...]:
    return (list(e.game.history), e.agent_selection, dict(e.rewards), dict(e._cumulative_rewards),
            e.observe("player_0")["observation"].tobytes(), e.observe("player_1")["observation"].tobytes())


def test_an_action_outside_the_mask_raises_naming_the_move_and_changes_nothing() -> None:
    e = env()
    e.reset(seed=2)
    agent = e.agent_selection
    mask = e.observe(agent)["action_mask"]
    illegal = int(np.flatnonzero(mask == 0)[20])
    before = _state(e)
    with pytest.raises(IllegalAction) as raised:
        e.step(illegal)
    text = str(raised.value)
    assert text.startswith(f"{agent} cannot play action {illegal} {{\"type\":") and ": R" in text
    assert _state(e) == before
    for bad in (-1, 151, 2.0, True, None, "3", np.float32(1)):
        with pytest.raises(IllegalAction, match="an action is an integer from 0 to 150"):
            e.step(bad)  # type: ignore[arg-type]
        assert _state(e) == before
    legal = int(np.flatnonzero(mask)[0])
    e.step(np.int64(legal))  # numpy integers are actions too
    assert e.game is not None and len(e.game.history) == 1


def test_forfeit_mode_ends_the_game_with_the_penalty() -> None:
    e = env(illegal="forfeit", illegal_penalty=2.0)
    e.reset(seed=2)
    agent = e.agent_selection
    other = AGENTS[1 - AGENTS.index(agent)]
    illegal = int(np.flatnonzero(e.observe(agent)["action_mask"] == 0)[0])
    e.step(illegal)
    assert e.terminations == {"player_0": True, "player_1": True}
    assert e.rewards == {agent: -2.0, other: 2.0}
    assert e.infos[agent]["end_reason"] == "forfeit" and e.infos[agent]["winner"] == other
    assert "cannot play action" in e.infos[agent]["illegal_action"]
    assert not e.observe(agent)["action_mask"].any()
    g = MandalaGymEnv(illegal="forfeit", illegal_penalty=3.0)
    obs, start = g.reset(seed=1)
    obs, reward, terminated, truncated, info = g.step(int(np.flatnonzero(obs["action_mask"] == 0)[0]))
    assert (reward, terminated, truncated, info["end_reason"]) == (-3.0, True, False, "forfeit")
    assert info["seat"] == start["seat"]  # as at every other end


def test_stepping_a_finished_game_or_before_reset_raises_pettingzoos_errors() -> None:
    e = env()
    with pytest.raises(AssertionError, match=r"reset\(\) needs to be called before step"):
        e.step(0)
    with pytest.raises(AssertionError, match=r"reset\(\) needs to be called before observe"):
        e.observe("player_0")
    e.reset(seed=3)
    play_random(e, random.Random(3))
    with pytest.raises(ValueError, match="every agent is done"):
        e.step(0)
    e.reset(seed=3)
    rng = random.Random(3)
    while not any(e.terminations.values()):
        e.step(int(rng.choice(np.flatnonzero(e.observe(e.agent_selection)["action_mask"]))))
    dead = e.agent_selection
    with pytest.raises(ValueError, match="when an agent is dead, the only valid action is None"):
        e.step(0)  # PettingZoo's own error for a done agent
    assert dead in e.agents
    e.step(None)
    assert dead not in e.agents
    g = MandalaGymEnv()
    with pytest.raises(AssertionError, match="reset"):
        g.step(0)
    obs, _ = g.reset(seed=1)
    terminated = False
    while not terminated:
        obs, _r, terminated, _t, _i = g.step(int(np.flatnonzero(obs["action_mask"])[0]))
    with pytest.raises(ValueError, match="the game is over"):
        g.step(0)
    with pytest.raises(IllegalAction, match="cannot play action"):
        g.reset(seed=1)
        g.step(int(np.flatnonzero(g.action_masks() == 0)[0]))


def test_bad_settings_are_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="reward is one of win, score"):
        env(reward="elo")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="illegal is one of raise, forfeit"):
        env(illegal="ignore")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="seat is 0, 1 or None"):
        MandalaGymEnv(seat=2)
    with pytest.raises(ValueError, match="unknown bot"):
        MandalaGymEnv(opponent="nosuch")
    with pytest.raises(ValueError, match="an opponent is a bot spec"):
        MandalaGymEnv(opponent=42)


# ------------------------------------------------------------------ the other forms


def test_the_gym_env_plays_the_learner_against_the_opponent_it_was_given() -> None:
    seen: list[int] = []

    def opponent(v: mandala.View, legal: list[mandala.Move]) -> mandala.Move:
        seen.append(v.seat)  # type: ignore[arg-type]
        assert v.private is not None and v.seat is not None
        return legal[-1]

    g = MandalaGymEnv(opponent=opponent, seat=1)
    obs, info = g.reset(seed=9)
    assert info["seat"] == 1 and g.game is not None and g.game.to_move == 1
    steps = 0
    terminated = False
    while not terminated:
        assert np.array_equal(obs["observation"], encode(g.view())) and g.view().seat == 1
        assert np.array_equal(obs["action_mask"].astype(bool), g.action_masks())
        obs, reward, terminated, _t, info = g.step(int(np.flatnonzero(obs["action_mask"])[0]))
        steps += 1
    assert set(seen) == {0} and steps + len(seen) == len(g.game.history)
    assert reward == {None: 0.0, 1: 1.0, 0: -1.0}[g.game.winner()] and info["end_reason"] == g.game.end_reason


def test_a_game_batch_gives_each_row_the_envs_observation_and_refuses_a_bad_row() -> None:
    batch = GameBatch(8, seed=1)
    obs, mask = batch.observations()
    rng = np.random.default_rng(0)
    ended_games = 0
    for _ in range(120):
        for i, game in enumerate(batch.games):
            seat = batch.seats[i]
            assert np.array_equal(obs[i], encode(view(game, seat)))
            assert np.array_equal(mask[i], action_mask(game.legal_codes()))
        obs, mask, ended = batch.step(np.argmax(mask * rng.random(mask.shape), axis=1))
        for _row, rewards, info in ended:
            assert sum(rewards) == 0 and info["end_reason"] in ("river", "deck", "no_moves", "turn_limit")
        ended_games += len(ended)
    assert ended_games == batch.finished > 0 and batch.decisions == 8 * 120
    histories = [list(g.history) for g in batch.games]
    actions = np.argmax(mask, axis=1)
    actions[3] = int(np.flatnonzero(mask[3] == 0)[0])
    with pytest.raises(IllegalAction, match="row 3 "):
        batch.step(actions)
    assert [list(g.history) for g in batch.games] == histories  # no game moved
    with pytest.raises(ValueError, match="one action per game"):
        batch.step(actions[:5])
    against = GameBatch(4, seed=2, opponent="random")
    _o, m = against.observations()
    assert against.seats == against.learner
    _o, m, _ = against.step(np.argmax(m, axis=1))
    assert against.seats == against.learner


def test_a_game_batch_checks_each_action_against_the_rows_game_whatever_the_caller_did() -> None:
    """The batch checks actions against its own copy of the masks (a caller writing into the
    mask it got lets nothing through), and row by row once a row's game was replaced."""
    batch = GameBatch(3, seed=5)
    _obs, mask = batch.observations()
    actions = np.argmax(mask, axis=1)
    outside = int(np.flatnonzero(mask[1] == 0)[0])
    mask[:] = 1
    with pytest.raises(IllegalAction, match=f"row 1 .*action {outside} "):
        batch.step(np.array([actions[0], outside, actions[2]]))
    seed = next(s for s in range(1000) if int(actions[0]) not in Game.new(seed=s).legal_codes())
    batch.games[0] = Game.new(seed=seed)
    with pytest.raises(IllegalAction, match="row 0 "):
        batch.step(actions)
    batch.games[0] = Game.new(seed=seed)
    batch.step(np.array([Game.new(seed=seed).legal_codes()[0], actions[1], actions[2]]))
    assert batch.decisions == 3


def test_the_random_opponent_by_name_makes_the_random_bots_very_moves() -> None:
    from mandala_client.bots import RandomBot
    from mandala_client.env.opponents import Seat

    by_name, by_object = Seat("random", 17), Seat(RandomBot(seed=17), None)
    rng = random.Random(5)
    for seed in range(5):
        games = Game.new(seed=seed), Game.new(seed=seed)
        sittings = by_name.sit(games[0], 1), by_object.sit(games[1], 1)
        for sitting in sittings:
            sitting.advance()
        while games[0].to_move is not None:
            code = action_of(rng.choice(games[0].legal_moves))
            for game, sitting in zip(games, sittings, strict=True):
                game.push_code(code)
                sitting.moved(code)
                sitting.advance()
            assert games[0].history == games[1].history
        assert games[1].to_move is None


def test_a_finished_game_given_to_reset_is_over_at_once() -> None:
    game = Game.new(seed=6)
    rng = random.Random(6)
    while game.to_move is not None:
        game.push(rng.choice(game.legal_moves))
    e = env(reward="score")
    e.reset(options={"game": game})
    assert e.terminations == {"player_0": True, "player_1": True}
    s0, s1 = game.scores()
    assert e.rewards == {"player_0": float(s0 - s1), "player_1": float(s1 - s0)}
    assert e.infos["player_0"]["end_reason"] == game.end_reason
    e.step(None)
    e.step(None)
    assert e.agents == []
