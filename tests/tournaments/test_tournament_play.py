"""Tournaments as real use breaks them: a bot that never comes, one that leaves mid-game, an
organizer pausing and cancelling mid-game, Swiss rounds, a gauntlet, bots of known strength."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest
from tournament_kit import create, crosstable_of, finished, games_read, idle_pair_started, play, post, records

from arena_testkit import Harness, LiveStream, WsClient, wait_until
from mandala_client.bots import GreedyBot, RandomBot
from protocol.messages import Decision, GameOver, GameStart, LiveGameEnded
from server.http import tournaments as tournaments_http


async def test_a_bot_that_never_comes_forfeits_after_the_grace(make_arena: Any) -> None:
    """cat never comes: it forfeits its four games once the grace is over, each lost to the
    right opponent, in the results, the records and the ranking, and each forfeit's end
    reaches a viewer following every game on ``/live``, as a played game's does."""
    arena: Harness = await make_arena()
    clients = {n: await arena.bot(n, max_games=2) for n in ("ann", "ben")}
    await arena.create_bot("cat")  # registered, never connected
    viewer = LiveStream(await arena.client.ws_connect("/live?games=all"))
    await viewer.batch()  # the fresh start
    tasks = [asyncio.create_task(play(c, RandomBot(seed=i))) for i, c in enumerate(clients.values())]
    try:
        tid = (await create(arena, participants=["ann", "ben", "cat"], grace_s=1.0))["tournament_id"]
        await post(arena, f"/api/tournaments/{tid}/start")

        async def waited_for() -> Any:
            view = await arena.get_json(f"/api/tournaments/{tid}")
            return view["waiting"] if view["progress"]["forfeits"] == 0 else None

        waiting = await wait_until(waited_for, 5, "cat was not waited for")
        assert [w["bot"] for w in waiting] == ["cat"] and 0 <= waiting[0]["forfeits_in_s"] <= 1.0
        view = await finished(arena, tid)
    finally:
        for t in tasks:
            t.cancel()
    assert view["progress"] == {"planned": 6, "played": 6, "running": 0, "forfeits": 4}
    lines = await records(arena, tid)
    forfeits = [line for line in lines if line["result"]["end_reason"] == "forfeit"]
    assert len(forfeits) == 4
    for line in forfeits:
        assert "cat" in line["players"] and line["result"]["winner"] == 1 - line["players"].index("cat")
        assert line["record"]["moves"] == []  # no move was played; the deal is recorded
    ranking = {r["bot"]: r for r in (await arena.get_json(f"/api/tournaments/{tid}/results"))["ranking"]}
    assert ranking["cat"]["forfeits"] == 4 and ranking["cat"]["score"] == 0.0 and ranking["cat"]["rank"] == 3
    assert ranking["ann"]["forfeits"] == ranking["ben"]["forfeits"] == 0
    ends: dict[str, str] = {}
    while len(ends) < len(lines):
        ended = (await viewer.next_of(LiveGameEnded)).game
        if ended.tournament_id == tid:
            assert ended.result is not None and ended.game_id not in ends
            ends[ended.game_id] = ended.result.end_reason
    assert ends == {line["game_id"]: line["result"]["end_reason"] for line in lines}
    await viewer.close()


async def leave_after(client: WsClient, decisions: int) -> None:
    """Answer ``decisions`` decisions with the first legal move, then drop the connection."""
    while decisions:
        msg = await client.recv(timeout=30)
        if isinstance(msg, Decision):
            await client.send_move(msg, msg.legal[0])
            decisions -= 1
    await client.close()


async def test_a_bot_that_leaves_mid_game_loses_it_on_time_then_forfeits_the_rest(make_arena: Any) -> None:
    arena: Harness = await make_arena(decision_ms=2000)
    clients = {n: await arena.bot(n, max_games=1) for n in ("ann", "ben")}
    cat = await arena.bot("cat", max_games=1)
    tasks = [asyncio.create_task(play(c, RandomBot(seed=i))) for i, c in enumerate(clients.values())]
    try:
        tid = (await create(arena, participants=["ann", "ben", "cat"], games_per_pairing=4, grace_s=0.5,
                            max_games_per_bot=1))["tournament_id"]
        await post(arena, f"/api/tournaments/{tid}/start")
        await leave_after(cat, 3)
        view = await finished(arena, tid)
    finally:
        for t in tasks:
            t.cancel()
    assert view["progress"]["played"] == view["progress"]["planned"] == 12
    lines = await records(arena, tid)
    cats = [line for line in lines if "cat" in line["players"]]
    reasons = Counter(line["result"]["end_reason"] for line in cats)
    assert reasons["timeout"] == 1 and reasons["forfeit"] >= 6, reasons
    timed_out = next(line for line in cats if line["result"]["end_reason"] == "timeout")
    assert timed_out["result"]["winner"] == 1 - timed_out["players"].index("cat")
    results = await arena.get_json(f"/api/tournaments/{tid}/results")
    assert results["crosstable"] == crosstable_of(lines)
    assert {r["bot"]: r["forfeits"] for r in results["ranking"]}["cat"] == reasons["forfeit"]


async def test_pause_starts_no_game_and_cancel_aborts_the_running_ones(make_arena: Any) -> None:
    arena: Harness = await make_arena()
    ann, ben = await arena.bot("ann"), await arena.bot("ben")
    tid = (await create(arena, participants=["ann", "ben"], games_per_pairing=4, max_concurrent=1))["tournament_id"]
    await post(arena, f"/api/tournaments/{tid}/start")
    start = await ann.until(GameStart)
    await ben.until(GameStart)
    assert start.kind == "tournament" and start.tournament_id == tid and not start.rated
    await post(arena, f"/api/tournaments/{tid}/pause")
    # The running game plays on to its end while paused.
    bots = {"ann": RandomBot(seed=1), "ben": RandomBot(seed=2)}

    async def finish(client: WsClient, name: str) -> GameOver:
        while True:
            msg = await client.recv(timeout=30)
            if isinstance(msg, Decision):
                await client.send_move(msg, bots[name].choose(msg.view, msg.legal))
            elif isinstance(msg, GameOver):
                return msg

    over = await finish(ann, "ann")
    await finish(ben, "ben")
    assert over.result.end_reason != "aborted"
    director = arena.arena.tournaments
    run = director.runs[tid]
    await wait_until(lambda: not run.running, 5, "the paused game's end was not counted")
    await director._refresh()
    await director._step(run)
    assert not run.running and not arena.arena.manager.running  # nothing started while paused
    view = await arena.get_json(f"/api/tournaments/{tid}")
    assert (view["state"], view["progress"]["played"], view["progress"]["running"]) == ("paused", 1, 0)
    await post(arena, f"/api/tournaments/{tid}/resume")
    second = await ann.until(GameStart)
    await ben.until(GameStart)
    cancelled = await post(arena, f"/api/tournaments/{tid}/cancel")
    assert cancelled["state"] == "cancelled"
    aborted = await ann.until(GameOver)
    assert (aborted.game_id, aborted.result.end_reason) == (second.game_id, "aborted")
    await wait_until(lambda: not arena.arena.manager.running, 5, "the cancelled tournament's game still runs")
    lines = await records(arena, tid)
    assert [line["game_id"] for line in lines] == [over.game_id]
    assert (await arena.get_json(f"/api/tournaments/{tid}"))["progress"]["played"] == 1


@contextlib.asynccontextmanager
async def swiss_of_four(arena: Harness, rounds: int) -> AsyncIterator[str]:
    """A Swiss tournament of four random bots (two games at a time each), started; its id. The
    bots play until the block is left."""
    names = ["ann", "ben", "cat", "dan"]
    clients = [await arena.bot(n, max_games=2) for n in names]
    tasks = [asyncio.create_task(play(c, RandomBot(seed=i))) for i, c in enumerate(clients)]
    try:
        tid = (await create(arena, format="swiss", rounds=rounds, participants=names))["tournament_id"]
        await post(arena, f"/api/tournaments/{tid}/start")
        yield tid
    finally:
        for t in tasks:
            t.cancel()


async def test_swiss_rounds_pair_bots_that_have_not_met(make_arena: Any) -> None:
    arena: Harness = await make_arena()
    async with swiss_of_four(arena, 3) as tid:
        view = await finished(arena, tid)
    assert view["rounds"] == 3 and view["progress"]["played"] == view["progress"]["planned"] == 12
    lines = await records(arena, tid)
    met = Counter(frozenset(line["players"]) for line in lines)
    assert len(met) == 6 and set(met.values()) == {2}  # three rounds of four bots: everyone met once


async def test_a_gauntlet_meets_the_bot_under_test_with_every_other(make_arena: Any) -> None:
    arena: Harness = await make_arena()
    names = ["ann", "ben", "cat"]
    clients = [await arena.bot(n, max_games=2) for n in names]
    tasks = [asyncio.create_task(play(c, RandomBot(seed=i))) for i, c in enumerate(clients)]
    try:
        tid = (await create(arena, format="gauntlet", bot_under_test="BEN", participants=names))["tournament_id"]
        await post(arena, f"/api/tournaments/{tid}/start")
        await finished(arena, tid)
    finally:
        for t in tasks:
            t.cancel()
    lines = await records(arena, tid)
    assert sorted(tuple(line["players"]) for line in lines) == sorted(
        [("ben", "ann"), ("ann", "ben"), ("ben", "cat"), ("cat", "ben")])


async def test_the_ranking_follows_strength(make_arena: Any) -> None:
    arena: Harness = await make_arena()
    bots = {"greedy": GreedyBot(seed=1), "random": RandomBot(seed=2)}
    tasks = [asyncio.create_task(play(await arena.bot(n, max_games=4), b)) for n, b in bots.items()]
    try:
        tid = (await create(arena, participants=["random", "greedy"], games_per_pairing=16, max_games_per_bot=4,
                            seed=3))["tournament_id"]
        await post(arena, f"/api/tournaments/{tid}/start")
        await finished(arena, tid)
    finally:
        for t in tasks:
            t.cancel()
    ranking = (await arena.get_json(f"/api/tournaments/{tid}/results"))["ranking"]
    assert [r["bot"] for r in ranking] == ["greedy", "random"]
    assert ranking[0]["low"] > ranking[1]["high"]  # separated intervals: the gap is large
    assert ranking[0]["stronger_than_next"] > 0.99


async def test_a_pause_that_read_the_tournament_before_a_swiss_round_was_paired_keeps_that_round(
        make_arena: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The organizer's pause reads the tournament; before it stores the new state the director
    pairs the next Swiss round. The pause must not write back the schedule it read, or the round
    being played is missing from the stored tournament (its games' slots name no pairing)."""
    arena: Harness = await make_arena()
    storage = arena.arena.storage
    async with swiss_of_four(arena, 2) as tid:
        read = tournaments_http._tournament

        async def rounds_stored() -> int:
            row = await storage.get_tournament(tid)
            assert row is not None
            return max(entry[0] for entry in row.schedule)

        async def second_round_stored() -> bool:
            return await rounds_stored() == 2

        async def read_before_the_second_round(arena_: Any, tournament_id: str) -> Any:
            monkeypatch.setattr(tournaments_http, "_tournament", read)
            row = await read(arena_, tournament_id)
            assert max(entry[0] for entry in row.schedule) == 1
            await wait_until(second_round_stored, 60, "the second round was not paired")
            return row

        monkeypatch.setattr(tournaments_http, "_tournament", read_before_the_second_round)
        paused = await post(arena, f"/api/tournaments/{tid}/pause")
        assert paused["state"] == "paused" and paused["progress"]["planned"] == 8  # both rounds
        assert await rounds_stored() == 2
        await post(arena, f"/api/tournaments/{tid}/resume")
        view = await finished(arena, tid)
    assert view["rounds"] == 2 and view["progress"]["played"] == view["progress"]["planned"] == 8
    games = await arena.get_json(f"/api/tournaments/{tid}/games")
    assert len([g for g in games if g["status"] == "finished"]) == 8


async def test_a_tournament_running_here_is_read_without_a_read_of_its_games(make_arena: Any) -> None:
    """A running tournament's view, results and place in the list (the page's list asks every
    5 s, and each page load asks for the view) come from its director on a single node, not from
    a read of every game it played (thousands in a big round robin). They say what storage says:
    a game running, then played."""
    arena: Harness = await make_arena()
    _, tid, start = await idle_pair_started(arena)
    manager, storage = arena.arena.manager, arena.arena.storage

    async def read_all() -> list[dict[str, Any]]:
        listed = {t["tournament_id"]: t for t in await arena.get_json("/api/tournaments")}
        view = await arena.get_json(f"/api/tournaments/{tid}")
        results = await arena.get_json(f"/api/tournaments/{tid}/results")
        return [listed[tid]["progress"], view["progress"], {"played": results["played"]}]

    async def stored_played() -> int:
        return sum(g.status == "finished" for g in await storage.tournament_games(tid))

    with games_read(arena) as reads:
        listed, view, results = await read_all()
        assert listed["running"] == view["running"] == 1 and listed["played"] == view["played"] == results["played"] == 0
        manager.running[start.game_id].resign(0)
        await manager.flush()
        listed, view, results = await read_all()
    assert reads == []
    assert listed["played"] == view["played"] == results["played"] == 1  # the pairing's second game may run by now
    assert await stored_played() == 1
