"""A game survives the death of its node: nodes as processes over a real Redis and PostgreSQL.

The node hosting a game is frozen (``SIGSTOP``) while a bot's answer is on its way, then
killed (``SIGKILL``): the ladder's leader rebuilds the game from its move log within 5 s, asks
the decision again with a new request id and a full clock, and the game plays to its end; the
answer the dead node never stored is never applied. A node paused past its liveness (the
others take it for dead) learns it lost the game at its first write and stops; a node that
stops cleanly leaves its games to be taken over; one restarted at once takes its own back.
Every seat's frames are checked: request ids only grow, no move is shown twice."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import msgspec
import redis.asyncio as aioredis

from arena_testkit import ServeProcess, WsClient, wait_until
from cluster_kit import FAST, connect, is_now, leader_of, node, replays_to_result, seat_consistency, starts
from protocol.messages import Challenged, ChallengeSent, Decision, Error, GameOver, GameStart, Update
from server.cluster.bus import Envelope, node_channel
from server.cluster.messages import ToBot
from server.games.room import REQUEST_EPOCH
from server.storage.postgres import PostgresStorage

DECISION_MS = 10_000


@contextlib.asynccontextmanager
async def three_nodes(http: aiohttp.ClientSession, database: str, redis_url: str,
                      tmp_path: Path) -> AsyncIterator[list[ServeProcess]]:
    """n1 (which leads the ladder), n2 and n3, each ready and knowing that n1 leads; those
    still running at the end are stopped (woken first if a test left one paused)."""
    config = tmp_path / "arena.toml"
    config.write_text(FAST + f"decision_ms = {DECISION_MS}\n")
    nodes: list[ServeProcess] = []
    try:
        nodes.append(node(database, redis_url, "n1", config, tmp_path))
        await nodes[0].ready(http)
        await wait_until(lambda: leader_of(http, nodes[0]), 10, "n1 never led")
        for name in ("n2", "n3"):
            nodes.append(node(database, redis_url, name, config, tmp_path))
            await nodes[-1].ready(http)
        for n in nodes:
            await wait_until(lambda n=n: is_now(leader_of(http, n), "n1"), 5, "a node did not learn that n1 leads")
        yield nodes
    finally:
        stop(nodes)


def stop(nodes: list[ServeProcess]) -> None:
    """SIGTERM to each node still running (woken first: a paused node would not stop)."""
    for n in nodes:
        if n.proc.poll() is None:
            n.proc.send_signal(signal.SIGCONT)
            n.kill(signal.SIGTERM)


async def challenge(a: WsClient, b: WsClient, opponent: str) -> tuple[GameStart, GameStart]:
    """``a`` challenges ``b`` (so the game runs on ``a``'s node) and ``b`` accepts."""
    await a.send({"type": "challenge", "opponent": opponent})
    sent = await a.recv()
    assert isinstance(sent, ChallengeSent), sent
    got = await b.until(Challenged)
    await b.send({"type": "accept", "challenge_id": got.challenge_id})
    return await a.until(GameStart), await b.until(GameStart)


async def play_until(seats: dict[int, WsClient], game_id: str, stop: Any) -> Decision:
    """Both seats answer their decisions with their first legal move until a decision
    ``stop(decision)`` holds; that decision (unanswered)."""
    waiting = {seat: asyncio.ensure_future(c.until(Decision, 10)) for seat, c in seats.items()}
    try:
        while True:
            done, _ = await asyncio.wait(waiting.values(), timeout=10, return_when=asyncio.FIRST_COMPLETED)
            assert done, "no decision came"
            for seat, task in list(waiting.items()):
                if task in done:
                    d = task.result()
                    assert d.game_id == game_id
                    if stop(d):
                        return d
                    await seats[seat].send_move(d, d.legal[0])
                    waiting[seat] = asyncio.ensure_future(seats[seat].until(Decision, 10))
    finally:
        for task in waiting.values():
            task.cancel()
        await asyncio.gather(*waiting.values(), return_exceptions=True)


async def play_out(seats: dict[int, WsClient], game_id: str) -> GameOver:
    """Both seats answer with their last legal move until the game is over; its ``game_over``."""
    async def one(c: WsClient) -> GameOver:
        while True:
            msg = await c.recv(30)
            if isinstance(msg, Decision) and msg.game_id == game_id:
                await c.send_move(msg, msg.legal[-1])
            elif isinstance(msg, GameOver) and msg.game_id == game_id:
                return msg

    overs = await asyncio.wait_for(asyncio.gather(*(one(c) for c in seats.values())), 60)
    assert overs[0] == overs[1]
    return overs[0]


def fair_end(over: GameOver, *clients: WsClient) -> None:
    """The game's record replays to its result, and no seat saw a request id go back or a
    move twice."""
    replays_to_result(over)
    for client in clients:
        assert seat_consistency(client.frames) == []


async def stored_game(database: str, game_id: str) -> Any:
    store = PostgresStorage(database, max_size=1)
    await store.open()
    try:
        return await store.get_game(game_id)
    finally:
        await store.close()


async def test_a_game_outlives_the_kill_9_of_its_host_and_an_answer_it_never_stored_is_asked_again(
        database: str, fresh_redis: str, tmp_path: Path) -> None:
    async with aiohttp.ClientSession() as http, three_nodes(http, database, fresh_redis, tmp_path) as nodes:
        n1, n2, n3 = nodes
        tokens = await n1.create_bots(http, ["alice", "bob"])
        alice, _ = await connect(http, n2.url, tokens["alice"])
        bob, _ = await connect(http, n3.url, tokens["bob"])
        spectator, _ = await connect(http, n3.url, None)
        for server, bot in ((n3, "alice"), (n2, "bob")):
            await wait_until(lambda s=server, b=bot: _connected(http, s, b), 5, f"{bot} unknown on a node")
        start, _ = await challenge(alice, bob, "bob")  # hosted by n2, alice's node
        game_id = start.game_id
        await spectator.send({"type": "watch", "game_id": game_id})
        await spectator.until(Update)
        seats = {start.seat: alice, 1 - start.seat: bob}
        # A few moves, then alice's decision: n2 freezes, her answer is sent, n2 dies.
        d = await play_until(seats, game_id, lambda d: d.request_id >= 8 and d.seat == start.seat)
        n2.proc.send_signal(signal.SIGSTOP)
        await alice.send_move(d, d.legal[0])
        n2.proc.send_signal(signal.SIGKILL)
        n2.proc.wait(10)
        loop = asyncio.get_running_loop()
        killed = loop.time()
        resumed = await bob.until(GameStart, 10)
        took = loop.time() - killed
        assert took < 5.0, f"the game was taken over {took:.2f} s after its node died"
        assert resumed.resumed and resumed.game_id == game_id
        again = await spectator.until(Update, 10)  # the spectator follows the game to n1
        while again.move is not None:  # the moves it had not read yet
            again = await spectator.until(Update, 10)
        assert again.ply == d.request_id

        # alice comes back through another node: the same decision, asked afresh.
        alice, welcome = await connect(http, n1.url, tokens["alice"])
        assert welcome.games == [game_id]
        back = await alice.expect(GameStart)
        assert back.resumed and back.game_id == game_id
        view = await alice.expect(Update)
        assert view.ply == d.request_id and view.move is None
        asked = await alice.expect(Decision)
        assert asked.request_id == REQUEST_EPOCH + d.request_id
        assert asked.legal == d.legal and asked.view == d.view
        assert DECISION_MS - 3000 < asked.deadline_ms <= DECISION_MS  # a full clock, less the reconnect
        # Her old answer is refused, not applied; she answers again, with another move.
        await alice.send_move(d, d.legal[0])
        assert (await alice.until(Error)).code == "stale_request"
        await alice.send_move(asked, asked.legal[-1])
        seats = {start.seat: alice, 1 - start.seat: bob}
        over = await play_out(seats, game_id)
        assert (await spectator.until(GameOver, 10)) == over
        # The bot's author sees it in the seat replay: the decision asked again, and why.
        async with http.get(f"{n3.url}/api/games/{game_id}/replay?seat={start.seat}") as resp:
            replay = await resp.json()
        at = replay["plies"][d.request_id]
        assert at["decision"]["request_id"] == REQUEST_EPOCH + d.request_id
        took_over, stale = at["incidents"]
        assert (took_over["kind"], took_over["epoch"], took_over["node"]) == ("takeover", 1, "n1")
        assert (stale["kind"], stale["code"], stale["request_id"]) == ("refused", "stale_request", d.request_id)
    replays_to_result(over)
    assert over.record.moves[d.request_id] == msgspec.convert(
        {**msgspec.to_builtins(d.legal[-1]), "player": start.seat}, type(over.record.moves[d.request_id]))
    for client in (alice, bob, spectator):
        assert seat_consistency(client.frames) == []
    assert len(starts(bob.frames, game_id)) == 2  # the start, and the takeover
    row = await stored_game(database, game_id)
    assert (row.status, row.host, row.epoch) == ("finished", "n1", 1)
    assert row.result["winner"] == over.result.winner


async def _connected(http: aiohttp.ClientSession, server: ServeProcess, bot: str) -> bool:
    """Whether ``server`` knows ``bot`` is connected (to any node)."""
    async with http.get(server.url + f"/api/bots/{bot}") as resp:
        return bool((await resp.json()).get("connected"))


async def hosted_game(http: aiohttp.ClientSession, nodes: list[ServeProcess], ply: int,
                      hers: bool) -> tuple[dict[str, str], WsClient, WsClient, GameStart, Decision]:
    """alice on n2 challenges bob on n3: a game hosted by n2, played up to the first decision
    at ``ply`` or later that is alice's (``hers``) or bob's. The bots' tokens, her client, his,
    her start, and that decision (unanswered)."""
    n1, n2, n3 = nodes
    tokens = await n1.create_bots(http, ["alice", "bob"])
    alice, _ = await connect(http, n2.url, tokens["alice"])
    bob, _ = await connect(http, n3.url, tokens["bob"])
    for server, bot in ((n3, "alice"), (n2, "bob")):
        await wait_until(lambda s=server, b=bot: _connected(http, s, b), 5, f"{bot} unknown on a node")
    start, _ = await challenge(alice, bob, "bob")
    d = await play_until({start.seat: alice, 1 - start.seat: bob}, start.game_id,
                         lambda d: d.request_id >= ply and (d.seat == start.seat) == hers)
    return tokens, alice, bob, start, d


async def asked_again(client: WsClient, game_id: str, d: Decision, epoch: int = 1, timeout: float = 10) -> Decision:
    """The game resumed on ``client``'s seat after a takeover (the ``epoch``-th), and the
    decision ``d`` asked again under the epoch's request id."""
    resumed = await client.until(GameStart, timeout)
    assert resumed.resumed and resumed.game_id == game_id
    asked = await client.until(Decision, timeout)
    assert asked.request_id == epoch * REQUEST_EPOCH + d.request_id
    return asked


def log_of(server: ServeProcess) -> str:
    return server.log_path.read_text()


async def test_a_node_paused_past_its_liveness_loses_its_game_and_never_applies_a_move(
        database: str, fresh_redis: str, tmp_path: Path) -> None:
    async with aiohttp.ClientSession() as http, three_nodes(http, database, fresh_redis, tmp_path) as nodes:
        n1, n2, _ = nodes
        _tokens, alice, bob, start, d = await hosted_game(http, nodes, ply=6, hers=True)
        game_id = start.game_id
        seats = {start.seat: alice, 1 - start.seat: bob}
        # n2 stops for longer than its liveness key lives: n1 takes the game over.
        n2.proc.send_signal(signal.SIGSTOP)
        resumed = await bob.until(GameStart, 10)
        assert resumed.resumed and resumed.game_id == game_id
        # alice answers the decision n2 asked, and n2 wakes up still believing it runs the game.
        await alice.send_move(d, d.legal[0])
        n2.proc.send_signal(signal.SIGCONT)
        # Her connection stays on n2; the game reaches her from n1, through n2.
        asked = await asked_again(alice, game_id, d)
        await alice.send_move(asked, asked.legal[-1])
        over = await play_out(seats, game_id)
        await wait_until(lambda: "another node runs it now" in log_of(n2), 5, "n2 never said it lost the game")
        assert f"game {game_id} taken over at ply {d.request_id} (epoch 1)" in log_of(n1)
    replays_to_result(over)
    assert over.record.moves[d.request_id] == msgspec.convert(
        {**msgspec.to_builtins(d.legal[-1]), "player": start.seat}, type(over.record.moves[d.request_id]))
    assert not [f for f in alice.frames if type(f).__name__ == "MoveAccepted" and f.request_id == d.request_id]
    for client in (alice, bob):
        assert seat_consistency(client.frames) == []
    row = await stored_game(database, game_id)
    assert (row.status, row.host, row.epoch) == ("finished", "n1", 1)


async def test_frames_a_paused_host_publishes_as_it_wakes_never_reach_a_seat_its_game_moved_from(
        database: str, fresh_redis: str, tmp_path: Path) -> None:
    """A node paused past its liveness may hold frames it had queued but not yet published (bob's
    ``update`` of the move before the pause); it publishes them as it wakes, after the new host
    resumed the seat. bob's node drops them (their epoch is older than the game's), so no move
    is shown to him twice. The late publish is made here, as n2 would make it, then a frame of
    the new host's, which comes after it: when bob reads that one, n3 has handled both."""
    async with aiohttp.ClientSession() as http, three_nodes(http, database, fresh_redis, tmp_path) as nodes:
        _, n2, n3 = nodes
        _tokens, _alice, bob, start, d = await hosted_game(http, nodes, ply=4, hers=True)
        game_id = start.game_id
        last = [f for f in bob.frames if isinstance(f, Update) and f.game_id == game_id][-1]
        while last.ply < d.request_id:  # the update of the move before d, on its way through n3
            last = await bob.until(Update, 10)
        assert last.ply == d.request_id and last.move is not None
        n2.proc.send_signal(signal.SIGSTOP)
        resumed = await bob.until(GameStart, 10)
        assert resumed.resumed and resumed.game_id == game_id
        now = await bob.until(Update, 10)
        assert (now.ply, now.move) == (d.request_id, None)
        r = aioredis.Redis.from_url(fresh_redis)
        try:
            for sender, frame, epoch in (("n2", last, 0), ("n1", now, 1)):
                to_bot = ToBot("bob", msgspec.Raw(msgspec.json.encode(frame)), game_id, epoch=epoch)
                await r.publish(node_channel("n3"), msgspec.json.encode(Envelope(sender, [to_bot])))
        finally:
            await r.aclose()
        assert await bob.until(Update, 10) == now
        await wait_until(lambda: f"a frame of game {game_id} for bob from n2 at epoch 0 dropped" in log_of(n3), 5,
                         "n3 never said it dropped the late frame")
        n2.proc.send_signal(signal.SIGCONT)
    assert seat_consistency(bob.frames) == []
    assert [f.ply for f in bob.frames if isinstance(f, Update) and f.game_id == game_id][-3:] == [d.request_id] * 3


async def test_a_node_that_stops_leaves_its_game_to_another_node(
        database: str, fresh_redis: str, tmp_path: Path) -> None:
    async with aiohttp.ClientSession() as http, three_nodes(http, database, fresh_redis, tmp_path) as nodes:
        _, n2, n3 = nodes
        tokens, alice, bob, start, d = await hosted_game(http, nodes, ply=5, hers=False)
        game_id = start.game_id
        assert n2.kill(signal.SIGTERM) == 0
        assert "n2 leaves 1 game(s) to be taken over" in log_of(n2)
        assert await alice.closed() == 1001
        asked = await asked_again(bob, game_id, d, timeout=5)  # his decision, asked again
        assert asked.deadline_ms == DECISION_MS
        alice, welcome = await connect(http, n3.url, tokens["alice"])
        assert welcome.games == [game_id]
        await bob.send_move(asked, asked.legal[0])
        over = await play_out({start.seat: alice, 1 - start.seat: bob}, game_id)
    fair_end(over, alice, bob)
    assert over.result.end_reason != "aborted"
    row = await stored_game(database, game_id)
    assert (row.status, row.host, row.epoch) == ("finished", "n1", 1)


async def test_a_node_restarted_at_once_takes_its_game_back(
        database: str, fresh_redis: str, tmp_path: Path) -> None:
    async with aiohttp.ClientSession() as http, three_nodes(http, database, fresh_redis, tmp_path) as nodes:
        n1, n2, _ = nodes
        tokens, alice, bob, start, d = await hosted_game(http, nodes, ply=5, hers=False)
        game_id = start.game_id
        port = int(n2.url.rsplit(":", 1)[1])
        n2.kill(signal.SIGKILL)
        nodes[1] = n2 = node(database, fresh_redis, "n2", tmp_path / "arena.toml", tmp_path, port)
        await n2.ready(http)
        asked = await asked_again(bob, game_id, d, timeout=10)
        alice, welcome = await connect(http, n2.url, tokens["alice"])
        assert welcome.games == [game_id]
        await bob.send_move(asked, asked.legal[0])
        over = await play_out({start.seat: alice, 1 - start.seat: bob}, game_id)
    fair_end(over, alice, bob)
    row = await stored_game(database, game_id)
    # Taken back by n2 as it started (quicker than its liveness key's expiry), or by n1.
    assert row.status == "finished" and row.epoch == 1 and row.host in ("n1", "n2")
    taker = n2 if row.host == "n2" else n1
    assert f"game {game_id} taken over" in log_of(taker)


async def test_postgresql_down_during_a_takeover_is_waited_for_then_the_game_is_given_up(
        fresh_redis: str, tmp_path: Path) -> None:
    """PostgreSQL (a server of the test's own) stops as a node dies: the takeover is retried and
    succeeds once it is back; when it stays away past ``takeover_budget_s``, the game is given
    up (its seat on a living node closed with 4010) and stored aborted once PostgreSQL is back."""
    from test_storage_faults import PostgresDown

    fault = PostgresDown(tmp_path)
    config = tmp_path / "arena.toml"
    config.write_text(FAST + f"decision_ms = {DECISION_MS}\ntakeover_budget_s = 6.0\nstorage_retry_max_s = 0.25\n"
                      "storage_probe_s = 0.2\nstorage_timeout_s = 2.0\n")
    nodes: list[ServeProcess] = []
    try:
        async with aiohttp.ClientSession() as http:
            for name in ("n1", "n2", "n3"):
                nodes.append(node(fault.db, fresh_redis, name, config, tmp_path))
                await nodes[-1].ready(http)
                if name == "n1":
                    await wait_until(lambda: leader_of(http, nodes[0]), 10, "n1 never led")
            n1, n2, n3 = nodes

            # A short outage: the takeover waits for PostgreSQL, then the game goes on.
            tokens, alice, bob, start, d = await hosted_game(http, nodes, ply=5, hers=False)
            game_id = start.game_id
            n2.kill(signal.SIGKILL)
            fault.inject()
            await wait_until(lambda: f"taking over game {game_id} failed" in log_of(n1), 15,
                             "n1 never tried to take the game over")
            fault.clear()
            asked = await asked_again(bob, game_id, d, timeout=15)
            alice, _ = await connect(http, n1.url, tokens["alice"])
            await bob.send_move(asked, asked.legal[0])
            over = await play_out({start.seat: alice, 1 - start.seat: bob}, game_id)
            replays_to_result(over)

            # A long one: the game is given up and its seat on a living node closed with 4010.
            await bob.send({"type": "challenge", "opponent": "alice"})  # hosted by n3, bob's node
            got = await alice.until(Challenged)
            await alice.send({"type": "accept", "challenge_id": got.challenge_id})
            mine = await alice.until(GameStart)
            lost = mine.game_id
            await bob.until(GameStart)
            await play_until({mine.seat: alice, 1 - mine.seat: bob}, lost, lambda d: d.request_id >= 2)  # stored
            n3.kill(signal.SIGKILL)
            fault.inject()
            assert await alice.closed(20) == 4010
            assert f"game {lost}: its move log could not be read for 6 s" in log_of(n1)
            fault.clear()
            await wait_until(lambda: _status(http, n1, lost), 15, "the game given up was never stored aborted")
    finally:
        stop(nodes)
        fault.close()
    for client in (alice, bob):
        assert seat_consistency(client.frames) == []


async def _status(http: aiohttp.ClientSession, server: ServeProcess, game_id: str) -> bool:
    """Whether ``server`` says the game is stored aborted."""
    async with http.get(f"{server.url}/api/games/{game_id}") as resp:
        return resp.status == 200 and (await resp.json())["status"] == "aborted"


async def test_the_node_that_took_a_game_over_dies_too_and_the_next_leader_takes_it_again(
        database: str, fresh_redis: str, tmp_path: Path) -> None:
    async with aiohttp.ClientSession() as http, three_nodes(http, database, fresh_redis, tmp_path) as nodes:
        n1, n2, n3 = nodes
        tokens, alice, bob, start, d = await hosted_game(http, nodes, ply=5, hers=False)
        game_id = start.game_id
        n2.kill(signal.SIGKILL)
        await asked_again(bob, game_id, d)  # from n1, which leads
        n1.kill(signal.SIGKILL)  # the leader dies with the game it just took over
        await wait_until(lambda: is_now(leader_of(http, n3), "n3"), 10, "n3 never led")
        again = await asked_again(bob, game_id, d, epoch=2)
        alice, welcome = await connect(http, n3.url, tokens["alice"])
        assert welcome.games == [game_id]
        await bob.send_move(again, again.legal[0])
        over = await play_out({start.seat: alice, 1 - start.seat: bob}, game_id)
    fair_end(over, alice, bob)
    row = await stored_game(database, game_id)
    assert (row.status, row.host, row.epoch) == ("finished", "n3", 2)
