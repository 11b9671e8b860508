"""A spectator that does not read (``server/connections/pacing.py``): skipped forward, then cut, and
nobody else notices — the games it watched play on and end as usual."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
from typing import Any

import pytest

from arena_testkit import Harness, gather, play_out, random_policy, slow_websocket, wait_until
from mandala.record import Record
from protocol.messages import PROTOCOL_VERSION, GameOver, GameResult
from server.connections import outbox as outbox_module
from server.connections import pacing
from server.connections.connection import encode

GAMES = 16


class StuckSpectator:
    """A WebSocket client written by hand on a socket that takes 4 KB at a time, which sends
    and never reads: a spectator whose machine hangs. asyncio stops reading for it once
    128 KB wait unread, so the server's frames back up."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def connect(cls, host: str, port: int) -> StuckSpectator:
        return cls(*await slow_websocket(host, port, "/ws"))

    def send(self, obj: Any) -> None:
        payload = json.dumps(obj).encode()
        assert len(payload) < 126
        mask = os.urandom(4)
        self.writer.write(bytes((0x81, 0x80 | len(payload))) + mask
                          + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))


async def test_a_spectator_that_stops_reading_is_skipped_then_dropped_and_the_games_play_on(
        make_arena: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its updates are never queued: past what its socket holds it keeps only the latest
    update of each game it watches, and after ``audience_stall_s`` without reading it is cut."""
    # Any byte the socket did not take makes it "behind" (so what the kernel holds is enough).
    monkeypatch.setattr(outbox_module, "AUDIENCE_LOW_WATER", 0)
    # No heartbeat within the test: the spectator is cut for not reading, not for not answering pings.
    arena: Harness = await make_arena(audience_stall_s=3600.0, messages_per_second=1000.0, burst=1000, heartbeat_s=60.0)
    alice, bob = await arena.bot("alice", max_games=GAMES), await arena.bot("bob", max_games=GAMES)
    server = arena.arena
    stuck = await StuckSpectator.connect(str(arena.client.host), int(arena.client.port))  # type: ignore[arg-type]
    stuck.send({"type": "hello", "protocol": PROTOCOL_VERSION, "token": None})
    spectator = await wait_until(lambda: [c for c in server.presence.connections if c.authenticated and c.bot is None],
                                 5, "the spectator's hello was not taken")
    conn = spectator[0]
    assert conn.outbox.transport is not None
    conn.outbox.transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    games = [await arena.start_game(["alice", "bob"]) for _ in range(GAMES)]
    for game_id in games:
        stuck.send({"type": "watch", "game_id": game_id})
    overs = await gather(play_out(alice, random_policy(1), GAMES), play_out(bob, random_policy(2), GAMES),
                         timeout=60)
    assert sorted(o.game_id for o in overs[0]) == sorted(games) == sorted(o.game_id for o in overs[1])
    assert all(o.result.end_reason != "aborted" for o in overs[0])

    # Skipped forward: what waits for it of each game is its last update (the final position)
    # and its game_over, whatever the number of moves (of most games: the ~130 KB its socket
    # and reader took before it fell behind may have held a game's whole end); nothing waits in
    # its outbox.
    def only_the_ends() -> bool:
        feed = conn._feed
        if feed is None:
            return False
        kept: dict[str, list[bytes]] = {}
        for g, f in feed.frames:
            kept.setdefault(g, []).append(f)
        return (len(kept) >= GAMES // 2 and set(kept) <= set(games)
                and all(fs[-1].startswith(b'{"type":"game_over"') and len(fs) <= 2 for fs in kept.values())
                and all(fs[0].startswith(b'{"type":"update"') for fs in kept.values() if len(fs) == 2)
                and any(len(fs) == 2 for fs in kept.values()))

    await wait_until(only_the_ends, 10, "the spectator's updates were not skipped forward")
    assert conn.outbox.waiting == 0 and conn in server.presence.connections

    # Read nothing for the stall time: dropped.
    with caplog.at_level(logging.WARNING, logger="server.connections.pacing"):
        server.audience.stall_s = 0.5
        await wait_until(lambda: conn not in server.presence.connections, 10,
                         "the spectator that stopped reading was never cut")
    dropped = [r.getMessage() for r in caplog.records if "has not caught up for" in r.getMessage()]
    assert len(dropped) == 1 and f"connection {conn.id} " in dropped[0]
    assert all(conn not in room.spectators for room in server.manager.running.values())
    stuck.writer.close()


def test_a_spectator_behind_keeps_each_games_last_update_and_its_end() -> None:
    """What a spectator that fell behind still gets: per game the latest update, then its
    game_over (never the game_over alone: a held record's deal is empty, so the final
    position could not be rebuilt from it), in the order of the games' last frames."""
    update = [b'{"type":"update","game_id":"%s","ply":%d}' % (g, n) for g, n in ((b"a", 1), (b"b", 1), (b"a", 2))]
    over_a = b'{"type":"game_over","game_id":"a"}'
    frames = [("a", update[0]), ("b", update[1]), ("a", update[2]), ("a", over_a)]
    assert pacing.latest_of_each(frames) == [("b", update[1]), ("a", update[2]), ("a", over_a)]
    assert pacing.latest_of_each([("a", over_a)]) == [("a", over_a)]  # its last update went out already
    assert pacing.latest_of_each(frames[:3]) == [("b", update[1]), ("a", update[2])]
    frame = encode(GameOver("a", GameResult(0, "river", [1, 0], [0, 0]), Record([], [], 0, [])))
    assert frame.startswith(pacing.GAME_OVER)
