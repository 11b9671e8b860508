"""Think times are measured to a tenth of a millisecond whatever the event loop: on uvloop,
``loop.time()`` ticks in whole milliseconds (libuv's ``uv_now``), so a fast bot's answers
would all read 0.0 or 1.0 ms. ``mandala serve`` runs on uvloop, so these tests do too."""

from __future__ import annotations

import asyncio
from pathlib import Path

import uvloop
from aiohttp.test_utils import TestClient, TestServer

from arena_testkit import Harness, gather, random_policy, settings_for
from protocol.messages import Decision, GameOver, MoveAccepted
from server.app import create_app
from test_bot_health import frames_until_over


def tenths(values: list[float]) -> set[int]:
    """The tenth-of-a-millisecond digit of each value."""
    return {round(v * 10) % 10 for v in values}


def test_think_times_have_tenths_of_a_millisecond_on_uvloop(tmp_path: Path) -> None:
    uvloop.run(one_game_of_instant_bots(tmp_path / "arena.db"))


async def one_game_of_instant_bots(db: Path) -> None:
    assert type(asyncio.get_running_loop()).__module__.startswith("uvloop")
    async with TestClient(TestServer(create_app(settings_for(db)))) as client:
        await check_think_times(Harness(client))


async def check_think_times(arena: Harness) -> None:
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"], reshuffle_seed=3)
    frames = await gather(frames_until_over(a, random_policy(1)), frames_until_over(b, random_policy(2)))
    assert all(isinstance(f[-1], GameOver) for f in frames)
    accepted = [f.elapsed_ms for got in frames for f in got if isinstance(f, MoveAccepted)]
    assert len(accepted) == sum(1 for got in frames for f in got if isinstance(f, Decision))
    # Instant bots on loopback answer in well under a millisecond: with a clock of whole
    # milliseconds every answer would read a whole number.
    assert tenths(accepted) != {0}, accepted
    stored = []
    for seat in (0, 1):
        replay = await arena.get_json(f"/api/games/{game_id}/replay?seat={seat}")
        stored += [p["decision"]["think_ms"] for p in replay["plies"] if "decision" in p]
    assert len(stored) == len(accepted)
    assert tenths(stored) != {0}, stored
