"""Bad input: one ``error`` frame each, the connection stays open, the game is unchanged.
Only a bad token, an unsupported version, a hello timeout, a replacement or a flood close."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena_testkit import Harness, WsClient, illegal_move
from protocol.messages import (
    CLOSE_BAD_TOKEN,
    CLOSE_FLOOD,
    CLOSE_HELLO_TIMEOUT,
    CLOSE_REPLACED,
    CLOSE_UNSUPPORTED_VERSION,
    Decision,
    Error,
    GameOver,
    GameStart,
    MoveAccepted,
    Pong,
    Update,
    Welcome,
)
from server.common.refusal import Refusal
from server.http.ws import parse


async def refused(client: WsClient, frame: Any, code: str, *, binary: bool = False) -> Error:
    """Send ``frame``; expect exactly one error with ``code``, and the connection still answers."""
    if binary:
        await client.ws.send_bytes(frame)
    else:
        await client.send(frame)
    err = await client.expect(Error)
    assert err.code == code, err
    assert await client.ping() == []
    return err


@pytest.fixture
async def table(make_arena: Any) -> tuple[Harness, WsClient, WsClient, Decision, str]:
    """alice (seat 0) holds a pending decision in a game against bob."""
    arena = await make_arena()
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"])
    d = await a.until(Decision)
    await b.until(Update)
    return arena, a, b, d, game_id


async def test_bad_frames_and_bad_moves_leave_the_game_unchanged(table: Any) -> None:
    arena, a, b, d, game_id = table
    before = await arena.get_json(f"/api/games/{game_id}")
    assert before["ply"] == 0 and before["status"] == "running"
    move = {"type": "move", "game_id": game_id, "request_id": 0}
    legal = d.legal[0]
    legal_json = msgspec.to_builtins(legal)

    await refused(a, "not json {", "bad_json")
    await refused(a, '{"type": "ping"', "bad_json")
    await refused(a, "[1, 2]", "not_object")
    await refused(a, '"move"', "not_object")
    await refused(a, {"game_id": game_id}, "unknown_type")
    await refused(a, {"type": "dance"}, "unknown_type")
    await refused(a, {"type": 3}, "unknown_type")
    err = await refused(a, {"type": "move", "game_id": game_id, "move": legal_json}, "invalid_message")
    assert "request_id" in err.message
    err = await refused(a, {**move, "request_id": "0", "move": legal_json}, "invalid_message")
    assert "$.request_id" in err.message
    for far in (-1, 2**53, 2**64):  # past what every JSON reader holds exactly: refused, and not echoed
        err = await refused(a, {**move, "request_id": far, "move": legal_json}, "invalid_message")
        assert "$.request_id" in err.message and err.game_id == game_id and err.request_id is None, far
    err = await refused(a, {**move, "move": legal_json, "extra": 1}, "invalid_message")
    assert "extra" in err.message and err.game_id == game_id and err.request_id == 0
    err = await refused(a, {**move, "move": {"type": "mountain", "mandala": 2, "color": "red"}}, "invalid_message")
    assert "$.move.mandala" in err.message
    await refused(a, {**move, "move": {"type": "fly"}}, "invalid_message")
    await refused(a, {**move, "move": {"type": "field", "mandala": 0, "color": "red", "count": 0}}, "invalid_message")
    await refused(a, b"\x00\x01", "binary_frame", binary=True)
    await refused(a, json.dumps({"type": "ping", "data": "x" * 20000}), "frame_too_large")
    await refused(a, "[" * 8000 + "]" * 8000, "bad_json")  # deep nesting within the frame limit

    err = await refused(a, {**move, "game_id": "nope", "move": legal_json}, "unknown_game")
    assert (err.game_id, err.request_id) == ("nope", 0)
    err = await refused(a, {**move, "request_id": 7, "move": legal_json}, "stale_request")
    assert (err.game_id, err.request_id) == (game_id, 7)
    err = await refused(b, {**move, "request_id": 0, "move": legal_json}, "not_your_turn")
    assert err.game_id == game_id
    err = await refused(a, {**move, "move": {"type": "pass"}}, "illegal_move")
    assert err.rule == "R18" and err.message == "only a player with an empty hand passes"
    err = await refused(a, {**move, "move": {"type": "claim", "color": "red"}}, "illegal_move")
    assert err.rule == "R5"
    illegal_field = {"type": "field", "mandala": 0, "color": "red", "count": 7}
    err = await refused(a, {**move, "move": illegal_field}, "illegal_move")
    assert err.rule in ("R8", "R9") and err.request_id == 0

    # Not alice's game, and a finished one.
    c = await arena.bot("carol")
    other = await arena.start_game(["bob", "carol"])
    assert (await b.until(Decision)).game_id == other
    await c.until(Update)
    await refused(a, {**move, "game_id": other, "move": legal_json}, "not_your_game")
    await refused(a, {"type": "resign", "game_id": other}, "not_your_game")
    await refused(a, {"type": "watch", "game_id": "nope"}, "unknown_game")
    await refused(a, {"type": "resign", "game_id": "nope"}, "unknown_game")
    await b.send({"type": "resign", "game_id": other})
    await b.until(GameOver)
    await c.until(GameOver)
    await refused(b, {"type": "move", "game_id": other, "request_id": 0, "move": legal_json}, "game_over")
    await refused(b, {"type": "resign", "game_id": other}, "game_over")
    await refused(a, {"type": "hello", "protocol": 1}, "already_authenticated")
    await refused(a, {"type": "accept", "challenge_id": "nope"}, "unknown_challenge")

    # Nothing changed: same ply, same view, same pending request, which alice can still answer.
    assert await arena.get_json(f"/api/games/{game_id}") == before
    pending = arena.arena.manager.running[game_id].pending
    assert pending is not None and (pending.seat, pending.request_id) == (0, 0)
    await a.send_move(d, legal)
    accepted = await a.expect(MoveAccepted)
    assert (accepted.game_id, accepted.request_id) == (game_id, 0)
    assert (await arena.get_json(f"/api/games/{game_id}"))["ply"] == 1


async def test_before_hello_and_spectator_limits(make_arena: Any) -> None:
    arena = await make_arena()
    s = await arena.ws()
    await refused_before_hello(s)
    await s.send({"type": "hello", "protocol": 1})
    welcome = await s.expect(Welcome)
    assert welcome.bot is None and welcome.games == []
    assert welcome.limits.max_frame_bytes == 16384 and welcome.limits.decision_ms == 5000
    for frame in ({"type": "move", "game_id": "g", "request_id": 3, "move": {"type": "pass"}},
                  {"type": "resign", "game_id": "g"}, {"type": "capacity", "max_games": 2},
                  {"type": "accept", "challenge_id": "x"}):
        err = await refused(s, frame, "spectator")
        assert (err.game_id, err.request_id) == (frame.get("game_id"), frame.get("request_id"))  # what it named
    await refused(s, {"type": "hello", "protocol": 1}, "already_authenticated")


async def refused_before_hello(s: WsClient) -> None:
    """Before hello: only hello is accepted (even ping is refused), parse errors still name themselves."""
    await s.send({"type": "ping", "data": "early"})
    assert (await s.expect(Error)).code == "not_authenticated"
    await s.send("nope")
    assert (await s.expect(Error)).code == "bad_json"
    await s.send({"type": "hello", "protocol": "one"})
    assert (await s.expect(Error)).code == "invalid_message"


async def test_bad_token_closes_4001(make_arena: Any) -> None:
    arena = await make_arena()
    c = await arena.ws()
    await c.send({"type": "hello", "protocol": 1, "token": "not-a-token"})
    assert await c.closed() == CLOSE_BAD_TOKEN
    assert [f.code for f in c.frames] == ["bad_token"]


async def test_unsupported_version_errors_then_closes_4002(make_arena: Any) -> None:
    arena = await make_arena()
    token = await arena.create_bot("alice")
    c = await arena.ws()
    await c.send({"type": "hello", "protocol": 99, "token": token})
    err = await c.expect(Error)
    assert err.code == "unsupported_version" and "protocol 1" in err.message
    assert await c.closed() == CLOSE_UNSUPPORTED_VERSION


async def test_hello_timeout_closes_4003(make_arena: Any) -> None:
    arena = await make_arena(hello_timeout_s=0.3)
    c = await arena.ws()
    await c.send({"type": "ping"})
    assert (await c.expect(Error)).code == "not_authenticated"  # open until the timeout
    assert await c.closed(timeout=3) == CLOSE_HELLO_TIMEOUT


async def test_second_connection_replaces_the_first_4009(make_arena: Any) -> None:
    arena = await make_arena()
    token = await arena.create_bot("alice")
    b = await arena.bot("bob")
    first = await arena.connect(token)
    game_id = await arena.start_game(["alice", "bob"])
    d = await first.until(Decision)
    second = await arena.ws()
    await second.send({"type": "hello", "protocol": 1, "token": token})
    assert await first.closed() == CLOSE_REPLACED
    welcome = await second.expect(Welcome)
    assert welcome.games == [game_id]
    assert (await second.expect(GameStart)).resumed
    await second.expect(Update)
    again = await second.expect(Decision)
    assert again.request_id == d.request_id
    await second.send_move(again, again.legal[0])
    await second.expect(MoveAccepted)
    # bob never saw alice away: she was replaced, not gone.
    assert not any(type(f).__name__ in ("OpponentAway", "OpponentBack") for f in b.frames)


async def test_rate_limited_carries_limit_and_retry_after(make_arena: Any) -> None:
    arena = await make_arena(messages_per_second=5.0, burst=2)
    c = await arena.connect(None)  # the hello took one token
    await c.send({"type": "ping", "data": "1"})
    await c.send({"type": "ping", "data": "2"})
    assert (await c.expect(Pong)).data == "1"
    err = await c.expect(Error)
    assert err.code == "rate_limited" and err.limit == "messages"
    assert err.retry_after is not None and 0 < err.retry_after <= 0.2
    await asyncio.sleep(err.retry_after)  # the server said when a token is back
    await c.send({"type": "ping", "data": "3"})
    assert (await c.expect(Pong)).data == "3"


async def test_the_connections_of_one_address_share_a_budget_of_frames(make_arena: Any) -> None:
    """Each connection keeps its own bucket, and all those of one client address share one
    more (§15.1): frames past it get ``rate_limited`` with ``"limit": "address"``, on whichever
    connection sent them; another address is not touched, and a bot's first answer to its
    decision is still not charged."""
    arena = await make_arena(messages_per_second_per_ip=0.01, burst_per_ip=6, connections_per_ip_exempt=[],
                             trust_forwarded_for=True)
    a = await arena.bot("alice")  # each hello takes one of the address's 6 tokens
    await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"])
    d = await a.until(Decision)
    s1, s2 = await arena.connect(None), await arena.connect(None)  # 2 tokens left
    assert await s1.ping() == [] and await s1.ping() == []  # each spectator's own bucket has plenty
    await s2.send({"type": "ping", "data": "over"})
    err = await s2.expect(Error)
    assert (err.code, err.limit) == ("rate_limited", "address")
    assert err.message == "more than 0.01 messages a second from 127.0.0.1, all its connections together (burst 6)"
    assert err.retry_after is not None and err.retry_after > 50
    await a.send_move(d, d.legal[0])  # the answer to a decision is paced by the server, not charged
    await a.expect(MoveAccepted)
    assert arena.arena.manager.running[game_id].ply == 1
    other = WsClient(await arena.client.ws_connect("/ws", headers={"X-Forwarded-For": "203.0.113.9"}))
    await other.send({"type": "hello", "protocol": 1})
    await other.expect(Welcome)
    assert await other.ping() == []
    assert set(arena.arena.frames.buckets.buckets) == {"127.0.0.1", "203.0.113.9"}
    await s1.ws.close()
    s3 = WsClient(await arena.client.ws_connect("/ws"))  # a new connection of the address shares it too
    await s3.send({"type": "hello", "protocol": 1})
    assert (await s3.expect(Error)).limit == "address"


async def test_flood_closes_4008(make_arena: Any) -> None:
    arena = await make_arena(messages_per_second=1.0, burst=3)
    c = await arena.connect(None)  # hello: 1 token spent, 2 left
    for i in range(30):
        await c.send({"type": "ping", "data": str(i)})
    assert await c.closed() == CLOSE_FLOOD
    kinds = [f.code if isinstance(f, Error) else type(f).__name__ for f in c.frames[1:]]
    assert kinds == ["Pong", "Pong", "rate_limited", "rate_limited", "rate_limited", "flood"]


async def test_refused_answers_to_a_pending_decision_are_charged_after_the_first(make_arena: Any) -> None:
    """One answer a decision goes uncharged (§15.1); a bot that sends the same refused answer
    again and again is limited, then closed, like any flood, and the game is not stalled."""
    arena = await make_arena(messages_per_second=0.01, burst=3)  # the hello leaves 2 tokens
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"])
    d = await a.until(Decision)
    bad = {"type": "move", "game_id": game_id, "request_id": d.request_id, "move": illegal_move(d)}
    for _ in range(8):
        await a.send(bad)
    assert await a.closed() == CLOSE_FLOOD
    codes = [f.code for f in a.frames if isinstance(f, Error)]
    assert codes == ["illegal_move"] * 3 + ["rate_limited"] * 3 + ["flood"]
    assert arena.arena.manager.running[game_id].ply == 0  # nothing was played, the clock runs on
    del b


async def test_a_bad_frame_over_the_rate_limit_is_not_processed(make_arena: Any) -> None:
    """It gets only its ``rate_limited``: no ``bad_json`` is noted in the game's incidents
    (nor told to the ladder, where it would fail a qualifying bot)."""
    arena = await make_arena(messages_per_second=0.01, burst=2)
    a = await arena.bot("alice")  # the hello leaves 1 token
    await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"])
    await a.until(Decision)
    await a.send("garbage")
    assert (await a.expect(Error)).code == "bad_json"
    await a.send("garbage")
    err = await a.expect(Error)
    assert (err.code, err.limit) == ("rate_limited", "messages")
    incidents = arena.arena.manager.running[game_id].telemetry.incidents
    assert [i["code"] for i in incidents] == ["bad_json"]  # the first one only


async def test_frames_up_to_one_mib_are_read_and_larger_ones_close_1009(make_arena: Any) -> None:
    arena = await make_arena()
    a = await arena.bot("alice")
    await refused(a, "x" * (1 << 20), "frame_too_large")  # §15.2: above max_frame_bytes
    await a.send("x" * ((1 << 20) + 1))
    assert await a.closed() == 1009


async def test_an_unexpected_failure_becomes_an_error_and_the_connection_lives(table: Any, monkeypatch: Any) -> None:
    arena, a, _, d, game_id = table

    def broken(*args: Any) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(arena.arena.manager, "play", broken)
    await a.send_move(d, d.legal[0])
    err = await a.expect(Error)
    assert err.code == "internal_error"
    assert await a.ping() == []
    monkeypatch.undo()
    await a.send_move(d, d.legal[0])
    assert (await a.expect(MoveAccepted)).game_id == game_id


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
message_like = st.fixed_dictionaries(
    {"type": st.sampled_from(["hello", "move", "challenge", "accept", "watch", "ping", "resign", "capacity", "x"])},
    optional={"game_id": json_values, "request_id": json_values, "move": json_values, "protocol": json_values,
              "max_games": json_values, "data": json_values, "token": json_values},
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(json_values, message_like).map(json.dumps) | st.text(max_size=40))
def test_parse_raises_nothing_but_refusals(text: str) -> None:
    try:
        parse(text)
    except Refusal as r:
        assert r.code in ("bad_json", "not_object", "unknown_type", "invalid_message")


async def test_a_failure_after_a_move_aborts_the_game_instead_of_stalling_it(table: Any, monkeypatch: Any) -> None:
    arena, a, b, d, game_id = table
    room = arena.arena.manager.running[game_id]

    def broken(played: Any) -> None:
        raise RuntimeError("bug")

    monkeypatch.setattr(room, "_broadcast_update", broken)
    await a.send_move(d, d.legal[0])
    await a.expect(MoveAccepted)
    over = await a.expect(GameOver)
    assert (over.game_id, over.result.end_reason, over.result.winner) == (game_id, "aborted", None)
    assert await b.until(GameOver) == over
    assert game_id not in arena.arena.manager.running
    assert await a.ping() == []
