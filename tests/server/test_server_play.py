"""Bots play whole games over real sockets, answering from ``legal``; every frame is
validated against the protocol types by the test client."""

from __future__ import annotations

import msgspec

import mandala
from arena_testkit import Harness, WsClient, gather, play_out, random_policy
from protocol.messages import Challenged, ChallengeSent, Decision, GameOver, GameStart, MoveAccepted, Update


def check_game_frames(client: WsClient, game_id: str, seat: int, over: GameOver) -> None:
    """The frames one seat got in one game tell a consistent story that the record replays."""
    frames = [f for f in client.frames if getattr(f, "game_id", None) == game_id]
    assert isinstance(frames[0], GameStart) and frames[0].seat == seat and not frames[0].resumed
    updates = [f for f in frames if isinstance(f, Update)]
    assert [u.ply for u in updates] == list(range(len(over.record.moves) + 1))
    assert updates[0].move is None
    assert [u.move for u in updates[1:]] == over.record.moves
    assert all(u.view.seat == seat for u in updates)
    decisions = [f for f in frames if isinstance(f, Decision)]
    accepted = [f for f in frames if isinstance(f, MoveAccepted)]
    mine = [m for m in over.record.moves if m.player == seat]
    assert len(decisions) == len(accepted) == len(mine)
    assert [d.request_id for d in decisions] == [a.request_id for a in accepted]
    for d in decisions:
        assert d.seat == seat and d.view.to_move == seat
        assert over.record.moves[d.request_id].player == seat
    assert all(a.elapsed_ms >= 0 for a in accepted)
    assert frames[-1] == over
    # The record is the game: replaying it gives the announced result.
    game = mandala.replay(msgspec.to_builtins(over.record))
    assert over.result.end_reason == game.end_reason
    assert over.result.winner == game.winner()
    assert over.result.scores == list(game.scores())
    assert over.result.cup_sizes == list(game.cup_sizes())
    assert updates[-1].view == mandala.view(game, seat)


async def test_two_bots_play_several_games_from_challenges(make_arena) -> None:
    arena: Harness = await make_arena()
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    for n in range(3):
        await a.send({"type": "challenge", "opponent": "bob"})
        sent = await a.expect(ChallengeSent)
        challenged = await b.expect(Challenged)
        assert (sent.opponent, challenged.challenger, sent.challenge_id) == ("bob", "alice", challenged.challenge_id)
        await b.send({"type": "accept", "challenge_id": challenged.challenge_id})
        over_a, over_b = await gather(play_out(a, random_policy(n)), play_out(b, random_policy(100 + n)))
        assert over_a == over_b
        (over,) = over_a
        start = next(f for f in a.frames if isinstance(f, GameStart) and f.game_id == over.game_id)
        assert {p.name for p in start.players} == {"alice", "bob"}
        seat_a = start.seat
        check_game_frames(a, over.game_id, seat_a, over)
        check_game_frames(b, over.game_id, 1 - seat_a, over)
        assert over.result.end_reason in ("river", "deck", "no_moves", "turn_limit")
        record = await arena.get_json(f"/api/games/{over.game_id}/record")
        assert record == msgspec.to_builtins(over.record)
    finished = await arena.get_json("/api/games?status=finished")
    assert len(finished) == 3
    assert await arena.get_json("/api/games?status=running") == []


async def test_several_concurrent_games_on_one_connection(make_arena) -> None:
    arena = await make_arena()
    a = await arena.bot("alice", max_games=3)
    others = [await arena.bot(f"bot{i}") for i in range(3)]
    ids = [await arena.start_game(["alice", f"bot{i}"]) for i in range(3)]
    assert len(await arena.get_json("/api/games?status=running")) == 3
    results = await gather(play_out(a, random_policy(1), games=3),
                           *(play_out(o, random_policy(10 + i)) for i, o in enumerate(others)))
    overs_a = results[0]
    assert sorted(o.game_id for o in overs_a) == sorted(ids)
    for i, o in enumerate(others):
        (over,) = results[1 + i]
        assert over.game_id == ids[i]
        check_game_frames(o, ids[i], 1, over)
        check_game_frames(a, ids[i], 0, over)
    # The three games really overlapped: alice had decisions of different games in flight.
    first_over = next(i for i, f in enumerate(a.frames) if isinstance(f, GameOver))
    assert len({f.game_id for f in a.frames[:first_over] if isinstance(f, Decision)}) == 3


async def test_moves_answering_decisions_are_not_rate_limited(make_arena) -> None:
    """A bot that answers every decision at once plays whole games even when the
    per-connection message budget is far smaller than the number of moves it sends."""
    arena = await make_arena(messages_per_second=1.0, burst=2)
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"])
    (over_a,), (over_b,) = await gather(play_out(a, random_policy(3)), play_out(b, random_policy(4)))
    assert over_a.game_id == over_b.game_id == game_id
    assert over_a.result.end_reason in ("river", "deck", "no_moves", "turn_limit")
    assert len(over_a.record.moves) > 20  # many more moves than the budget of 2 messages
    errors = [f for f in a.frames + b.frames if type(f).__name__ == "Error"]
    assert errors == []
