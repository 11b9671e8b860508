"""Where the leader's games run, over a real Redis and PostgreSQL: the ladder's leader only
decides games, and each is hosted by the node of one of its seats (``RemoteGames.place``).

- A node that never starts the game it was asked to (dead or cut off before the start): after
  ``PLACE_TIMEOUT_S`` the leader takes the pairing as not made, frees the bot's slot and pairs
  again; the game given up is never stored, and the next one runs on that node. Meanwhile the
  leader's ``/health`` and ``/metrics`` count it as starting, not running.
- A bot that leaves between the decision and the start: its node refuses the game and the
  leader frees the pairing at once, without waiting for the timeout.
- ``kill -9`` of the leader (nodes as processes): only the games it hosted are taken over;
  the games the other nodes host play on where they are, undisturbed, to their end.
"""

from __future__ import annotations

import asyncio
import random
import signal
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import msgspec

from arena_testkit import Harness, ServeProcess, assert_ratings_replay, stored_games, wait_until
from cluster_kit import FAST, is_now, leader_of, node
from conftest import MakeCluster
from protocol.messages import PROTOCOL_VERSION, Decision, GameStart, ServerMessage
from server.cluster.messages import StartGame
from server.cluster.remote_games import PLACE_TIMEOUT_S
from server.storage.base import RUNNING
from server.storage.postgres import PostgresStorage
from test_metrics import scrape, value

_decoder = msgspec.json.Decoder(ServerMessage)  # type: ignore[arg-type]


def hold_starts(harness: Any, count: int = 1) -> list[StartGame]:
    """Make the node of ``harness`` keep the first ``count`` games the leader asks it to start
    without starting them (a node that died or was cut off before the start), and start the
    later ones; the held orders, as they come."""
    cluster = harness.arena.cluster
    start = cluster.remote_games._on_start_game
    held: list[StartGame] = []

    def handler(sender: str, m: StartGame) -> None:
        if len(held) < count:
            held.append(m)
        else:
            start(sender, m)

    cluster._handlers[StartGame] = handler
    return held


async def starting(node: Harness) -> tuple[int, float, int]:
    """A node's games on their way to another node, as ``/health`` and ``/metrics`` count
    them, and ``/health``'s games running."""
    health = await node.get_json("/health")
    samples = (await scrape(node))[0]
    return health["cluster"]["games_starting"], value(samples, "mandala_cluster_games_starting"), health["games_running"]


async def test_a_game_its_node_never_starts_frees_the_pairing_after_the_timeout(
        make_cluster: MakeCluster, pg_url: str, pg_schema: str) -> None:
    n1, n2 = await make_cluster(2, pairing_wait_s=0.2, metrics_max_age_s=0)
    leader = n1.arena.cluster
    assert leader is not None
    await wait_until(lambda: leader.leading, 10, "n1 never took the pairing lease")
    await wait_until(lambda: n2.arena.cluster and n2.arena.cluster.leader == "n1", 5, "n2 did not learn who leads")
    held = hold_starts(n2)
    alpha = await n2.connect(await n1.create_bot("alpha"))
    await alpha.send({"type": "seek"})
    # The leader decides alpha's first qualification game and asks alpha's node, n2, to host it.
    await wait_until(lambda: held, 5, "the leader asked no node to start a game")
    loop = asyncio.get_running_loop()
    dropped = held[0].setup
    assert dropped.players in (("alpha", "house"), ("house", "alpha")) and dropped.kind == "qualification"
    assert dropped.game_id in leader.remote_games.placing
    assert await starting(n1) == (1, 1.0, 0)  # on its way, not yet running
    assert await starting(n2) == (0, 0.0, 0)
    # From when the leader asked (its own clock, the loop's): the request reaches n2 and this
    # test later, which would shorten the wait measured from here.
    asked_at = leader.remote_games.placing[dropped.game_id].since
    ladder, manager = n1.arena.ladder, n1.arena.manager
    assert manager.running_count("alpha") == 1 and manager.open_slots("alpha") == 0  # its slot is taken meanwhile
    assert ladder.qualification.bots["alpha"].pair is not None
    # The leader waits for that start, then gives the game up.
    await wait_until(lambda: dropped.game_id not in leader.remote_games.placing, PLACE_TIMEOUT_S + 3,
                     "the leader never gave the game up")
    waited = loop.time() - asked_at
    assert PLACE_TIMEOUT_S <= waited < PLACE_TIMEOUT_S + 2, waited
    # The pairing was not made: the slot is free again and alpha's qualification pairs anew,
    # this time on a node that starts it (n2 again: alpha is there).
    start = await alpha.until(GameStart, 5)
    await wait_until(lambda: is_now(starting(n1), (0, 0.0, 1)), 5, "the leader still counts a game as starting")
    assert start.game_id != dropped.game_id and start.kind == "qualification"
    assert n2.arena.manager.lookup(start.game_id) is not None
    await n2.arena.manager.flush()  # its start row is stored
    store = PostgresStorage(pg_url, schema=pg_schema, max_size=2)
    await store.open()
    try:
        assert await store.get_game(dropped.game_id) is None
        row = await store.get_game(start.game_id)
        assert row is not None and row.host == "n2"
    finally:
        await store.close()
    await alpha.close()


async def test_a_bot_that_leaves_before_its_game_starts_frees_the_pairing_at_once(make_cluster: MakeCluster) -> None:
    n1, n2 = await make_cluster(2, pairing_wait_s=0.2)
    leader = n1.arena.cluster
    assert leader is not None
    await wait_until(lambda: leader.leading, 10, "n1 never took the pairing lease")
    await wait_until(lambda: n2.arena.cluster and n2.arena.cluster.leader == "n1", 5, "n2 did not learn who leads")
    held = hold_starts(n2)
    alpha = await n2.connect(await n1.create_bot("alpha"))
    await alpha.send({"type": "seek"})
    await wait_until(lambda: held, 5, "the leader asked no node to start a game")
    order = held[0]
    await alpha.close()  # between the leader's decision and the start on n2
    await wait_until(lambda: not n1.arena.manager.can_play("alpha"), 5, "the leader did not hear alpha left")
    assert order.setup.game_id in leader.remote_games.placing
    loop = asyncio.get_running_loop()
    delivered = loop.time()
    n2.arena.cluster.remote_games._on_start_game("n1", order)  # the order reaches n2 now
    await wait_until(lambda: order.setup.game_id not in leader.remote_games.placing, 2,
                     "the leader did not hear the game was not started")
    assert loop.time() - delivered < 1.0  # told, not timed out
    assert n2.arena.manager.lookup(order.setup.game_id) is None
    ladder = n1.arena.ladder
    assert not ladder.pairs and ladder.qualification.bots["alpha"].pair is None
    assert n1.arena.manager.running_count("alpha") == 0


# ---------------------------------------------------------------------- kill -9 of the leader

BOTS = {"a1": 0, "a2": 0, "b1": 1, "b2": 1, "c1": 2, "c2": 2}
"""Each bot's node: two on each of n1 (which leads), n2 and n3."""


class Roamer:
    """A ladder bot that keeps every frame; when its node dies it connects to the next one."""

    def __init__(self, name: str, token: str, urls: list[str], seed: int) -> None:
        self.name = name
        self.token = token
        self.urls = urls
        self.rng = random.Random(seed)
        self.frames: list[Any] = []

    async def run(self, http: aiohttp.ClientSession) -> None:
        for url in self.urls * 100:
            try:
                async with http.ws_connect(url.replace("http", "ws", 1) + "/ws") as ws:
                    await ws.send_json({"type": "hello", "protocol": PROTOCOL_VERSION, "token": self.token,
                                        "max_games": 2})
                    await ws.send_json({"type": "seek"})
                    async for frame in ws:
                        if frame.type is not aiohttp.WSMsgType.TEXT:
                            break
                        msg = _decoder.decode(frame.data)
                        self.frames.append(msg)
                        if isinstance(msg, Decision):
                            await asyncio.sleep(0.05)
                            move = msgspec.to_builtins(self.rng.choice(msg.legal))
                            await ws.send_json({"type": "move", "game_id": msg.game_id,
                                                "request_id": msg.request_id, "move": move})
            except (aiohttp.ClientError, ConnectionError):
                pass
            await asyncio.sleep(0.1)

    def resumed(self) -> set[str]:
        """The games this bot was told resumed (taken over, or on its reconnecting)."""
        return {f.game_id for f in self.frames if isinstance(f, GameStart) and f.resumed}


async def running_by_host(database: str) -> dict[str, tuple[str | None, int]]:
    store = PostgresStorage(database, max_size=1)
    await store.open()
    try:
        return {g.game_id: (g.host, g.epoch) for g in await store.running_games()}
    finally:
        await store.close()


EARLY_PLIES = 30
"""Moves stored below which a game is far from its end (a game of random bots lasts 60 to 100)."""


async def running_with_plies(database: str) -> dict[str, tuple[str | None, int, int]]:
    """Each running game's host, epoch and moves stored, read in one statement: one moment."""
    conn = await asyncpg.connect(database)
    try:
        rows = await conn.fetch(f"""SELECT id, host, epoch,
                                           (SELECT count(*) FROM game_moves m WHERE m.game_id = g.id)
                                    FROM games g WHERE {RUNNING}""")
    finally:
        await conn.close()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


async def test_kill_9_of_the_leader_takes_over_only_the_games_it_hosted(
        database: str, fresh_redis: str, tmp_path: Path) -> None:
    config = tmp_path / "arena.toml"
    config.write_text(FAST + "decision_ms = 5000\n")
    async with aiohttp.ClientSession() as http:
        servers: list[ServeProcess] = []
        tasks: list[asyncio.Task[None]] = []
        try:
            for name in ("n1", "n2", "n3"):
                servers.append(node(database, fresh_redis, name, config, tmp_path))
                await servers[-1].ready(http)
                if name == "n1":
                    await wait_until(lambda: leader_of(http, servers[0]), 10, "n1 never led")
            for s in servers:
                await wait_until(lambda s=s: is_now(leader_of(http, s), "n1"), 5, "a node did not learn that n1 leads")
            n1, n2, _ = servers
            tokens = await n1.create_bots(http, list(BOTS))
            urls = [s.url for s in servers]
            # Each bot on its node; when n1 dies its bots come back on n2 (or n3).
            roamers = [Roamer(name, tokens[name], [urls[i]] + [u for u in urls[1:] if u != urls[i]], seed)
                       for seed, (name, i) in enumerate(BOTS.items())]
            tasks = [asyncio.create_task(r.run(http)) for r in roamers]

            async def ladder_games_on_every_node() -> dict[str, tuple[str | None, int]] | None:
                # n1's games far from their end, so none can finish between this read and the kill
                # below (a game n1 finished in that instant would rightly stay n1's).
                running = await running_with_plies(database)
                hosts = {host for host, _, _ in running.values()}
                early = all(plies < EARLY_PLIES for host, _, plies in running.values() if host == "n1")
                return {g: (host, epoch) for g, (host, epoch, _) in running.items()} if (
                    {"n1", "n2", "n3"} <= hosts and early) else None

            await wait_until(lambda: n1.rated_games(http), 60, "no rated game was played")
            before = await wait_until(ladder_games_on_every_node, 60, "no moment with games on every node", every=0.02)
            n1.kill(signal.SIGKILL)
            # n1 is dead: what it left running is what must be taken over, with any game it
            # started after the read above (one already taken over is at a later epoch).
            after = await running_by_host(database)
            on_n1 = {g for g, (host, epoch) in after.items() if host == "n1" or epoch > 0}
            others = {g: host for g, (host, epoch) in after.items() if host != "n1" and epoch == 0}
            assert {g for g, (host, _) in before.items() if host == "n1"} <= on_n1, "a game of n1 ended as it died"
            assert others

            async def taken_over() -> bool:
                running = await running_by_host(database)
                return not any(running.get(g, ("", 0))[0] == "n1" for g in on_n1)

            await wait_until(taken_over, 15, "n1's games were not taken over")
            await wait_until(lambda: _new_leader(http, n2), 5, "neither n2 nor n3 took the lead")
            # The games of n2 and n3 play to their end where they are, and n1's where they moved;
            # a game still running at the stop below would be handed on again, at a later epoch.
            await wait_until(lambda: _ended(database, set(others)), 60, "the other nodes' games did not end")
            await wait_until(lambda: _ended(database, on_n1), 60, "the games taken over from n1 did not end")
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for s in servers:
                if s.proc.poll() is None:
                    s.kill(signal.SIGTERM)
    store = PostgresStorage(database, max_size=2)
    await store.open()
    try:
        rows = await stored_games(store)
        for game_id, host in others.items():  # never moved, never taken over
            g = rows[game_id]
            assert (g.status, g.host, g.epoch) == ("finished", host, 0), (game_id, g.status, g.host, g.epoch)
        for game_id in on_n1:  # moved to the new leader (n2 or n3), at the next epoch
            g = rows[game_id]
            assert g.host in ("n2", "n3") and g.epoch == 1, (game_id, g.host, g.epoch)
        await assert_ratings_replay(store, list(BOTS))
    finally:
        await store.close()
    # Nobody playing on n2 or n3 was told any of its games there resumed: only n1's moved.
    for r in roamers:
        if BOTS[r.name] != 0:
            assert r.resumed() <= on_n1, (r.name, r.resumed() - on_n1)


async def _new_leader(http: aiohttp.ClientSession, server: ServeProcess) -> bool:
    return await leader_of(http, server) in ("n2", "n3")


async def _ended(database: str, games: set[str]) -> bool:
    return not games & set(await running_by_host(database))
