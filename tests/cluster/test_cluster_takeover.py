"""Nodes as processes, over a real Redis and PostgreSQL: ``kill -9`` of the node that leads the
ladder stops pairing for less than 5 s (another node takes the lease; the games, hosted by the
bots' node, play on), no game a bot saw finish is lost, and the ratings equal a replay of the
stored games. Also: a node whose Redis or PostgreSQL cannot be reached
does not start (exit status 1, naming what)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp

from arena_testkit import (
    FITTING,
    SERVE,
    Seen,
    ServeProcess,
    assert_ratings_replay,
    fitting,
    free_port,
    ladder_bot,
    stored_games,
    wait_until,
)
from cluster_kit import is_now, leader_of, node, quiet, stop
from server.ladder.tally import Tally
from server.ratings import bradley_terry
from server.storage.postgres import PostgresStorage

BOTS = ["ann", "ben", "cat"]


async def test_kill_9_of_the_pairing_leader_stops_pairing_for_less_than_5_s(
        database: str, redis_url: str, tmp_path: Path) -> None:
    import redis.asyncio as aioredis

    r = aioredis.Redis.from_url(redis_url)
    await r.flushdb()
    await r.aclose()
    config = tmp_path / "arena.toml"
    config.write_text("pairing_interval_s = 0.05\nmessages_per_second = 10000.0\nburst = 10000\n"
                      "decision_ms = 2000\npairing_wait_s = 0.2\n")
    seen = Seen()
    async with aiohttp.ClientSession() as http:
        n1 = node(database, redis_url, "n1", config, tmp_path)
        n2 = None
        bots: list[asyncio.Task[None]] = []
        try:
            await n1.ready(http)
            await wait_until(lambda: leader_of(http, n1), 10, "n1 never led")
            n2 = node(database, redis_url, "n2", config, tmp_path)
            await n2.ready(http)
            await wait_until(lambda: is_now(leader_of(http, n2), "n1"), 5, "n2 did not learn that n1 leads")
            tokens = await n2.create_bots(http, BOTS)
            # The bots are connected to n2: n1 leads the ladder, n2 hosts its games.
            bots = [asyncio.create_task(ladder_bot(http, n2.url, tokens[b], i, seen, reconnect=True))
                    for i, b in enumerate(BOTS)]
            await wait_until(lambda: n2.rated_games(http), 60, "no rated game was played")
            await wait_until(lambda: len(seen.started) >= 12, 60, "the ladder did not get busy")
            assert fitting(n1.family()) == FITTING  # the leader's standings' worker runs
            n1.kill(signal.SIGKILL)  # and ends with it (ServeProcess.kill fails on what it leaves behind)
            loop = asyncio.get_running_loop()
            killed_at, before = loop.time(), set(seen.started)
            await wait_until(lambda: set(seen.started) - before, 10, "pairing never resumed")
            stopped = loop.time() - killed_at
            assert stopped < 5.0, f"pairing stopped for {stopped:.2f} s"
            await wait_until(lambda: is_now(leader_of(http, n2), "n2"), 5, "n2 does not say it leads")
            # The ladder goes on under its new leader.
            count = len(seen.over)
            await wait_until(lambda: len(seen.over) >= count + 6, 30, "the new leader's games did not finish")
            await stop(bots)
            await wait_until(lambda: quiet(http, n2), 15, "n2 still sees bots or games")
            store = PostgresStorage(database, max_size=2)
            await store.open()
            try:
                await wait_until(lambda: _standings_refit(http, n2, store), 15,
                                 "the new leader's standings are not the fit of the stored games")
            finally:
                await store.close()
        finally:
            await stop(bots)
            for server in (n1, n2):
                if server is not None and server.proc.poll() is None:
                    server.kill(signal.SIGTERM)
    store = PostgresStorage(database, max_size=2)
    await store.open()
    try:
        rows = await stored_games(store)
        for game_id, over in seen.over.items():  # every game a bot saw finish is stored as it ended
            assert rows[game_id].status == "finished" and rows[game_id].result["winner"] == over.result.winner
        assert not [g for g in rows.values() if g.status == "running"]
        await assert_ratings_replay(store, BOTS)
    finally:
        await store.close()
    assert {e.code for e in seen.errors} <= {"game_over"}, seen.errors


async def _standings_refit(http: aiohttp.ClientSession, server: ServeProcess, store: PostgresStorage) -> bool:
    """Whether the standings ``server`` serves are those a Bradley–Terry fit of every stored rated
    game gives (rounded as served; centred on the listed bots' stored Elo, as the server does),
    listed best first. Bot by bot: two bots with the same record have the same rating, and the
    last bits of the two fits (the server's starts from its previous one) may list them either way."""
    async with http.get(server.url + "/api/ladder") as resp:
        served = (await resp.json())["standings"]
    listed = [s["bot"] for s in served]
    center = sum(s["elo"] for s in served) / len(served)
    fits = bradley_terry.fit_tally(Tally.of(await store.rated_results()).rows(), listed, center)
    got = {s["bot"]: (s["rating"], s["low"], s["high"]) for s in served}
    ratings = [s["rating"] for s in served]
    return sorted(listed) == sorted(BOTS) and ratings == sorted(ratings, reverse=True) and all(
        abs(x - y) <= 0.11
        for b in listed
        for x, y in zip(got[b], (fits[b].rating, fits[b].low, fits[b].high), strict=True))


def serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", SERVE, "serve", "--port", str(free_port()), *args],
                          capture_output=True, text=True, timeout=60)


def test_a_node_whose_redis_cannot_be_reached_does_not_start(pg_url: str) -> None:
    port = free_port()
    done = serve("--db", pg_url, "--redis", f"redis://127.0.0.1:{port}/0", "--node", "n1")
    assert done.returncode == 1
    assert f"cannot reach Redis at redis://127.0.0.1:{port}/0" in done.stderr


def test_a_node_whose_postgresql_cannot_be_reached_does_not_start(redis_url: str) -> None:
    port = free_port()
    done = serve("--db", f"postgresql://nobody@127.0.0.1:{port}/arena", "--redis", redis_url)
    assert done.returncode == 1
    assert f"cannot reach PostgreSQL at postgresql://nobody@127.0.0.1:{port}/arena" in done.stderr


def test_a_cluster_node_needs_postgresql(redis_url: str, tmp_path: Path) -> None:
    done = serve("--db", str(tmp_path / "arena.db"), "--redis", redis_url)
    assert done.returncode == 2 and "PostgreSQL" in done.stderr
