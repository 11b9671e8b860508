"""A tournament pairing plays each deal in two slots, seats swapped: a game's record, which
tells the other slot's hidden cards, is held while that slot is still to be played (PROTOCOL.md
§12.1): in ``game_over``, ``GET /api/games/{id}/record`` and ``…/replay``, and the tournament's
``…/records``. Once the other slot is over, or the tournament is cancelled, it is served.

The tests of what is held pause the tournament while its first game runs (``max_concurrent``
1), so the second slot starts exactly when it resumes; the last one checks that the two slots
of a deal are never played at once."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from tournament_kit import create, post, records

from arena_testkit import Harness, WsClient, gather, play_out, random_policy, wait_until
from protocol.messages import GameOver, GameStart


async def first_slot_played(arena: Harness) -> tuple[str, WsClient, WsClient, GameStart, list[GameOver]]:
    """ann and ben's tournament of one deal (slots 0 and 1), paused once slot 0's game started,
    which they then play to its end. The tournament, their connections, that game's start and
    the ``game_over`` each got."""
    ann, ben = await arena.bot("ann"), await arena.bot("ben")
    tid = (await create(arena, participants=["ann", "ben"], games_per_pairing=2, max_concurrent=1,
                        grace_s=0.2))["tournament_id"]
    await post(arena, f"/api/tournaments/{tid}/start")
    start, other = await gather(ann.until(GameStart), ben.until(GameStart))
    assert start.game_id == other.game_id and start.tournament_id == tid
    await post(arena, f"/api/tournaments/{tid}/pause")
    (over_a,), (over_b,) = await gather(play_out(ann, random_policy(1)), play_out(ben, random_policy(2)))
    await arena.arena.manager.flush()
    return tid, ann, ben, start, [over_a, over_b]


async def held(arena: Harness, path: str) -> dict[str, Any]:
    resp = await arena.client.get(path)
    body = await resp.json()
    assert (resp.status, body["error"]["code"]) == (409, "record_held"), body
    return body["error"]["record_held"]  # type: ignore[no-any-return]


async def test_a_slots_record_is_held_until_the_other_slot_of_its_deal_is_over(make_arena: Any) -> None:
    arena: Harness = await make_arena()
    tid, ann, ben, start, overs = await first_slot_played(arena)
    slot1 = {"pair_id": None, "tournament_id": tid, "slot": 1, "game_id": None}
    for over in overs:
        assert over.game_id == start.game_id and over.result.end_reason != "aborted"
        assert (over.record.deck, over.record.reshuffles) == ([], []) and msgspec.to_builtins(over.record_held) == slot1
    for path in ("record", "replay", "replay?seat=1"):
        assert await held(arena, f"/api/games/{start.game_id}/{path}") == slot1
    (line,) = await records(arena, tid)
    assert (line["game_id"], line["slot"], line["record_held"]) == (start.game_id, 0, slot1)
    assert (line["record"]["deck"], line["record"]["reshuffles"]) == ([], [])  # its public part only

    # Slot 1 starts: the record waits for its game, by id.
    await post(arena, f"/api/tournaments/{tid}/resume")
    second, _ = await gather(ann.until(GameStart), ben.until(GameStart))
    assert second.tournament_id == tid and [p.name for p in second.players] == [p.name for p in reversed(start.players)]
    await arena.arena.manager.flush()  # its start row is stored
    assert await held(arena, f"/api/games/{start.game_id}/record") == {**slot1, "game_id": second.game_id}

    # It ends: it carries its record, and the first one is served, on the same deal.
    (last,), _ = await gather(play_out(ann, random_policy(3)), play_out(ben, random_policy(4)))
    assert len(last.record.deck) == 108 and last.record_held is None
    record = await arena.get_json(f"/api/games/{start.game_id}/record")
    assert (record["deck"], record["first_player"]) == (last.record.deck, last.record.first_player)
    lines = await records(arena, tid)
    assert [(g["slot"], g["record_held"]) for g in lines] == [(0, None), (1, None)]
    assert lines[0]["record"] == record and lines[1]["record"]["deck"] == record["deck"]
    assert len((await arena.get_json(f"/api/games/{start.game_id}/replay?seat=0"))["plies"]) == len(record["moves"]) + 1


@pytest.mark.parametrize("end", ["cancelled", "forfeited"])
async def test_a_tournament_cancelled_or_the_other_slot_forfeited_releases_the_record(make_arena: Any, end: str) -> None:
    """The other slot of the deal will not be played (the organizer cancelled the tournament),
    or is forfeited by a bot that went away (its forfeit, the deal with no moves, is a record of
    that slot): the first slot's record is served."""
    arena: Harness = await make_arena()
    tid, _, ben, start, overs = await first_slot_played(arena)
    assert all(o.record.deck == [] and o.record_held is not None for o in overs)
    await held(arena, f"/api/games/{start.game_id}/record")
    if end == "cancelled":
        await post(arena, f"/api/tournaments/{tid}/cancel")
    else:
        await ben.close()  # away past grace_s when slot 1 comes due: forfeited
        await post(arena, f"/api/tournaments/{tid}/resume")

    async def served() -> list[dict[str, Any]] | None:
        lines = await records(arena, tid)
        done = len(lines) == (1 if end == "cancelled" else 2) and all(g["record"] is not None for g in lines)
        return lines if done else None

    lines = await wait_until(served, 10, "the first slot's record stayed held")
    record = await arena.get_json(f"/api/games/{start.game_id}/record")
    assert lines[0]["game_id"] == start.game_id and lines[0]["record"] == record and lines[0]["record_held"] is None
    if end == "forfeited":
        assert (lines[1]["slot"], lines[1]["result"]["end_reason"], lines[1]["record"]["moves"]) == (1, "forfeit", [])
        assert lines[1]["record"]["deck"] == record["deck"]


async def test_the_two_games_of_a_deal_never_run_at_once(make_arena: Any) -> None:
    """Bots with room for several games, at the default ``max_games_per_bot`` (2): the two
    slots of one deal (seats swapped) are never played at the same time, or each bot would
    hold in one game its opponent's hand and cup of the other, and see there the draws still
    to come in the other. The tournament's other deal is played meanwhile instead."""
    arena: Harness = await make_arena()
    ann, ben = await arena.bot("ann", max_games=4), await arena.bot("ben", max_games=4)
    tid = (await create(arena, participants=["ann", "ben"], games_per_pairing=4))["tournament_id"]
    await post(arena, f"/api/tournaments/{tid}/start")
    firsts = [await ann.until(GameStart), await ann.until(GameStart)]
    games = await arena.get_json(f"/api/tournaments/{tid}/games")
    slot_of = {g["game_id"]: g["slot"] for g in games}
    assert sorted(slot_of[s.game_id] for s in firsts) == [0, 2]  # one game of each deal

    await gather(play_out(ann, random_policy(5), games=4, timeout=30), play_out(ben, random_policy(6), games=4, timeout=30))
    games = await arena.get_json(f"/api/tournaments/{tid}/games")
    slot_of = {g["game_id"]: g["slot"] for g in games}
    assert sorted(slot_of.values()) == [0, 1, 2, 3] and all(g["status"] == "finished" for g in games)
    for client in (ann, ben):
        events = [(type(f).__name__, slot_of[f.game_id]) for f in client.frames if isinstance(f, (GameStart, GameOver))]
        for first, second in ((0, 1), (2, 3)):
            assert events.index(("GameOver", first)) < events.index(("GameStart", second)), events
