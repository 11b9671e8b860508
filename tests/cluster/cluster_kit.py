"""Nodes as processes for the tests of games that outlive their node: start one, connect bots to
it, and check, frame by frame, what each seat saw across takeovers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aiohttp

import mandala
from arena_testkit import ServeProcess, WsClient, free_port
from protocol.messages import PROTOCOL_VERSION, Decision, GameOver, GameStart, MoveAccepted, Update, Welcome

FAST = ("pairing_interval_s = 0.05\nmessages_per_second = 10000.0\nburst = 10000\npairing_wait_s = 0.2\n"
        "registrations_per_hour = 10000\n")


def node(database: str, redis_url: str, name: str, config: Path, tmp_path: Path, port: int | None = None) -> ServeProcess:
    """``mandala serve`` as node ``name`` of the cluster on ``database`` and ``redis_url``."""
    return ServeProcess(database, port or free_port(), config, tmp_path / f"{name}.log", "--redis", redis_url,
                        "--node", name, "--spool", str(tmp_path / f"{name}-spool.jsonl"))


async def connect(http: aiohttp.ClientSession, url: str, token: str | None, max_games: int = 1) -> tuple[WsClient, Welcome]:
    """A WebSocket to ``url`` that said hello; it and its ``welcome``."""
    client = WsClient(await http.ws_connect(url.replace("http", "ws", 1) + "/ws"))
    hello: dict[str, Any] = {"type": "hello", "protocol": PROTOCOL_VERSION, "max_games": max_games}
    if token is not None:
        hello["token"] = token
    await client.send(hello)
    return client, await client.expect(Welcome)


def seat_consistency(frames: list[Any]) -> list[str]:
    """What is wrong in the frames one bot received (over all its connections), game by game:
    the request ids of its decisions only grow, a move is shown once (each ``update`` with a
    move has a greater ply than everything shown before; a resumed one never goes back), and
    each ``move_accepted`` answers a decision it was sent. Empty if nothing is."""
    faults: list[str] = []
    last_request: dict[str, int] = {}
    last_ply: dict[str, int] = {}
    asked: dict[str, set[int]] = {}
    for f in frames:
        if isinstance(f, Decision):
            if f.request_id < last_request.get(f.game_id, -1):
                faults.append(f"{f.game_id}: decision {f.request_id} after {last_request[f.game_id]}")
            last_request[f.game_id] = f.request_id
            asked.setdefault(f.game_id, set()).add(f.request_id)
        elif isinstance(f, Update):
            seen = last_ply.get(f.game_id, -1)
            if (f.move is not None and f.ply <= seen) or f.ply < seen:
                faults.append(f"{f.game_id}: update of ply {f.ply} (move {f.move}) after ply {seen}")
            last_ply[f.game_id] = max(seen, f.ply)
        elif isinstance(f, MoveAccepted) and f.request_id not in asked.get(f.game_id, set()):
            faults.append(f"{f.game_id}: move_accepted for request {f.request_id}, never asked")
    return faults


def replays_to_result(over: GameOver) -> None:
    """The record replays under the rules to the result announced (a game the rules ended)."""
    game = mandala.replay(over.record)
    if over.result.end_reason in ("river", "deck", "no_moves", "turn_limit"):
        result = mandala.result(game)
        assert result is not None and result.winner == over.result.winner
        assert list(result.scores) == over.result.scores


def starts(frames: list[Any], game_id: str) -> list[GameStart]:
    return [f for f in frames if isinstance(f, GameStart) and f.game_id == game_id]
