"""``/live`` on the event loop ``mandala serve`` runs on: uvloop, whose timers differ from
asyncio's (a time already past is answered with a plain handle, which has no ``when()``).
The hub schedules its ticks from the events of many games at once there too. The test runs
its own uvloop loop, the server in it as ``make_arena`` would start it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from arena_testkit import Harness, LiveStream, gather, play_out, random_policy, settings_for
from protocol.live import LiveCounts
from protocol.messages import LiveGameEnded, LiveGames
from server.app import create_app

uvloop = pytest.importorskip("uvloop")
GAMES = 16


async def both_streams_serve_many_games_at_once(db: Path) -> None:
    assert type(asyncio.get_running_loop()).__module__.startswith("uvloop")
    app = create_app(settings_for(db, live_batches_per_second=50.0, messages_per_second=1000.0, burst=1000))
    async with TestClient(TestServer(app)) as client:
        arena = Harness(client)
        viewers = await asyncio.gather(*(client.ws_connect(path) for path in ["/live", "/live?games=all"] * 10))
        streams = [LiveStream(ws) for ws in viewers]
        for stream in streams:
            assert isinstance((await stream.batch()).messages[0], LiveGames)
        alice, bob = await arena.bot("alice", max_games=GAMES), await arena.bot("bob", max_games=GAMES)
        games = await asyncio.gather(*(arena.start_game(["alice", "bob"]) for _ in range(GAMES)))
        overs = await gather(play_out(alice, random_policy(1), GAMES), play_out(bob, random_policy(2), GAMES),
                             timeout=60)
        assert {o.game_id for o in overs[0]} == set(games)  # no game was refused or failed on the way
        every = streams[1]
        while {e.game.game_id for b in every.batches for e in b.messages if isinstance(e, LiveGameEnded)} != set(games):
            await every.batch(10)
        for stream in streams:
            while stream.batches[-1].messages[-1:] != [LiveCounts(running=0, games_per_minute=GAMES, bots_connected=2)]:
                await stream.batch(10)
        for stream in streams:
            await stream.close()
        await alice.close()
        await bob.close()


def test_both_streams_serve_many_games_at_once_on_uvloop(tmp_path: Path) -> None:
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(both_streams_serve_many_games_at_once(tmp_path / "arena.db"))
