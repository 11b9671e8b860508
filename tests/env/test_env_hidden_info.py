"""No field beyond a seat's view enters its observation (R24): games that differ only in
what a seat cannot see (the opponent's hand and starting cup, the draw deck's order and
contents) give that seat the same observation and mask, in the environment and from the
encoding alone, while the seat that can see the difference does see it."""

from __future__ import annotations

import random

import msgspec
import numpy as np

from mandala import COLORS, Game, View, view
from mandala.sample import determinize
from mandala_client.env import AGENTS, encode, env
from mandala_client.env.encoding import raw_counts


def _obs(game: Game, agent: str) -> tuple[bytes, bytes]:
    e = env()
    e.reset(options={"game": game})
    o = e.observe(agent)
    return o["observation"].tobytes(), o["action_mask"].tobytes()


def _hidden_from(game: Game, seat: int) -> tuple[object, ...]:
    """What ``seat`` cannot see: the other's hand and starting cup, the deck."""
    return (tuple(game.hands[1 - seat]), tuple(game.starting_cups[1 - seat]), tuple(game.deck))


def test_games_differing_only_in_hidden_cards_give_the_seat_the_same_observation() -> None:
    rng = random.Random(11)
    positions = differed = other_saw = 0
    for seed in range(12):
        game = Game.new(seed=seed, first_player=seed % 2)
        while game.to_move is not None:
            if rng.random() < 0.25:
                for seat, agent in enumerate(AGENTS):
                    mine = _obs(game, agent)
                    for k in range(3):
                        sampled = determinize(view(game, seat), random.Random(seed * 1000 + k))
                        assert view(sampled, seat) == view(game, seat)  # the same information set
                        if _hidden_from(sampled, seat) != _hidden_from(game, seat):
                            differed += 1
                            # ... and the environment shows this seat exactly the same thing
                            assert _obs(sampled, agent) == mine
                            if _obs(sampled, AGENTS[1 - seat]) != _obs(game, AGENTS[1 - seat]):
                                other_saw += 1  # the opponent's hand changed: the opponent sees it
                    positions += 1
            game.push(rng.choice(game.legal_moves))
    assert positions > 100 and differed > 2 * positions and other_saw > positions


def test_a_deal_that_swaps_cards_between_the_opponents_hand_and_the_deck_looks_the_same() -> None:
    deck = Game.new(seed=5).deck_order
    # R3: 10–15 are seat 1's hand, 18–19 its starting cup, 20 on the deck's top, 107 its bottom.
    i, j = next((i, j) for i in (10, 11, 12, 13, 14, 15, 18, 19) for j in range(107, 40, -1) if deck[i] != deck[j])
    swapped = list(deck)
    swapped[i], swapped[j] = swapped[j], swapped[i]
    obs = []
    for order in (deck, swapped):
        e = env()
        e.reset(options={"deck": [COLORS[c] for c in order], "first_player": 0})
        obs.append({a: e.observe(a)["observation"].tobytes() for a in AGENTS})
        assert e.view("player_0").private is not None
    assert obs[0]["player_0"] == obs[1]["player_0"]  # seat 0 cannot tell the two deals apart
    if i < 16:
        assert obs[0]["player_1"] != obs[1]["player_1"]  # seat 1 holds the swapped card


def test_the_encoding_reads_nothing_but_the_views_wire_form() -> None:
    """Every observation is rebuilt exactly from the view's JSON as the server sends it: no
    attribute outside the view's declared fields can reach it."""
    rng = random.Random(3)
    decode = msgspec.json.Decoder(View).decode
    for seed in range(5):
        game = Game.new(seed=seed)
        while game.to_move is not None:
            for seat in (0, 1):
                v = view(game, seat)
                wire = decode(msgspec.json.encode(v))
                assert np.array_equal(encode(wire), encode(v)) and raw_counts(wire) == raw_counts(v)
            game.push(rng.choice(game.legal_moves))
