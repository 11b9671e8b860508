"""``GET /api/tournaments/{id}/games``: every game of a tournament, in schedule order, for the
page's list and its replays: running games as they stand (not as their first stored row), over
ones with their results, aborted ones too; pages that never split a slot; typed refusals."""

from __future__ import annotations

import asyncio
from typing import Any

from tournament_kit import create, finished, post, records

from arena_testkit import Harness, WsClient, first_legal, play_out, random_policy, wait_until
from protocol.messages import Decision, GameOver, GameStart
from server.storage import GameRow

HOLD_AT = 6
"""The ply at which the first game is held, to compare the list with the game as it stands."""


async def hold(client: WsClient, at: int) -> Decision:
    """Answer the game's decisions before ply ``at`` with their first legal move; return the
    decision at ply ``at``, unanswered."""
    while True:
        msg = await client.recv(timeout=30)
        if isinstance(msg, Decision):
            if msg.request_id >= at:
                return msg
            await client.send_move(msg, first_legal(msg))


async def games(arena: Harness, tid: str, query: str = "") -> list[dict[str, Any]]:
    return await arena.get_json(f"/api/tournaments/{tid}/games{query}")  # type: ignore[no-any-return]


async def test_the_list_follows_a_tournament_from_a_running_game_to_its_cancellation(make_arena: Any) -> None:
    arena: Harness = await make_arena(decision_ms=60_000)
    ann, ben = await arena.bot("ann"), await arena.bot("ben")
    tid = (await create(arena, participants=["ann", "ben"], games_per_pairing=4, max_concurrent=1))["tournament_id"]
    schedule_rounds = {1}  # two bots: one pairing, one round
    assert await games(arena, tid) == []
    await post(arena, f"/api/tournaments/{tid}/start")
    first = await ann.until(GameStart)
    await ben.until(GameStart)

    # The first game held at ply 6: listed as it stands, as GET /api/games/{id} says.
    tasks = [asyncio.create_task(hold(c, HOLD_AT)) for c in (ann, ben)]
    done, waiting = await asyncio.wait(tasks, timeout=30, return_when=asyncio.FIRST_COMPLETED)
    assert done, "no decision at the held ply"
    held = next(iter(done)).result()
    holder = ann if tasks[0] in done else ben
    for t in waiting:
        t.cancel()
    await asyncio.gather(*waiting, return_exceptions=True)
    state = await arena.get_json(f"/api/games/{first.game_id}")
    assert (state["status"], state["ply"]) == ("running", HOLD_AT)
    (listed,) = await games(arena, tid)
    assert listed["game_id"] == first.game_id and listed["status"] == "running"
    assert (listed["ply"], listed["slot"], listed["round"]) == (HOLD_AT, 0, 1)
    assert listed["players"] == state["players"] and listed["tournament_id"] == tid and listed["result"] is None

    # Played out: listed with its result, the one the records give.
    await holder.send_move(held, first_legal(held))
    over, _ = await asyncio.gather(play_out(ann, random_policy(1)), play_out(ben, random_policy(2)))
    assert over[0].game_id == first.game_id
    second = await ann.until(GameStart)
    await ben.until(GameStart)

    # The second game, cancelled with the tournament: listed as aborted, after the first.
    cancelled = await post(arena, f"/api/tournaments/{tid}/cancel")
    assert cancelled["state"] == "cancelled" and cancelled["progress"]["running"] == 0  # its games are being aborted
    aborted = await ann.until(GameOver)
    assert (aborted.game_id, aborted.result.end_reason) == (second.game_id, "aborted")
    await wait_until(lambda: not arena.arena.manager.running, 5, "the cancelled tournament's game still runs")
    listed_all = await games(arena, tid)
    (line,) = await records(arena, tid)
    assert [(g["game_id"], g["status"], g["slot"]) for g in listed_all] == [
        (first.game_id, "finished", 0), (second.game_id, "aborted", 1)]
    assert listed_all[0]["result"] == line["result"] and listed_all[0]["ply"] == len(line["record"]["moves"])
    assert listed_all[0]["ended"] == line["ended"] and listed_all[0]["players"] == line["players"]
    assert listed_all[1]["result"]["end_reason"] == "aborted"
    assert {g["round"] for g in listed_all} == schedule_rounds
    # Each game listed opens: the finished one's replay, the aborted one's too (cut short).
    for g in listed_all:
        replay = await arena.get_json(f"/api/games/{g['game_id']}/replay")
        assert replay["players"] == g["players"] and replay["result"] == g["result"]


def stored(game_id: str, tid: str, slot: int, status: str, minute: int) -> GameRow:
    """A game of ``tid``'s ``slot``, as storage keeps it."""
    ended = status != "running"
    result = {"winner": 0, "end_reason": "river", "scores": [12, 7], "cup_sizes": [6, 5]} if status == "finished" \
        else {"winner": None, "end_reason": "aborted", "scores": [0, 0], "cup_sizes": [2, 2]}
    return GameRow(game_id=game_id, players=["ann", "ben"] if slot % 2 == 0 else ["ben", "ann"], status=status,  # type: ignore[arg-type]
                   rated=False, first_player=0, ply=20, started=f"2030-01-01T00:{minute:02d}:00.000Z",
                   kind="tournament", tournament_id=tid, slot=slot,
                   ended=f"2030-01-01T00:{minute:02d}:30.000Z" if ended else None,
                   end_reason=result["end_reason"] if ended else None, result=result if ended else None)


async def test_pages_hold_whole_slots_and_bad_queries_are_refused(make_arena: Any) -> None:
    arena: Harness = await make_arena()
    for name in ("ann", "ben"):
        await arena.create_bot(name)
    tid = (await create(arena, participants=["ann", "ben"], games_per_pairing=6))["tournament_id"]
    # Slot 0 cut off once, slot 2 twice (a restart replays a slot on the same deal).
    rows = [stored("s0a", tid, 0, "aborted", 0), stored("s0b", tid, 0, "finished", 1), stored("s1", tid, 1, "finished", 2),
            stored("s2a", tid, 2, "aborted", 3), stored("s2b", tid, 2, "aborted", 4), stored("s2c", tid, 2, "finished", 5)]
    for row in rows:
        await arena.arena.storage.save_game(row)
    everything = await games(arena, tid)
    assert [g["game_id"] for g in everything] == [r.game_id for r in rows]
    assert [g["slot"] for g in everything] == [0, 0, 1, 2, 2, 2]

    # Two games a page: a page ends where a slot ends, so no game is skipped between pages;
    # a slot of more games than the limit fills a page by itself.
    pages, links = [], []
    path: str | None = f"/api/tournaments/{tid}/games?limit=2"
    while path is not None:
        resp = await arena.client.get(path)
        assert resp.status == 200
        pages.append([g["game_id"] for g in await resp.json()])
        link = resp.headers.get("Link")
        links.append(link)
        path = link[1:link.index(">")] if link else None
    assert pages == [["s0a", "s0b"], ["s1"], ["s2a", "s2b", "s2c"]]
    assert links[0] == f'</api/tournaments/{tid}/games?limit=2&after_slot=0>; rel="next"'
    resp = await arena.client.get(f"/api/tournaments/{tid}/games?limit=3")
    assert [g["game_id"] for g in await resp.json()] == ["s0a", "s0b", "s1"]
    assert resp.headers["Link"] == f'</api/tournaments/{tid}/games?limit=3&after_slot=1>; rel="next"'
    resp = await arena.client.get(f"/api/tournaments/{tid}/games?limit=6")
    assert len(await resp.json()) == 6 and "Link" not in resp.headers
    resp = await arena.client.get(f"/api/tournaments/{tid}/games?after_slot=0")
    assert [g["game_id"] for g in await resp.json()] == ["s1", "s2a", "s2b", "s2c"] and "Link" not in resp.headers

    for query in ("limit=0", "limit=501", "limit=x", "after_slot=-2", "after_slot=one"):
        resp = await arena.client.get(f"/api/tournaments/{tid}/games?{query}")
        assert (resp.status, (await resp.json())["error"]["code"]) == (400, "invalid_request"), query
    resp = await arena.client.get("/api/tournaments/nope/games")
    assert (resp.status, (await resp.json())["error"]["code"]) == (404, "unknown_tournament")
    assert [g["game_id"] for g in await games(arena, tid)] == [r.game_id for r in rows]  # nothing changed


async def test_a_bot_away_with_no_game_left_is_no_longer_listed_as_waited_for(make_arena: Any) -> None:
    """§21.11: ``waiting`` is the bots a due game waits for. dan never comes: once his games are
    forfeited, the tournament waits for him no more while ann and ben play on."""
    arena: Harness = await make_arena(decision_ms=60_000)
    ann, ben = await arena.bot("ann"), await arena.bot("ben")
    await arena.create_bot("dan")  # never connected
    tid = (await create(arena, participants=["ann", "ben", "dan"], grace_s=0.2))["tournament_id"]
    await post(arena, f"/api/tournaments/{tid}/start")
    await ann.until(GameStart)  # ann and ben's game runs (neither answers: a 60 s clock)
    await ben.until(GameStart)
    async with asyncio.timeout(10):
        while (view := await arena.get_json(f"/api/tournaments/{tid}"))["progress"]["forfeits"] < 4:
            await asyncio.sleep(0.05)
    assert view["progress"]["running"] == 1 and view["waiting"] == []


async def test_a_forfeits_seat_replay_shows_no_decision_nobody_was_asked(make_arena: Any) -> None:
    """dan never comes and forfeits; his game's record is its deal and no move. Through either
    seat's eyes its replay shows the deal and no decision: nobody was asked to play it (it
    showed the seat to move a decision, unanswered, as if it had run out of time)."""
    arena: Harness = await make_arena(decision_ms=60_000)
    ann = await arena.bot("ann")
    await arena.create_bot("dan")  # never connected
    tid = (await create(arena, participants=["ann", "dan"], grace_s=0.2))["tournament_id"]
    await post(arena, f"/api/tournaments/{tid}/start")
    view = await finished(arena, tid, timeout=20)
    assert view["progress"]["forfeits"] == 2
    for game in await games(arena, tid):
        assert game["result"]["end_reason"] == "forfeit"
        for seat in (0, 1):
            replay = await arena.get_json(f"/api/games/{game['game_id']}/replay?seat={seat}")
            assert [p["ply"] for p in replay["plies"]] == [0] and "decision" not in replay["plies"][0]
    assert not [f for f in ann.frames if isinstance(f, GameStart)]
