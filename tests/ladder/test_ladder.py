"""The ladder on a real server: seek, qualification against the house bot, duplicate pairs,
the organizer's controls, standings and the live stream.

Bots here are test WebSocket clients answering with random legal moves. Where a test must
know that nothing starts, it runs the pairing step itself (``ladder.pair_now()``) instead of
waiting for a timer, and it reads standings after ``manager.flush()`` and
``ladder.refresh_standings()`` instead of polling.
"""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest

from arena_testkit import ADMIN, Harness, LiveStream, WsClient, gather, play_out, random_policy, wait_until
from protocol.messages import (
    CLOSE_REPLACED,
    Decision,
    Error,
    GameOver,
    GameStart,
    LadderStatus,
    LiveGameEnded,
    LiveGames,
    LiveGameStarted,
    LiveStandings,
    RecordHold,
)
from server.common.refusal import Refusal

FAST = {"pairing_interval_s": 0.05}
AUTH = {"Authorization": f"Bearer {ADMIN}"}


async def seek(client: WsClient) -> LadderStatus:
    await client.send({"type": "seek"})
    return await client.until(LadderStatus)


async def qualify(arena: Harness, name: str, seed: int) -> WsClient:
    """Connect ``name``, seek, play its two qualification games; returns once it is listed."""
    client = await arena.bot(name)
    status = await seek(client)
    assert (status.seeking, status.state, status.qualification_left) == (True, "qualifying", 2)
    overs = await play_out(client, random_policy(seed), games=2)
    assert all(o.result.end_reason in ("river", "deck", "no_moves", "turn_limit") for o in overs)
    while (status := await client.until(LadderStatus)).state != "listed":
        pass
    assert status.seeking and status.qualification_left == 0
    return client


def starts(client: WsClient) -> list[GameStart]:
    return [f for f in client.frames if isinstance(f, GameStart)]


def records(client: WsClient) -> dict[str, GameOver]:
    return {f.game_id: f for f in client.frames if isinstance(f, GameOver)}


async def standings(arena: Harness) -> dict[str, Any]:
    await arena.arena.manager.flush()
    await arena.arena.ladder.refresh_standings()
    return {s["bot"]: s for s in (await arena.get_json("/api/ladder"))["standings"]}


async def test_qualification_against_the_house_then_rated_duplicate_pairs(make_arena: Any) -> None:
    arena: Harness = await make_arena(**FAST)
    alice, bob = await gather(qualify(arena, "alice", 1), qualify(arena, "bob", 2))
    for client, name in ((alice, "alice"), (bob, "bob")):
        quals = starts(client)
        assert [s.kind for s in quals] == ["qualification", "qualification"]
        assert not any(s.rated for s in quals)
        assert quals[0].pair_id == quals[1].pair_id is not None
        assert {p.name for p in quals[0].players} == {name, "house"}
        assert quals[0].seat != quals[1].seat
        # The first game's record waited for the return game, dealt the same (held, §12).
        held, second = (records(client)[s.game_id] for s in quals)
        assert held.record.deck == [] and held.record_held == RecordHold(pair_id=quals[0].pair_id)
        assert len(second.record.deck) == 108 and second.record_held is None
        first = await arena.get_json(f"/api/games/{quals[0].game_id}/record")
        assert (first["deck"], first["first_player"]) == (second.record.deck, second.record.first_player)

    # Listed and still seeking: the two are paired for a duplicate pair of rated games.
    await gather(play_out(alice, random_policy(3), games=2), play_out(bob, random_policy(4), games=2))
    ladder = [s for s in starts(alice) if s.kind == "ladder"]
    assert len(ladder) == 2 and all(s.rated for s in ladder)
    assert ladder[0].pair_id == ladder[1].pair_id
    assert [p.name for p in ladder[0].players] == [p.name for p in reversed(ladder[1].players)]
    overs = [records(alice)[s.game_id] for s in ladder]
    assert overs[0].record.deck == [] and overs[0].record_held == RecordHold(pair_id=ladder[0].pair_id)
    first = await arena.get_json(f"/api/games/{ladder[0].game_id}/record")
    assert len(overs[1].record.deck) == 108
    assert (first["deck"], first["first_player"]) == (overs[1].record.deck, overs[1].record.first_player)

    table = await standings(arena)
    assert set(table) == {"alice", "bob"}  # the house bot is never listed
    score = {"alice": 0.0, "bob": 0.0}
    for start, over in zip(ladder, overs, strict=True):
        names = [p.name for p in start.players]
        w = over.result.winner
        for seat, name in enumerate(names):
            score[name] += 0.5 if w is None else 1.0 if w == seat else 0.0
    for name, row in table.items():
        assert row["games"] == 2 and row["wins"] + row["draws"] + row["losses"] == 2
        assert row["wins"] + row["draws"] / 2 == score[name]
        assert row["provisional"] and row["connected"] and row["seeking"]
        assert row["low"] <= row["rating"] <= row["high"]
    assert (await arena.arena.storage.get_game(ladder[0].game_id)).pair_id == ladder[0].pair_id  # type: ignore[union-attr]
    profile = await arena.get_json("/api/bots/alice")
    assert profile["state"] == "listed" and len(profile["history"]) == 2
    # Ratings to a tenth, as the standings give them; the second change starts where the first ended.
    stored = await arena.arena.storage.rating_history("alice")
    assert [(h["rating_before"], h["rating_after"]) for h in profile["history"]] == [
        (round(e.rating_before, 1), round(e.rating_after, 1)) for e in stored]
    assert profile["history"][1]["rating_before"] == profile["history"][0]["rating_after"]
    assert {g["kind"] for g in profile["games"]} >= {"qualification", "ladder"}


async def test_a_bot_that_times_out_in_qualification_is_not_listed(make_arena: Any) -> None:
    arena: Harness = await make_arena(decision_ms=200, **FAST)
    slow = await arena.bot("slow")
    await seek(slow)
    start = await slow.until(GameStart)
    assert start.kind == "qualification"
    over = await slow.until(GameOver, timeout=5)
    assert over.result.end_reason == "timeout"
    status = await slow.until(LadderStatus)
    assert (status.state, status.seeking) == ("failed", False)
    assert "timeout" in status.message
    assert "slow" not in await standings(arena)
    assert (await arena.get_json("/api/bots/slow"))["state"] == "failed"
    status = await seek(slow)  # a new seek qualifies afresh
    assert (status.state, status.qualification_left) == ("qualifying", 2)


async def test_a_move_too_late_in_qualification_fails_it_for_the_timeout(
        make_arena: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The clock runs out in a qualification game and the bot's move comes after, before the
    game's end is stored (storage is held up here): the bot fails for the time-out, as the
    game's end says. It failed for the move's refusal, ``game_over``, which pointed its author
    at the wrong thing."""
    arena: Harness = await make_arena(decision_ms=200, **FAST)
    slow = await arena.bot("slow")
    await seek(slow)
    decision = await slow.until(Decision)
    storage, go = arena.arena.storage, asyncio.Event()
    write_games = storage.write_games

    async def held_up(writes: Any) -> Any:
        await go.wait()
        return await write_games(writes)

    monkeypatch.setattr(storage, "write_games", held_up)
    room = arena.arena.manager.running[decision.game_id]
    await wait_until(lambda: room.over, 5, "the decision's clock did not run out")
    await slow.send_move(decision, decision.legal[0])
    assert (await slow.expect(Error)).code == "game_over"
    go.set()
    status = await slow.until(LadderStatus)
    assert (status.state, status.seeking) == ("failed", False)
    assert status.message == f"qualification failed: game {decision.game_id} ended by timeout; seek again to retry"


async def test_a_protocol_break_in_qualification_fails_it(make_arena: Any) -> None:
    arena: Harness = await make_arena(**FAST)
    bad = await arena.bot("bad")
    await seek(bad)
    decision = await bad.until(Decision)
    await bad.send({"type": "move", "game_id": decision.game_id, "request_id": decision.request_id + 7,
                    "move": msgspec.to_builtins(decision.legal[0])})
    err = await bad.expect(Error)
    assert err.code == "stale_request"
    status = await bad.until(LadderStatus)
    assert (status.state, status.seeking) == ("failed", False) and "stale_request" in status.message
    # Removed, then restored (§18.6): it is a new bot again, to qualify afresh, not still failed.
    assert (await arena.client.delete("/api/ladder/bots/bad", headers=AUTH)).status == 200
    assert (await bad.until(LadderStatus)).state == "removed"
    resp = await arena.client.post("/api/ladder/bots/bad/restore", headers=AUTH)
    assert await resp.json() == {"bot": "bad", "state": "qualifying"}
    status = await bad.until(LadderStatus)
    assert (status.state, status.qualification_left) == ("qualifying", 2)


async def test_a_flood_in_qualification_fails_it(make_arena: Any) -> None:
    """A bot closed for ``flood`` (4008) while it qualifies has broken the protocol: it fails,
    as for any other break (§18.2), and is not listed by playing on after it reconnects."""
    arena: Harness = await make_arena(**FAST, messages_per_second=1.0, burst=5)
    bad = await arena.bot("bad")
    await seek(bad)
    await bad.until(Decision)
    for _ in range(20):
        await bad.send({"type": "ping"})
    assert await bad.closed() == 4008
    qualification = arena.arena.ladder.qualification
    assert "bad" in qualification.failed and "bad" not in qualification.bots  # at once, not by a time-out later
    # Back at once, it plays its qualification game to the end: failed still, never listed.
    again = await arena.connect(arena.tokens["bad"])
    await play_out(again, random_policy(3))
    assert arena.arena.ladder.place("bad") != "listed" and "bad" in qualification.failed


async def test_organizer_pauses_resumes_removes_and_resets(make_arena: Any) -> None:
    arena: Harness = await make_arena(**FAST)
    alice, bob = await gather(qualify(arena, "alice", 5), qualify(arena, "bob", 6))
    await gather(play_out(alice, random_policy(7), games=2), play_out(bob, random_policy(8), games=2))
    ladder = arena.arena.ladder
    client = arena.client

    resp = await client.post("/api/ladder/pause")
    assert resp.status == 401
    resp = await client.post("/api/ladder/pause", headers=AUTH)
    assert resp.status == 200 and await resp.json() == {"paused": True}
    status = await alice.until(LadderStatus)
    assert status.paused and status.seeking
    await arena.arena.manager.flush()
    for room in list(arena.arena.manager.running.values()):  # a pair already under way plays out
        room.abort()
    ladder.returns.clear()
    ladder.pair_now()
    assert arena.arena.manager.running == {}  # paused: nothing new starts
    assert (await arena.get_json("/api/ladder"))["paused"] is True

    resp = await client.post("/api/ladder/resume", headers=AUTH)
    assert await resp.json() == {"paused": False}
    assert not (await alice.until(LadderStatus)).paused
    ladder.pair_now()
    assert len(arena.arena.manager.running) == 1  # the pair's first game

    resp = await client.delete("/api/ladder/bots/bob", headers=AUTH)
    assert await resp.json() == {"bot": "bob", "state": "removed"}
    while (status := await bob.until(LadderStatus)).state != "removed":
        assert status.state == "listed"  # the pause and the resume
    assert not status.seeking and status.qualification_left == 0
    await bob.send({"type": "seek"})
    assert (await bob.until(Error)).code == "removed"
    assert "bob" not in await standings(arena)
    resp = await client.delete("/api/ladder/bots/house", headers=AUTH)
    assert resp.status == 400 and (await resp.json())["error"]["code"] == "house_bot"
    resp = await client.delete("/api/ladder/bots/nobody", headers=AUTH)
    assert resp.status == 404

    resp = await client.post("/api/ladder/reset", headers=AUTH)
    assert resp.status == 200
    row = (await standings(arena))["alice"]
    assert (row["rating"], row["games"], row["wins"], row["losses"], row["draws"]) == (1500.0, 0, 0, 0, 0)
    assert await arena.arena.storage.rated_results() == []

    resp = await client.post("/api/ladder/bots/bob/restore", headers=AUTH)
    assert await resp.json() == {"bot": "bob", "state": "qualifying"}


async def test_a_new_connection_does_not_inherit_the_seek_of_the_one_it_replaced(make_arena: Any) -> None:
    """PROTOCOL.md §18.1: a seek ends with its connection, also when a new hello replaces it;
    the bot is paired again once it seeks on the new connection."""
    arena: Harness = await make_arena(**FAST)
    ladder = arena.arena.ladder
    assert (await arena.client.post("/api/ladder/pause", headers=AUTH)).status == 200
    first = await arena.bot("alice")
    assert (await seek(first)).seeking and ladder.seeking == {"alice"}

    second = await arena.connect(arena.tokens["alice"])
    assert await first.closed() == CLOSE_REPLACED
    assert ladder.seeking == set()
    assert (await arena.client.post("/api/ladder/resume", headers=AUTH)).status == 200
    told = await second.until(LadderStatus)  # the resume, as this connection stands
    assert (told.seeking, told.paused) == (False, False)
    ladder.pair_now()
    assert arena.arena.manager.running == {}  # not seeking: no qualification game

    status = await seek(second)
    assert (status.seeking, status.state, status.qualification_left) == (True, "qualifying", 2)
    start = await second.until(GameStart)
    assert (start.kind, sorted(p.name for p in start.players)) == ("qualification", ["alice", "house"])


async def test_the_live_stream_pushes_standings_and_games(make_arena: Any) -> None:
    arena: Harness = await make_arena(**FAST)
    live = LiveStream(await arena.client.ws_connect("/live?games=all"))
    receive = live.event
    assert await receive() == LiveGames(running=[], recent=[])
    assert await receive() == LiveStandings(paused=False, standings=[], total=0, offset=0)
    alice, bob = await gather(qualify(arena, "alice", 9), qualify(arena, "bob", 10))
    await gather(play_out(alice, random_policy(11), games=2), play_out(bob, random_policy(12), games=2))
    seen: list[Any] = []
    # The top as the stream's top_changed events made it, until both show their two games.
    while sorted((s.bot, s.games) for s in live.top) != [("alice", 2), ("bob", 2)]:
        seen.append(await receive())
    assert live.total == 2 and [s.rank for s in live.top] == [1, 2]
    played = {f.game_id: f for c in (alice, bob) for f in c.frames if isinstance(f, GameStart)}
    over = {f.game_id for c in (alice, bob) for f in c.frames if isinstance(f, GameOver)}
    started = {m.game.game_id: m.game for m in seen if isinstance(m, LiveGameStarted)}
    ended = {m.game.game_id: m.game for m in seen if isinstance(m, LiveGameEnded)}
    # 4 qualification games and 2 ladder games ended; the next pair may have begun.
    assert ended.keys() == over and len(over) == 6 and started.keys() >= over
    for game_id, game in ended.items():
        assert game.kind == played[game_id].kind and game.status == "finished" and game.result is not None
        assert started[game_id].status == "running" and started[game_id].result is None
    await live.close()


async def test_the_ladder_survives_a_restart(make_arena: Any) -> None:
    arena: Harness = await make_arena(**FAST)
    alice = await qualify(arena, "alice", 13)
    resp = await arena.client.post("/api/ladder/pause", headers=AUTH)
    assert resp.status == 200
    await alice.close()
    await arena.client.close()
    again: Harness = await make_arena(**FAST)
    assert again.arena.ladder.paused
    assert again.arena.ladder.state("alice") == "listed"
    assert (await again.get_json("/api/bots/alice"))["state"] == "listed"


async def test_games_refused_by_the_cluster_hold_the_pairing_a_moment_not_a_storm(make_arena: Any,
                                                                                   monkeypatch: Any) -> None:
    """A node that cannot reach the others refuses the games its ladder pairs (``cluster_unavailable``:
    here, the manager made to refuse as such a node's does). The pairing holds every start for
    ``HOLD_S`` after each refusal instead of pairing the same bots again at once, pass after
    pass; a refused pair costs no bot its games-per-hour allowance."""
    arena: Harness = await make_arena(**FAST)
    ladder = arena.arena.ladder
    asked: list[float] = []
    loop = asyncio.get_running_loop()
    place = arena.arena.manager.place_game

    def refuse(*args: Any, **kwargs: Any) -> str:
        if kwargs.get("kind") != "ladder":
            return place(*args, **kwargs)  # qualification games play
        asked.append(loop.time())
        raise Refusal("cluster_unavailable", "bob is connected to another node, which cannot be reached now")

    monkeypatch.setattr(arena.arena.manager, "place_game", refuse)
    alice, bob = await gather(qualify(arena, "alice", 5), qualify(arena, "bob", 6))
    await wait_until(lambda: asked, 5, "no pairing was tried")
    await asyncio.sleep(2.5)  # a window of two and a half holds: at most one try a hold
    assert 2 <= len(asked) <= 4, len(asked)
    assert ladder.recent.count("alice", loop.time()) == ladder.recent.count("bob", loop.time()) == 0
    del alice, bob
