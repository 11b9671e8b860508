"""The graded house levels: selectable by name wherever a bot is chosen, fixed work per
decision (no clock), legal play, and each level ahead of the one below on a few deals."""

from __future__ import annotations

from typing import Any

import pytest

from mandala import Game, Move, View, view
from mandala_client.bots import GreedyBot, NoisyGreedyBot, RandomBot, SearchBot
from mandala_client.bots.levels import house
from mandala_client.cli import _load
from mandala_client.offline import SpecError, bot_factory, load_bot, play_game


class Checked:
    """Fails the test on any move outside the legal list."""

    def __init__(self, bot: Any) -> None:
        self.bot = bot

    def choose(self, v: View, legal: list[Move]) -> Move:
        move = self.bot.choose(v, legal)
        assert move in legal
        return move


def test_each_level_is_its_bot_with_fixed_work() -> None:
    kinds = [type(load_bot(f"house:{n}", seed=1, budget=9.0)) for n in range(1, 6)]
    assert kinds == [RandomBot, NoisyGreedyBot, GreedyBot, SearchBot, SearchBot]
    four, five = load_bot("house:4", seed=1, budget=9.0), load_bot("house:5", seed=1, budget=9.0)
    assert (four.iterations, four.budget) == (100, None)  # a budget is ignored: a level is its work
    assert (five.iterations, five.budget) == (1000, None)
    assert (five.depth, five.exploration, five.policy, five.evaluation) == (10, 0.2, "weighted", "hand")  # pinned: not the shipped default
    assert load_bot("house:2", seed=1).noise == 0.5


def test_levels_are_selectable_where_bots_are_chosen() -> None:
    assert isinstance(_load("house:3"), GreedyBot)  # mandala-bot --bot
    bot_factory("house:5")  # mandala match checks the spec this way before it starts
    with pytest.raises(SpecError):
        bot_factory("house:6")
    with pytest.raises(ValueError):
        house(0)
    with pytest.raises(ValueError):
        NoisyGreedyBot(noise=1.5)


@pytest.mark.parametrize("level", [1, 2, 3, 4])
def test_a_level_plays_a_legal_game(level: int) -> None:
    game = Game.new(seed=level, first_player=level % 2)
    bots = [Checked(load_bot(f"house:{level}", seed=level)), Checked(RandomBot(seed=50 + level))]
    if level % 2:
        bots.reverse()
    outcome = play_game(bots, game)
    assert outcome.forfeit is None and game.is_over


def test_the_top_level_plays_legal_moves_and_reproducibly() -> None:
    game = Game.new(seed=8)
    for _ in range(10):  # a few plies in, at a turn and then at whatever comes
        game.push_code(game.legal_codes()[-1])
    seat = game.to_move
    assert seat is not None
    v, legal = view(game, seat), game.legal_moves
    moves = [load_bot("house:5", seed=4).choose(v, legal) for _ in range(2)]
    assert moves[0] in legal and moves[0] == moves[1]


def _score(a: str, b: str, deals: int) -> float:
    total = 0.0
    for deal in range(deals):
        for a_seat in (0, 1):
            bots = [load_bot(a, seed=deal), load_bot(b, seed=deal + 100)]
            if a_seat:
                bots.reverse()
            game = Game.new(seed=f"levels:{deal}", first_player=deal % 2)  # type: ignore[arg-type]
            play_game(bots, game)
            w = game.winner()
            total += 0.5 if w is None else 1.0 if w == a_seat else 0.0
    return total / (2 * deals)


def test_the_low_levels_are_in_order() -> None:
    assert _score("house:2", "house:1", deals=10) >= 0.7
    assert _score("house:3", "house:2", deals=10) >= 0.6
