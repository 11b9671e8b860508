"""``kill -9`` of a busy ladder server, then a restart on the same database: every game a bot
saw finish is stored with its result, games cut off are aborted, and every bot's rating
equals a replay of the stored rated games through the Elo formula. A server killed so leaves
no process behind: its standings' worker and the resource tracker beside it end with it (as
``ServeProcess.kill`` checks of every server a test kills)."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import msgspec

from arena_testkit import (
    FITTING,
    Seen,
    ServeProcess,
    assert_all_gone,
    assert_ratings_replay,
    descendants,
    fitting,
    free_port,
    gone,
    ladder_bot,
    stored_games,
    wait_until,
)
from server.storage.sqlite import SqliteStorage

BOTS = ["ann", "ben", "cat", "dan"]
THINK = 0.003
"""Seconds each bot takes a move: a game lasts about 90 of them."""
EARLY_PLIES = 20
"""A game that has played fewer moves has at least 60 × ``THINK`` = 0.18 s to go."""


def stored_running(db: str) -> set[str]:
    """The games the database holds as running (read while the server writes: SQLite's WAL)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {row[0] for row in conn.execute("SELECT id FROM games WHERE status = 'running'")}
    finally:
        conn.close()


async def test_kill_9_during_a_busy_ladder_loses_nothing(tmp_path: Path) -> None:
    db, port, log = str(tmp_path / "ladder.db"), free_port(), tmp_path / "server.log"
    config = tmp_path / "arena.toml"
    config.write_text("pairing_interval_s = 0.05\nmessages_per_second = 10000.0\nburst = 10000\n")
    seen = Seen()
    async with aiohttp.ClientSession() as http:
        server = ServeProcess(db, port, config, log)
        try:
            await server.ready(http)
            tokens = await server.create_bots(http, BOTS)
            bots = [asyncio.create_task(ladder_bot(http, server.url, tokens[n], i, seen, think=THINK))
                    for i, n in enumerate(BOTS)]

            async def busy() -> bool:
                # Among the games running, one far from its end whose start is stored: the kill
                # surely cuts it off (a start is stored a moment after the game starts, and a
                # game at its last moves may end before the kill).
                async with http.get(server.url + "/api/games?status=running") as resp:
                    early = {g["game_id"] for g in await resp.json() if g["kind"] == "ladder" and g["ply"] < EARLY_PLIES}
                return await server.rated_games(http) >= 30 and bool(early & stored_running(db))

            await wait_until(busy, 60, "the ladder did not get busy")
            server.kill(signal.SIGKILL)
            await asyncio.wait_for(asyncio.gather(*bots), 10)
        finally:
            if server.proc.poll() is None:
                server.kill()

        assert len(seen.over) >= 30

        # A pair's first game held its record for the return game; the restarted server
        # continues no pair the kill cut, so each of those records is served now.
        held = [game_id for game_id, over in seen.over.items() if over.record_held is not None]
        assert held and all(seen.over[g].record_held is not None for g in held)
        records: dict[str, Any] = {}
        restarted = ServeProcess(db, port, config, log)
        try:
            await restarted.ready(http)
            async with http.get(restarted.url + "/api/ladder") as resp:
                served = {s["bot"]: s for s in (await resp.json())["standings"]}

            async def all_served() -> bool:
                for game_id in held:
                    async with http.get(f"{restarted.url}/api/games/{game_id}/record") as resp:
                        if resp.status != 200:
                            assert resp.status == 409 and (await resp.json())["error"]["code"] == "record_held"
                            return False
                        records[game_id] = await resp.json()
                return True

            await wait_until(all_served, 10, "a record held for a pair the kill cut is still held")
        finally:
            restarted.kill(signal.SIGTERM)

    store = SqliteStorage(db)
    await store.open()
    try:
        rows = await stored_games(store)
        # Every game a bot saw finish is stored, finished, with the result it was told.
        for game_id, over in seen.over.items():
            row = rows[game_id]
            assert row.status == "finished" and row.result == msgspec.to_builtins(over.result)
            assert row.record == (records[game_id] if over.record_held is not None else msgspec.to_builtins(over.record))
        # Nothing is left running; what the kill cut off is aborted and unrated in effect.
        assert not [g for g in rows.values() if g.status == "running"]
        cut = [g for g in rows.values() if g.status == "aborted"]
        assert cut and all(g.game_id not in seen.over for g in cut)
        # Ratings equal a replay of the stored rated games, in the order they finished.
        state = await assert_ratings_replay(store, BOTS)
        for name, (rating, games) in state.items():
            assert served[name]["games"] == games and served[name]["elo"] == round(rating, 1)
    finally:
        await store.close()



async def test_kill_9_of_a_server_leading_the_ladder_leaves_no_process_behind(tmp_path: Path) -> None:
    config = tmp_path / "arena.toml"
    config.write_text("")
    async with aiohttp.ClientSession() as http:
        server = ServeProcess(str(tmp_path / "ladder.db"), free_port(), config, tmp_path / "server.log")
        try:
            await server.ready(http)
            # A server leads its ladder from the start, and its first standings start the worker.
            family = await wait_until(lambda: (f := server.family()) and fitting(f) == FITTING
                                      and f, 30, "the standings' worker did not start")
        except BaseException:
            server.kill()
            raise
    server.kill(signal.SIGKILL)  # fails if a process of the server's outlives it by ten seconds
    assert all(gone(pid) for pid in family) and descendants(server.proc.pid) == {}


WATCHED = """
import os, sys
from server.ladder import fitting
print(os.getpid(), flush=True)
fitting._watch(os.getppid())  # where the kernel cannot end an orphan: the worker watches its parent
"""


def test_where_no_kernel_ends_an_orphan_the_worker_ends_when_its_parent_does() -> None:
    # A parent (here a shell) starts a process that watches it as the worker does; the parent
    # is killed outright, and the watcher ends by itself.
    parent = subprocess.Popen(["sh", "-c", f'"{sys.executable}" -c \'{WATCHED}\' & wait'], stdout=subprocess.PIPE,
                              start_new_session=True)
    try:
        assert parent.stdout is not None
        watcher = int(parent.stdout.readline())
        assert not gone(watcher) and watcher in descendants(parent.pid)
    finally:
        parent.kill()
        parent.wait(30)
    assert_all_gone({watcher: "the watcher"}, "after its parent was killed")
