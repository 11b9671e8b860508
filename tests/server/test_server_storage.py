"""Storage: finished games land in the SQLite file; a restart marks games that were running
when the previous server died as aborted; a clean stop aborts running games itself."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import msgspec
from aiohttp.test_utils import TestClient, TestServer

from arena_testkit import Harness, gather, play_out, random_policy, settings_for
from mandala import compact
from protocol.messages import Decision, GameOver, Update
from server.app import create_app
from server.storage.packing import unpack_result


def stored(db_path: Path, game_id: str) -> dict[str, Any]:
    with sqlite3.connect(db_path) as db:
        db.row_factory = sqlite3.Row
        row = db.execute("SELECT * FROM games WHERE id = ?", (game_id,)).fetchone()
    assert row is not None
    return dict(row)


async def test_a_finished_game_is_in_the_sqlite_file(make_arena: Any, db_path: Path) -> None:
    arena: Harness = await make_arena()
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"])
    (over,), _ = await gather(play_out(a, random_policy(5)), play_out(b, random_policy(6)))
    await arena.arena.manager.flush()
    row = stored(db_path, game_id)
    assert (row["status"], row["seat0"], row["seat1"], row["rated"]) == ("finished", "alice", "bob", 0)
    assert "players" not in row  # the seats say it (migration 9)
    assert row["end_reason"] == over.result.end_reason and row["ply"] == len(over.record.moves)
    assert compact.unpack(row["record"]) == over.record  # compact: mandala/compact.py
    assert len(row["record"]) < 400 < len(msgspec.json.encode(over.record))
    assert unpack_result(game_id, row["result"]) == msgspec.to_builtins(over.result)  # packed: storage/packing.py
    assert row["rating0_before"] is None and row["games1_before"] is None  # unrated
    assert row["ended"] >= row["started"]
    with sqlite3.connect(db_path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        (token_hash,) = db.execute("SELECT token_hash FROM bots WHERE name = 'alice'").fetchone()
    assert len(token_hash) == 64


async def test_restart_marks_games_left_running_aborted(make_arena: Any, db_path: Path) -> None:
    arena = await make_arena()
    a = await arena.bot("alice")
    await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"])
    await a.until(Decision)
    await arena.arena.manager.flush()
    assert stored(db_path, game_id)["status"] == "running"
    # A new server on the same file, as after a crash of the first one.
    second = TestClient(TestServer(create_app(settings_for(db_path))))
    await second.start_server()
    try:
        row = stored(db_path, game_id)
        assert (row["status"], row["end_reason"], row["record"]) == ("aborted", "aborted", None)
        assert row["ended"] is not None
        resp = await second.get("/api/games?status=aborted")
        assert [g["game_id"] for g in await resp.json()] == [game_id]
        resp = await second.get(f"/api/games/{game_id}/record")
        assert resp.status == 404 and (await resp.json())["error"]["code"] == "no_record"
        resp = await second.get(f"/api/games/{game_id}")
        body = await resp.json()
        assert body["status"] == "aborted" and body["view"] is None
        # Bots registered with the first server still exist.
        resp = await second.get("/api/bots")
        assert [b["name"] for b in await resp.json()] == ["alice", "bob"]
    finally:
        await second.close()


async def test_a_clean_stop_aborts_running_games_and_tells_the_bots(aiohttp_server: Any, aiohttp_client: Any,
                                                                    db_path: Path) -> None:
    server = await aiohttp_server(create_app(settings_for(db_path)))
    client: TestClient = await aiohttp_client(server)
    arena = Harness(client)
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"])
    await a.until(Decision)
    await b.until(Update)
    spectator, _ = await arena.spectate(game_id)
    await server.close()
    over = await a.until(GameOver)
    assert await b.until(GameOver) == over
    assert (over.game_id, over.result.end_reason, over.result.winner) == (game_id, "aborted", None)
    assert await a.closed() == 1001
    # A spectator hears the end too (its frames wait for the audience's tick: they go out first).
    seen = await spectator.until(GameOver)
    assert (seen.game_id, seen.result) == (game_id, over.result)
    assert await spectator.closed() == 1001
    row = stored(db_path, game_id)
    assert row["status"] == "aborted" and compact.unpack(row["record"]) == over.record
