"""The shipped bots: only legal moves, at every kind of decision, and greedy beats random."""

from __future__ import annotations

import time
from typing import Any

import pytest

from mandala import Game, Move, View, view
from mandala.moves import CLAIM_BASE, PASS_CODE
from mandala.record import move_of
from mandala.sample import Sampler
from mandala_client.bots import SHORTCUTS, GreedyBot, RandomBot, SearchBot
from mandala_client.offline import load_bot, play_game
from protocol.messages import GameOver, GameStart, Update


class Checked:
    """Wraps a bot and fails the test on any move outside the legal list."""

    def __init__(self, bot: Any) -> None:
        self.bot = bot
        self.kinds: set[str] = set()

    def choose(self, v: View, legal: list[Move]) -> Move:
        move = self.bot.choose(v, legal)
        assert move in legal
        self.kinds.add(type(move).__name__)
        return move


def _play(a: Any, b: Any, seed: int) -> Game:
    game = Game.new(seed=seed, first_player=seed % 2)
    outcome = play_game([a, b], game)
    assert outcome.forfeit is None and game.is_over
    return game


@pytest.mark.parametrize("make", [
    lambda s: RandomBot(seed=s),
    lambda s: GreedyBot(seed=s),
    lambda s: SearchBot(seed=s, iterations=25),
], ids=["random", "greedy", "search"])
def test_bot_plays_only_legal_moves(make: Any) -> None:
    kinds: set[str] = set()
    for seed in range(3):
        bot = Checked(make(seed))
        other = RandomBot(seed=100 + seed)
        if seed % 2:
            _play(bot, other, seed)
        else:
            _play(other, bot, seed)
        kinds |= bot.kinds
    assert {"Mountain", "Claim"} <= kinds  # turns and picks both came up


def test_bots_handle_every_decision_type_against_each_other() -> None:
    game = _play(Checked(GreedyBot(seed=1)), Checked(SearchBot(seed=2, iterations=15)), 7)
    assert any(code >= CLAIM_BASE and code != PASS_CODE for _, code in game.history)


def _score(a: str, b: str, deals: int, seed: int) -> float:
    """A's score fraction over duplicate deals (each deal twice, seats swapped)."""
    total = 0.0
    for deal in range(deals):
        for a_seat in (0, 1):
            bots = [load_bot(a, seed=seed + deal), load_bot(b, seed=seed + deal + 1)]
            if a_seat:
                bots.reverse()
            game = Game.new(seed=f"{seed}:{deal}", first_player=deal % 2)  # type: ignore[arg-type]
            play_game(bots, game)
            w = game.winner()
            total += 0.5 if w is None else 1.0 if w == a_seat else 0.0
    return total / (2 * deals)


def test_greedy_beats_random_clearly() -> None:
    assert _score("greedy", "random", deals=20, seed=3) >= 0.7


def test_search_is_reproducible_with_an_iteration_cap() -> None:
    game = Game.new(seed=5)
    for _ in range(12):
        game.push_code(game.legal_codes()[0])
    v, legal = view(game, game.to_move), game.legal_moves
    a = [SearchBot(seed=9, iterations=60).choose(v, legal) for _ in range(2)]
    assert a[0] == a[1]


def test_search_keeps_to_its_time_budget() -> None:
    game = Game.new(seed=6)
    bot = SearchBot(seed=1, budget=0.1)
    start = time.perf_counter()
    bot.choose(view(game, 0), game.legal_moves)
    assert time.perf_counter() - start < 0.5
    assert bot.last_iterations > 1


def test_shortcuts_name_the_shipped_bots() -> None:
    assert {"random": RandomBot, "greedy": GreedyBot, "search": SearchBot} == {k: SHORTCUTS[k] for k in ("random", "greedy", "search")}
    assert sorted(set(SHORTCUTS) - {"random", "greedy", "search"}) == [f"house:{n}" for n in range(1, 6)]
    bot = load_bot("search,iterations=7,exploration=0.5", seed=1)
    assert isinstance(bot, SearchBot) and bot.iterations == 7 and bot.exploration == 0.5 and bot.budget is None


class AsyncFirst:
    """A user bot whose ``choose`` is a coroutine, as an async client might write it."""

    async def choose(self, v: View, legal: list[Move]) -> Move:
        return legal[0]


def test_async_bots_are_awaited() -> None:
    _play(AsyncFirst(), RandomBot(seed=3), 11)


def test_search_budget_on_the_cpu_clock() -> None:
    """``clock=cpu`` counts this thread's CPU time (what the clairvoyant benchmark gives both sides)."""
    game = Game.new(seed=6)
    bot = load_bot("search,clock=cpu", seed=1, budget=0.02)
    assert bot.choose(view(game, 0), game.legal_moves) in game.legal_moves
    assert bot.last_iterations > 1
    with pytest.raises(ValueError, match="clock"):
        SearchBot(clock="sundial")


def _tree_height(node: Any) -> int:
    return 1 + max((_tree_height(c) for c in node.children.values()), default=0) if node.children else 0


def test_search_tree_depth_caps_the_moves_an_iteration_follows_in_the_tree() -> None:
    """Below ``tree_depth`` moves no node is added: the playout takes over from there."""
    game = Game.new(seed=4)
    sampler = Sampler(view(game, 0))
    # Uncapped, the tree grows deeper than either cap below (4 moves here with the shipped judgement).
    assert _tree_height(SearchBot(seed=1, iterations=1000)._search(sampler)) > 2
    for cap in (1, 2):
        root = SearchBot(seed=1, iterations=1000, tree_depth=cap)._search(sampler)
        assert _tree_height(root) == cap
        assert sum(c.visits for c in root.children.values()) == 1000
    assert load_bot("search,tree_depth=2", seed=1).tree_depth == 2
    with pytest.raises(ValueError, match="tree_depth"):
        SearchBot(tree_depth=0)


class Notified(RandomBot):
    """Hears a game's messages through ``notify``."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed=seed)
        self.heard: list[Any] = []

    def notify(self, message: Any) -> None:
        self.heard.append(message)


class Hooked(RandomBot):
    """Hears them through the online client's hooks, one of them a coroutine."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed=seed)
        self.heard: list[Any] = []

    def on_game_start(self, start: GameStart) -> None:
        self.heard.append(start)

    async def on_update(self, update: Update) -> None:
        self.heard.append(update)

    def on_game_over(self, over: GameOver) -> None:
        self.heard.append(over)


def test_offline_a_bot_hears_its_games_through_notify_or_the_online_hooks_alike() -> None:
    """A bot written for the online client follows an offline game (``mandala match``, the
    benchmarks) as it would on a server: the same messages, each with its own seat's view."""
    a, b = Hooked(1), Notified(2)
    game = Game.new(seed=4)
    outcome = play_game([a, b], game, "g1", ("ann", "ben"))
    for seat, bot in enumerate((a, b)):
        start, *updates, over = bot.heard
        assert isinstance(start, GameStart) and (start.game_id, start.seat) == ("g1", seat)
        assert [u.ply for u in updates] == list(range(outcome.plies + 1))
        replay = Game.new(seed=4)
        for u in updates:
            if u.move is not None:
                replay.push(move_of(u.move))
            assert u.view == view(replay, seat)
        assert isinstance(over, GameOver) and over.result.scores == list(outcome.scores)
    assert [type(m) for m in a.heard] == [type(m) for m in b.heard]
    assert [u.move for u in a.heard[1:-1]] == [u.move for u in b.heard[1:-1]]


class Failing(RandomBot):
    def on_update(self, update: Update) -> None:
        if update.ply == 3:
            raise ValueError("a bug in the bot's hook")


def test_offline_a_failing_hook_is_logged_and_the_game_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    """As the online client does: a bug in a hook costs the bot nothing but a log line."""
    outcome = play_game([Failing(seed=1), RandomBot(seed=2)], Game.new(seed=6))
    assert outcome.forfeit is None and outcome.end_reason in ("river", "deck", "no_moves", "turn_limit")
    failures = [r for r in caplog.records if "on_update() of" in r.getMessage()]
    assert len(failures) == 1 and failures[0].exc_info is not None
