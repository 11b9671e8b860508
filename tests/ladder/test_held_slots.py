"""Slots held for tournament games are not the ladder's: a bot whose slot is held gets no
qualification game, no new pair and no return game until the hold is given up (then at once).

The holds are set here as the tournament director sets them (``ladder.held``); the test runs
the pairing step itself (``ladder.pair_now()``) where it must know that nothing starts."""

from __future__ import annotations

from typing import Any

import pytest
from test_ladder import FAST, qualify, seek
from test_ladder_switch import seeking_bots

from arena_testkit import Harness, gather, play_out, random_policy, wait_until
from protocol.messages import GameStart, LadderStatus
from server.common.refusal import Refusal
from server.ladder import service
from server.ladder.matchmaking import pair_round
from server.ladder.service import Ladder


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


def stop_pairing_loop(ladder: Ladder) -> None:
    """The ladder's pairing loop stops: the test runs each pass itself (``pair_now``), and knows
    when it is over."""
    assert ladder._loop_task is not None
    ladder._loop_task.cancel()


async def test_a_slot_a_tournament_game_takes_while_the_ladder_pairs_a_round_is_not_paired_again(
        make_arena: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A round of pairs is chosen at once, then started one pair at a time, the loop running
    other tasks in between: a tournament game that takes a bot's last slot meanwhile leaves that
    bot's pair unstarted, rather than the bot playing more games than its ``max_games``."""
    arena: Harness = await make_arena(pairing_interval_s=60)
    await seeking_bots(arena, 4)  # one game at a time each
    await arena.bot("tess")
    ladder, manager = arena.arena.ladder, arena.arena.manager
    rounds: list[list[tuple[str, str]]] = []

    def recorded(*args: Any, **kwargs: Any) -> list[tuple[str, str]]:
        pairs = pair_round(*args, **kwargs)
        rounds.append(pairs)
        return pairs

    monkeypatch.setattr(service, "pair_round", recorded)
    begin, taken = ladder._begin, []

    def begin_then_tournament(a: str, b: str, now: float) -> None:
        """The round's first pair starts; before the next one does, a tournament game takes
        one of its bots' only slot (as the director would, in the loop's turn)."""
        begin(a, b, now)
        if not taken:
            later = next(p for p in rounds[-1] if a not in p)
            manager.start_game((later[0], "tess"), kind="tournament")
            taken.append(later[0])

    monkeypatch.setattr(ladder, "_begin", begin_then_tournament)
    stop_pairing_loop(ladder)
    await ladder.set_paused(False)
    ladder.pair_now()
    first, later = rounds[0] if taken[0] in rounds[0][1] else rounds[0][::-1]
    busy, partner = later if later[0] == taken[0] else later[::-1]
    assert [room.kind for room in manager.games_of(busy)] == ["tournament"]
    assert [room.kind for b in first for room in manager.games_of(b)] == ["ladder", "ladder"]
    assert manager.games_of(partner) == []


async def test_a_slot_a_tournament_game_takes_between_two_return_games_is_not_given_to_the_second(
        make_arena: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two pairs of the same two bots (two games at a time each) wait for their return games; a
    pass starts the first, and before it starts the second a tournament game takes one bot's
    last slot: the second waits, rather than that bot playing three games."""
    arena: Harness = await make_arena(pairing_interval_s=60)
    clients = await seeking_bots(arena, 2, max_games=[2, 2])
    await arena.bot("tess")
    ladder, manager = arena.arena.ladder, arena.arena.manager
    stop_pairing_loop(ladder)
    await ladder.set_paused(False)
    ladder.pair_now()
    assert len(ladder.pairs) == 2
    await gather(play_out(clients[0], random_policy(1), games=2), play_out(clients[1], random_policy(2), games=2))
    await wait_until(lambda: len(ladder.returns) == 2, 5, "the first games did not end")
    start = ladder._start

    def start_then_tournament(pair: Any, players: tuple[str, str]) -> None:
        start(pair, players)
        if not manager.games_of("tess"):
            manager.start_game(("bot00", "tess"), kind="tournament")

    monkeypatch.setattr(ladder, "_start", start_then_tournament)
    ladder.pair_now()
    assert sorted(room.kind for room in manager.games_of("bot00")) == ["ladder", "tournament"]
    assert len(ladder.returns) == 1 and [room.kind for room in manager.games_of("bot01")] == ["ladder"]


async def test_a_stopped_ladder_and_a_stopping_server_start_no_game(make_arena: Any) -> None:
    """A clean stop aborts the running games and then must start none: a pass of the pairing
    that runs after the ladder stopped (the tournaments' stop wakes it, and the pairing loop's
    wait can let its cancellation go) pairs nobody, and once the server is stopping no game
    starts by any way (a challenge accepted, the organizer's game) either. Before, a stop could
    start a ladder game after every game had been aborted, left running in storage."""
    arena: Harness = await make_arena(**FAST)
    ladder, manager = arena.arena.ladder, arena.arena.manager
    holds: dict[str, int] = {}
    ladder.held = lambda bot: holds.get(bot, 0)
    await qualify(arena, "alice", 1)
    holds["alice"] = 1  # listed, but not paired with bob once he is
    await qualify(arena, "bob", 2)
    holds["bob"] = 1
    ladder.pair_now()
    assert not manager.running and ladder.seeking == {"alice", "bob"}  # held: nothing started
    await ladder.stop()
    holds.clear()
    ladder.pair_now()
    assert not manager.running and ladder.free("alice") == ladder.free("bob") == 1
    manager.stopping = True
    with pytest.raises(Refusal) as refused:
        manager.start_game(("alice", "bob"), kind="admin")
    assert refused.value.code == "storage_unavailable" and "stopping" in refused.value.message
    assert not manager.running
