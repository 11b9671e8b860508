"""``mandala history synth`` (``mandala_cli/history_cmd.py``): a history a server could have
written — real games that replay to their results, ratings that equal an Elo replay, per-pair
totals that equal the games — and it refuses a database that already holds one."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import aiohttp

import mandala
from arena_testkit import ServeProcess, assert_ratings_replay, free_port, stored_games
from mandala_cli.history_cmd import synth
from server.ladder.tally import Tally
from server.storage import Storage


async def test_a_synthesized_history_is_one_a_server_could_have_written(storage: Storage) -> None:
    await synth(storage, 120, 5, seed=3, progress=False)
    games = await stored_games(storage)
    assert len(games) == 120
    for g in games.values():
        assert (g.status, g.kind, g.rated) == ("finished", "ladder", True)
        replayed = mandala.replay(g.record)  # type: ignore[arg-type]
        result = mandala.result(replayed)
        assert result is not None and result.winner == g.result["winner"]  # type: ignore[index]
        assert result.end_reason == g.end_reason and len(g.record["moves"]) == g.ply  # type: ignore[index]
        assert sum(len(seat) for seat in g.telemetry["think_ms"]) == g.ply  # type: ignore[index]
    bots = [f"synth-{i:03d}" for i in range(5)]
    await assert_ratings_replay(storage, bots)
    totals = {p: tuple(c) for p, c in Tally.of(await storage.rated_results()).counts.items()}
    assert await storage.pair_tallies() == totals
    assert {b.ladder for b in await storage.list_bots()} == {"listed"}


def test_the_command_refuses_a_database_that_holds_games_unless_forced(tmp_path: Path) -> None:
    db = tmp_path / "season.db"
    command = [sys.executable, "-m", "mandala_cli.main", "history", "synth", "--db", str(db), "--games", "30",
               "--bots", "4", "--seed", "1"]
    first = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert first.returncode == 0 and "30 games between 4 bots written" in first.stdout, first.stderr
    again = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert again.returncode != 0 and "already holds bots or games (give --force to add)" in again.stderr
    bad = subprocess.run([*command[:-6], "--games", "3", "--bots", "1"], capture_output=True, text=True, timeout=60,
                         check=False)
    assert bad.returncode == 2 and "--bots at least 2" in bad.stderr


async def test_the_command_refuses_a_path_that_cannot_be_a_database_and_a_database_being_served(
        tmp_path: Path) -> None:
    """As ``mandala serve`` refuses them, in one line: a mistyped path (no folders are made for
    it), and a SQLite file a running server serves, whose tables would not see the rows."""
    command = [sys.executable, "-m", "mandala_cli.main", "history", "synth", "--games", "3", "--force", "--db"]
    nowhere = tmp_path / "no" / "season.db"
    missing = subprocess.run([*command, str(nowhere)], capture_output=True, text=True, timeout=60, check=False)
    assert (missing.returncode, missing.stderr) == (2, f"mandala history synth: cannot write to {nowhere}: its folder "
                                                       f"{nowhere.parent} does not exist (a mistyped path? make the "
                                                       "folder first)\n")
    assert not nowhere.parent.exists()
    db = tmp_path / "served.db"
    async with aiohttp.ClientSession() as http:
        (tmp_path / "arena.toml").write_text("")
        server = ServeProcess(str(db), free_port(), tmp_path / "arena.toml", tmp_path / "server.log")
        try:
            await server.ready(http)
            served = subprocess.run([*command, str(db)], capture_output=True, text=True, timeout=60, check=False)
        finally:
            assert server.kill(signal.SIGTERM) == 0
    assert (served.returncode, served.stderr) == (2, f"mandala history synth: {db} is served by another mandala serve "
                                                     "on this machine (one database, one server)\n")
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM games").fetchone() == (0,)
