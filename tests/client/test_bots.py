"""The shipped bots: only legal moves, at every kind of decision, and greedy beats random."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from mandala import Game, Move, View, view
from mandala.moves import CLAIM_BASE, PASS_CODE
from mandala.record import move_code, move_of, played_move
from mandala.sample import Sampler
from mandala_client.bots import SHORTCUTS, GreedyBot, RandomBot, SearchBot
from mandala_client.offline import Messages, load_bot, play_game
from protocol.messages import GameOver, GameResult, GameStart, Player, Update


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



def _children_visits(node: Any) -> int:
    return sum(c.visits for c in node.children.values())


class _Table:
    """One game driven by hand: ``bot`` in seat 0, told the game's messages (unless ``tell`` is
    off for a move), random moves for seat 1 and for seat 0's forced moves."""

    def __init__(self, bot: SearchBot, seed: int) -> None:
        self.bot = bot
        self.game = Game.new(seed=seed, first_player=0)
        self.messages = Messages([bot, None], self.game, "g")
        self.messages.started(0)
        self.rng = random.Random(seed)

    def play(self, move: Move, tell: bool = True) -> int:
        seat = self.game.to_move
        assert seat is not None
        self.game.push(move)
        if tell:
            self.messages.moved(move, seat)
        return self.game.history[-1][1]

    def to_decision(self, tell_last: bool = True) -> list[int]:
        """Play on until seat 0 decides among several moves (or the end); the codes played. With
        ``tell_last`` off the bot is not told the last of them."""
        game = self.game
        codes: list[int] = []
        while not self._deciding():
            move = self.rng.choice(game.legal_moves)
            seat = game.to_move
            codes.append(self.play(move, tell=False))
            if tell_last or not self._deciding():
                self.messages.moved(move, seat)
        return codes

    def _deciding(self) -> bool:
        """The game is over, or seat 0 decides among several moves."""
        game = self.game
        return game.to_move is None or (game.to_move == 0 and len(game.legal_codes()) > 1)

    def decide(self) -> Move:
        return self.bot.choose(view(self.game, 0), self.game.legal_moves)

    def over(self) -> None:
        game = self.game
        self.messages.over(GameResult(game.winner(), game.end_reason or "", list(game.scores()), list(game.cup_sizes())))


def test_search_reuse_starts_the_next_decision_from_the_node_the_moves_lead_to() -> None:
    """With ``reuse`` the moves since the last search (the bot's own, the opponent's, forced
    ones) lead down the kept tree, and the next search starts there with all the node's visits."""
    bot = load_bot("search,reuse=1,iterations=400", seed=3)
    assert bot.reuse is True
    table = _Table(bot, seed=5)
    game = table.game
    table.to_decision()
    expected = None
    reused = 0
    while True:
        before = _children_visits(expected) if expected is not None else 0
        move = table.decide()
        root = bot._trails["g"].node
        assert root is not None and bot.last_carried == before
        assert _children_visits(root) == before + 400
        if expected is not None:
            assert root is expected  # the same node, now the root
            reused += before > 0
        path = [table.play(move), *table.to_decision()]
        if game.to_move is None:
            break
        expected = root
        for code in path:
            expected = expected.children.get(code)
            if expected is None:
                break
    assert reused >= 10
    table.over()
    assert bot._trails == {}
    with pytest.raises(ValueError, match="reuse"):
        SearchBot(reuse=2)  # type: ignore[arg-type]



def test_search_reuse_falls_back_to_a_fresh_tree_when_the_path_is_not_certain() -> None:
    """A gap in the plies, a missing last update, a resume, or a move the kept node never saw
    start a fresh tree; told every move, the same decision starts from the kept node."""
    carried = {}
    for case in ("told", "gap", "late", "resume", "unseen"):
        # One iteration expands one move at the root and nothing below it: the move after it
        # is one the node never saw.
        bot = SearchBot(seed=2, iterations=1 if case == "unseen" else 300, reuse=True)
        table = _Table(bot, seed=4)
        table.to_decision()
        table.play(table.decide(), tell=case != "gap")  # then the next update's ply is two on
        table.to_decision(tell_last=case != "late")  # then the decision's view is no update's
        assert table.game.to_move == 0
        if case == "resume":
            bot.on_game_start(GameStart("g", 0, [Player("a", 0), Player("b", 1)], 0, 5000, False, resumed=True))
            bot.on_update(Update("g", len(table.game.history), None, view(table.game, 0)))
        assert (bot._trails["g"].node is not None) == (case in ("told", "late"))
        table.decide()
        carried[case] = bot.last_carried
    assert carried["told"] > 0
    assert carried["gap"] == carried["late"] == carried["resume"] == carried["unseen"] == 0


class _Liar:
    """Passes a searching bot its messages, but each update names another move than the one
    played, one the bot's kept node knows (a wrong update on a path that looks certain)."""

    def __init__(self, bot: SearchBot) -> None:
        self.bot = bot
        self.choose = bot.choose
        self.on_game_start = bot.on_game_start
        self.on_game_over = bot.on_game_over
        self.lies = 0

    def on_update(self, update: Update) -> None:
        trail = self.bot._trails.get(update.game_id)
        if update.move is not None and trail is not None and trail.node is not None:
            other = [code for code in trail.node.children if code != move_code(update.move)]
            if other:
                self.lies += 1
                update = Update(update.game_id, update.ply, played_move(update.move.player, other[0]), update.view)
        self.bot.on_update(update)


def test_search_reuse_keeps_games_played_at_once_apart_and_plays_only_legal_moves() -> None:
    """One bot in two games at once, interleaved move by move as the online client runs them:
    each game follows its own tree (kept by game id, dropped at its end), and told wrong moves
    in one of them it still plays only legal moves to the end of both."""
    x, y = SearchBot(seed=1, iterations=60, reuse=True), SearchBot(seed=2, iterations=60, reuse=True)
    liar = _Liar(x)
    games = {"a": Game.new(seed=11, first_player=0), "b": Game.new(seed=12, first_player=1)}
    seats: dict[str, list[Any]] = {"a": [x, y], "b": [y, liar]}
    messages = {gid: Messages(seats[gid], game, gid) for gid, game in games.items()}
    for m in messages.values():
        m.started(0)
        m.started(1)
    carried: dict[tuple[str, int], list[int]] = {(gid, seat): [] for gid in games for seat in (0, 1)}
    while any(game.to_move is not None for game in games.values()):
        for gid, game in games.items():
            seat = game.to_move
            if seat is None:
                continue
            legal = game.legal_moves
            move = seats[gid][seat].choose(view(game, seat), legal)
            assert move in legal
            game.push(move)
            messages[gid].moved(move, seat)
            if len(legal) > 1:
                carried[gid, seat].append((x if seats[gid][seat] is liar else seats[gid][seat]).last_carried)
    for gid, game in games.items():
        messages[gid].over(GameResult(game.winner(), game.end_reason or "", list(game.scores()), list(game.cup_sizes())))
    assert x._trails == y._trails == {}
    assert liar.lies > 0
    for key in (("a", 0), ("a", 1), ("b", 0)):
        assert sum(c > 0 for c in carried[key]) >= 5, key


def test_search_reuse_keeps_trees_for_at_most_kept_games_games() -> None:
    """A game that ended while the bot was away is never told its end; the oldest kept trees
    go once there are more than ``KEPT_GAMES``, so such games cannot pile up."""
    from mandala_client.bots.search import KEPT_GAMES

    bot = SearchBot(seed=1, iterations=10)
    assert bot.reuse  # the default
    start = view(Game.new(seed=3), 0)
    for i in range(KEPT_GAMES + 2):
        bot.on_update(Update(f"g{i}", 0, None, start))
    assert len(bot._trails) == KEPT_GAMES
    assert "g0" not in bot._trails and "g1" not in bot._trails and f"g{KEPT_GAMES + 1}" in bot._trails
