"""Chaos: three nodes behind HAProxy, twenty ladder games running, and for a minute one node
killed with ``kill -9`` every 10 s (and restarted, at once or a few seconds later).

Every bot connects through HAProxy, as a bot of a competition would, and comes back through it
whenever its connection drops; it keeps every frame it receives. Odd rounds kill the node
that leads the ladder, even ones another node; each hosts the games the leader placed on it
(those of its bots), which are taken over, and its bots reconnect elsewhere. Afterwards:

- once every bot has sent ``unseek`` the leader pairs none of them: no bot keeps a seek it
  made on a node that died (it reconnected elsewhere and did not seek there);
- every game ended in storage, finished or aborted; none is left running, also after the
  bots leave (a pair's return game may start between a first game's end and their going);
- no finished game is lost: each ``game_over`` a bot received is stored with that result;
- every finished record replays in the independent implementation of RULES.md
  (``tests/engine/reference.py``) to its stored result;
- what each seat saw agrees with that record: each ``update``'s move is the record's move at
  its ply, its view is the seat's view of the record at that ply (and its hand the reference
  implementation's), request ids only grow, no move is shown twice;
- games were taken over and finished on their new host;
- the ratings equal an Elo replay of the stored rated games.
"""

from __future__ import annotations

import asyncio
import os
import random
import shutil
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import msgspec
import pytest

import mandala
from arena_testkit import ServeProcess, assert_ratings_replay, free_port, stored_games, wait_until
from cluster_kit import FAST, leader_of, node, quiet, seat_consistency, seeking, stop
from protocol.messages import PROTOCOL_VERSION, Decision, GameOver, GameStart, ServerMessage, Update
from server.storage.postgres import PostgresStorage

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
from reference import replay_record

HAPROXY = "/usr/sbin/haproxy"
ROOT = Path(__file__).resolve().parents[2]
BOTS = 10
MAX_GAMES = 4
ROUNDS = 6
EVERY_S = 10.0
_decoder = msgspec.json.Decoder(ServerMessage)  # type: ignore[arg-type]


@dataclass
class Observer:
    """A ladder bot that comes back through HAProxy whenever its connection drops and keeps
    every frame it receives, across all its connections."""

    name: str
    token: str
    think: float
    rng: random.Random
    frames: list[Any] = field(default_factory=list)
    closes: list[int | None] = field(default_factory=list)
    seeking: bool = True
    ws: aiohttp.ClientWebSocketResponse | None = None
    answering: set[asyncio.Task[None]] = field(default_factory=set)

    async def run(self, http: aiohttp.ClientSession, url: str) -> None:
        while True:
            try:
                async with http.ws_connect(url.replace("http", "ws", 1) + "/ws") as ws:
                    self.ws = ws
                    await ws.send_json({"type": "hello", "protocol": PROTOCOL_VERSION, "token": self.token,
                                        "max_games": MAX_GAMES})
                    if self.seeking:
                        await ws.send_json({"type": "seek"})
                    async for frame in ws:
                        if frame.type is not aiohttp.WSMsgType.TEXT:
                            break
                        msg = _decoder.decode(frame.data)
                        self.frames.append(msg)
                        if isinstance(msg, Decision):  # each game's decision answered after its own think
                            task = asyncio.ensure_future(self._answer(ws, msg))
                            self.answering.add(task)
                            task.add_done_callback(self.answering.discard)
                    self.closes.append(ws.close_code)
            except (aiohttp.ClientError, ConnectionError, TimeoutError):
                pass
            self.ws = None
            await asyncio.sleep(0.1)  # HAProxy has no node for us right now: knock again shortly

    async def _answer(self, ws: aiohttp.ClientWebSocketResponse, d: Decision) -> None:
        await asyncio.sleep(self.think)
        move = msgspec.to_builtins(self.rng.choice(d.legal))
        try:
            await ws.send_json({"type": "move", "game_id": d.game_id, "request_id": d.request_id, "move": move})
        except (aiohttp.ClientError, ConnectionError, RuntimeError):
            pass  # the connection dropped meanwhile: the decision is asked again after the resume

    async def stop_seeking(self) -> None:
        self.seeking = False
        if self.ws is not None and not self.ws.closed:
            try:
                await self.ws.send_json({"type": "unseek"})
            except (aiohttp.ClientError, ConnectionError, RuntimeError):
                pass


class HAProxy:
    """``deploy/haproxy.cfg`` in front of the nodes, on ports of its own."""

    def __init__(self, nodes: list[str], log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "CLUSTER_HOST": "127.0.0.1", "CLUSTER_PORT": str(self.port),
               "CLUSTER_STATS_PORT": str(free_port())}
        env.update({f"CLUSTER_NODE{i + 1}": address for i, address in enumerate(nodes)})
        self.log = log.open("ab")
        self.proc = subprocess.Popen([HAPROXY, "-db", "-f", str(ROOT / "deploy" / "haproxy.cfg")], env=env,
                                     stdout=self.log, stderr=subprocess.STDOUT)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        self.log.close()


def haproxy_or_skip() -> None:
    """Skip loudly without HAProxy (``make test`` installs it), or fail under ``CI=true``."""
    if shutil.which(HAPROXY) is None:
        why = f"THE CHAOS TEST DID NOT RUN: {HAPROXY} is missing (make test installs Debian's haproxy)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(why + "; CI=true requires it", pytrace=False)
        pytest.skip(why)


async def running_games(http: aiohttp.ClientSession, url: str) -> int:
    async with http.get(url + "/api/games?status=running&limit=100") as resp:
        return len(await resp.json()) if resp.status == 200 else 0


async def test_a_minute_of_kill_9_loses_no_game_and_applies_no_move_twice(
        database: str, fresh_redis: str, tmp_path: Path) -> None:
    haproxy_or_skip()
    rng = random.Random(14)
    config = tmp_path / "arena.toml"
    config.write_text(FAST + "decision_ms = 3000\nmax_games = 8\n")
    names = ["n1", "n2", "n3"]
    ports = [free_port() for _ in names]
    nodes = {name: node(database, fresh_redis, name, config, tmp_path, port) for name, port in zip(names, ports, strict=True)}
    proxy: HAProxy | None = None
    observers: list[Observer] = []
    tasks: list[asyncio.Task[None]] = []
    kills: list[tuple[str, bool]] = []
    try:
        async with aiohttp.ClientSession() as http:
            for name in names:
                await nodes[name].ready(http)
            await wait_until(lambda: leader_of(http, nodes["n1"]), 10, "no node leads")
            proxy = HAProxy([f"127.0.0.1:{p}" for p in ports], tmp_path / "haproxy.log")
            tokens = await nodes["n1"].create_bots(http, [f"bot{i}" for i in range(BOTS)])
            observers = [Observer(name, token, 0.01 + 0.01 * i, random.Random(i)) for i, (name, token) in
                         enumerate(tokens.items())]
            await wait_until(lambda: _answers(http, proxy.url), 10, "HAProxy did not come up")
            tasks = [asyncio.create_task(o.run(http, proxy.url)) for o in observers]
            await wait_until(lambda: _at_least(running_games(http, nodes["n1"].url), 20), 90,
                             "the ladder never had twenty games running")

            for round_ in range(ROUNDS):
                await asyncio.sleep(EVERY_S)  # the chaos's own schedule: a kill every 10 s
                alive = [n for n in names if nodes[n].proc.poll() is None]
                lead = await leader_of(http, nodes[alive[0]])
                victim = lead if round_ % 2 == 0 and lead in alive else rng.choice([n for n in alive if n != lead])
                nodes[victim].kill(signal.SIGKILL)
                at_once = rng.random() < 0.5
                kills.append((victim, victim == lead))
                if not at_once:
                    await asyncio.sleep(3.0)  # down for a while: the others notice and take over
                nodes[victim] = node(database, fresh_redis, victim, config, tmp_path, ports[names.index(victim)])
                await nodes[victim].ready(http)

            # The end: nobody seeks any more (a bot back on a node after the last kill has not
            # sought there); every game still running finishes.
            for o in observers:
                await o.stop_seeking()
            leader = nodes[await wait_until(lambda: leader_of(http, nodes["n1"]), 10, "no node leads")]
            await wait_until(lambda: _nobody_seeks(http, leader, list(tokens)), 10, "a bot still seeks")
            await wait_until(lambda: _none_running(database), 90, "games still running after the chaos")
            # Then the bots leave. No game was running a moment ago, but a pair's return game may
            # start after its first (and a game the leader placed may not have started yet).
            # Once the leader has no bot connected and no game running or on its way to a node,
            # nothing can start; what started meanwhile ends on its clock.
            await stop(tasks)
            await wait_until(lambda: quiet(http, leader), 30, "the leader still sees bots or games")
            await wait_until(lambda: _none_running(database), 30, "games still running after the bots left")
    finally:
        await stop(tasks)
        if proxy is not None:
            proxy.stop()
        for n in nodes.values():
            if n.proc.poll() is None:
                n.kill(signal.SIGTERM)

    store = PostgresStorage(database, max_size=2)
    await store.open()
    try:
        rows = await stored_games(store)
        assert not [g for g in rows.values() if g.status == "running"]
        # Every game a bot saw finish is stored with the result it was told.
        told: dict[str, GameOver] = {}
        for o in observers:
            for f in o.frames:
                if isinstance(f, GameOver):
                    told[f.game_id] = f
                    assert rows[f.game_id].status == "finished", (o.name, f.game_id, rows[f.game_id].status)
                    assert rows[f.game_id].result == msgspec.to_builtins(f.result)
        finished = [g for g in rows.values() if g.status == "finished"]
        assert len(finished) >= 100
        for g in finished:
            ref = replay_record(g.record)
            if g.end_reason in ("river", "deck", "no_moves", "turn_limit"):
                summary = ref.summary()
                assert (summary["winner"], summary["scores"], summary["end_reason"]) == (
                    g.result["winner"], g.result["scores"], g.end_reason)
        # What each seat saw agrees with the record.
        for o in observers:
            assert seat_consistency(o.frames) == [], o.name
            agree_with_records(o, rows)
        taken = [g for g in finished if g.epoch > 0]
        assert taken, f"no finished game was ever taken over: kills {kills}"
        assert any(was_leader for _, was_leader in kills)
        await assert_ratings_replay(store, [o.name for o in observers])
    finally:
        await store.close()
    print(f"chaos: kills {kills}; {len(rows)} games, {len(finished)} finished, {len(taken)} taken over and "
          f"finished, {Counter(g.status for g in rows.values())}")


def agree_with_records(o: Observer, rows: dict[str, Any]) -> None:
    """Each ``update`` ``o`` got for a finished game shows that game's record at its ply: the
    move played there and the seat's view (its hand also as the reference implementation has it)."""
    by_game: dict[str, list[Update]] = {}
    seat: dict[str, int] = {}
    for f in o.frames:
        if isinstance(f, Update):
            by_game.setdefault(f.game_id, []).append(f)
        elif isinstance(f, GameStart):
            seat[f.game_id] = f.seat
    for game_id, updates in by_game.items():
        row = rows.get(game_id)
        if row is None or row.status != "finished" or row.record is None:
            continue
        views, hands = seen_by(row.record, seat[game_id])
        moves = row.record["moves"]
        for u in updates:
            if u.move is not None:
                assert msgspec.to_builtins(u.move) == moves[u.ply - 1], (o.name, game_id, u.ply)
            assert msgspec.to_builtins(u.view) == views[u.ply], (o.name, game_id, u.ply)
            if u.ply < len(hands):
                hand = msgspec.to_builtins(u.view.private.hand) if u.view.private is not None else {}
                assert {c: n for c, n in hand.items() if n} == dict(hands[u.ply]), (o.name, game_id, u.ply)


def seen_by(record: dict[str, Any], seat: int) -> tuple[list[Any], list[Counter[str]]]:
    """The seat's view at each ply of ``record`` (the engine's), and its hand at each ply but
    the last (the reference implementation's)."""
    views: list[Any] = []
    hands: list[Counter[str]] = []

    def view(_ply: int, game: mandala.Game) -> None:
        views.append(msgspec.to_builtins(mandala.view(game, seat)))

    def hand(_ply: int, ref: Any) -> None:
        hands.append(Counter(ref.hands[seat]))

    views.append(msgspec.to_builtins(mandala.view(mandala.replay(record, on_decision=view), seat)))
    replay_record(record, on_decision=hand)
    return views, hands


async def _answers(http: aiohttp.ClientSession, url: str) -> bool:
    try:
        async with http.get(url + "/health") as resp:
            return resp.status in (200, 503)
    except aiohttp.ClientError:
        return False


async def _at_least(count: Any, n: int) -> bool:
    return await count >= n


async def _nobody_seeks(http: aiohttp.ClientSession, leader: ServeProcess, bots: list[str]) -> bool:
    """Whether the leader pairs none of ``bots``."""
    return not any([await seeking(http, leader, bot) for bot in bots])


async def _none_running(database: str) -> bool:
    store = PostgresStorage(database, max_size=1)
    await store.open()
    try:
        return not await store.running_games()
    finally:
        await store.close()

