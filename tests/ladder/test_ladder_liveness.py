"""The ladder keeps every seeking bot playing and lets everyone meet everyone, on a real server:
bots of two speeds, a bot that leaves in the middle of a duplicate pair, an organizer who removes
a bot mid-game, and organizer answers that the next read already shows."""

from __future__ import annotations

import asyncio
import itertools
import random
from collections import Counter
from typing import Any

import pytest
from test_held_slots import stop_pairing_loop
from test_ladder import qualify, seek
from test_ladder_switch import seeking_bots

from arena_testkit import ADMIN, Harness, Seen, WsClient, gather, ladder_bot, play_out, random_policy, wait_until
from protocol.messages import Challenged, Decision, Error, GameOver, GameStart, LadderStatus
from server.common.refusal import Refusal

AUTH = {"Authorization": f"Bearer {ADMIN}"}


def ladder_games(seen: Seen) -> Counter[frozenset[str]]:
    """Finished ladder games per pair of bots."""
    met: Counter[frozenset[str]] = Counter()
    for game_id, start in seen.started.items():
        if start.kind == "ladder" and game_id in seen.over and seen.over[game_id].result.end_reason != "aborted":
            met[frozenset(p.name for p in start.players)] += 1
    return met


async def test_bots_of_two_speeds_all_meet_and_no_opponent_takes_over_half(make_arena: Any) -> None:
    """Two instant bots and two that think 15 ms a move: every pair meets, and no bot plays
    more than half its ladder games (plus one pair) against one opponent."""
    arena: Harness = await make_arena(pairing_interval_s=0.05, pairing_wait_s=0.5)
    bots = {"fast1": 0.0, "fast2": 0.0, "slow1": 0.015, "slow2": 0.015}
    tokens = {name: await arena.create_bot(name) for name in bots}
    url = str(arena.client.make_url("")).rstrip("/")
    seen = Seen()
    tasks = [asyncio.create_task(ladder_bot(arena.client.session, url, tokens[n], i, seen, max_games=1, think=t))
             for i, (n, t) in enumerate(bots.items())]
    try:
        def enough() -> bool:
            met = ladder_games(seen)
            everyone = all(met[frozenset(p)] >= 2 for p in itertools.combinations(bots, 2))
            return everyone and min(sum(n for p, n in met.items() if b in p) for b in bots) >= 12

        await wait_until(enough, 90, f"not every pair met: {ladder_games(seen)}")
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    met = ladder_games(seen)
    for bot in bots:
        total = sum(n for p, n in met.items() if bot in p)
        most = max(n for p, n in met.items() if bot in p)
        assert most <= total / 2 + 2, (bot, met)
    table = {s["bot"]: s for s in (await arena.get_json("/api/ladder"))["standings"]}
    assert all(table[b]["opponents"] == 3 for b in bots), table


IDLE_BOTS: dict[str, Any] = {"decision_ms": 2000, "heartbeat_s": 60.0}
"""Settings for the tests whose bots answer nothing while they wait: games end on a 2 s clock
(so a client slowed by a busy machine still makes its qualification moves in time), and the
heartbeat stays out of the way (a client that reads nothing answers no ping, and a 5 s
heartbeat would drop it)."""


async def listed_trio(arena: Harness) -> tuple[WsClient, WsClient, WsClient]:
    return await gather(qualify(arena, "ann", 1), qualify(arena, "ben", 2), qualify(arena, "cid", 3))


async def first_game(client: WsClient) -> GameStart:
    """Wait for ``client``'s next ladder game to start; answer nothing meanwhile."""
    while True:
        start = await client.until(GameStart, timeout=10)
        if start.kind == "ladder":
            return start


async def test_a_bot_that_leaves_mid_pair_leaves_nobody_waiting(make_arena: Any) -> None:
    """ann leaves during the first game of a pair: once that game ends (ann's clock runs out),
    her opponent plays the third bot at once; when ann stays away past ``return_wait_s``, she
    loses the return game by forfeit, rated (§18.3: leaving keeps nothing of a deal's luck)."""
    arena: Harness = await make_arena(pairing_interval_s=0.05, return_wait_s=1.0, **IDLE_BOTS)
    ann, ben, cid = await listed_trio(arena)
    ladder = arena.arena.ladder
    # Let pairs run until one involving ann is under way.
    start = await first_game(ann)
    names = [p.name for p in start.players]
    opponent = {"ben": ben, "cid": cid}[next(n for n in names if n != "ann")]
    third = cid if opponent is ben else ben
    manager = arena.arena.manager
    known = set(manager.running) | set(manager.finished)
    await ann.close()  # gone, mid-game, mid-pair
    # The opponent and the third bot play each other (their only choice): within seconds.
    other = "cid" if opponent is ben else "ben"
    opp_name = "ben" if opponent is ben else "cid"

    async def play_until_they_meet(client: WsClient, seed: int) -> GameStart:
        policy = random_policy(seed)
        while True:
            msg = await client.recv(timeout=10)
            if isinstance(msg, Decision):
                await client.send_move(msg, policy(msg))
            elif (isinstance(msg, GameStart) and msg.kind == "ladder" and msg.game_id not in known
                  and {p.name for p in msg.players} == {opp_name, other}):
                return msg

    met_a, met_b = await gather(play_until_they_meet(opponent, 4), play_until_they_meet(third, 5), timeout=15)
    assert met_a.game_id == met_b.game_id
    # ann's first game ended on her clock; its return game waited return_wait_s: she forfeits it.
    over = await arena.arena.storage.get_game(start.game_id)
    assert over is not None and over.status == "finished" and over.end_reason == "timeout"
    await wait_until(lambda: start.pair_id not in ladder.pairs, 10, "the return game was never given up")
    assert not [p for p in ladder.returns if "ann" in p.players]

    async def pair_games() -> list[dict[str, Any]]:
        return [g for g in await arena.get_json("/api/games?bot=ann&status=finished") if g["pair_id"] == start.pair_id]

    async with asyncio.timeout(10):  # the forfeit is stored as the recorder gets to it
        while len(games := await pair_games()) < 2:
            await asyncio.sleep(0.05)
    forfeit = next(g for g in games if g["game_id"] != start.game_id)
    assert forfeit["players"] == names[::-1] and forfeit["rated"] and forfeit["kind"] == "ladder"
    result = forfeit["result"]
    assert (result["end_reason"], result["winner"], forfeit["ply"]) == ("forfeit", forfeit["players"].index(opp_name), 0)
    history = (await arena.get_json("/api/bots/ann/history"))["history"]
    assert {h["game_id"] for h in history} >= {start.game_id, forfeit["game_id"]}  # both rated


async def test_a_bot_back_in_time_plays_its_return_game(make_arena: Any) -> None:
    arena: Harness = await make_arena(pairing_interval_s=0.05, return_wait_s=30.0, **IDLE_BOTS)
    ann, ben, cid = await listed_trio(arena)
    start = await first_game(ann)
    await ann.close()
    # Wait for the first game to end on ann's clock, with the pair's return game pending.
    await wait_until(lambda: any(p.id == start.pair_id for p in arena.arena.ladder.returns), 10,
                     "the first game did not end")
    # ann comes back (a new connection with her token) and seeks: the return game starts.
    back = await reconnect(arena, "ann")
    await seek(back)
    async with asyncio.timeout(20):
        while (again := await back.until(GameStart)).pair_id != start.pair_id:
            pass
    assert [p.name for p in again.players] == [p.name for p in reversed(start.players)]
    await gather(ben.close(), cid.close(), back.close())


async def test_a_ratings_reset_drops_the_return_game_of_a_pair_it_cut(make_arena: Any) -> None:
    """§18.6: after a reset no game before it counts; a return game played after it would count
    alone, its deal's luck in it. The pending one is dropped: ann, back, plays no return game."""
    arena: Harness = await make_arena(pairing_interval_s=0.05, return_wait_s=30.0, **IDLE_BOTS)
    ladder = arena.arena.ladder
    ann, ben, cid = await listed_trio(arena)
    start = await first_game(ann)
    await ann.close()
    await wait_until(lambda: any(p.id == start.pair_id for p in ladder.returns), 10, "the first game did not end")
    assert (await arena.client.post("/api/ladder/reset", headers=AUTH)).status == 200
    assert start.pair_id not in ladder.pairs and not any(p.id == start.pair_id for p in ladder.returns)
    back = await reconnect(arena, "ann")
    await seek(back)
    nxt = await back.until(GameStart, timeout=20)  # a new pair, not the cut one's return game
    assert nxt.pair_id != start.pair_id
    await gather(ben.close(), cid.close(), back.close())


async def reconnect(arena: Harness, name: str) -> WsClient:
    """A new connection for ``name`` (tests keep tokens on the harness)."""
    return await arena.connect(arena.tokens[name])


async def test_removal_mid_game_lets_the_game_finish_and_the_bot_play_on(make_arena: Any) -> None:
    arena: Harness = await make_arena(pairing_interval_s=0.05)
    alice, bob = await gather(qualify(arena, "alice", 5), qualify(arena, "bob", 6))
    start = await alice.until(GameStart, timeout=10)
    resp = await arena.client.delete("/api/ladder/bots/bob", headers=AUTH)
    assert resp.status == 200
    # The running game goes on and ends by the rules; bob is told he is off the ladder.
    (over_a,), (over_b,) = await gather(play_out(alice, random_policy(7)), play_out(bob, random_policy(8)))
    assert over_a.game_id == over_b.game_id == start.game_id
    assert over_a.result.end_reason in ("river", "deck", "no_moves", "turn_limit")
    removed = [f for f in bob.frames if isinstance(f, LadderStatus) and f.state == "removed"]
    assert removed and not removed[-1].seeking
    # The next read shows it, and removing again or restoring a listed bot is refused.
    table = {s["bot"] for s in (await arena.get_json("/api/ladder"))["standings"]}
    assert "bob" not in table and "alice" in table
    resp = await arena.client.delete("/api/ladder/bots/bob", headers=AUTH)
    assert resp.status == 409 and (await resp.json())["error"]["code"] == "already_removed"
    resp = await arena.client.post("/api/ladder/bots/alice/restore", headers=AUTH)
    assert resp.status == 409 and (await resp.json())["error"]["code"] == "not_removed"
    resp = await arena.client.post("/api/ladder/bots/nobody/restore", headers=AUTH)
    assert resp.status == 404
    # No new ladder game for bob; he stays connected and may still play a challenge.
    arena.arena.ladder.pair_now()
    assert not [r for r in arena.arena.manager.running.values() if "bob" in r.players and r.kind == "ladder"]
    await bob.send({"type": "challenge", "opponent": "alice"})
    challenged = await alice.until(Challenged)
    await alice.send({"type": "accept", "challenge_id": challenged.challenge_id})
    (over,), _ = await gather(play_out(alice, random_policy(9)), play_out(bob, random_policy(10)))
    assert isinstance(over, GameOver)


async def test_a_reset_is_seen_by_the_next_read(make_arena: Any) -> None:
    arena: Harness = await make_arena(pairing_interval_s=0.05, decision_ms=2000)
    alice, bob = await gather(qualify(arena, "alice", 11), qualify(arena, "bob", 12))
    await gather(play_out(alice, random_policy(13), games=2), play_out(bob, random_policy(14), games=2))
    await arena.client.post("/api/ladder/pause", headers=AUTH)
    await wait_until(lambda: not arena.arena.manager.running, 10, "the pair did not end")
    await arena.arena.manager.flush()
    resp = await arena.client.post("/api/ladder/reset", headers=AUTH)
    assert resp.status == 200
    rows = (await arena.get_json("/api/ladder"))["standings"]  # at once: no wait, no refresh by hand
    assert [(r["rating"], r["games"], r["opponents"]) for r in rows] == [(1500.0, 0, 0), (1500.0, 0, 0)]
    errors = [f for c in (alice, bob) for f in c.frames if isinstance(f, Error)]
    assert not errors


async def test_a_removal_stored_while_a_bots_listing_is_stored_stands(make_arena: Any,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """alice passes qualification; while her listing is on its way to storage the organizer
    removes her, and that removal is stored first. Her listing must not land over it: storage
    would list a bot the server knows as removed, and she would be back after a restart."""
    arena: Harness = await make_arena(pairing_interval_s=0.05)
    storage = arena.arena.storage
    set_ladder, removed = storage.set_ladder, []

    async def removed_first(bot: str, ladder: Any, only_from: Any = None) -> None:
        if ladder == "listed" and not removed:
            resp = await arena.client.delete(f"/api/ladder/bots/{bot}", headers=AUTH)
            assert resp.status == 200, await resp.text()
            removed.append(bot)
        await set_ladder(bot, ladder, only_from)

    monkeypatch.setattr(storage, "set_ladder", removed_first)
    alice = await qualify(arena, "alice", 3)
    await wait_until(lambda: not arena.arena.ladder._tasks, 5, "the listing was not stored")
    assert removed == ["alice"]
    row = await storage.bot_by_name("alice")
    assert row is not None and row.ladder == "removed"
    await alice.ping()  # what the server sent her before now has come
    assert [f.state for f in alice.frames if isinstance(f, LadderStatus)][-1] == "removed"
    await arena.arena.ladder.lead()  # as after a restart: the stored places are read again
    assert arena.arena.ladder.place("alice") == "removed"


async def test_a_qualifying_bot_away_past_its_return_game_qualifies_on_when_back(make_arena: Any) -> None:
    """alice plays her first qualification game and leaves; its return game waits
    ``return_wait_s`` for her and is dropped. Back and seeking, she gets her next qualification
    game rather than waiting for one forever (and holding her opponents back as busy)."""
    arena: Harness = await make_arena(pairing_interval_s=0.05, return_wait_s=0.3)
    ladder = arena.arena.ladder
    alice = await arena.bot("alice")
    assert (await seek(alice)).state == "qualifying"
    (first,) = await play_out(alice, random_policy(3))
    start = next(f for f in alice.frames if isinstance(f, GameStart) and f.game_id == first.game_id)
    await alice.close()
    await wait_until(lambda: start.pair_id not in ladder.pairs, 10, "the return game was never dropped")
    alice = await arena.connect(arena.tokens["alice"])
    assert (await seek(alice)).state == "qualifying"
    again = await alice.until(GameStart, timeout=10)
    assert again.kind == "qualification" and again.pair_id != start.pair_id


async def test_a_pair_whose_game_cannot_start_ends_as_one_given_up(make_arena: Any,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The host refuses the pair's first game (in a cluster, a seat gone from its node): the pair
    is over as if given up, its games count as no meeting, the large ladder's field hears it
    ended (a newcomer it was placing would wait for its result for good otherwise), and the two
    may be paired again at once."""
    arena: Harness = await make_arena(pairing_interval_s=60)
    await seeking_bots(arena, 2)
    ladder, manager = arena.arena.ladder, arena.arena.manager
    stop_pairing_loop(ladder)
    place_game, ended = manager.place_game, []

    def refused(*args: Any, **kwargs: Any) -> str:
        monkeypatch.setattr(manager, "place_game", place_game)
        raise Refusal("bot_offline", "bot01 left before the game started")

    monkeypatch.setattr(manager, "place_game", refused)
    field_ended = ladder.field.ended
    monkeypatch.setattr(ladder.field, "ended", lambda a, b: (ended.append({a, b}), field_ended(a, b)))
    await ladder.set_paused(False)
    ladder.pair_now()  # the refused pair, then (the pass's next round) a new pair of the two
    assert ended == [{"bot00", "bot01"}]
    (pair,) = ladder.pairs.values()
    assert len(pair.games) == 1 and [room.kind for room in manager.games_of("bot00")] == ["ladder"]
    assert ladder.meetings.total("bot00") == ladder.meetings.total("bot01") == 2  # the new pair's two games


async def test_a_bot_removed_and_restored_mid_pair_plays_no_return_game_of_that_pair(make_arena: Any) -> None:
    """§18.6: a removal drops the bot's pairs. bob is removed while the first game of his pair
    with alice runs, restored and qualified again before it ends: that pair's return game must
    not be played. (It was, rated: when the first game ended bob was listed again, and the pair
    went on.)"""
    arena: Harness = await make_arena(pairing_interval_s=0.05, decision_ms=60_000)
    ladder = arena.arena.ladder
    alice = await qualify(arena, "alice", 5)
    bob = await arena.bot("bob", max_games=2)
    await seek(bob)
    await play_out(bob, random_policy(6), games=2)
    while (await bob.until(LadderStatus)).state != "listed":
        pass
    start = await bob.until(GameStart, timeout=10)
    assert start.kind == "ladder" and start.pair_id in ladder.pairs
    assert (await arena.client.delete("/api/ladder/bots/bob", headers=AUTH)).status == 200
    assert (await arena.client.post("/api/ladder/bots/bob/restore", headers=AUTH)).status == 200
    await bob.send({"type": "seek"})  # qualifies again on his free slot while the ladder game waits
    rng = random.Random(7)
    pending: list[Decision] = []
    listed = False
    while not listed:
        msg = await bob.recv()
        if isinstance(msg, Decision):
            if msg.game_id == start.game_id:
                pending.append(msg)
            else:
                await bob.send_move(msg, rng.choice(msg.legal))
        elif isinstance(msg, LadderStatus):
            listed = msg.state == "listed"
    for d in pending:
        await bob.send_move(d, rng.choice(d.legal))
    (over_a,), (over_b,) = await gather(play_out(alice, random_policy(8)), play_out(bob, random_policy(9)))
    assert over_a.game_id == over_b.game_id == start.game_id
    assert start.pair_id not in ladder.pairs and all(p.id != start.pair_id for p in ladder.returns)
    await gather(alice.close(), bob.close())
