"""``kill -9`` mid-tournament, then a restart on the same database: no finished game is lost,
the games cut off are replayed in their slots on the same deals, and the tournament completes."""

from __future__ import annotations

import asyncio
import json
import signal
import sqlite3
from collections import defaultdict
from pathlib import Path
from typing import Any

import aiohttp

from arena_testkit import PROCESS_ADMIN, Seen, ServeProcess, free_port, ladder_bot, wait_until

BOTS = ["ann", "ben", "cat"]
AUTH = {"Authorization": f"Bearer {PROCESS_ADMIN}"}


async def view(http: aiohttp.ClientSession, server: ServeProcess, tid: str) -> dict[str, Any]:
    async with http.get(f"{server.url}/api/tournaments/{tid}") as resp:
        assert resp.status == 200
        return await resp.json()  # type: ignore[no-any-return]


async def test_kill_9_mid_tournament_loses_no_finished_game_and_it_completes_after_restart(tmp_path: Path) -> None:
    db, port, log = str(tmp_path / "cup.db"), free_port(), tmp_path / "server.log"
    config = tmp_path / "arena.toml"
    config.write_text("messages_per_second = 10000.0\nburst = 10000\n")
    seen = Seen()
    async with aiohttp.ClientSession() as http:
        server = ServeProcess(db, port, config, log)
        bots: list[asyncio.Task[None]] = []
        try:
            await server.ready(http)
            tokens = await server.create_bots(http, BOTS)
            bots = [asyncio.create_task(ladder_bot(http, server.url, tokens[n], i, seen, reconnect=True, seek=False,
                                                   think=0.002))
                    for i, n in enumerate(BOTS)]
            definition = {"name": "cup", "format": "round_robin", "participants": BOTS, "games_per_pairing": 8,
                          "max_concurrent": 3}
            async with http.post(server.url + "/api/tournaments", json=definition, headers=AUTH) as resp:
                assert resp.status == 201
                tid = (await resp.json())["tournament_id"]
            async with http.post(f"{server.url}/api/tournaments/{tid}/start", headers=AUTH) as resp:
                assert resp.status == 200

            async def busy() -> bool:
                progress = (await view(http, server, tid))["progress"]
                return progress["played"] >= 5 and progress["running"] >= 1

            await wait_until(busy, 60, "the tournament did not get going")
            server.kill(signal.SIGKILL)
            told = {g: over for g, over in seen.over.items() if over.result.end_reason != "aborted"}
            assert len(told) >= 5

            restarted = ServeProcess(db, port, config, log)
            try:
                await restarted.ready(http)
                await wait_until(lambda: _finished(http, restarted, tid), 120, "the tournament did not complete")
                async with http.get(f"{restarted.url}/api/tournaments/{tid}/records") as resp:
                    lines = [json.loads(line) for line in (await resp.text()).splitlines()]
                async with http.get(f"{restarted.url}/api/tournaments/{tid}/results") as resp:
                    results = await resp.json()
            finally:
                restarted.kill(signal.SIGTERM)
        finally:
            for task in bots:
                task.cancel()
            await asyncio.gather(*bots, return_exceptions=True)
            if server.proc.poll() is None:
                server.kill()

    with sqlite3.connect(db) as conn:
        cut_off = conn.execute("SELECT slot FROM games WHERE tournament_id = ? AND status = 'aborted'", (tid,)).fetchall()
    assert cut_off  # games were running at the kill: they were replayed, in their slots
    assert results["played"] == results["planned"] == 24 and len(lines) == 24
    assert sorted(line["slot"] for line in lines) == list(range(24))
    by_id = {line["game_id"]: line for line in lines}
    for game_id, over in told.items():  # every game a bot saw finish is kept, with its result
        assert by_id[game_id]["result"] == {"winner": over.result.winner, "end_reason": over.result.end_reason,
                                            "scores": over.result.scores, "cup_sizes": over.result.cup_sizes}
    # The replayed slots were dealt as scheduled: each pairing's own deals, each once per seat order.
    by_deal: dict[tuple[Any, ...], list[tuple[str, str]]] = defaultdict(list)
    for line in lines:
        by_deal[(tuple(line["record"]["deck"]), line["record"]["first_player"])].append(tuple(line["players"]))
    assert len(by_deal) == 12  # three pairings, four deals each
    for seatings in by_deal.values():
        (a, b), *_ = seatings
        assert sorted(seatings) == sorted([(a, b), (b, a)])


async def _finished(http: aiohttp.ClientSession, server: ServeProcess, tid: str) -> bool:
    return (await view(http, server, tid))["state"] == "finished"
