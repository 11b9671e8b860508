"""Tournament games come first: a tournament among bots that play on a running ladder finishes
its schedule without the ladder being paused, because a slot freed for a due tournament game
is kept for it; and the view says which bot a due game waits for and which games keep it busy."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
from tournament_kit import create, finished, play, post, records

from arena_testkit import Harness, LiveStream, gather, play_out, random_policy, wait_until
from mandala.moves import Move
from mandala.views import View
from mandala_client.bots import GreedyBot, RandomBot
from mandala_client.client import Client
from protocol.messages import GameStart
from protocol.tournaments import BusyGame, LiveTournament, TournamentView, Waiting
from server.tournaments import director as director_module

RULES_ENDS = {"river", "deck", "no_moves", "turn_limit"}


class Slow:
    """The greedy bot thinking ``think_s`` over each decision: its games last seconds where the
    others' last milliseconds, so its ladder games hold its slots for long."""

    def __init__(self, think_s: float, seed: int) -> None:
        self.think_s = think_s
        self.bot = GreedyBot(seed=seed)

    async def choose(self, view: View, legal: list[Move]) -> Move:
        await asyncio.sleep(self.think_s)
        return self.bot.choose(view, legal)


async def test_a_round_robin_among_ladder_bots_finishes_while_the_ladder_runs(make_arena: Any) -> None:
    """Three bots seek on the ladder with two slots each, one of them slow; a round robin of
    four games a pairing among them finishes within the deadline (before the fix the slow
    bot's slots were refilled by the ladder as each of its games ended, and the tournament
    stalled with nobody shown waited for); meanwhile the slow bot is shown busy with its ladder
    games, and the ladder plays on."""
    arena: Harness = await make_arena(pairing_interval_s=0.05, pairing_wait_s=0.5)
    bots: dict[str, Any] = {"quick": RandomBot(seed=1), "greedy": GreedyBot(seed=2), "slow": Slow(0.1, seed=3)}
    url = str(arena.client.make_url("/ws")).replace("http", "ws", 1)
    clients = {name: Client(bot, url=url, token=await arena.create_bot(name), max_games=2, ladder=True,
                            session=arena.client.session) for name, bot in bots.items()}
    tasks = [asyncio.create_task(c.run()) for c in clients.values()]
    try:
        async def slow_in_two_ladder_games() -> bool:
            listed = {s["bot"] for s in (await arena.get_json("/api/ladder"))["standings"]}
            games = await arena.get_json("/api/games?status=running&bot=slow")
            return listed == set(bots) and [g["kind"] for g in games] == ["ladder", "ladder"]

        await wait_until(slow_in_two_ladder_games, 90, "the slow bot never had both slots in ladder games")
        tid = (await create(arena, participants=list(bots), games_per_pairing=4))["tournament_id"]
        await post(arena, f"/api/tournaments/{tid}/start")
        rated_before = {s["bot"]: s["games"] for s in (await arena.get_json("/api/ladder"))["standings"]}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 90.0
        busy: list[dict[str, Any]] = []
        while (view := await arena.get_json(f"/api/tournaments/{tid}"))["state"] != "finished":
            busy += [w for w in view["waiting"] if w["bot"] == "slow" and w["reason"] == "busy"]
            assert loop.time() < deadline, f"the tournament stalled at {view['progress']}, waiting for {view['waiting']}"
            await asyncio.sleep(0.05)
        ladder = await arena.get_json("/api/ladder")
    finally:
        for c in clients.values():
            c.stop()
        await asyncio.gather(*tasks, return_exceptions=True)
    assert view["progress"] == {"planned": 12, "played": 12, "running": 0, "forfeits": 0}
    assert not ladder["paused"]
    lines = await records(arena, tid)
    assert len(lines) == 12 and all(line["result"]["end_reason"] in RULES_ENDS for line in lines)
    # The ladder played on beside the tournament (more rated games for the quick bots).
    rated_after = {s["bot"]: s["games"] for s in ladder["standings"]}
    assert all(rated_after[b] > rated_before[b] for b in ("quick", "greedy")), (rated_before, rated_after)
    # The slow bot was shown busy with its ladder games (the view's own snapshot of them).
    assert busy, "the slow bot was never shown busy"
    first = busy[0]
    assert first["forfeits_in_s"] is None and first["since"].endswith("Z") and first["busy_with"]
    for entry in first["busy_with"]:
        game = await arena.get_json(f"/api/games/{entry['game_id']}")
        assert entry["kind"] == game["kind"] == "ladder"
        assert sorted(game["players"]) == sorted(["slow", entry["opponent"]]) and entry["opponent"] != "slow"


async def test_a_busy_bot_is_shown_with_its_game_and_both_slots_are_kept(make_arena: Any) -> None:
    """ann's only slot is taken by an organizer's game against cid when the tournament starts:
    the view (read and pushed) says ann is busy with that game, a slot of both ann and ben is
    held, and the tournament game starts as soon as ann's game ends; then nothing is waited for."""
    arena: Harness = await make_arena()
    ann, ben, cid = await arena.bot("ann"), await arena.bot("ben"), await arena.bot("cid")
    game_id = await arena.start_game(["ann", "cid"])
    live = LiveStream(await arena.client.ws_connect("/live"))
    tid = (await create(arena, participants=["ann", "ben"]))["tournament_id"]
    await post(arena, f"/api/tournaments/{tid}/start")

    async def pushed(check: Any) -> TournamentView:
        while True:
            msg = await live.next_of(LiveTournament, timeout=10)
            if msg.tournament.tournament_id == tid and check(msg.tournament):
                return msg.tournament

    view = await pushed(lambda v: v.waiting)
    expected = [Waiting(bot="ann", reason="busy", since=view.waiting[0].since, forfeits_in_s=None,
                        busy_with=[BusyGame(game_id=game_id, kind="admin", opponent="cid")])]
    assert view.waiting == expected and view.progress.running == 0
    read = await arena.get_json(f"/api/tournaments/{tid}")
    assert read["waiting"] == [{"bot": "ann", "reason": "busy", "since": view.waiting[0].since, "forfeits_in_s": None,
                                "busy_with": [{"game_id": game_id, "kind": "admin", "opponent": "cid"}]}]
    director = arena.arena.tournaments
    assert director.held == {"ann": 1, "ben": 1}  # two games due, but ann has one slot: one held
    assert arena.arena.ladder.free("ben") == 0 and arena.arena.ladder.free("ann") == -1
    # ann's game ends: the tournament's first game starts, and nobody is waited for.
    await gather(play_out(ann, random_policy(1)), play_out(cid, random_policy(2)))
    started = await pushed(lambda v: v.progress.running == 1)
    assert started.waiting == []
    first = await ann.until(GameStart)
    assert first.kind == "tournament" and first.tournament_id == tid
    tasks = [asyncio.create_task(play(c, RandomBot(seed=i))) for i, c in enumerate((ann, ben))]
    try:
        done = await finished(arena, tid, timeout=60)
    finally:
        for t in tasks:
            t.cancel()
    assert done["progress"]["played"] == 2 and done["waiting"] == []
    assert director.held == {}



async def test_a_swiss_round_keeps_its_bots_from_the_ladder_until_the_next_is_paired(make_arena: Any, monkeypatch: Any) -> None:
    """Four bots seek on the ladder with one slot each and play a Swiss tournament of two
    rounds. Between round 1's last game and the storing of round 2's pairing nothing of the
    tournament is due, yet every bot of it is: each keeps a slot held, so the ladder (a pass
    run right then, while the pairing's write is kept waiting) starts no game with any of them.
    Before, the holds dropped with the round's last game and the ladder took the bots, and
    round 2 waited for whole ladder games."""
    arena: Harness = await make_arena(pairing_interval_s=0.05, pairing_wait_s=0.5)
    names = ["ada", "bob", "cyd", "dee"]
    url = str(arena.client.make_url("/ws")).replace("http", "ws", 1)
    clients = [Client(RandomBot(seed=i), url=url, token=await arena.create_bot(name), max_games=1, ladder=True,
                      session=arena.client.session) for i, name in enumerate(names)]
    tasks = [asyncio.create_task(c.run()) for c in clients]
    director, ladder = arena.arena.tournaments, arena.arena.ladder
    gate = asyncio.Event()
    seen: list[dict[str, Any]] = []
    store = director.storage.update_tournament

    async def pairing_kept_waiting(row: Any, state: Any) -> Any:
        run = director.runs.get(row.tournament_id)
        if run is not None and len(row.schedule) > len(run.row.schedule):  # the next round's pairing
            round_ended = max(g.ended for g in run.games.values())
            look: dict[str, Any] = {"free": {b: ladder.free(b) for b in names}, "new_ladder_games": []}
            for _ in range(2):
                ladder.pair_now()
                look["new_ladder_games"] += [room.id for b in names for room in arena.arena.manager.games_of(b)
                                             if room.kind == "ladder" and room.started > round_ended]
            seen.append(look)
            await gate.wait()
        return await store(row, state)

    monkeypatch.setattr(director.storage, "update_tournament", pairing_kept_waiting)
    try:
        async def all_on_the_ladder() -> bool:
            return {s["bot"] for s in (await arena.get_json("/api/ladder"))["standings"]} == set(names)

        await wait_until(all_on_the_ladder, 90, "the bots never all played on the ladder")
        tid = (await create(arena, name="swiss", format="swiss", rounds=2, participants=names))["tournament_id"]
        await post(arena, f"/api/tournaments/{tid}/start")
        await wait_until(lambda: bool(seen), 90, "round 2 was never paired")
        gate.set()
        done = await finished(arena, tid, timeout=90)
    finally:
        gate.set()
        for c in clients:
            c.stop()
        await asyncio.gather(*tasks, return_exceptions=True)
    assert done["progress"]["played"] == 8 and len(seen) == 1
    assert seen[0]["new_ladder_games"] == [], seen
    assert all(free <= 0 for free in seen[0]["free"].values()), seen


async def test_a_swiss_rounds_games_start_as_it_is_paired(make_arena: Any, monkeypatch: Any) -> None:
    """With the director's tick out of the way (an hour), a Swiss tournament plays all its
    rounds: each round's games start in the step that pairs it, not at the next tick."""
    monkeypatch.setattr(director_module, "TICK_S", 3600.0)
    arena: Harness = await make_arena()
    names = ["ada", "bob", "cyd", "dee"]
    bots = [await arena.bot(name) for name in names]
    tasks = [asyncio.create_task(play(c, RandomBot(seed=i))) for i, c in enumerate(bots)]
    try:
        tid = (await create(arena, name="swiss", format="swiss", rounds=3, participants=names))["tournament_id"]
        await post(arena, f"/api/tournaments/{tid}/start")
        done = await finished(arena, tid, timeout=60)
    finally:
        for t in tasks:
            t.cancel()
    assert done["progress"] == {"planned": 12, "played": 12, "running": 0, "forfeits": 0}


async def test_a_pause_stored_by_another_node_is_followed_while_games_keep_ending(make_arena: Any) -> None:
    """In a cluster an organizer's pause sent to another node reaches the director only through
    storage, read at least every tick. Games ending here wake the director more often than
    that; before, each wake put the read off, and a paused tournament played its whole
    schedule. Here the pause is stored as another node stores it, without a wake."""
    arena: Harness = await make_arena()
    bots = [await arena.bot(name) for name in ("ann", "ben")]
    tasks = [asyncio.create_task(play(c, RandomBot(seed=i))) for i, c in enumerate(bots)]
    director, storage = arena.arena.tournaments, arena.arena.storage
    try:
        tid = (await create(arena, participants=["ann", "ben"], games_per_pairing=400))["tournament_id"]
        await post(arena, f"/api/tournaments/{tid}/start")
        await wait_until(lambda: tid in director.runs and len(director.runs[tid].games) >= 4, 30,
                         "no game of the tournament ended")
        row = await storage.get_tournament(tid)
        assert row is not None
        assert await storage.set_tournament_state(msgspec.structs.replace(row, state="paused"), "running")
        await wait_until(lambda: tid in director.runs and director.runs[tid].row.state == "paused", 5,
                         "the director never read the pause")
        await wait_until(lambda: not director.runs[tid].running, 30, "the running game never ended")
        played = len(director.runs[tid].games)
        view = await arena.get_json(f"/api/tournaments/{tid}")
    finally:
        for t in tasks:
            t.cancel()
    assert view["state"] == "paused" and view["progress"]["played"] == played < 400
