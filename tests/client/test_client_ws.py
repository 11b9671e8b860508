"""The asyncio client (``mandala_client.Client``) and ``mandala-bot`` against real servers.

Library tests run the server in-process on a real socket (``make_arena``) with its clocks
shrunk through settings; the command tests start ``mandala serve`` and ``mandala-bot`` as
processes. Nothing sleeps and hopes: tests wait for events, hooks and process output, each
with a timeout.
"""

from __future__ import annotations

import asyncio
import logging
import random
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import mandala
from arena_testkit import ADMIN, Harness, create_bot_at, exit_of, free_port, mandala_bot, mandala_serve, wait_until
from mandala import Move, View
from mandala_client import Client, ClientError, ConnectionRejected, FinishedGame, cli
from mandala_client.games import Chooser
from protocol.messages import Decision, GameOver, GameStart, LadderStatus

RULES_END = {"river", "deck", "no_moves", "turn_limit"}
GAME_TIMEOUT = 60.0


def ws_url(arena: Harness) -> str:
    return str(arena.client.make_url("/ws")).replace("http://", "ws://", 1)


# ------------------------------------------------------------------ bots


class PlainBot:
    """A plain ``choose`` (run in a worker thread) and every hook, recorded."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)
        self.threads: set[int] = set()
        self.starts: list[GameStart] = []
        self.overs: list[GameOver] = []
        self.updates = 0

    def choose(self, view: View, legal: list[Move]) -> Move:
        self.threads.add(threading.get_ident())
        return self.rng.choice(legal)

    def on_game_start(self, start: GameStart) -> None:
        self.starts.append(start)

    def on_update(self, update: Any) -> None:
        self.updates += 1

    def on_game_over(self, over: GameOver) -> None:
        self.overs.append(over)


class AsyncBot(PlainBot):
    """An ``async def choose`` (run on the event loop) and async hooks."""

    async def choose(self, view: View, legal: list[Move]) -> Move:  # type: ignore[override]
        self.threads.add(threading.get_ident())
        await asyncio.sleep(0)
        return legal[0]

    async def on_game_over(self, over: GameOver) -> None:  # type: ignore[override]
        await asyncio.sleep(0)
        self.overs.append(over)


async def start(client: Client) -> asyncio.Task[list[FinishedGame]]:
    """Run ``client`` in a task and return once its session is open."""
    task = asyncio.create_task(client.run())
    waiter = asyncio.create_task(client.connected.wait())
    await asyncio.wait({task, waiter}, timeout=10, return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    if task.done():
        task.result()  # raises what ended it
    assert client.connected.is_set(), "the client did not connect"
    return task


async def finish(*tasks: asyncio.Task[list[FinishedGame]], timeout: float = GAME_TIMEOUT) -> list[list[FinishedGame]]:
    return list(await asyncio.wait_for(asyncio.gather(*tasks), timeout))


async def challenge_games(arena: Harness, games: int, challenger: tuple[str, Any, dict[str, Any]],
                          accepter: tuple[str, Any, dict[str, Any]]) -> tuple[Client, Client, list[list[FinishedGame]]]:
    """Two library bots, each ``(name, bot, Client options)``: the accepter connects, the
    challenger challenges it until ``games`` games are over. The two clients and the games
    each played, challenger's first."""
    url = ws_url(arena)
    (a_name, a_bot, a_opts), (b_name, b_bot, b_opts) = challenger, accepter
    b = Client(b_bot, url=url, token=await arena.create_bot(b_name), games=games, **b_opts)
    a = Client(a_bot, url=url, token=await arena.create_bot(a_name), challenge=b_name, games=games, **a_opts)
    b_task = await start(b)
    a_task = await start(a)
    return a, b, await finish(a_task, b_task)


async def check_played(arena: Harness, games: list[FinishedGame], *clients: Client) -> None:
    """Every game ended by the rules, the server stored it so, its record replays to it, and the
    client counted its own decisions in it."""
    for game in games:
        assert game.result is not None and game.result.end_reason in RULES_END, game
        assert game.outcome in ("won", "lost", "draw") and len(game.result.scores) == 2
        stored = await arena.get_json(f"/api/games/{game.game_id}")
        assert stored["status"] == "finished"
        record = await arena.get_json(f"/api/games/{game.game_id}/record")
        replayed = mandala.replay(record)
        assert (replayed.end_reason, list(replayed.scores())) == (game.result.end_reason, game.result.scores)
        # ``moves`` counts the seat's own decisions, and the log line says so.
        assert game.moves == sum(1 for m in record["moves"] if m["player"] == game.seat) > 0
        assert f" against {game.opponent}, {game.moves} moves of its own" in game.describe()
    for client in clients:
        assert client.errors == [], client.errors  # not one message of the client was refused


def mirrored(a: list[FinishedGame], b: list[FinishedGame]) -> None:
    """``a`` and ``b`` are the same games seen from the two seats."""
    flip = {"won": "lost", "lost": "won", "draw": "draw"}
    assert sorted(g.game_id for g in a) == sorted(g.game_id for g in b)
    other = {g.game_id: g for g in b}
    for g in a:
        assert other[g.game_id].seat == 1 - g.seat
        assert other[g.game_id].outcome == flip[g.outcome]


# ------------------------------------------------------------------ the library against make_arena


async def test_two_library_bots_play_complete_games_by_challenge(make_arena: Any) -> None:
    arena: Harness = await make_arena()
    plain, asynchronous = PlainBot(1), AsyncBot()
    challenger, accepter, (played_a, played_b) = await challenge_games(
        arena, 3, ("challenger", plain, {}), ("acceptor", asynchronous, {}))
    assert len(played_a) == len(played_b) == 3
    mirrored(played_a, played_b)
    await check_played(arena, played_a, challenger, accepter)
    assert all(g.kind == "challenge" and not g.rated and g.fallbacks == 0 for g in played_a + played_b)
    assert {g.opponent for g in played_a} == {"acceptor"} and {g.opponent for g in played_b} == {"challenger"}
    for bot in (plain, asynchronous):
        assert len(bot.starts) == len(bot.overs) == 3 and bot.updates > 0
        assert [o.game_id for o in bot.overs] == [s.game_id for s in bot.starts]
    assert threading.get_ident() not in plain.threads  # a plain choose runs in a worker thread
    assert asynchronous.threads == {threading.get_ident()}  # an async one on the loop
    assert challenger.name == "challenger" and challenger.welcomes == 1 and not challenger.running


class GatedBot(PlainBot):
    """Plays no move before ``games`` games have started: they must run at once."""

    def __init__(self, games: int) -> None:
        super().__init__()
        self.games = games
        self.all_started = asyncio.Event()
        self.timeline: list[tuple[str, str]] = []

    async def choose(self, view: View, legal: list[Move]) -> Move:  # type: ignore[override]
        await self.all_started.wait()
        return legal[-1]

    def on_game_start(self, start: GameStart) -> None:
        self.timeline.append(("start", start.game_id))
        if len(self.timeline) == self.games:
            self.all_started.set()

    def on_game_over(self, over: GameOver) -> None:
        self.timeline.append(("over", over.game_id))


async def test_max_games_plays_games_at_once(make_arena: Any) -> None:
    arena: Harness = await make_arena()
    gated = GatedBot(3)
    challenger, accepter, (played_a, played_b) = await challenge_games(
        arena, 3, ("many-a", gated, {"max_games": 3}), ("many-b", PlainBot(2), {"max_games": 3}))
    assert [kind for kind, _ in gated.timeline] == ["start"] * 3 + ["over"] * 3
    assert len({g.game_id for g in played_a}) == 3
    mirrored(played_a, played_b)
    await check_played(arena, played_a, challenger, accepter)


def test_max_games_says_it_counts_games_at_once_not_in_all() -> None:
    helps = {a.dest: " ".join((a.help or "").split()) for a in cli.build_parser()._actions}
    assert "at the same time" in helps["max_games"] and "not a total" in helps["max_games"]
    assert "--games" in helps["max_games"] and "in all" in helps["games"]


class TroubleBot:
    """A plain ``choose`` that overruns once, raises once, returns a move that is not legal
    once and a numpy array (a policy's raw output) once; it answers the first legal move
    otherwise."""

    def __init__(self) -> None:
        self.calls = 0

    def choose(self, view: View, legal: list[Move]) -> Move:
        self.calls += 1
        if self.calls == 1:
            time.sleep(1.0)  # far beyond the 400 ms the server gives
        elif self.calls == 2:
            raise RuntimeError("a bug in the bot")
        elif self.calls == 3:
            return mandala.Discard("red", 9)  # never legal: a hand holds at most 8 cards
        elif self.calls == 4:
            return np.array([0.2, 0.8])  # type: ignore[return-value]
        return legal[0]


class SlowAsyncBot:
    """An ``async def choose`` that overruns its first decision (the client cancels it)."""

    def __init__(self) -> None:
        self.calls = 0
        self.cancelled = 0

    async def choose(self, view: View, legal: list[Move]) -> Move:
        self.calls += 1
        if self.calls == 1:
            try:
                await asyncio.sleep(1.0)
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        return legal[0]


class DecidingBot:
    """A bot with ``decide(decision)`` alone, as offline play takes one: the whole message."""

    def __init__(self) -> None:
        self.decisions: list[Decision] = []

    def decide(self, decision: Decision) -> Move:
        self.decisions.append(decision)
        return decision.legal[-1]


async def test_a_bot_that_decides_from_the_whole_decision_plays_online_as_offline(make_arena: Any) -> None:
    arena: Harness = await make_arena()
    deciding = DecidingBot()
    challenger, accepter, ((game_a,), _) = await challenge_games(
        arena, 1, ("decider", deciding, {}), ("plain", PlainBot(1), {}))
    await check_played(arena, [game_a], challenger, accepter)
    assert game_a.fallbacks == 0 and len(deciding.decisions) == game_a.moves
    assert {d.game_id for d in deciding.decisions} == {game_a.game_id}


async def test_slow_or_failing_choose_answers_in_time_with_a_fallback(
        make_arena: Any, caplog: pytest.LogCaptureFixture) -> None:
    arena: Harness = await make_arena(decision_ms=400)
    trouble, slow = TroubleBot(), SlowAsyncBot()
    # A 200 ms margin (the default would be 80 ms) keeps a loaded test machine, where the server
    # and both clients share one event loop, from turning a fallback into a timeout.
    with caplog.at_level(logging.WARNING, logger="mandala_client"):
        challenger, accepter, ((game_a,), (game_b,)) = await challenge_games(
            arena, 1, ("trouble", trouble, {"margin_ms": 200}),
            ("slow-async", slow, {"margin_ms": 200, "fallback": "first"}))
    await check_played(arena, [game_a], challenger, accepter)  # by the rules: nobody lost on time
    assert game_a.fallbacks == 4 and game_b.fallbacks == 1 and slow.cancelled == 1
    text = caplog.text
    assert "did not answer within" in text and "raised RuntimeError: a bug in the bot" in text
    assert "not one of the legal moves" in text and "answered with a fallback move" in text
    assert "returned array([0.2, 0.8])" in text


def test_choose_budget_keeps_a_margin() -> None:
    chooser = Chooser(PlainBot())
    assert chooser.budget_s(5000) == pytest.approx(4.5)  # 20 %, at most 500 ms
    assert chooser.budget_s(400) == pytest.approx(0.32)
    assert chooser.budget_s(100) == pytest.approx(0.05)  # at least 50 ms
    assert chooser.budget_s(30) == 0.0  # a resumed decision with almost no time left: fall back at once
    assert Chooser(PlainBot(), margin_ms=200).budget_s(400) == pytest.approx(0.2)


class DroppingBot(PlainBot):
    """At its fifth decision, has the server drop its connection before it answers."""

    def __init__(self, arena: Harness, name: str) -> None:
        super().__init__(3)
        self.arena, self.name, self.calls = arena, name, 0

    async def choose(self, view: View, legal: list[Move]) -> Move:  # type: ignore[override]
        self.calls += 1
        if self.calls == 5:
            conn = self.arena.arena.presence.get(self.name)
            assert conn is not None
            conn.outbox.cut()  # aborts the TCP connection: the client sees it end without a close frame
        return self.rng.choice(legal)


async def test_a_dropped_connection_is_reestablished_and_the_game_finishes(
        make_arena: Any, caplog: pytest.LogCaptureFixture) -> None:
    arena: Harness = await make_arena()
    dropping = DroppingBot(arena, "dropping")
    with caplog.at_level(logging.INFO, logger="mandala_client"):
        client, opponent, ((game,), (other,)) = await challenge_games(
            arena, 1, ("dropping", dropping, {"reconnect_delay_s": 0.05}), ("steady", PlainBot(4), {}))
    assert client.welcomes == 2 and client.attempts == 2
    assert [s.resumed for s in dropping.starts] == [False, True]  # the server resumed the game
    assert dropping.calls > 5 and game.fallbacks == 0
    await check_played(arena, [game], client, opponent)
    mirrored([game], [other])
    assert "connection lost" in caplog.text and "the opponent is away" in caplog.text
    assert "the opponent is back" in caplog.text


async def test_bad_token_stops_without_retrying(make_arena: Any) -> None:
    arena: Harness = await make_arena()
    client = Client(PlainBot(), url=ws_url(arena), token="no-such-token", reconnect_delay_s=0.01)
    with pytest.raises(ConnectionRejected) as caught:
        await asyncio.wait_for(client.run(), 10)
    assert caught.value.code == 4001 and "does not know this token" in str(caught.value)
    assert client.attempts == 1 and client.welcomes == 0
    assert [e.code for e in client.errors] == ["bad_token"]


async def test_unknown_opponent_and_unreachable_server_end_with_client_error(make_arena: Any, caplog: Any) -> None:
    arena: Harness = await make_arena()
    client = Client(PlainBot(), url=ws_url(arena), token=await arena.create_bot("lonely"), challenge="nobody")
    with pytest.raises(ClientError, match="cannot challenge 'nobody'"):
        await asyncio.wait_for(client.run(), 10)
    port = free_port()
    nowhere = Client(PlainBot(), url=f"ws://127.0.0.1:{port}/ws", token="t", reconnect_delay_s=0.01,
                     max_failures=3)
    with pytest.raises(ClientError, match=rf"\(cannot reach 127\.0\.0\.1:{port}: .*\); gave up after 3 attempts"):
        await asyncio.wait_for(nowhere.run(), 10)
    assert nowhere.attempts == 3
    # a connection that never opened is not "lost", and no SSL object is named on a ws:// address
    assert "could not connect (cannot reach" in caplog.text and "connection lost" not in caplog.text
    assert "SSLContext" not in caplog.text


async def test_an_address_without_the_websocket_path_stops_at_once_naming_it(make_arena: Any, caplog: Any) -> None:
    """``ws://host:port`` (the page's address) answers with a page, not a WebSocket: that would
    come again at every attempt, so the client stops at the first and names the right path."""
    arena: Harness = await make_arena()
    token = await arena.create_bot("pathless")
    base = ws_url(arena).removesuffix("/ws")
    for url, status, suggested in ((base, 200, base + "/ws"), (base + "/", 200, base + "/ws"),
                                   (base + "/socket", 404, base + "/socket/ws")):
        client = Client(PlainBot(), url=url, token=token, reconnect_delay_s=0.01, max_failures=3)
        with pytest.raises(ClientError) as caught:
            await asyncio.wait_for(client.run(), 10)
        assert client.attempts == 1, url
        assert str(caught.value).startswith(f"no WebSocket at {url} (the server answered HTTP {status}: ")
        assert str(caught.value).endswith(f"); not reconnecting; the arena's WebSocket is at /ws: {suggested}")
    assert "reconnecting in" not in caplog.text


class LadderBot(PlainBot):
    """Records ladder statuses; has the server drop its connection when its first game starts,
    so the client must seek again after reconnecting."""

    def __init__(self, arena: Harness, name: str) -> None:
        super().__init__(5)
        self.arena, self.name = arena, name
        self.statuses: list[LadderStatus] = []
        self.listed = asyncio.Event()

    def on_game_start(self, start: GameStart) -> None:
        super().on_game_start(start)
        if len(self.starts) == 1:
            conn = self.arena.arena.presence.get(self.name)
            assert conn is not None
            conn.outbox.cut()

    def on_ladder(self, status: LadderStatus) -> None:
        self.statuses.append(status)
        if status.state == "listed":
            self.listed.set()


async def test_ladder_mode_seeks_after_every_welcome_and_qualifies(make_arena: Any) -> None:
    arena: Harness = await make_arena(pairing_interval_s=0.05)
    bot = LadderBot(arena, "climber")
    client = Client(bot, url=ws_url(arena), token=await arena.create_bot("climber"), ladder=True,
                    reconnect_delay_s=0.05)
    task = await start(client)
    await asyncio.wait_for(bot.listed.wait(), GAME_TIMEOUT)
    client.stop()
    played = await finish(task)
    # Each welcome was followed by a seek, each answered with a status that says it is seeking.
    assert client.welcomes == 2
    assert sum(1 for s in bot.statuses if s.seeking and s.state == "qualifying") >= 2
    assert bot.statuses[0].qualification_left == 2 and bot.statuses[-1].qualification_left == 0
    quals = played[0]
    assert len(quals) == 2 and all(g.kind == "qualification" and g.opponent == "house" for g in quals)
    await check_played(arena, quals, client)
    assert [s.resumed for s in bot.starts] == [False, True, False]


async def organizer(arena: Harness, method: str, path: str) -> Any:
    """An organizer request with the admin token; its JSON answer, which must be a 200."""
    resp = await arena.client.request(method, path, headers={"Authorization": f"Bearer {ADMIN}"})
    assert resp.status == 200, await resp.text()
    return await resp.json()


async def test_a_removed_bot_plays_on_and_seeks_again_once_restored(
        make_arena: Any, caplog: pytest.LogCaptureFixture) -> None:
    """Removed before it connects: its seek draws ``error`` ``removed``, which ends nothing; it
    stays connected, plays a challenge, and seeks as soon as the organizer restores it."""
    arena: Harness = await make_arena(pairing_interval_s=0.05)
    url = ws_url(arena)
    outcast = Client(PlainBot(8), url=url, token=await arena.create_bot("outcast"), ladder=True)
    await organizer(arena, "DELETE", "/api/ladder/bots/outcast")
    with caplog.at_level(logging.INFO, logger="mandala_client"):
        task = await start(outcast)
        await wait_until(lambda: outcast.removed, 10, "the seek of a removed bot was not refused")
        challenger = Client(PlainBot(9), url=url, token=await arena.create_bot("visitor"), challenge="outcast",
                            games=1)
        (played,) = await finish(await start(challenger))
        await organizer(arena, "POST", "/api/ladder/bots/outcast/restore")
        await wait_until(lambda: "outcast" in arena.arena.ladder.seeking, 10, "the restored bot did not seek")
        assert not task.done() and outcast.connected.is_set() and outcast.welcomes == 1
        outcast.stop()
        (games,) = await finish(task)
    assert [g.kind for g in played] == ["challenge"] and [g.game_id for g in games][:1] == [played[0].game_id]
    await check_played(arena, played, challenger)
    assert [e.code for e in outcast.errors] == ["removed"] and not outcast.removed
    text = caplog.text
    assert text.count("removed from the ladder by the organizer") == 1 and "no more seeking" in text
    assert "restored to the ladder by the organizer: seeking again" in text


# ------------------------------------------------------------------ mandala-bot and mandala serve as processes


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``mandala serve`` as a process; its base URL."""
    with mandala_serve(tmp_path_factory.mktemp("served")) as base:
        yield base


async def test_mandala_bot_plays_a_challenge_game(served: str) -> None:
    opponent = Client(PlainBot(6), url=served.replace("http", "ws", 1) + "/ws",
                      token=await asyncio.to_thread(create_bot_at, served, "cli-opponent"), games=2)
    task = await start(opponent)
    token = await asyncio.to_thread(create_bot_at, served, "cli-bot")
    proc = await mandala_bot(served, token, "--bot", "greedy", "--challenge", "cli-opponent", "--games", "2")
    code, log = await exit_of(proc)
    (played,) = await finish(task)
    assert code == 0, log
    assert log.count(" started: ") == 2 and "over: " in log and "[2/2]" in log and "WARNING" not in log
    assert len(played) == 2 and all(g.opponent == "cli-bot" for g in played)
    assert all(g.result is not None and g.result.end_reason in RULES_END for g in played)
    assert opponent.errors == []


async def test_mandala_bot_ladder_qualifies(served: str) -> None:
    token = await asyncio.to_thread(create_bot_at, served, "cli-ladder")
    proc = await mandala_bot(served, token, "--bot", "random", "--ladder", "--games", "2", "--log-level", "INFO")
    code, log = await exit_of(proc)
    assert code == 0, log
    assert "ladder: qualifying" in log and log.count("(qualification, unrated)") == 2 and "[2/2]" in log


async def test_a_client_held_to_a_number_of_games_plays_the_return_game_of_its_last_pair(make_arena: Any,
                                                                                         caplog: Any) -> None:
    """Two listed-to-be bots with ``games=3``: two qualification games each, then one rated
    duplicate pair between them, whose return game both play before they stop (a pair cut in
    half would count a deal's luck)."""
    arena: Harness = await make_arena(pairing_interval_s=0.05)
    clients = [Client(PlainBot(), url=ws_url(arena), token=await arena.create_bot(name), ladder=True, games=3)
               for name in ("pair-a", "pair-b")]
    caplog.set_level(logging.INFO, logger="mandala_client")
    await asyncio.wait_for(asyncio.gather(*(c.run() for c in clients)), 120)
    for client in clients:
        kinds = [g.kind for g in client.finished]
        assert kinds == ["qualification", "qualification", "ladder", "ladder"], kinds
        assert all(g.result is not None and g.result.end_reason in RULES_END for g in client.finished)
    assert "waiting up to 15 s for the return game of pair" in caplog.text
    rated = [g for g in await arena.get_json("/api/games?status=finished") if g["kind"] == "ladder"]
    assert len(rated) == 2 and rated[0]["pair_id"] == rated[1]["pair_id"]


async def test_mandala_bot_bad_token_and_ctrl_c(served: str) -> None:
    code, log = await exit_of(await mandala_bot(served, "no-such-token", "--bot", "random"), 20)
    assert code == 1 and "4001" in log and "not reconnecting" in log and log.count("connected to") == 0
    token = await asyncio.to_thread(create_bot_at, served, "cli-idle")
    proc = await mandala_bot(served, token, "--bot", "search,budget=0.1")
    assert proc.stderr is not None
    line = await asyncio.wait_for(proc.stderr.readline(), 20)
    assert b"connected to" in line, line
    proc.send_signal(signal.SIGINT)
    code, log = await exit_of(proc, 20)
    assert code == 130 and "interrupted: closing the connection" in log and "Traceback" not in log


def test_mandala_bot_refuses_a_bad_command_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("MANDALA_TOKEN", raising=False)
    for args, why in ((["--bot", "random"], "--token"), (["--token", "t", "--bot", "nosuch"], "unknown bot"),
                      (["--token", "t", "--bot", "cmd:./bot"], "connects to the server itself"),
                      (["--token", "t", "--bot", "search,colour=1"], "bot 'search' takes no option 'colour' (its options: "),
                      (["--token", "t", "--bot", "house:6"], "the levels are house:1 to house:5"),
                      (["--token", "t", "--bot", "random", "--ladder", "--challenge", "x"], "not allowed")):
        with pytest.raises(SystemExit) as done:
            cli.main(args)
        assert done.value.code == 2 and why in capsys.readouterr().err, args


class HoldingBot(PlainBot):
    """Holds its third decision of a ladder game until ``release`` is set (the game's clock is
    long), so the organizer acts while the game runs."""

    def __init__(self) -> None:
        super().__init__(7)
        self.kind: str | None = None
        self.decisions = 0
        self.holding = asyncio.Event()
        self.release = asyncio.Event()

    def on_game_start(self, start: GameStart) -> None:
        super().on_game_start(start)
        self.kind, self.decisions = start.kind, 0

    async def choose(self, view: View, legal: list[Move]) -> Move:  # type: ignore[override]
        self.decisions += 1
        if self.kind == "ladder" and self.decisions == 3 and not self.release.is_set():
            self.holding.set()
            await self.release.wait()
        return self.rng.choice(legal)


async def test_mandala_bot_removed_mid_game_plays_on_and_seeks_again_once_restored(make_arena: Any) -> None:
    arena: Harness = await make_arena(pairing_interval_s=0.05, decision_ms=60_000)
    base = str(arena.client.make_url("")).rstrip("/")
    holder_bot = HoldingBot()
    holder = Client(holder_bot, url=ws_url(arena), token=await arena.create_bot("holder"), ladder=True)
    holder_task = await start(holder)
    proc = await mandala_bot(base, await arena.create_bot("cli-removed"), "--bot", "random", "--ladder")
    assert proc.stderr is not None
    lines: list[str] = []

    async def read_log() -> None:
        assert proc.stderr is not None
        async for line in proc.stderr:
            lines.append(line.decode(errors="replace"))

    def said(text: str) -> bool:
        return any(text in line for line in lines)

    reader = asyncio.create_task(read_log())
    try:
        # Both qualify, then play a ladder pair; the organizer removes the bot during its first game.
        await asyncio.wait_for(holder_bot.holding.wait(), GAME_TIMEOUT)
        (game_id,) = list(holder.running)
        assert holder.running[game_id].opponent == "cli-removed"
        assert await organizer(arena, "DELETE", "/api/ladder/bots/cli-removed") == {"bot": "cli-removed",
                                                                                  "state": "removed"}
        await wait_until(lambda: said("removed from the ladder by the organizer"), 10, "".join(lines))
        assert "cli-removed" not in {s["bot"] for s in (await arena.get_json("/api/ladder"))["standings"]}
        holder_bot.release.set()

        # The running game ends by the rules, not on time; the bot is still there, not seeking.
        await wait_until(lambda: any(o.game_id == game_id for o in holder_bot.overs), GAME_TIMEOUT, "no game_over")
        over = next(o for o in holder_bot.overs if o.game_id == game_id)
        assert over.result.end_reason in RULES_END, over.result
        assert (await arena.get_json(f"/api/games/{game_id}"))["status"] == "finished"
        assert proc.returncode is None and arena.arena.presence.is_connected("cli-removed")
        assert "cli-removed" not in arena.arena.ladder.seeking

        # It still plays challenges.
        played = len(holder_bot.overs)
        assert await holder.challenge("cli-removed")
        await wait_until(lambda: len(holder_bot.overs) > played, GAME_TIMEOUT, "the challenge was not played")
        challenge = holder_bot.overs[-1]
        assert holder_bot.kind == "challenge" and challenge.result.end_reason in RULES_END

        # Restored, it seeks again (and qualifies afresh).
        assert (await organizer(arena, "POST", "/api/ladder/bots/cli-removed/restore"))["state"] == "qualifying"
        await wait_until(lambda: "cli-removed" in arena.arena.ladder.seeking, 10, "the restored bot did not seek")
        # Its log line was written before the seek; the pipe may hand it to us a little later.
        await wait_until(lambda: said("restored to the ladder by the organizer: seeking again"), 10, "".join(lines))
        assert proc.returncode is None
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 30)
        await asyncio.wait_for(reader, 10)
        holder.stop()
        await finish(holder_task)
    log = "".join(lines)
    assert code == cli.INTERRUPTED, log  # a clean stop: the documented status of Ctrl-C and SIGTERM
    assert "interrupted: closing the connection" in log and "Traceback" not in log
    assert log.count("no more seeking") == 1 and " ERROR " not in log
