"""What a bot author sees after a loss: the seat replay (``GET /api/games/{id}/replay?seat=``)
gives what each seat was sent at each ply, its answers and its think times; a bot's health
(``GET /api/bots/{name}``) counts its time-outs, refused answers, disconnects and
resignations over its recent games and links each to the game and the decision.

The bots here misbehave on purpose, over real sockets: one sends an illegal move and then
stops answering, one sends a frame that does not decode, one leaves mid-game."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import msgspec

from arena_testkit import Harness, WsClient, gather, misbehave, play_out, random_policy
from protocol.messages import Decision, GameOver, GameStart, MoveAccepted, Update
from test_server_http import api_error

DECISION_MS = 2000
"""Long enough that the bot that plays well answers in time on a loaded test machine."""


async def frames_until_over(client: WsClient, policy: Any) -> list[Any]:
    """Play with ``policy`` (``None`` answers nothing); every frame received until game over."""
    frames: list[Any] = []
    while True:
        msg = await client.recv(30)
        frames.append(msg)
        if isinstance(msg, Decision) and policy is not None:
            await client.send_move(msg, policy(msg))
        if isinstance(msg, GameOver):
            return frames


async def test_seat_replay_gives_each_seat_what_it_was_sent_its_answers_and_think_times(make_arena: Any) -> None:
    arena: Harness = await make_arena()
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"], reshuffle_seed=5)
    await api_error(await arena.client.get(f"/api/games/{game_id}/replay?seat=0"), 409, "game_running")
    frames = await gather(frames_until_over(a, random_policy(1)), frames_until_over(b, random_policy(2)))
    over = frames[0][-1]
    for seat, got in enumerate(frames):
        replay = await arena.get_json(f"/api/games/{game_id}/replay?seat={seat}")
        assert replay["seat"] == seat and replay["measured"] is True
        assert replay["decision_ms"] == arena.arena.settings.decision_ms
        plies = replay["plies"]
        assert len(plies) == len(over.record.moves) + 1
        # Ply by ply, the very views this seat was sent in its updates.
        updates = [msgspec.to_builtins(f.view) for f in got if isinstance(f, Update)]
        assert [p["view"] for p in plies] == updates
        assert all(p["view"]["seat"] == seat for p in plies)
        # Its decisions: the request ids, legal moves and views it was sent, the answers it
        # gave and the think times the server confirmed in move_accepted.
        decisions = [f for f in got if isinstance(f, Decision)]
        accepted = {f.request_id: f.elapsed_ms for f in got if isinstance(f, MoveAccepted)}
        asked = [p for p in plies if "decision" in p]
        assert [p["decision"]["request_id"] for p in asked] == [d.request_id for d in decisions]
        for p, d in zip(asked, decisions, strict=True):
            entry = p["decision"]
            assert entry["legal"] == msgspec.to_builtins(d.legal)
            assert p["view"] == msgspec.to_builtins(d.view)
            assert entry["answer"] == msgspec.to_builtins(over.record.moves[p["ply"]])
            assert abs(entry["think_ms"] - accepted[d.request_id]) <= 0.051
            assert p["incidents"] == []
        assert len(asked) == sum(m.player == seat for m in over.record.moves)
    # The seats' replays differ only where a seat sees its own hand.
    zero = await arena.get_json(f"/api/games/{game_id}/replay?seat=0")
    assert zero["plies"][0]["view"]["private"] != (await arena.get_json(
        f"/api/games/{game_id}/replay?seat=1"))["plies"][0]["view"]["private"]


async def test_a_bot_that_sends_an_illegal_move_then_times_out_finds_which_decision_and_what_it_sent(
        make_arena: Any) -> None:
    arena: Harness = await make_arena(decision_ms=DECISION_MS)
    slow = await arena.bot("slowpoke")
    fine = await arena.bot("steady")
    game_id = await arena.start_game(["slowpoke", "steady"], reshuffle_seed=9)
    garbage = '{"type": "move", "game_id": "%s", "request_id": %d, "move": {"type": "teleport"}}'
    done, _ = await gather(misbehave(slow, game_id, garbage), play_out(fine, random_policy(3)))
    sent_illegal, illegal_at, stalled_at = done.sent, done.illegal_at, done.stalled_at
    over = await arena.get_json(f"/api/games/{game_id}")
    assert over["result"]["end_reason"] == "timeout" and over["result"]["winner"] == 1

    # The profile: which game it lost and why, and each incident with its decision.
    health = (await arena.get_json("/api/bots/slowpoke"))["health"]
    assert (health["timeouts"], health["illegal_moves"], health["invalid_answers"]) == (1, 1, 1)
    assert (health["disconnects"], health["resignations"], health["late_answers"]) == (0, 0, 0)
    assert health["games"] == 1 and health["decisions"] == 3
    assert health["games_lost"] == 1
    assert health["lost"] == [{"game_id": game_id, "ended": health["lost"][0]["ended"], "kind": "admin",
                               "cause": "timeout", "ply": stalled_at, "opponent": "steady"}]
    kinds = [(i["kind"], i.get("code"), i["game_id"], i["ply"], i.get("request_id")) for i in health["incidents"]]
    assert kinds == [
        ("refused", "illegal_move", game_id, illegal_at, illegal_at),
        ("refused", "invalid_message", game_id, illegal_at, illegal_at),
        ("timeout", None, game_id, stalled_at, stalled_at),
    ]
    refused, garbled, timeout = health["incidents"]
    assert refused["sent"] == sent_illegal and refused["rule"] and refused["message"]
    assert garbled["sent"] == garbage % (game_id, illegal_at)
    assert 0 <= refused["after_ms"] <= garbled["after_ms"] < DECISION_MS
    assert timeout["after_ms"] >= DECISION_MS and "away" not in timeout
    think = health["think_ms"]
    assert think["p50"] <= think["p95"] <= think["max"]
    assert think["slowest"]["game_id"] == game_id and think["max"] == think["slowest"]["think_ms"]
    # The opponent's health is clean.
    clean = (await arena.get_json("/api/bots/steady"))["health"]
    assert clean["incidents"] == [] and clean["games_lost"] == 0 and clean["decisions"] > 0

    # The seat replay shows the same at those decisions.
    replay = await arena.get_json(f"/api/games/{game_id}/replay?seat=0")
    by_ply = {p["ply"]: p for p in replay["plies"]}
    at = by_ply[illegal_at]
    assert [i["code"] for i in at["incidents"]] == ["illegal_move", "invalid_message"]
    assert at["decision"]["answer"] is not None and at["decision"]["think_ms"] >= garbled["after_ms"]
    assert by_ply[think["slowest"]["ply"]]["decision"]["think_ms"] == think["max"]
    last = replay["plies"][-1]
    assert last["ply"] == stalled_at and last["decision"]["answer"] is None
    assert last["decision"]["think_ms"] is None and [i["kind"] for i in last["incidents"]] == ["timeout"]
    # The opponent's replay shows none of slowpoke's incidents.
    other = await arena.get_json(f"/api/games/{game_id}/replay?seat=1")
    assert all(p["incidents"] == [] for p in other["plies"])


async def test_a_bot_that_leaves_mid_game_loses_on_time_by_disconnect(make_arena: Any) -> None:
    arena: Harness = await make_arena(decision_ms=DECISION_MS)
    leaver = await arena.bot("leaver")
    stayer = await arena.bot("stayer")
    game_id = await arena.start_game(["leaver", "stayer"], reshuffle_seed=4)
    # It leaves once and comes back, then leaves for good at its decision.
    first = await leaver.until(Decision)
    await leaver.close()
    again = await arena.connect(arena.tokens["leaver"])
    resumed = await again.until(GameStart)
    assert resumed.resumed
    decision = await again.until(Decision)
    assert decision.request_id == first.request_id
    await again.send_move(decision, decision.legal[0])
    await again.until(MoveAccepted)
    stayer_task = asyncio.ensure_future(play_out(stayer, random_policy(8)))
    await again.until(Decision)
    await again.close()
    await asyncio.wait_for(stayer_task, 30)

    health = (await arena.get_json("/api/bots/leaver"))["health"]
    assert health["disconnects"] == 2 and health["timeouts"] == 1
    assert [lost["cause"] for lost in health["lost"]] == ["disconnect"]
    kinds = [i["kind"] for i in health["incidents"]]
    assert kinds == ["disconnect", "disconnect", "timeout"]  # reconnects are shown in the replay only
    assert health["incidents"][-1]["away"] is True
    replay = await arena.get_json(f"/api/games/{game_id}/replay?seat=0")
    seen = [i for p in replay["plies"] for i in p["incidents"]]
    assert [i["kind"] for i in seen] == ["disconnect", "reconnect", "disconnect", "timeout"]
    assert seen[1]["away_ms"] >= 0


async def test_resignation_is_counted_and_costs_the_game(make_arena: Any) -> None:
    arena: Harness = await make_arena()
    quitter = await arena.bot("quitter")
    other = await arena.bot("other")
    game_id = await arena.start_game(["quitter", "other"], reshuffle_seed=2)
    await quitter.until(Decision)
    await quitter.send({"type": "resign", "game_id": game_id})
    await quitter.until(GameOver)
    await other.until(GameOver)
    health = (await arena.get_json("/api/bots/quitter"))["health"]
    assert health["resignations"] == 1 and [g["cause"] for g in health["lost"]] == ["resign"]
    assert health["incidents"][0]["kind"] == "resign" and health["incidents"][0]["game_id"] == game_id
    assert (await arena.get_json("/api/bots/other"))["health"]["lost"] == []


async def test_seat_replay_refusals_reveal_nothing_of_a_running_game(make_arena: Any) -> None:
    arena: Harness = await make_arena()
    await arena.bot("alice")
    await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"])
    for bad in ("2", "-1", "x", "0,1", "01"):
        await api_error(await arena.client.get(f"/api/games/{game_id}/replay?seat={bad}"), 400, "bad_seat")
    body = await api_error(await arena.client.get(f"/api/games/{game_id}/replay?seat=1"), 409, "game_running")
    assert "view" not in json.dumps(body)
    await api_error(await arena.client.get("/api/games/nosuchgame/replay?seat=0"), 404, "unknown_game")
    await api_error(await arena.client.get("/api/bots/nobody"), 404, "unknown_bot")
