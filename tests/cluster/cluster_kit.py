"""Nodes as processes for the tests of games that outlive their node: start one, connect bots to
it, and check, frame by frame, what each seat saw across takeovers."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
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


async def leader_of(http: aiohttp.ClientSession, server: ServeProcess) -> str | None:
    """The node ``server`` says leads the ladder (its ``/health``); ``None`` while none does or
    it does not answer."""
    got = await server.health(http)
    return None if got is None else got[1]["cluster"]["leader"]


async def quiet(http: aiohttp.ClientSession, leader: ServeProcess) -> bool:
    """Whether the leader sees no bot connected, no game running and none it placed still
    starting: then its ladder starts no game (a pairing needs both bots connected)."""
    got = await leader.health(http)
    return got is not None and got[1]["bots_connected"] == 0 and got[1]["games_running"] == 0 and (
        got[1]["cluster"]["games_starting"] == 0)


async def seeking(http: aiohttp.ClientSession, server: ServeProcess, bot: str) -> bool:
    """Whether ``server`` (the leader) pairs ``bot`` for the ladder: its profile's ``seeking``."""
    async with http.get(f"{server.url}/api/bots/{bot}") as resp:
        assert resp.status == 200, await resp.text()
        return bool((await resp.json())["seeking"])


async def stop(tasks: list[asyncio.Task[None]]) -> None:
    """Cancel ``tasks`` (bots, say) and wait until they are done."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def is_now(value: Awaitable[object], expected: object) -> bool:
    """For ``wait_until``: whether ``value`` comes to ``expected``."""
    return await value == expected


async def connect(http: aiohttp.ClientSession, url: str, token: str | None, max_games: int = 1) -> tuple[WsClient, Welcome]:
    """A WebSocket to ``url`` that said hello; it and its ``welcome``."""
    client = WsClient(await http.ws_connect(url.replace("http", "ws", 1) + "/ws"))
    hello: dict[str, Any] = {"type": "hello", "protocol": PROTOCOL_VERSION, "max_games": max_games}
    if token is not None:
        hello["token"] = token
    await client.send(hello)
    return client, await client.expect(Welcome)


class SlowLink:
    """A TCP relay to a server (Redis) that holds what its clients send for ``delay_s`` before
    passing it on, in order, while the answers come back at once: a node whose link to Redis
    is slow (a node busy with games, a far network). ``url`` is the server's URL through it."""

    def __init__(self, url: str, delay_s: float) -> None:
        scheme, rest = url.split("://", 1)
        address, _, self._path = rest.partition("/")
        host, _, port = address.rpartition(":")
        self._scheme, self._target = scheme, (host, int(port))
        self.delay_s = delay_s
        self._server: asyncio.Server | None = None
        self._relays: set[asyncio.Task[None]] = set()
        self._parts: set[asyncio.Future[None]] = set()
        self.url = ""

    async def __aenter__(self) -> SlowLink:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"{self._scheme}://127.0.0.1:{port}/{self._path}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in list(self._parts):
            task.cancel()
        await asyncio.gather(*self._relays, return_exceptions=True)

    async def _relay(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        relay = asyncio.current_task()
        assert relay is not None
        self._relays.add(relay)
        try:
            server_r, server_w = await asyncio.open_connection(*self._target)
        except OSError:
            client_w.close()
            self._relays.discard(relay)
            return
        loop = asyncio.get_running_loop()
        held: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def hold() -> None:
            while chunk := await client_r.read(1 << 16):
                held.put_nowait((loop.time() + self.delay_s, chunk))
            held.put_nowait((loop.time() + self.delay_s, b""))

        async def pass_on() -> None:
            while True:
                due, chunk = await held.get()
                await asyncio.sleep(max(0.0, due - loop.time()))  # the link's latency
                if not chunk:
                    return
                server_w.write(chunk)

        async def answer() -> None:
            while chunk := await server_r.read(1 << 16):
                client_w.write(chunk)

        parts = [asyncio.ensure_future(p) for p in (hold(), pass_on(), answer())]
        self._parts.update(parts)
        try:
            await asyncio.wait(parts[1:], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for part in parts:
                part.cancel()
            await asyncio.gather(*parts, return_exceptions=True)
            self._parts.difference_update(parts)
            for writer in (client_w, server_w):
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()
            self._relays.discard(relay)


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
