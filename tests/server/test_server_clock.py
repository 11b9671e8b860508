"""Decision clocks and disconnects: timeouts lose, reconnects resume the same decision."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp
import msgspec
import pytest
from aiohttp.test_utils import TestClient, TestServer

from arena_testkit import Harness, gather, play_out, random_policy, settings_for, wait_until
from mandala import compact
from protocol.messages import (
    PROTOCOL_VERSION,
    Decision,
    Error,
    GameOver,
    GameStart,
    MoveAccepted,
    OpponentAway,
    OpponentBack,
    Update,
    Welcome,
)
from server.app import create_app
from server.storage.packing import unpack_result


async def test_each_decision_gets_its_full_time_however_long_the_game_has_run(make_arena) -> None:
    # A game keeps one timer, set for the oldest deadline and set again when it rings for a
    # decision already answered: answers spread over more than one decision's time must not
    # end the game early, and the decision left unanswered still gets all of its time.
    arena: Harness = await make_arena(decision_ms=500)
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    await arena.start_game(["alice", "bob"])
    loop = asyncio.get_running_loop()
    started = loop.time()
    seats = {0: a, 1: b}

    async def next_decision() -> Decision:
        to_move = (await a.until(Update)).view.to_move  # alice sees every position
        assert to_move is not None
        return await seats[to_move].until(Decision)

    plies = 0
    while loop.time() - started < 1.2:  # more than two decisions' time, answered 150 ms apart
        d = await next_decision()
        await asyncio.sleep(0.15)  # a bot that takes its time, well within the clock
        await seats[d.seat].send_move(d, d.legal[0])
        plies += 1
    d = await next_decision()  # this one is never answered
    asked = loop.time()
    over = await seats[d.seat].until(GameOver, timeout=3)
    waited = loop.time() - asked
    assert (over.result.end_reason, over.result.winner) == ("timeout", 1 - d.seat)
    assert len(over.record.moves) == plies == d.request_id
    assert 0.45 <= waited < 1.5


async def test_a_bot_that_does_not_answer_loses_on_time(make_arena, db_path) -> None:
    arena: Harness = await make_arena(decision_ms=400)
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"])
    d0 = await a.until(Decision)
    await a.send_move(d0, d0.legal[0])
    await a.expect(MoveAccepted)
    d1 = await b.until(Decision)  # bob never answers this one
    asked = asyncio.get_running_loop().time()
    over_b = await b.until(GameOver, timeout=3)
    waited = asyncio.get_running_loop().time() - asked
    over_a = await a.until(GameOver, timeout=3)
    assert over_a == over_b
    assert 0.3 <= waited < 2.0
    assert over_a.result.end_reason == "timeout"
    assert over_a.result.winner == 0
    assert over_a.result.cup_sizes == [2, 2]
    assert over_a.result.scores == [0, 0]
    assert len(over_a.record.moves) == 1 and over_a.record.moves[0].player == 0
    # A late answer is refused: the game is over.
    await b.send_move(d1, d1.legal[0])
    err = await b.expect(Error)
    assert (err.code, err.game_id, err.request_id) == ("game_over", game_id, 1)
    # The record, the game state and the stored row all say so.
    assert await arena.get_json(f"/api/games/{game_id}/record") == msgspec.to_builtins(over_a.record)
    state = await arena.get_json(f"/api/games/{game_id}")
    assert state["status"] == "finished" and state["ply"] == 1
    assert state["result"] == {"winner": 0, "end_reason": "timeout", "scores": [0, 0], "cup_sizes": [2, 2]}
    await arena.arena.manager.flush()
    with sqlite3.connect(db_path) as db:
        row = db.execute("SELECT status, end_reason, result, record FROM games WHERE id = ?", (game_id,)).fetchone()
    assert row[0:2] == ("finished", "timeout")
    assert unpack_result(game_id, row[2]) == state["result"] and len(row[2]) == 7  # packed (storage/packing.py)
    assert compact.unpack(row[3]) == over_a.record  # stored compact (mandala/compact.py)


async def test_reconnect_resumes_the_same_decision_and_play_goes_on(make_arena) -> None:
    arena = await make_arena(decision_ms=3000)
    token = await arena.create_bot("alice")
    a = await arena.connect(token)
    b = await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"])
    d0 = await a.until(Decision)
    assert d0.request_id == 0
    await a.close()  # gone with a decision pending
    away = await b.until(OpponentAway)
    assert (away.game_id, away.seat) == (game_id, 0)
    assert away.grace_ms is not None and 0 < away.grace_ms <= 3000

    a2 = await arena.ws()
    await a2.send({"type": "hello", "protocol": 1, "token": token})
    welcome = await a2.expect(Welcome)
    assert welcome.bot == "alice" and welcome.games == [game_id]
    start = await a2.expect(GameStart)
    assert (start.game_id, start.seat, start.resumed) == (game_id, 0, True)
    update = await a2.expect(Update)
    assert (update.ply, update.move) == (0, None)
    assert update.view == d0.view
    d0_again = await a2.expect(Decision)
    assert d0_again.request_id == d0.request_id
    assert d0_again.legal == d0.legal and d0_again.view == d0.view
    assert 0 < d0_again.deadline_ms <= away.grace_ms
    back = await b.until(OpponentBack)
    assert (back.game_id, back.seat) == (game_id, 0)

    await a2.send_move(d0_again, d0_again.legal[0])
    (over_a,), (over_b,) = await gather(play_out(a2, random_policy(1)), play_out(b, random_policy(2)))
    assert over_a == over_b and over_a.result.end_reason in ("river", "deck", "no_moves", "turn_limit")
    assert over_a.record.moves[0].player == 0


async def test_a_bot_that_comes_back_while_its_opponent_is_away_is_told_so(make_arena) -> None:
    """Both seats drop; the first back resumes and hears its opponent is away (with the time
    left on the absent seat's pending decision), so the ``opponent_back`` that follows answers
    an ``opponent_away`` it saw."""
    arena = await make_arena(decision_ms=5000)
    token = await arena.create_bot("alice")
    a = await arena.connect(token)
    b = await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"], first_player=1)
    await b.until(Decision)
    await b.close()  # bob leaves with his decision pending
    first = await a.until(OpponentAway)
    assert (first.game_id, first.seat) == (game_id, 1) and first.grace_ms is not None
    await a.close()

    a2 = await arena.ws()
    await a2.send({"type": "hello", "protocol": 1, "token": token})
    assert (await a2.expect(Welcome)).games == [game_id]
    assert (await a2.expect(GameStart)).resumed
    assert (await a2.expect(Update)).move is None
    away = await a2.expect(OpponentAway)
    assert (away.game_id, away.seat) == (game_id, 1)
    assert away.grace_ms is not None and 0 < away.grace_ms <= first.grace_ms

    b2 = await arena.connect(arena.tokens["bob"])
    assert (await b2.until(Decision)).request_id == 0
    back = await a2.expect(OpponentBack)
    assert (back.game_id, back.seat) == (game_id, 1)


async def test_away_without_a_pending_decision_then_timeout_while_away(make_arena) -> None:
    arena = await make_arena(decision_ms=500)
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"], first_player=1)
    d = await b.until(Decision)
    await b.close()  # bob leaves with his decision pending: he loses on time while away
    away = await a.until(OpponentAway)
    assert away.seat == 1 and away.grace_ms is not None
    over = await a.until(GameOver, timeout=3)
    assert (over.game_id, over.result.winner, over.result.end_reason) == (game_id, 0, "timeout")
    assert d.request_id == 0 and over.record.moves == []

    # Away while it is the *opponent's* decision: grace_ms is null.
    c = await arena.bot("carol")
    game2 = await arena.start_game(["alice", "carol"])
    await c.until(Update)
    await c.close()
    away2 = await a.until(OpponentAway)
    assert (away2.game_id, away2.seat, away2.grace_ms) == (game2, 1, None)


async def test_a_client_that_does_not_read_is_dropped_and_counts_as_away(make_arena) -> None:
    # Three frames (game_start, update, decision) reach seat 0 at once: over an outbox of 2.
    arena = await make_arena(send_queue_max=2)
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"])
    assert await a.closed() not in (None, 1000)
    away = await b.until(OpponentAway)
    assert (away.game_id, away.seat) == (game_id, 0) and away.grace_ms is not None


class ThreadBot:
    """A bot on a thread and an event loop of its own, so that it sends while the server's
    loop is held: it answers its first decision with its first legal move once told to."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token = url, token
        self.decided = threading.Event()
        self.go = threading.Event()
        self.frames: list[dict[str, Any]] = []
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    async def _run(self) -> None:
        async with aiohttp.ClientSession() as http, http.ws_connect(self.url) as ws:
            await ws.send_json({"type": "hello", "protocol": PROTOCOL_VERSION, "token": self.token})
            async for frame in ws:
                msg = json.loads(frame.data)
                self.frames.append(msg)
                if msg["type"] == "decision":
                    self.decided.set()
                    await asyncio.to_thread(self.go.wait, 30)
                    await asyncio.sleep(0.05)  # sent while the server's loop is held, before the deadline
                    await ws.send_json({"type": "move", "game_id": msg["game_id"], "request_id": msg["request_id"],
                                        "move": msg["legal"][0]})
                if msg["type"] in ("move_accepted", "game_over"):
                    return


async def a_move_sent_while_the_loop_is_held(arena: Harness) -> None:
    """§11: the server's clock judges a deadline once it has read what reached it before:
    a move that arrived in time but waited for a held loop is applied, not lost on time."""
    alice = ThreadBot(str(arena.client.make_url("/ws")), await arena.create_bot("alice"))
    alice.thread.start()
    b = await arena.bot("bob")
    await wait_until(lambda: arena.arena.presence.is_connected("alice"), 10, "alice connected")
    game_id = await arena.start_game(["alice", "bob"], first_player=0)
    assert await asyncio.to_thread(alice.decided.wait, 10)
    alice.go.set()
    time.sleep(1.5)  # the server's loop held past the deadline; alice's move arrives meanwhile
    await asyncio.to_thread(alice.thread.join, 10)
    accepted = alice.frames[-1]
    assert accepted["type"] == "move_accepted" and accepted["elapsed_ms"] > 1000, alice.frames[-1]
    update = await b.until(Update)
    while update.ply < 1:
        update = await b.until(Update)
    room = arena.arena.manager.running[game_id]
    assert room.ply == 1 and not room.over
    (late,) = [i for i in room.telemetry.incidents if i["kind"] == "late"]  # noted: it answered close to its deadline
    assert (late["kind"], late["seat"], late["request_id"]) == ("late", 0, 0) and late["after_ms"] > 1000


async def test_a_move_sent_in_time_is_not_lost_because_the_server_was_behind(make_arena) -> None:
    await a_move_sent_while_the_loop_is_held(await make_arena(decision_ms=1000))


def test_a_move_sent_in_time_is_not_lost_because_the_server_was_behind_on_uvloop(tmp_path: Path) -> None:
    """The same on the loop ``mandala serve`` runs on, whose timers run before its reads."""
    uvloop = pytest.importorskip("uvloop")

    async def run() -> None:
        assert type(asyncio.get_running_loop()).__module__.startswith("uvloop")
        app = create_app(settings_for(tmp_path / "arena.db", decision_ms=1000))
        async with TestClient(TestServer(app)) as client:
            await a_move_sent_while_the_loop_is_held(Harness(client))

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(run())
