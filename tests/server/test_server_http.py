"""The HTTP API: bots (open and admin registration), games (explicit deals), lists, state,
records, and JSON errors everywhere."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import Any

import msgspec
import pytest
from multidict import CIMultiDict

import mandala
from arena_testkit import ADMIN, Harness, first_legal, gather, play_out
from mandala import COLORS, Game
from protocol.messages import Decision, Error, GameOver, MoveAccepted, Pong, Update, Welcome
from server.common.logs import BadRequests
from server.connections.auth import hash_token
from server.http.api import declared

AUTH = {"Authorization": f"Bearer {ADMIN}"}
LONE_SURROGATE = "a string holds a lone surrogate escape (\\ud800 to \\udfff without its pair), which is no text"


async def api_error(resp: Any, status: int, code: str) -> dict[str, Any]:
    assert resp.status == status, await resp.text()
    assert resp.content_type == "application/json"
    body = await resp.json()
    assert body["error"]["code"] == code and body["error"]["message"]
    return body["error"]


async def test_one_address_has_a_budget_of_requests(make_arena: Any) -> None:
    """Past ``request_burst_per_ip`` requests at once, a client's requests get ``429``
    ``rate_limited`` with ``Retry-After`` until its bucket refills; the organizer (the admin
    token), WebSocket upgrades and other addresses are not held up."""
    arena: Harness = await make_arena(requests_per_second_per_ip=0.01, request_burst_per_ip=3,
                                      connections_per_ip_exempt=[], trust_forwarded_for=True)
    client = arena.client
    for _ in range(3):
        assert (await client.get("/api/ladder")).status == 200
    resp = await client.get("/api/bots")
    error = await api_error(resp, 429, "rate_limited")
    assert error["message"] == "more than 0.01 requests a second from 127.0.0.1 (burst 3)"
    assert error["limit"] == "requests" and 99 < error["retry_after"] <= 100
    assert resp.headers["Retry-After"] == "100"
    admin = await client.get("/api/games?status=running", headers={"Authorization": f"Bearer {ADMIN}"})
    assert admin.status == 200  # the organizer's scripts
    other = await client.get("/api/ladder", headers={"X-Forwarded-For": "203.0.113.9"})
    assert other.status == 200
    spectator = await arena.connect(None)  # the upgrade is not a request of the budget
    assert await spectator.ping() == []
    assert (await client.get("/api/ladder", headers={"Authorization": "Bearer wrong"})).status == 429


async def test_open_registration(make_arena: Any) -> None:
    arena: Harness = await make_arena(registrations_per_hour=3)
    client = arena.client
    resp = await client.post("/api/bots", json={"name": "alice"})
    assert resp.status == 201
    body = await resp.json()
    assert set(body) == {"name", "token", "created"} and body["name"] == "alice" and len(body["token"]) >= 40
    bot = await arena.ws()
    await bot.send({"type": "hello", "protocol": 1, "token": body["token"]})
    assert (await bot.expect(Welcome)).bot == "alice"
    # Only the hash is stored.
    row = await arena.arena.storage.bot_by_name("alice")
    assert row is not None and body["token"] not in row.token_hash and len(row.token_hash) == 64

    # Refused requests create no bot, and count for none of the hour's three.
    await api_error(await client.post("/api/bots", json={"name": "ALICE"}), 409, "name_taken")
    await api_error(await client.post("/api/bots", json={"name": "x"}), 400, "invalid_request")
    for lookalike in ("alice\n", "bob\n", "a" * 32 + "\n"):  # a name with a newline after it passes for another
        await api_error(await client.post("/api/bots", json={"name": lookalike}), 400, "invalid_request")
    await api_error(await client.post("/api/bots", json={"name": ".."}), 400, "invalid_request")  # /api/bots/.. is /api/
    await api_error(await client.post("/api/bots", data=b"{nope"), 400, "bad_json")
    await api_error(await client.post("/api/bots", data=b'{"name": "\xff"}'), 400, "bad_json")  # not UTF-8
    for name in ("dave", "erin"):
        assert (await client.post("/api/bots", json={"name": name})).status == 201
    # The hour's three bots are created: 429 with Retry-After, as JSON.
    resp = await client.post("/api/bots", json={"name": "bob"})
    err = await api_error(resp, 429, "rate_limited")
    assert int(resp.headers["Retry-After"]) > 3000 and err["retry_after"] == int(resp.headers["Retry-After"])
    # The admin token is never rate-limited; a wrong one is refused rather than ignored.
    resp = await client.post("/api/bots", json={"name": "bob"}, headers=AUTH)
    assert resp.status == 201
    await api_error(await client.post("/api/bots", json={"name": "carol"}, headers={"Authorization": "Bearer nope"}),
                    403, "forbidden")
    await api_error(await client.post("/api/bots", data=b"{nope", headers=AUTH), 400, "bad_json")
    await api_error(await client.post("/api/bots", json={"name": "carol", "x": 1}, headers=AUTH), 400, "invalid_request")

    bots = await arena.get_json("/api/bots")
    assert [(b["name"], b["connected"]) for b in bots] == [("alice", True), ("dave", False), ("erin", False),
                                                            ("bob", False)]


async def test_behind_a_trusted_proxy_each_forwarded_client_has_its_own_registration_limit(make_arena: Any) -> None:
    arena: Harness = await make_arena(registrations_per_hour=1, trust_forwarded_for=True)
    client = arena.client

    def via(address: str) -> dict[str, str]:
        return {"X-Forwarded-For": f"203.0.113.9, {address}"}  # the proxy appends the client it saw

    assert (await client.post("/api/bots", json={"name": "alice"}, headers=via("198.51.100.1"))).status == 201
    assert (await client.post("/api/bots", json={"name": "bob"}, headers=via("198.51.100.2"))).status == 201
    await api_error(await client.post("/api/bots", json={"name": "carol"}, headers=via("198.51.100.1")), 429,
                    "rate_limited")


async def test_an_ipv6_client_is_counted_by_its_slash_64_not_by_each_address(make_arena: Any) -> None:
    """A host on IPv6 is given a whole /64 and may send from any of its addresses: counted by
    address it would register bots without end. Its /64 is the client; another /64 is another."""
    arena: Harness = await make_arena(registrations_per_hour=2, trust_forwarded_for=True)
    client = arena.client

    def via(address: str) -> dict[str, str]:
        return {"X-Forwarded-For": address}

    for name, address in (("alice", "2001:db8:1:2::1"), ("bob", "2001:db8:1:2:aaaa::2")):
        assert (await client.post("/api/bots", json={"name": name}, headers=via(address))).status == 201
    body = await api_error(await client.post("/api/bots", json={"name": "carol"}, headers=via("2001:db8:1:2:ffff::3")),
                           429, "rate_limited")
    assert "/64" in body["message"]
    assert (await client.post("/api/bots", json={"name": "dave"}, headers=via("2001:db8:1:3::1"))).status == 201
    assert (await client.post("/api/bots", json={"name": "erin"}, headers=via("198.51.100.7"))).status == 201


async def test_behind_a_proxy_only_the_line_it_added_counts_not_the_clients_own(make_arena: Any) -> None:
    """HAProxy's ``option forwardfor`` appends its own ``X-Forwarded-For`` line after any the
    client sent (likewise a proto header): the client's own lines, first, must not name it."""
    arena: Harness = await make_arena(registrations_per_hour=1, trust_forwarded_for=True, require_tls=True)
    client = arena.client

    def via(spoofed: str, address: str, proto: str = "https") -> CIMultiDict[str]:
        return CIMultiDict([("X-Forwarded-For", spoofed), ("X-Forwarded-Proto", "https"),
                            ("X-Forwarded-For", address), ("X-Forwarded-Proto", proto)])

    assert (await client.post("/api/bots", json={"name": "alice"}, headers=via("10.9.9.1", "198.51.100.1"))).status == 201
    await api_error(await client.post("/api/bots", json={"name": "bob"}, headers=via("10.9.9.2", "198.51.100.1")),
                    429, "rate_limited")  # the same client, whatever it claims
    await api_error(await client.post("/api/bots", json={"name": "carol"},
                                      headers=via("127.0.0.1", "198.51.100.3", proto="http")),
                    403, "tls_required")  # came to the proxy in plain HTTP, however it dresses up


async def test_without_trust_a_forwarded_address_is_ignored(make_arena: Any) -> None:
    arena: Harness = await make_arena(registrations_per_hour=1)
    client = arena.client
    assert (await client.post("/api/bots", json={"name": "alice"},
                              headers={"X-Forwarded-For": "198.51.100.1"})).status == 201
    await api_error(await client.post("/api/bots", json={"name": "bob"}, headers={"X-Forwarded-For": "198.51.100.2"}),
                    429, "rate_limited")


async def test_admin_registration(make_arena: Any) -> None:
    arena = await make_arena(registration="admin")
    client = arena.client
    resp = await client.post("/api/bots", json={"name": "alice"})
    await api_error(resp, 401, "unauthorized")
    assert resp.headers["WWW-Authenticate"] == "Bearer"
    await api_error(await client.post("/api/bots", json={"name": "alice"}, headers={"Authorization": "Bearer x"}),
                    403, "forbidden")
    resp = await client.post("/api/bots", json={"name": "alice"}, headers=AUTH)
    assert resp.status == 201


def first_legal_game(deck: list[str], seed: int, reshuffles: list[list[str]] | None = None) -> Game:
    """The game both bots play when each always takes its first legal move."""
    game = Game(deck, 0, seed=seed, reshuffles=reshuffles)
    while not game.is_over:
        game.push(game.legal_moves[0])
    return game


async def test_games_from_explicit_deals_are_reproducible(make_arena: Any) -> None:
    arena = await make_arena()
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    deck = [COLORS[c] for c in Game.new(seed=11).deck_order]
    local = first_legal_game(deck, seed=3)
    assert len(local.reshuffles) >= 1
    # Fix the first new draw deck ourselves: the same cards in reverse order.
    given = [[COLORS[c] for c in reversed(local.reshuffles[0])]]
    game_id = await arena.start_game(["alice", "bob"], deck=deck, reshuffle_seed=3, reshuffles=given)
    (over,), _ = await gather(play_out(a, first_legal), play_out(b, first_legal))
    assert over.game_id == game_id
    record = msgspec.to_builtins(over.record)
    assert record["deck"] == deck
    assert record["reshuffles"][0] == given[0]
    expected = first_legal_game(deck, seed=3, reshuffles=given)
    assert record == mandala.record_dict(expected)
    assert over.result.scores == list(expected.scores()) and over.result.winner == expected.winner()
    assert await arena.get_json(f"/api/games/{game_id}/record") == record

    # first_player and seat order are honoured.
    game2 = await arena.start_game(["bob", "alice"], deck=deck, first_player=1)
    d = await a.until(Decision)
    assert (d.game_id, d.seat, d.request_id) == (game2, 1, 0)


async def test_a_reshuffle_order_that_does_not_fit_aborts_the_game(make_arena: Any) -> None:
    arena = await make_arena()
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    deck = [COLORS[c] for c in Game.new(seed=11).deck_order]
    game_id = await arena.start_game(["alice", "bob"], deck=deck, reshuffles=[["red"] * 5])
    (over,), _ = await gather(play_out(a, first_legal), play_out(b, first_legal))
    assert (over.game_id, over.result.end_reason, over.result.winner) == (game_id, "aborted", None)
    state = await arena.get_json(f"/api/games/{game_id}")
    assert state["status"] == "aborted"
    # The game stopped at the move that would have needed the order; the record replays to there.
    record = await arena.get_json(f"/api/games/{game_id}/record")
    assert mandala.replay(record).reshuffles == [] and record["moves"]


async def test_create_game_refusals(make_arena: Any) -> None:
    arena = await make_arena()
    client = arena.client
    await arena.bot("alice")
    await arena.bot("bob")
    await arena.create_bot("sleepy")
    ok = {"players": ["alice", "bob"]}
    await api_error(await client.post("/api/games", json=ok), 401, "unauthorized")
    await api_error(await client.post("/api/games", json=ok, headers={"Authorization": "Bearer no"}), 403, "forbidden")
    await api_error(await client.post("/api/games", json={"players": ["alice", "nobody"]}, headers=AUTH), 404, "unknown_bot")
    await api_error(await client.post("/api/games", json={"players": ["alice", "sleepy"]}, headers=AUTH), 409, "bot_offline")
    await api_error(await client.post("/api/games", json={"players": ["alice", "ALICE"]}, headers=AUTH), 400,
                    "invalid_request")
    await api_error(await client.post("/api/games", json={**ok, "first_player": 2}, headers=AUTH), 400, "invalid_request")
    deck = [COLORS[c] for c in Game.new(seed=1).deck_order]
    for bad, rule in [(deck[:-1], "R3"), (deck[:-1] + ["red"], "R1"), (deck[:-1] + ["pink"], "R1")]:
        err = await api_error(await client.post("/api/games", json={**ok, "deck": bad}, headers=AUTH), 400, "bad_deck")
        assert err["rule"] == rule and rule in err["message"]
    err = await api_error(await client.post("/api/games", json={**ok, "deck": deck, "reshuffles": [["pink"]]},
                                            headers=AUTH), 400, "bad_deck")
    assert err["rule"] == "R1"
    assert arena.arena.manager.running == {}


async def test_game_lists_state_and_records(make_arena: Any) -> None:
    arena = await make_arena()
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"])
    await a.until(Decision)
    await b.until(Update)
    running = await arena.get_json("/api/games?status=running")
    assert running == [{"game_id": game_id, "players": ["alice", "bob"], "kind": "admin", "rated": False,
                        "pair_id": None, "status": "running", "started": running[0]["started"], "ended": None,
                        "ply": 0, "result": None, "tournament_id": None}]
    state = await arena.get_json(f"/api/games/{game_id}")
    assert state["status"] == "running" and state["result"] is None and state["ply"] == 0
    assert state["view"]["seat"] is None and state["view"]["private"] is None
    assert msgspec.convert(state["view"], mandala.View) == arena.arena.manager.running[game_id].spectator_view()
    await api_error(await arena.client.get(f"/api/games/{game_id}/record"), 409, "game_running")
    await api_error(await arena.client.get("/api/games/nope/record"), 404, "unknown_game")
    await api_error(await arena.client.get("/api/games/nope"), 404, "unknown_game")
    await api_error(await arena.client.get("/api/games?status=weird"), 400, "invalid_request")
    await api_error(await arena.client.get("/api/games?limit=0"), 400, "invalid_request")

    await a.send({"type": "resign", "game_id": game_id})
    over = await b.until(GameOver)
    assert await arena.get_json("/api/games?status=running") == []
    (finished,) = await arena.get_json("/api/games?status=finished")
    assert finished["game_id"] == game_id and finished["ended"] >= finished["started"]
    assert finished["result"] == msgspec.to_builtins(over.result)
    assert await arena.get_json("/api/games") == [finished]
    state = await arena.get_json(f"/api/games/{game_id}")
    assert state["status"] == "finished" and state["result"]["end_reason"] == "resign"
    assert await arena.get_json(f"/api/games/{game_id}/record") == msgspec.to_builtins(over.record)

    # Finished games outlive the in-memory cache: they are read back from storage.
    arena.arena.manager.finished.clear()
    assert (await arena.get_json(f"/api/games/{game_id}"))["result"] == finished["result"]
    assert await arena.get_json(f"/api/games/{game_id}/record") == msgspec.to_builtins(over.record)


async def test_json_errors_pages_and_health(make_arena: Any) -> None:
    arena = await make_arena()
    await api_error(await arena.client.get("/api/nothing"), 404, "not_found")
    resp = await arena.client.delete("/api/bots")
    await api_error(resp, 405, "method_not_allowed")
    resp = await arena.client.get("/")
    assert resp.status == 200 and resp.content_type == "text/html"
    assert "Mandala Arena" in await resp.text()
    await arena.bot("alice")
    health = await arena.get_json("/health")
    assert health["status"] == "ok" and health["games_running"] == 0 and health["bots_connected"] == 1
    assert health["version"]


async def test_every_list_shows_a_running_game_as_it_stands(make_arena: Any) -> None:
    """A bot's profile, the game lists and the game itself agree on a running game's ply while
    a seat thinks (storage keeps a running game as it started, at ply 0)."""
    arena = await make_arena()
    seats = {"alice": await arena.bot("alice"), "bob": await arena.bot("bob")}
    game_id = await arena.start_game(["alice", "bob"], first_player=0)
    room = arena.arena.manager.running[game_id]
    while room.ply < 6:
        assert room.pending is not None
        seat = seats[room.players[room.pending.seat]]
        d = await seat.until(Decision)
        await seat.send_move(d, first_legal(d))
        await seat.until(MoveAccepted)  # the move took effect
    assert room.pending is not None
    await seats[room.players[room.pending.seat]].until(Decision)  # it thinks: the game stands still
    state = await arena.get_json(f"/api/games/{game_id}")
    assert state["status"] == "running" and state["ply"] == room.ply
    (running,) = await arena.get_json("/api/games?status=running")
    assert running["ply"] == room.ply
    assert [g for g in await arena.get_json("/api/games?bot=alice") if g["game_id"] == game_id] == [running]
    for name in seats:
        profile = await arena.get_json(f"/api/bots/{name}")
        assert [g for g in profile["games"] if g["game_id"] == game_id] == [running]


async def raw_request(arena: Harness, head: bytes) -> tuple[int, dict[str, Any]]:
    """Send ``head`` (a request with no body) as bytes, on a socket of its own: header bytes
    that are not UTF-8, which an HTTP client library would not send. The status and JSON body."""
    reader, writer = await asyncio.open_connection(arena.client.host, arena.client.port)
    try:
        writer.write(head + b"Content-Length: 0\r\n\r\n")
        status_line = await reader.readline()
        length = 0
        while (line := await reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        body = await reader.readexactly(length)
    finally:
        writer.close()
    return int(status_line.split()[1]), json.loads(body)


async def test_inputs_at_the_edges_get_typed_errors_and_change_nothing(make_arena: Any) -> None:
    """Positions past what storage counts, dates that UTC takes out of range, header bytes that
    are not UTF-8, a JSON token that is a lone surrogate: each a typed error (no 500), and
    nothing changes. A HEAD of a streamed export gets its headers alone."""
    arena: Harness = await make_arena()
    client = arena.client
    await arena.create_bot("alice")
    await arena.create_bot("bob")
    huge = str(1 << 63)
    await api_error(await client.get(f"/api/bots/alice/history?before={huge}"), 400, "invalid_request")
    assert (await client.get(f"/api/bots/alice/history?before={(1 << 63) - 1}")).status == 200
    resp = await client.post("/api/tournaments", json={"name": "cup", "format": "round_robin",
                                                       "participants": ["alice", "bob"]}, headers=AUTH)
    tid = (await resp.json())["tournament_id"]
    await api_error(await client.get(f"/api/tournaments/{tid}/games?after_slot={huge}"), 400, "invalid_request")
    for query in ("since=0001-01-01T00:00:00%2B01:00", "until=9999-12-31T23:59:59-01:00"):
        await api_error(await client.get(f"/api/games/export?{query}"), 400, "bad_date")
    for streamed in ("/api/games/export", f"/api/tournaments/{tid}/records"):  # the headers alone
        resp = await client.head(streamed)
        assert resp.status == 200 and await resp.read() == b""
    status, body = await raw_request(arena, b"POST /api/ladder/pause HTTP/1.1\r\nHost: x\r\n"
                                            b"Authorization: Bearer \xff\xfe\r\n")
    assert (status, body["error"]["code"]) == (403, "forbidden")
    status, body = await raw_request(arena, b"POST /api/bots/alice/token HTTP/1.1\r\nHost: x\r\n"
                                            b"Authorization: Bearer \xff\r\n")
    assert (status, body["error"]["code"]) == (401, "bad_token")
    assert not arena.arena.ladder.paused and await arena.arena.storage.get_setting("paused") is None
    row = await arena.arena.storage.bot_by_name("alice")
    assert row is not None and row.token_hash == hash_token(arena.tokens["alice"])
    ws = await arena.ws()  # a token that is a lone surrogate is no JSON string, and is named so
    await ws.ws.send_str('{"type": "hello", "protocol": 1, "token": "\\ud800"}')
    refused = await ws.expect(Error)
    assert (refused.code, refused.message) == ("bad_json", f"not JSON: {LONE_SURROGATE}")
    await ws.ws.send_str('{"type": "hello", "protocol": 1, "token": "\\ud800"')  # cut short: msgspec's own words
    assert (await ws.expect(Error)).message == "not JSON: Input data was truncated"
    refusal = await api_error(await client.post("/api/bots", data=b'{"name": "\\udfff"}', headers=AUTH), 400, "bad_json")
    assert refusal["message"] == f"the body is not JSON: {LONE_SURROGATE}"
    await ws.send({"type": "hello", "protocol": 1, "token": arena.tokens["alice"]})
    assert (await ws.expect(Welcome)).bot == "alice"  # the connection lives on


async def test_json_that_python_stretches_is_refused_in_msgspecs_words_not_as_a_lone_surrogate(make_arena: Any) -> None:
    """``NaN``, ``Infinity`` and a number past a float's range are no JSON (or none a message can
    hold), and Python's own parser takes them all the same: the refusal gives msgspec's reason,
    not the lone surrogate escape that no frame or body here holds."""
    arena: Harness = await make_arena()
    ws = await arena.ws()
    await ws.send({"type": "hello", "protocol": 1})
    await ws.expect(Welcome)
    cases = [('{"type": "ping", "data": NaN}', "JSON is malformed: invalid character (byte 25)"),
             ('{"type": "ping", "data": -Infinity}', "JSON is malformed: invalid character (byte 26)"),
             ('{"type": "ping", "data": 1e999}', "Number out of range - at `$[...]`")]
    for frame, reason in cases:
        await ws.ws.send_str(frame)
        refused = await ws.expect(Error)
        assert (refused.code, refused.message) == ("bad_json", f"not JSON: {reason}")
    refusal = await api_error(await arena.client.post("/api/bots", data=b'{"name": NaN}'), 400, "bad_json")
    assert refusal["message"] == "the body is not JSON: JSON is malformed: invalid character (byte 9)"
    await ws.ws.send_str('{"type": "ping", "data": "\\udfff", "n": NaN}')  # both: the surrogate is named
    assert (await ws.expect(Error)).message == f"not JSON: {LONE_SURROGATE}"
    await ws.send({"type": "ping", "data": "still here"})
    assert (await ws.expect(Pong)).data == "still here"


async def test_a_request_http_refuses_is_one_line_in_the_log_not_an_error_with_its_traceback(
        make_arena: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A header of 100 kB, which HTTP's parser refuses: the client gets its 400, and the log one
    ``INFO`` line (``mandala serve`` installs the filter as it sets up its log)."""
    monkeypatch.setattr(logging.getLogger("aiohttp.server"), "filters", [BadRequests()])
    arena: Harness = await make_arena()
    reader, writer = await asyncio.open_connection(arena.client.host, arena.client.port)
    try:
        writer.write(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Long: " + b"a" * 100_000 + b"\r\n\r\n")
        status_line = await reader.readline()
    finally:
        writer.close()
    assert status_line.split()[1] == b"400"
    lines = [r for r in caplog.records if r.name == "aiohttp.server"]
    assert [(r.levelname, r.exc_info) for r in lines] == [("INFO", None)]
    assert "Error handling request" in lines[0].getMessage()
    assert (await arena.client.get("/health")).status == 200


async def test_every_answer_says_its_request_id_a_streamed_one_and_an_upgrade_included(make_arena: Any) -> None:
    """An export and a tournament's records are streamed (their headers go out before the
    handler returns), and a WebSocket's upgrade too: each says its ``X-Request-Id``, as a plain
    answer and an error do. (The streamed ones and the upgrade said none.)"""
    arena: Harness = await make_arena()
    client = arena.client
    for name in ("alice", "bob"):
        await arena.create_bot(name)
    resp = await client.post("/api/tournaments", json={"name": "cup", "format": "round_robin",
                                                       "participants": ["alice", "bob"]}, headers=AUTH)
    tid = (await resp.json())["tournament_id"]
    ids = []
    for method, path in (("GET", "/health"), ("GET", "/api/nope"), ("GET", "/api/games/export"),
                         ("GET", "/api/games/export?compress=gzip"), ("HEAD", "/api/games/export"),
                         ("GET", f"/api/tournaments/{tid}/records")):
        resp = await client.request(method, path)
        await resp.read()
        assert resp.status in (200, 404), (path, resp.status)
        ids.append(resp.headers.get("X-Request-Id"))
    ws = await client.ws_connect("/ws")
    ids.append(ws._response.headers.get("X-Request-Id"))
    await ws.close()
    assert all(i is not None and re.fullmatch(r"[0-9a-f]{16}", i) for i in ids), ids
    assert len(set(ids)) == len(ids)


async def test_query_numbers_are_plain_digits_and_unknown_parameters_are_refused(make_arena: Any) -> None:
    """A count in a query is ASCII digits (``int`` also took " 5", "5_0", "+3" and "٣"); a
    parameter ``/api/games`` does not know is refused as the export's are (``player=`` answered
    every game, as if no filter were given); an empty ``limit=``, as the guides' export template
    leaves it, means none."""
    arena: Harness = await make_arena()
    client = arena.client
    await arena.create_bot("alice")
    await arena.create_bot("bob")
    resp = await client.post("/api/tournaments", json={"name": "cup", "format": "round_robin",
                                                       "participants": ["alice", "bob"]}, headers=AUTH)
    tid = (await resp.json())["tournament_id"]
    for bad in (" 5", "5_0", "+3", "\u0663", "0x10", "5.0"):
        for path in ("/api/games", "/api/ladder", "/api/bots/alice/history", f"/api/tournaments/{tid}/games",
                     "/api/games/export"):
            await api_error(await client.get(path, params={"limit": bad}), 400, "invalid_request")
        await api_error(await client.get(f"/api/tournaments/{tid}/games", params={"after_slot": bad}), 400,
                        "invalid_request")
        await api_error(await client.get("/api/ladder", params={"offset": bad}), 400, "invalid_request")
    refused = await api_error(await client.get("/api/games?player=alice"), 400, "invalid_request")
    assert "player" in refused["message"]
    for fine in ("/api/games?limit=5", f"/api/tournaments/{tid}/games?after_slot=-1&limit=5",
                 "/api/games/export?bot=&kind=&status=&since=&until=&limit=", "/api/ladder?limit=3&offset=0"):
        assert (await client.get(fine)).status == 200, fine


async def test_every_api_endpoint_refuses_what_it_does_not_take_and_changes_nothing(make_arena: Any) -> None:
    """Every route under ``/api/`` says what it takes (``takes``); a query parameter it does not
    know (``/api/ladder?bott=``, ``/results?fromat=csv``) and a body with fields sent where none
    is read (``{"bot": "x"}`` to the ladder's pause) are refused with ``400 invalid_request``
    before anything happens, as unknown fields in the bodies that are read always were."""
    arena: Harness = await make_arena()
    client = arena.client
    alice = await arena.create_bot("alice")
    await arena.create_bot("bob")
    resp = await client.post("/api/tournaments", json={"name": "cup", "format": "round_robin",
                                                       "participants": ["alice", "bob"]}, headers=AUTH)
    tid = (await resp.json())["tournament_id"]
    bots = await arena.get_json("/api/bots")
    values = {"game_id": "nosuchgame", "name": "alice", "tournament_id": tid}
    routes = [r for r in client.app.router.routes() if r.method != "HEAD" and r.resource is not None
              and r.resource.canonical.startswith("/api/")]
    assert len(routes) >= 25
    bodyless = []
    for route in routes:
        said = declared(route.handler)
        assert said is not None, f"{route.method} {route.resource.canonical} is not registered through takes()"
        path = route.resource.canonical.format(**values)  # type: ignore[union-attr]
        refused = await api_error(await client.request(route.method, path, params={"bott": "alice"}, headers=AUTH),
                                  400, "invalid_request")
        known = f"known: {', '.join(said.query)}" if said.query else "this endpoint takes none"
        assert refused["message"] == f"unknown query parameter(s): bott; {known}", route
        if route.method != "GET" and not said.body:
            bodyless.append((route.method, path))
            refused = await api_error(await client.request(route.method, path, json={"bot": "bob"}, headers=AUTH),
                                      400, "invalid_request")
            assert refused["message"] == "Object contains unknown field `bot`", route
            await api_error(await client.request(route.method, path, data="[1]", headers=AUTH), 400, "invalid_request")
    assert ("POST", "/api/ladder/pause") in bodyless and ("DELETE", "/api/bots/alice/token") in bodyless
    # Nothing happened: the ladder runs, the tournament was not started, no bot was made, removed
    # or restored, and alice's token (neither rotated nor revoked) still works.
    assert (await arena.get_json("/api/ladder"))["paused"] is False
    assert (await arena.get_json(f"/api/tournaments/{tid}"))["state"] == "created"
    assert await arena.get_json("/api/bots") == bots
    await (await arena.connect(alice)).close()
    # What each endpoint does take still works, an empty body or {} where none is read included.
    assert (await arena.get_json("/api/ladder?limit=5&offset=0"))["standings"] == []
    assert (await client.get(f"/api/tournaments/{tid}/results", params={"format": "csv"})).status == 200
    assert (await client.post("/api/ladder/pause", headers=AUTH)).status == 200
    assert (await client.post("/api/ladder/resume", json={}, headers=AUTH)).status == 200


async def test_a_name_with_a_newline_stored_before_it_was_refused_still_reads(make_arena: Any) -> None:
    """A bot named ``"old1\\n"`` registered before such names were refused (here: stored
    directly) still plays in tournaments and lists: the name check is the new bot's, not the
    message types' (a stricter type made every read of such a tournament a 500)."""
    arena: Harness = await make_arena()
    await arena.create_bot("alice")
    await arena.arena.storage.create_bot("old1\n", hash_token("mdl_" + "x" * 43), "2026-01-01T00:00:00.000Z", 1500.0)
    resp = await arena.client.post("/api/tournaments", json={"name": "cup", "format": "round_robin",
                                                             "participants": ["alice", "old1\n"]}, headers=AUTH)
    assert resp.status == 201, await resp.text()
    tid = (await resp.json())["tournament_id"]
    for path in ("/api/tournaments", f"/api/tournaments/{tid}", f"/api/tournaments/{tid}/results", "/api/bots"):
        assert (await arena.client.get(path)).status == 200, path
    await api_error(await arena.client.post("/api/bots", json={"name": "old2\n"}, headers=AUTH), 400, "invalid_request")
