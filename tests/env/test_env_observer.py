"""The environments' fast path (:mod:`mandala_client.env.observer`) makes exactly what the
reference makes: at every decision of many random games, for both seats and after the end,
``Observer.observe(game, seat)`` equals ``encode(view(game, seat))`` entry by entry (the
function a bot runs on the server's frames), its raw counts equal ``raw_counts``, and
``legal_mask`` equals ``action_mask``; and what the three environments hand out equals the
reference at every step."""

from __future__ import annotations

import random

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from mandala import Game, view
from mandala.sample import determinize
from mandala_client.env import AGENTS, GameBatch, MandalaGymEnv, env
from mandala_client.env.encoding import action_mask, encode, raw_counts
from mandala_client.env.observer import BatchObserver, Observer, legal_mask


def _same(observer: Observer, game: Game, seat: int) -> None:
    reference = view(game, seat)
    out, turns, score = observer.raw(game, seat)
    out[5], out[-1] = turns, score
    assert out == raw_counts(reference)
    fast, slow = observer.observe(game, seat), encode(reference)
    assert fast.dtype == slow.dtype and fast.shape == slow.shape and fast.tobytes() == slow.tobytes()


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**63 - 1), first=st.integers(0, 1), choices=st.randoms(use_true_random=False),
       every=st.integers(1, 3))
def test_the_observer_equals_encode_of_the_view_at_every_decision(seed: int, first: int, choices: random.Random,
                                                                    every: int) -> None:
    """One observer follows the whole game, asked for one seat or both at each decision (so
    what it keeps is checked after every kind of move and claim), and the mask with it."""
    game = Game.new(seed=seed, first_player=first)
    observer = Observer()
    ply = 0
    while game.to_move is not None:
        if ply % every == 0:
            _same(observer, game, 1 - game.to_move)
        _same(observer, game, game.to_move)
        codes = game.legal_codes()
        mask = legal_mask(codes)
        assert mask.dtype == np.int8 and mask.tobytes() == action_mask(codes).tobytes()
        game.push_code(codes[choices.randrange(len(codes))])
        ply += 1
    for seat in (0, 1):  # the end: hands, mountains and fields discarded (R20)
        _same(observer, game, seat)


def test_the_observer_goes_from_game_to_game_and_to_positions_made_by_hand() -> None:
    """Kept parts never leak from one game into another: two games asked alternately, and
    sampled positions (other starting cups, hands and decks) asked from the same observer."""
    rng = random.Random(3)
    observer = Observer()
    games = [Game.new(seed=1), Game.new(seed=2, first_player=1)]
    while any(g.to_move is not None for g in games):
        for g in games:
            if g.to_move is not None:
                _same(observer, g, g.to_move)
                for _k in range(2):
                    sampled = determinize(view(g, g.to_move), rng)  # type: ignore[arg-type]
                    _same(observer, sampled, g.to_move)  # type: ignore[arg-type]
                    _same(observer, sampled, 1 - g.to_move)  # type: ignore[operator]
                g.push(rng.choice(g.legal_moves))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**63 - 1), size=st.integers(1, 9), opponent=st.sampled_from([None, "random"]),
       choices=st.randoms(use_true_random=False))
def test_the_batch_observer_equals_encode_of_each_rows_view_at_every_step(seed: int, size: int, opponent: str | None,
                                                                          choices: random.Random) -> None:
    """``GameBatch``'s rows (:class:`BatchObserver`: what it keeps per row between claims, the
    unseen cards counted by numpy) equal the reference at every step, through claims, ends and
    new deals; the caller writing into the arrays it got changes nothing."""
    batch = GameBatch(size, seed=seed, opponent=opponent)
    obs, mask = batch.observations()
    for _ in range(120):
        for i, game in enumerate(batch.games):
            assert obs[i].tobytes() == encode(view(game, game.to_move)).tobytes()
            assert mask[i].tobytes() == action_mask(game.legal_codes()).tobytes()
        actions = np.array([choices.choice(np.flatnonzero(row)) for row in mask])
        obs[:] = 0  # a caller's own use of its arrays
        mask[:] = 1
        obs, mask, _ended = batch.step(actions)
    assert obs.dtype == np.float32 and mask.dtype == np.int8


def test_the_batch_observer_takes_any_games_and_positions_made_by_hand() -> None:
    """Rows whose game changes (sampled positions, other starting cups) or stays while another
    row's moves: each row equals the reference."""
    rng = random.Random(4)
    observer = BatchObserver()
    games = [Game.new(seed=s, first_player=s % 2) for s in range(4)]
    for _ply in range(200):
        rows = [determinize(view(g, g.to_move), rng) if k % 2 else g  # type: ignore[arg-type]
                for k, g in enumerate(games)]
        obs, mask = observer.observe(rows)
        for i, g in enumerate(rows):
            assert obs[i].tobytes() == encode(view(g, g.to_move)).tobytes()
            assert mask[i].tobytes() == action_mask(g.legal_codes()).tobytes()
        for k, g in enumerate(games):
            g.push_code(rng.choice(g.legal_codes()))
            if g.to_move is None:
                games[k] = Game.new(seed=rng.getrandbits(32))


def test_what_the_environments_hand_out_equals_the_reference_at_every_step() -> None:
    rng = random.Random(5)
    e = env()
    for game_seed in range(6):
        e.reset(seed=game_seed)
        for agent in e.agent_iter():
            obs, _r, terminated, truncated, _info = e.last()
            game = e.game
            assert game is not None
            seat = AGENTS.index(agent)
            assert obs["observation"].tobytes() == encode(view(game, seat)).tobytes()
            other = e.observe(AGENTS[1 - seat])["observation"]
            assert other.tobytes() == encode(view(game, 1 - seat)).tobytes()
            if terminated or truncated:
                assert not obs["action_mask"].any()
                e.step(None)
                continue
            assert obs["action_mask"].tobytes() == action_mask(game.legal_codes()).tobytes()
            e.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    g = MandalaGymEnv(opponent="random")
    for game_seed in range(4):
        obs, _info = g.reset(seed=game_seed)
        terminated = False
        while not terminated:
            assert obs["observation"].tobytes() == encode(g.view()).tobytes()
            obs, _r, terminated, _t, _info = g.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
        assert obs["observation"].tobytes() == encode(g.view()).tobytes()
    batch = GameBatch(6, seed=7)
    obs_b, mask_b = batch.observations()
    for _ in range(400):
        for i, game in enumerate(batch.games):
            assert obs_b[i].tobytes() == encode(view(game, game.to_move)).tobytes()
            assert mask_b[i].tobytes() == action_mask(game.legal_codes()).tobytes()
        obs_b, mask_b, _ended = batch.step([int(rng.choice(np.flatnonzero(row))) for row in mask_b])
    assert batch.finished > 6
