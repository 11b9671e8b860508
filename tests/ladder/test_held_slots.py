"""Slots held for tournament games are not the ladder's: a bot whose slot is held gets no
qualification game, no new pair and no return game until the hold is given up (then at once).

The holds are set here as the tournament director sets them (``ladder.held``); the test runs
the pairing step itself (``ladder.pair_now()``) where it must know that nothing starts."""

from __future__ import annotations

from typing import Any

from test_ladder import FAST, qualify, seek

from arena_testkit import Harness, gather, play_out, random_policy, wait_until
from protocol.messages import GameStart, LadderStatus


async def test_the_ladder_pairs_no_bot_whose_slot_is_held(make_arena: Any) -> None:
    arena: Harness = await make_arena(**FAST)
    ladder, manager = arena.arena.ladder, arena.arena.manager
    holds: dict[str, int] = {}
    ladder.held = lambda bot: holds.get(bot, 0)
    bob = await qualify(arena, "bob", 1)
    # Held: alice (one slot) seeks, but plays no qualification game.
    holds["alice"] = 1
    alice = await arena.bot("alice")
    assert (await seek(alice)).state == "qualifying"
    ladder.pair_now()
    assert not manager.games_of("alice") and ladder.free("alice") == 0
    # Given up: her qualification starts at once.
    holds.clear()
    ladder.wake()
    start = await alice.until(GameStart, timeout=5)
    assert start.kind == "qualification"
    # bob's slot is held while alice qualifies: once listed, she is not paired with him.
    holds["bob"] = 1
    await play_out(alice, random_policy(2), games=2)
    while (await alice.until(LadderStatus)).state != "listed":
        pass
    ladder.pair_now()
    assert not manager.running and ladder.seeking == {"alice", "bob"}
    # Given up: they are paired at once. Holding alice during the pair's first game keeps its
    # return game from starting when that game ends.
    holds.clear()
    ladder.wake()
    first = await alice.until(GameStart, timeout=5)
    assert first.kind == "ladder" and first.pair_id is not None
    holds["alice"] = 1
    await gather(play_out(alice, random_policy(3)), play_out(bob, random_policy(4)))
    await wait_until(lambda: any(p.id == first.pair_id for p in ladder.returns), 5, "the first game did not end")
    ladder.pair_now()
    assert not manager.running
    holds.clear()
    ladder.wake()
    back = await alice.until(GameStart, timeout=5)
    assert back.pair_id == first.pair_id and [p.name for p in back.players] == [p.name for p in reversed(first.players)]
