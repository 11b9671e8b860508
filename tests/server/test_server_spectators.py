"""Spectators: updates after every move and game_over; and what reaches a seat or a
spectator does not depend on anything it may not know (R24)."""

from __future__ import annotations

import random
from typing import Any

import msgspec

import mandala
from arena_testkit import Harness, WsClient, gather, play_out, random_policy
from mandala import COLORS, Discard, Game, Move
from protocol.messages import Decision, Error, GameOver, Update


def public_views(record: Any) -> list[mandala.View]:
    """The spectator's view after each ply of a finished game, rebuilt from its record."""
    data = msgspec.to_builtins(record)
    game = Game(data["deck"], data["first_player"], reshuffles=data["reshuffles"])
    views = [mandala.view(game, None)]
    for move in data["moves"]:
        move = dict(move)
        del move["player"]
        game.push(mandala.move_from_dict(move))
        views.append(mandala.view(game, None))
    return views


async def test_spectator_gets_every_update_and_game_over(make_arena) -> None:
    arena: Harness = await make_arena()
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"], reshuffle_seed=5)
    spectator, first = await arena.spectate(game_id)
    assert first.game_id == game_id and first.move is None and first.view.seat is None and first.view.private is None
    # A bot may watch too, even its own game: it then gets the public view as well.
    await b.send({"type": "watch", "game_id": game_id})
    while (await b.until(Update)).view.seat is not None:
        pass
    (over,), _ = await gather(play_out(a, random_policy(3)), play_out(b, random_policy(4)))
    updates = []
    while True:
        msg = await spectator.recv()
        if isinstance(msg, GameOver):
            assert msg == over
            break
        assert isinstance(msg, Update) and msg.game_id == game_id
        updates.append(msg)
    assert first.ply == 0
    assert [u.ply for u in updates] == list(range(1, len(over.record.moves) + 1))
    views = public_views(over.record)
    assert first.view == views[0]
    for u in updates:
        assert u.move == over.record.moves[u.ply - 1]
        assert u.view == views[u.ply]
    # What it watches comes at the audience's pace: its own game_over may come first.
    while len([f for f in b.frames if isinstance(f, Update) and f.view.seat is None]) < len(views):
        await b.recv()
    public = [f for f in b.frames if isinstance(f, Update) and f.view.seat is None]
    assert [u.view for u in public] == views
    # Watching a finished game points to its record; the spectator's watch list is empty again.
    await spectator.send({"type": "watch", "game_id": game_id})
    err = await spectator.expect(Error)
    assert err.code == "game_over" and f"/api/games/{game_id}/record" in err.message
    assert await spectator.ping() == []


async def test_unwatch_stops_updates(make_arena) -> None:
    arena = await make_arena()
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"])
    spectator = await arena.connect(None)
    await spectator.send({"type": "watch", "game_id": game_id})
    await spectator.expect(Update)
    await spectator.send({"type": "unwatch", "game_id": game_id})
    assert await spectator.ping() == []
    await gather(play_out(a, random_policy(1)), play_out(b, random_policy(2)))
    assert await spectator.ping() == []  # neither updates nor game_over arrived


# ---------------------------------------------------------------------------- leak tests

TAIL = 80
"""Deck positions from here on are never drawn in the scripted games (checked)."""


def variants(base: list[str], positions: list[int], n: int) -> list[list[str]]:
    """``base`` and ``n - 1`` decks that permute the cards at ``positions`` among themselves."""
    out = [base]
    for i in range(1, n):
        rng = random.Random(i)
        deck = list(base)
        cards = [deck[p] for p in positions]
        rng.shuffle(cards)
        for p, c in zip(positions, cards, strict=True):
            deck[p] = c
        out.append(deck)
    return out


def script(decks: list[list[str]], plies: int) -> list[tuple[int, Move]]:
    """A move sequence legal in every deal: seat 0 and all picks take the first legal move
    (identical across deals, as everything they depend on is); seat 1 only ever discards one
    card of a color it holds in every deal, so its varying hand cards stay in its hand."""
    games = [Game(d, 0, seed=7) for d in decks]
    moves: list[tuple[int, Move]] = []
    while len(moves) < plies:
        g = games[0]
        seat = g.to_move
        assert seat is not None
        if seat == 0 or g.phase == "pick":
            move = g.legal_moves[0]
        else:
            common = [c for c in range(6) if all(x.hands[1][c] for x in games)]
            move = Discard(COLORS[common[0]], 1)  # type: ignore[arg-type]
        for x in games:
            x.push(move)
        moves.append((seat, move))
        assert len({len(x.deck) for x in games}) == 1
    assert len(games[0].deck) >= len(decks[0]) - TAIL, "the script drew into the varied deck tail"
    assert not games[0].reshuffles
    return moves


def normalized(frames: list[Any]) -> list[Any]:
    """Frames without what legitimately differs between runs: ids and clock readings."""
    out = []
    for f in frames:
        d = msgspec.to_builtins(f)
        for key in ("game_id", "elapsed_ms", "deadline_ms"):
            d.pop(key, None)
        out.append(d)
    return out


async def run_scripted(
    arena: Harness, a: WsClient, b: WsClient, spectator: WsClient, deck: list[str], moves: list[tuple[int, Move]]
) -> tuple[list[Any], list[Any], list[Any], GameOver]:
    """Play ``moves`` on ``deck``, then seat 0 resigns. Returns the frames seat 0, seat 1 and
    the spectator got for this game before ``game_over``, and the ``game_over``."""
    game_id = await arena.start_game(["alice", "bob"], deck=deck, reshuffle_seed=7)
    await spectator.send({"type": "watch", "game_id": game_id})
    await spectator.expect(Update)
    start_s = len(spectator.frames) - 1
    seats = [a, b]
    for ply, (seat, move) in enumerate(moves):
        d = await seats[seat].until(Decision)
        assert (d.game_id, d.request_id) == (game_id, ply)
        await seats[seat].send_move(d, move)
    await a.send({"type": "resign", "game_id": game_id})
    over = await a.until(GameOver)
    await b.until(GameOver)
    assert await spectator.until(GameOver) == over
    assert over.result.end_reason == "resign" and len(over.record.moves) == len(moves)
    assert over.record.deck == deck
    seat0 = [f for f in a.frames[:-1] if getattr(f, "game_id", None) == game_id]
    seat1 = [f for f in b.frames[:-1] if getattr(f, "game_id", None) == game_id]
    spec = [f for f in spectator.frames[start_s:-1] if getattr(f, "game_id", None) == game_id]
    assert len(seat0) >= len(moves) and len(spec) == len(moves) + 1
    return seat0, seat1, spec, over


async def test_seat_0_frames_do_not_depend_on_what_seat_0_may_not_know(make_arena) -> None:
    arena = await make_arena()
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    spectator = await arena.connect(None)
    base = [COLORS[c] for c in Game.new(seed=2024).deck_order]
    # Seat 1's last three hand cards (13-15), seat 1's starting cup (18-19), the undrawn tail.
    decks = variants(base, [13, 14, 15, 18, 19, *range(TAIL, 108)], 4)
    assert len({tuple(sorted(d[10:16])) for d in decks}) > 1, "seat 1's hand must differ between deals"
    assert len({tuple(sorted(d[18:20])) for d in decks}) > 1, "seat 1's cup must differ between deals"
    moves = script(decks, 30)
    assert any(seat == 1 for seat, _ in moves) and any(seat == 0 for seat, _ in moves)
    runs = [await run_scripted(arena, a, b, spectator, deck, moves) for deck in decks]
    reference = normalized(runs[0][0])
    for seat0, _, _, over in runs[1:]:
        assert normalized(seat0) == reference
        assert over.record.moves == runs[0][3].record.moves
    # The comparison is sharp: seat 1, who does know its hand, saw different frames.
    assert any(normalized(run[1]) != normalized(runs[0][1]) for run in runs[1:])


async def hidden_card_runs(
    arena: Harness, seed: int, deals: int, plies: int
) -> list[tuple[list[Any], list[Any], list[Any], GameOver]]:
    """:func:`run_scripted` on ``deals`` deals that differ only in what no spectator may know:
    both starting cups and the undrawn tail of the deck."""
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    spectator = await arena.connect(None)
    base = [COLORS[c] for c in Game.new(seed=seed).deck_order]
    decks = variants(base, [16, 17, 18, 19, *range(TAIL, 108)], deals)
    assert len({tuple(sorted(d[16:20])) for d in decks}) > 1
    moves = script(decks, plies)
    return [await run_scripted(arena, a, b, spectator, deck, moves) for deck in decks]


async def test_spectator_frames_do_not_depend_on_hidden_cards(make_arena) -> None:
    runs = await hidden_card_runs(await make_arena(), seed=77, deals=4, plies=30)
    reference = normalized(runs[0][2])
    for _, _, spec, _ in runs[1:]:
        assert normalized(spec) == reference
    # The comparison is sharp: the seats, who know their own starting cups, saw different frames.
    assert any(normalized(run[0]) != normalized(runs[0][0]) for run in runs[1:])
    assert any(normalized(run[1]) != normalized(runs[0][1]) for run in runs[1:])
