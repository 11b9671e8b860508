"""Helpers for the tournament tests: bots that play every game they are given (the test kit's
``play``, re-exported), the organizer's calls, and an independent recomputation of the results
from the exported records."""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from arena_testkit import ADMIN, Harness, WsClient, play
from protocol.messages import GameStart

__all__ = ["AUTH", "create", "crosstable_of", "finished", "games_read", "idle_pair_started", "play", "post", "records"]

AUTH = {"Authorization": f"Bearer {ADMIN}"}


async def post(arena: Harness, path: str, body: Any = None, status: int = 200, auth: bool = True) -> Any:
    resp = await arena.client.post(path, json=body, headers=AUTH if auth else {})
    assert resp.status == status, await resp.text()
    return await resp.json()


async def create(arena: Harness, **definition: Any) -> dict[str, Any]:
    body = {"name": "cup", "format": "round_robin", "games_per_pairing": 2, **definition}
    return await post(arena, "/api/tournaments", body, 201)  # type: ignore[no-any-return]


async def finished(arena: Harness, tid: str, timeout: float = 120.0) -> dict[str, Any]:
    """The tournament's view once it is finished (polled through the public API)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        view = await arena.get_json(f"/api/tournaments/{tid}")
        if view["state"] == "finished":
            return view  # type: ignore[no-any-return]
        assert loop.time() < deadline, f"tournament not finished: {view['progress']}"
        await asyncio.sleep(0.1)


async def records(arena: Harness, tid: str) -> list[dict[str, Any]]:
    resp = await arena.client.get(f"/api/tournaments/{tid}/records")
    assert resp.status == 200 and resp.content_type == "application/x-ndjson"
    return [json.loads(line) for line in (await resp.text()).splitlines()]


def crosstable_of(lines: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """The crosstable recomputed from records alone: W/D/L and score of each bot against each."""
    table: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for line in lines:
        winner = line["result"]["winner"]
        for seat, bot in enumerate(line["players"]):
            other = line["players"][1 - seat]
            cell = table[bot].setdefault(other, {"games": 0, "wins": 0, "draws": 0, "losses": 0, "score": 0.0})
            cell["games"] += 1
            if winner is None:
                cell["draws"] += 1
                cell["score"] += 0.5
            elif winner == seat:
                cell["wins"] += 1
                cell["score"] += 1.0
            else:
                cell["losses"] += 1
    return dict(table)


async def idle_pair_started(arena: Harness) -> tuple[WsClient, str, GameStart]:
    """ann and ben, who never move, in a started two-bot tournament: ann's connection, the
    tournament's id and its first game's start."""
    ann, _ben = await arena.bot("ann"), await arena.bot("ben")
    tid = (await create(arena, participants=["ann", "ben"]))["tournament_id"]
    await post(arena, f"/api/tournaments/{tid}/start")
    return ann, tid, await ann.until(GameStart)


@contextmanager
def games_read(arena: Harness) -> Iterator[list[str]]:
    """The tournaments whose games storage is asked for while the block runs, in order."""
    storage = arena.arena.storage
    real = storage.tournament_games
    reads: list[str] = []

    async def counted(tournament_id: str, **kwargs: Any) -> Any:
        reads.append(tournament_id)
        return await real(tournament_id, **kwargs)

    storage.tournament_games = counted  # type: ignore[method-assign]
    try:
        yield reads
    finally:
        storage.tournament_games = real  # type: ignore[method-assign]
