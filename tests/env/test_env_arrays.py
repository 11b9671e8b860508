"""``ArrayBatch`` (the rules over arrays, :mod:`mandala_client.env.arrays`) is ``GameBatch``
step for step: for the same seed and actions, the same observations, masks, rewards and
``info``, and each row equals the reference ``encode(view(game, seat))`` of ``GameBatch``'s
engine game. Random games reach reshuffles, deck and river ends; positions made by hand reach
the rest (an empty deck and discard pile, the turn limit, no card left to either seat)."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mandala import Game, Move, View, view
from mandala.cards import COLORS
from mandala.moves import code_of
from mandala_client.env import ArrayBatch, GameBatch, IllegalAction
from mandala_client.env.arrays import END_REASONS
from mandala_client.env.core import new_game
from mandala_client.env.encoding import action_mask, encode

_STATE = ("hands", "hand_sizes", "mountains", "fields", "discard", "cups", "river", "river_length", "deck",
          "deck_size", "reshuffles", "deck_exhausted", "river_filled", "turns", "phase", "to_move", "current")


def _lockstep(arrays: ArrayBatch, games: GameBatch, choices: random.Random, steps: int,
              until_ended: set[int] | None = None) -> Counter[str]:
    """Step both batches with the same random legal actions, checking every row against the
    reference at every step; the end reasons seen. With ``until_ended``, stop once each of
    those rows' first game is over."""
    reasons: Counter[str] = Counter()
    obs, mask = arrays.observations()
    ref_obs, ref_mask = games.observations()
    for _ in range(steps):
        assert obs.tobytes() == ref_obs.tobytes() and mask.tobytes() == ref_mask.tobytes()
        assert arrays.seats == games.seats and arrays.learner == games.learner
        for i, game in enumerate(games.games):
            assert obs[i].tobytes() == encode(view(game, game.to_move)).tobytes()
            assert mask[i].tobytes() == action_mask(game.legal_codes()).tobytes()
        actions = np.array([choices.choice(np.flatnonzero(row)) for row in mask])
        obs[:] = 0  # a caller's own use of its arrays changes nothing in the batch
        mask[:] = 1
        obs, mask, ended = arrays.step(actions)
        ref_obs, ref_mask, ref_ended = games.step(actions)
        assert ended == ref_ended
        reasons.update(info["end_reason"] for _row, _rewards, info in ended)
        if until_ended is not None:
            until_ended -= {row for row, _rewards, _info in ended}
            if not until_ended:
                break
    assert arrays.finished == games.finished and arrays.decisions == games.decisions
    return reasons


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**63 - 1), size=st.integers(1, 12), reward=st.sampled_from(["win", "score"]),
       choices=st.randoms(use_true_random=False))
def test_an_array_batch_steps_as_the_game_batch_and_the_engine_do(seed: int, size: int, reward: str,
                                                                  choices: random.Random) -> None:
    _lockstep(ArrayBatch(size, seed=seed, reward=reward), GameBatch(size, seed=seed, reward=reward),  # type: ignore[arg-type]
              choices, 150)


def _lowest(view_: View, legal: list[Move]) -> Move:
    """A deterministic opponent for ``GameBatch``: the legal move of the lowest action number."""
    return min(legal, key=lambda move: code_of(move) or 0)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**63 - 1), size=st.integers(1, 10), choices=st.randoms(use_true_random=False))
def test_an_array_batch_against_an_opponent_steps_as_the_game_batch_does(seed: int, size: int,
                                                                        choices: random.Random) -> None:
    """Against the same deterministic opponent, the two batches draw the same learner seats and
    play the same games; the array batch's opponent is handed what its seat sees (its own
    observations and masks, the reference's for that seat) at each of its decisions."""
    seen: list[bytes] = []
    reference: list[bytes] = []

    def lowest_of_masks(obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        seen.extend(o.tobytes() + m.tobytes() for o, m in zip(obs, masks, strict=True))
        return np.argmax(masks, axis=1)

    def lowest_of_moves(view_: View, legal: list[Move]) -> Move:
        reference.append(encode(view_).tobytes() + action_mask([code_of(m) for m in legal]).tobytes())  # type: ignore[misc]
        return _lowest(view_, legal)

    arrays, games = ArrayBatch(size, seed=seed, opponent=lowest_of_masks), GameBatch(size, seed=seed, opponent=lowest_of_moves)
    for _ in range(4):
        _lockstep(arrays, games, choices, 25)
        assert sorted(seen) == sorted(reference) and seen
        seen.clear()
        reference.clear()
    assert arrays.learner == games.learner and set(arrays.learner) <= {0, 1}


def test_an_array_batch_against_random_plays_legal_games_the_same_for_a_seed() -> None:
    """The random opponent's moves are legal (the games end as the rules say, each learner row
    at the learner's seat) and the batch repeats itself for a seed."""
    def run(seed: int) -> tuple[list[object], bytes]:
        batch = ArrayBatch(32, seed=seed, opponent="random")
        obs, mask = batch.observations()
        rng = np.random.default_rng(seed)
        ends: list[object] = []
        while batch.finished < 60:
            assert batch.seats == batch.learner
            obs, mask, ended = batch.step(np.argmax((rng.random(mask.shape) + 1) * mask, axis=1))
            ends += ended
        assert {info["end_reason"] for _row, _rewards, info in ends} <= set(END_REASONS)
        assert all(info["seat"] in (0, 1) for _row, _rewards, info in ends)
        return ends, obs.tobytes() + mask.tobytes()

    assert run(5) == run(5) != run(6)


def test_an_array_batch_names_an_opponent_that_chooses_an_illegal_action() -> None:
    def first(obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return np.argmin(masks, axis=1)  # an action outside the mask

    with pytest.raises(RuntimeError, match=r"the opponent \(.*first\) chose action .*, which is not legal"):
        for seed in range(10):  # some deal has the opponent first
            ArrayBatch(4, seed=seed, opponent=first)
    with pytest.raises(RuntimeError, match=r"returned float64 actions of shape \(\d+,\), not \d+ integers"):
        for seed in range(10):
            ArrayBatch(4, seed=seed, opponent=lambda obs, masks: np.zeros(len(masks)))
    with pytest.raises(ValueError, match=r"a bot \(greedy, search, module:Class\) plays in GameBatch"):
        ArrayBatch(4, opponent="greedy")  # type: ignore[arg-type]


def test_an_array_batch_keeps_each_ended_games_last_observations_for_both_seats() -> None:
    """``final_observations`` are ``encode(view(game, seat))`` of the finished game, both seats,
    the game replayed on the engine beside the batch (a batch of one deals as ``new_game``)."""
    for seed in range(6):
        batch = ArrayBatch(1, seed=seed, final_observations=True)
        game = new_game(random.Random(seed), None)
        choices = random.Random(seed)
        _obs, mask = batch.observations()
        while True:
            code = choices.choice(np.flatnonzero(mask[0]).tolist())
            game.push_code(code)
            _obs, mask, ended = batch.step([code])
            if ended:
                break
            assert batch.final_observations.shape == (0, 2, 167)
        assert game.to_move is None and ended[0][2]["end_reason"] == game.end_reason
        for seat in (0, 1):
            assert batch.final_observations[0, seat].tobytes() == encode(view(game, seat)).tobytes()


def test_random_games_in_arrays_end_by_the_deck_and_by_the_river_after_reshuffles() -> None:
    """A longer run of the same check, and what it covered."""
    arrays, games = ArrayBatch(24, seed=3), GameBatch(24, seed=3)
    reasons = _lockstep(arrays, games, random.Random(3), 700)
    assert reasons["deck"] > 20 and reasons["river"] > 2
    assert arrays.finished == sum(reasons.values())


def _rebuilt(game: Game, rng: random.Random, turns: int, dry: bool) -> Game:
    """``game``'s position (a turn, not a pick) made by hand: at ``turns``, and if ``dry`` with
    its draw deck and discard pile moved into seat 0's cup (no card left to draw, R16)."""
    cups = [list(c) for c in game.cups]
    deck = game.deck[::-1]
    discard = list(game.discard)
    if dry:
        for c in (*deck, *(c for c, n in enumerate(discard) for _ in range(n))):
            cups[0][c] += 1
        deck, discard = [], [0] * 6
    return Game.from_position(
        hands=game.hands, deck=deck, starting_cups=game.starting_cups, cups=cups,
        rivers=[[COLORS[c] for c in r] for r in game.rivers], mountains=game.mountains,
        fields=game.fields, discard=discard, to_move=game.current, first_player=game.first_player,
        turns=turns, deck_exhausted=game.deck_exhausted or dry, seed=rng.getrandbits(32))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32), plies=st.integers(0, 120), dry=st.booleans(), late=st.booleans(),
       choices=st.randoms(use_true_random=False))
def test_positions_made_by_hand_play_out_in_arrays_as_in_the_engine(seed: int, plies: int, dry: bool, late: bool,
                                                                   choices: random.Random) -> None:
    """A game at any turn, perhaps with nothing left to draw (R16, R17b) or near the turn
    limit (R19), put in a row of both batches, plays to its end the same way."""
    rng = random.Random(seed)
    game = Game.new(seed=seed)
    for _ in range(plies):
        if game.to_move is None:
            break
        game.push_code(rng.choice(game.legal_codes()))
        while game.phase == "pick":
            game.push_code(rng.choice(game.legal_codes()))
    if game.to_move is None:
        return
    position = _rebuilt(game, rng, 995 if late else game.turns, dry)
    arrays, games = ArrayBatch(2, seed=seed), GameBatch(2, seed=seed)
    arrays._load([1], [position.copy()])  # a copy: each batch draws its reshuffles from its own generator
    games.games[1] = position
    _lockstep(arrays, games, choices, 2_000, until_ended={1})


def test_hand_made_positions_reach_every_end() -> None:
    """The positions above reach each of R17–R19's ends: the deck, the river, the turn limit,
    and no card left to either seat."""
    reasons: Counter[str] = Counter()
    for seed in range(40):
        rng = random.Random(seed)
        game = Game.new(seed=seed)
        for _ in range(30 + seed):
            game.push_code(rng.choice(game.legal_codes()))
            while game.phase == "pick":
                game.push_code(rng.choice(game.legal_codes()))
            if game.to_move is None:
                break
        if game.to_move is None:
            continue
        for late, dry in ((True, False), (False, True)):
            arrays, games = ArrayBatch(1, seed=seed), GameBatch(1, seed=seed)
            position = _rebuilt(game, rng, 995 if late else game.turns, dry)
            arrays._load([0], [position.copy()])
            games.games[0] = position
            reasons += _lockstep(arrays, games, random.Random(seed), 2_000, until_ended={0})
    assert set(reasons) == set(END_REASONS)


def test_an_array_batch_refuses_a_bad_action_naming_it_and_changes_nothing() -> None:
    batch = ArrayBatch(4, seed=2)
    _obs, mask = batch.observations()
    before = {name: getattr(batch, name).copy() for name in _STATE}
    good = np.array([np.flatnonzero(row)[0] for row in mask])
    illegal = int(np.flatnonzero(mask[2] == 0)[0])
    bad = good.copy()
    bad[2] = illegal
    seat = batch.seats[2]
    with pytest.raises(IllegalAction, match=rf"row 2 \(player_{seat}\) cannot play action .*not legal now"):
        batch.step(bad)
    for given_ in ([*good.tolist()[:3], True], [*good.tolist()[:3], 1.0], [*good.tolist()[:3], -1],
                   [*good.tolist()[:3], 151], good.astype(np.float32)):
        with pytest.raises(IllegalAction, match=r"row \d \(player_[01]\): an action is an integer from 0 to 150"):
            batch.step(given_)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="one action per game: 4 expected, 3 given"):
        batch.step(good[:3])
    for shape in ((), (4, 1)):
        with pytest.raises(ValueError, match=rf"an array of shape \(4,\), not \({', '.join(map(str, shape))},?\)"):
            batch.step(np.zeros(shape, np.int64))
    mask[:] = 1  # the caller's copy of the mask lets nothing through
    with pytest.raises(IllegalAction):
        batch.step(bad)
    for name in _STATE:
        assert np.array_equal(getattr(batch, name), before[name]), name
    assert batch.decisions == 0
    batch.step(good.tolist())  # plain ints
    assert batch.decisions == 4
    _obs, mask = batch.observations()
    batch.step(list(np.argmax(mask, axis=1)))  # numpy's integers in a list, as GameBatch takes them
    assert batch.decisions == 8


@pytest.mark.parametrize("size", [0, -1, 2.0, True])
def test_an_array_batch_has_a_positive_number_of_games(size: object) -> None:
    with pytest.raises(ValueError, match="size is a positive number of games"):
        ArrayBatch(size)  # type: ignore[arg-type]
