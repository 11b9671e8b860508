"""The audience never slows the games (``server/audience/live.py``, ``server/connections/pacing.py``): ``/live``
in batches at a human pace, encoded once for every viewer; by default a stream whose size does
not grow with the arena (the top of the standings and what changed in it, a sample of the
games, counts), every game for those who ask; spectators' updates encoded once per ply;
viewers that fall behind skipped forward, never queued for; viewers that send garbage or
flood closed; connections per address capped."""

from __future__ import annotations

import asyncio
import base64
import itertools
import logging
import os
import socket
import struct
import time
from typing import Any

import aiohttp
import msgspec
import pytest
from aiohttp import WSMsgType

import server.connections.outbox
import server.games.room
from arena_testkit import Harness, LiveStream, gather, play_out, random_policy, slow_websocket, standings_of, wait_until
from protocol.live import RUNNING_SHOWN, SAMPLED_PER_S, TOP, LiveBatch, LiveCounts, LiveTopChanged
from protocol.messages import GameOver, LiveGameEnded, LiveGames, LiveGameStarted, LiveStandings, Update

GAMES = 12
MANY = 160


class RawViewer:
    """A ``/live`` viewer on a bare socket that takes 4 KB at a time and reads only when told:
    a browser tab on a slow machine, or one that hangs."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def connect(cls, host: str, port: int, path: str = "/live") -> RawViewer:
        return cls(*await slow_websocket(host, port, path, limit=4096))  # stops reading past 8 KB

    async def batch(self) -> LiveBatch:
        """The next frame (a server's frames are unmasked text frames)."""
        first, second = await self.reader.readexactly(2)
        assert first == 0x81, f"not a final text frame: {first:#x}"
        length = second & 0x7F
        if length == 126:
            (length,) = struct.unpack("!H", await self.reader.readexactly(2))
        elif length == 127:
            (length,) = struct.unpack("!Q", await self.reader.readexactly(8))
        return msgspec.json.decode(await self.reader.readexactly(length), type=LiveBatch)


def server_side(arena: Harness, before: set[Any]) -> Any:
    """The outbox of the one ``/live`` viewer that joined since ``before``."""
    new = [o for o in arena.arena.live.viewers if o not in before]
    return new[0] if len(new) == 1 else None


async def test_live_sends_every_game_to_who_asks_at_its_pace_encoded_once(make_arena: Any) -> None:
    rate = 4.0
    arena: Harness = await make_arena(live_batches_per_second=rate, messages_per_second=1000.0, burst=1000)
    viewers = [LiveStream(await arena.client.ws_connect("/live?games=all")) for _ in range(5)]
    for viewer in viewers:
        first = await viewer.batch()
        assert [type(m).__name__ for m in first.messages] == ["LiveGames", "LiveStandings", "LiveCounts", "LiveHealth"]
    alice, bob = await arena.bot("alice", max_games=GAMES), await arena.bot("bob", max_games=GAMES)
    began = time.monotonic()
    games = [await arena.start_game(["alice", "bob"]) for _ in range(GAMES)]
    await gather(play_out(alice, random_policy(1), GAMES), play_out(bob, random_policy(2), GAMES), timeout=60)
    ended: dict[int, set[str]] = {i: set() for i in range(len(viewers))}
    started: dict[int, set[str]] = {i: set() for i in range(len(viewers))}
    for i, viewer in enumerate(viewers):
        while ended[i] != set(games):
            msg = await viewer.event()
            if isinstance(msg, LiveGameStarted):
                started[i].add(msg.game.game_id)
            elif isinstance(msg, LiveGameEnded):
                ended[i].add(msg.game.game_id)
    elapsed = time.monotonic() - began
    for i, viewer in enumerate(viewers):
        assert started[i] == set(games)
        # Every start and end arrived, in at most one frame per tick (plus the fresh start).
        assert len(viewer.batches) <= 1 + elapsed * rate + 1, (len(viewer.batches), elapsed)
        assert len(viewer.batches) < 2 * GAMES  # 24 events did not each take a frame
    # One encoding for all viewers: the same batch is the same bytes for each.
    raw: dict[int, set[bytes]] = {}
    for viewer in viewers:
        for batch in viewer.batches[1:]:
            raw.setdefault(batch.seq, set()).add(msgspec.json.encode(batch))
    assert raw and all(len(frames) == 1 for frames in raw.values())
    seqs = [b.seq for b in viewers[0].batches[1:]]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    for viewer in viewers:
        await viewer.close()


async def test_a_viewer_that_falls_behind_is_skipped_then_starts_afresh_and_one_that_never_reads_is_dropped(
        make_arena: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # Enough news to fill what the kernel holds for a viewer (about 16 KB here):
    # any byte unsent makes a viewer "behind" (so a few kilobytes are enough to show it).
    monkeypatch.setattr(server.connections.outbox, "AUDIENCE_LOW_WATER", 0)
    arena: Harness = await make_arena(live_batches_per_second=50.0, audience_stall_s=3600.0, heartbeat_s=60.0,
                                      messages_per_second=1000.0, burst=1000)
    hub = arena.arena.live
    host, port = str(arena.client.host), int(arena.client.port)  # type: ignore[arg-type]
    outboxes = []
    viewers = []
    for _ in range(2):
        known = set(hub.viewers)
        viewers.append(await RawViewer.connect(host, port, "/live?games=all"))
        outbox = await wait_until(lambda known=known: server_side(arena, known), 5, "the viewer did not join")
        outbox.transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        outboxes.append(outbox)
    slow = viewers[0]  # the other one never reads
    first = await slow.batch()
    assert isinstance(first.messages[0], LiveGames)
    alice, bob = await arena.bot("alice", max_games=64), await arena.bot("bob", max_games=64)
    games = []
    for _ in range(MANY // 40):
        games += [await arena.start_game(["alice", "bob"]) for _ in range(40)]
        await gather(play_out(alice, random_policy(3), 40), play_out(bob, random_policy(4), 40), timeout=60)
    await wait_until(lambda: all(hub.viewers[o].fresh for o in outboxes), 10, "the viewers never fell behind")
    # Behind, they were skipped: nothing queued for them on the server.
    assert all(o.waiting == 0 for o in outboxes)
    more = await arena.start_game(["alice", "bob"])  # news after they fell behind

    # The slow one reads again: the batches its socket held, then (the ones it missed skipped)
    # a fresh start holding the state as it is now.
    def fresh_with_news(batch: LiveBatch) -> bool:
        head = batch.messages[0] if batch.messages else None
        return isinstance(head, LiveGames) and more in [g.game_id for g in head.running]

    seen = [first]
    while not fresh_with_news(seen[-1]):  # (it may have caught up and fallen behind before)
        seen.append(await asyncio.wait_for(slow.batch(), 10))
    games_now = seen[-1].messages[0]
    assert isinstance(games_now, LiveGames)
    assert {g.game_id for g in games_now.recent} <= set(games) and len(games_now.recent) == 20
    batches = seen[1:]
    assert all(b.seq > a.seq for a, b in itertools.pairwise(batches))

    # The stuck one never reads: dropped once it has read nothing for the stall time.
    with caplog.at_level(logging.WARNING, logger="server.connections.pacing"):
        arena.arena.live.stall_s = 0.3
        await wait_until(lambda: outboxes[1] not in hub.viewers and outboxes[1].closing, 10, "never dropped")
    assert any("has not caught up for" in r.getMessage() and "/live viewer" in r.getMessage() for r in caplog.records)
    assert outboxes[0] in hub.viewers  # the one that reads stays
    for viewer in viewers:
        viewer.writer.close()
    await gather(play_out(alice, random_policy(5)), play_out(bob, random_policy(6)), timeout=30)


def followed(stream: LiveStream, running: dict[str, Any], batch: LiveBatch) -> int:
    """Apply a batch's games to what the viewer knows runs; the games it tells of anew (a
    start, or the end of a game the viewer did not know ran)."""
    new = 0
    for event in batch.messages:
        if isinstance(event, LiveGames):
            running.clear()
            running.update((g.game_id, g) for g in event.running)
        elif isinstance(event, LiveGameStarted):
            running[event.game.game_id] = event.game
            new += 1
        elif isinstance(event, LiveGameEnded):
            new += running.pop(event.game.game_id, None) is None
    return new


async def test_by_default_a_viewer_gets_a_sample_of_the_games_and_counts_whatever_their_number(make_arena: Any) -> None:
    arena: Harness = await make_arena(live_batches_per_second=20.0, messages_per_second=1000.0, burst=1000)
    live = LiveStream(await arena.client.ws_connect("/live"))
    every = LiveStream(await arena.client.ws_connect("/live?games=all"))
    first = await live.batch()
    assert [type(m).__name__ for m in first.messages] == ["LiveGames", "LiveStandings", "LiveCounts", "LiveHealth"]
    assert first.messages[2] == LiveCounts(running=0, games_per_minute=0, bots_connected=0)
    await every.batch()
    games = 48
    alice, bob = await arena.bot("alice", max_games=games), await arena.bot("bob", max_games=games)
    began = time.monotonic()
    ids = [await arena.start_game(["alice", "bob"]) for _ in range(games)]
    await gather(play_out(alice, random_policy(21), games), play_out(bob, random_policy(22), games), timeout=60)

    running: dict[str, Any] = {}
    started: set[str] = set()  # the games it was told of
    while live.batches[-1].messages[-1:] != [LiveCounts(running=0, games_per_minute=games, bots_connected=2)]:
        batch = await live.batch(10)
        # At most SAMPLED_PER_S games told of anew a batch, besides the ends of those it follows,
        # and never more than RUNNING_SHOWN followed at once.
        assert followed(live, running, batch) <= SAMPLED_PER_S, batch
        assert len(running) <= RUNNING_SHOWN
        started |= {e.game.game_id for e in batch.messages if isinstance(e, (LiveGameStarted, LiveGameEnded))}
    elapsed = time.monotonic() - began
    assert running == {}  # every game it was told started, it was told ended
    told = sum(isinstance(e, (LiveGameStarted, LiveGameEnded)) for b in live.batches for e in b.messages)
    assert told <= 2 * (RUNNING_SHOWN + SAMPLED_PER_S * elapsed)  # each game it took on: a start, an end
    assert started and started < set(ids)  # a sample: some games (a short one only by its end), not all
    assert len(live.batches) <= 2 + elapsed  # at most one batch a second, plus the fresh start
    # The viewer of every game was told of each start and end, in more batches.
    while {e.game.game_id for b in every.batches for e in b.messages if isinstance(e, LiveGameEnded)} != set(ids):
        await every.batch(10)
    assert {e.game.game_id for b in every.batches for e in b.messages if isinstance(e, LiveGameStarted)} == set(ids)
    # Both streams' news of a tick is one batch with one number; the counts are the same.
    counts = {b.seq: b.messages[-1] for b in live.batches[1:]}
    assert all(counts[b.seq] == b.messages[-1] for b in every.batches[1:] if b.seq in counts)
    # A viewer that joins now sees the games of the sample that run (none) and the recent results.
    late = LiveStream(await arena.client.ws_connect("/live"))
    fresh = (await late.batch()).messages[0]
    assert isinstance(fresh, LiveGames) and fresh.running == [] and len(fresh.recent) == 20
    for stream in (live, every, late):
        await stream.close()


def moved(table: LiveStandings, changes: dict[int, dict[str, Any]], paused: bool = False) -> LiveStandings:
    """The table with the rows at these indexes changed (a refresh)."""
    rows = list(table.standings)
    for i, fields in changes.items():
        rows[i] = msgspec.structs.replace(rows[i], **fields)
    return LiveStandings(paused=paused, standings=rows, total=len(rows), offset=0)


async def test_a_viewer_is_sent_the_top_of_the_standings_and_only_what_changed_in_it(make_arena: Any) -> None:
    arena: Harness = await make_arena(live_batches_per_second=20.0)
    hub = arena.arena.live

    def refresh(table: LiveStandings) -> None:  # what the ladder does once it computed a table
        arena.arena.ladder.table = table
        hub.publish(table)

    table = standings_of(10_000)
    refresh(table)
    live = LiveStream(await arena.client.ws_connect("/live"))
    await live.batch()
    # Ten thousand bots: the fresh start holds the top 20 and the total, a few kilobytes.
    assert live.top == table.standings[:TOP] and live.total == 10_000
    assert len(live.raw[0]) < 12_000

    # Two bots of the top swap places, and a bot far below plays: only the two rows are sent.
    fifth, sixth = table.standings[4], table.standings[5]
    swapped = moved(table, {4: {"bot": sixth.bot, "games": 41}, 5: {"bot": fifth.bot, "games": 41},
                            500: {"games": 41}})
    refresh(swapped)
    change = await live.next_of(LiveTopChanged, 5)
    assert [r.rank for r in change.changed] == [5, 6] and (change.rows, change.total) == (TOP, 10_000)
    assert live.top == swapped.standings[:TOP]
    mark = len(live.batches)

    # A change below the top alone sends nothing of the standings; pausing sends no row.
    below = moved(swapped, {700: {"games": 42}})
    refresh(below)
    await wait_until(lambda: hub.top_of is below, 5, "the hub never looked at the table")
    paused = moved(below, {}, paused=True)
    refresh(paused)
    change = await live.next_of(LiveTopChanged, 5)
    assert change.changed == [] and change.paused and live.paused
    assert not [e for b in live.batches[mark:-1] for e in b.messages if isinstance(e, LiveTopChanged)]

    # The table shrinks below the top's size: the rows beyond it go.
    short = LiveStandings(paused=True, standings=paused.standings[:3], total=3, offset=0)
    refresh(short)
    change = await live.next_of(LiveTopChanged, 5)
    assert (change.rows, change.changed, live.top) == (3, [], short.standings)
    # ... and grows again: the new rows are sent.
    refresh(table)
    change = await live.next_of(LiveTopChanged, 5)
    assert [r.rank for r in change.changed] == list(range(4, TOP + 1)) and not change.paused
    assert live.top == table.standings[:TOP]
    await live.close()


async def test_a_bad_choice_of_stream_is_refused_before_the_upgrade(make_arena: Any) -> None:
    arena: Harness = await make_arena()
    for query in ("games=some", "games=", "games=ALL"):
        resp = await arena.client.get(f"/live?{query}", headers={
            "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
            "Sec-WebSocket-Version": "13"})
        assert resp.status == 400
        error = (await resp.json())["error"]
        assert error["code"] == "invalid_request" and "games is sample (the default) or all" in error["message"]
    assert not arena.arena.live.viewers and not arena.arena.addresses.open


async def test_spectators_get_every_update_encoded_once_per_ply(make_arena: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    arena: Harness = await make_arena(messages_per_second=1000.0, burst=1000)
    encoded: list[Any] = []
    plain = server.games.room.encode

    def counting(msg: Any) -> bytes:
        encoded.append(msg)
        return plain(msg)

    monkeypatch.setattr(server.games.room, "encode", counting)
    alice, bob = await arena.bot("alice"), await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"])
    spectators = [(await arena.spectate(game_id))[0] for _ in range(20)]
    (over,), _ = await gather(play_out(alice, random_policy(7)), play_out(bob, random_policy(8)))
    plies = len(over.record.moves)
    # One encoding of each ply's update for the 20 of them (and one of game_over for everyone).
    assert sum(isinstance(m, Update) for m in encoded) == plies
    assert sum(isinstance(m, GameOver) for m in encoded) == 1
    frames = []
    for spectator in spectators:
        got = []
        while not isinstance(msg := await spectator.recv(), GameOver):
            assert isinstance(msg, Update)
            got.append(msg.ply)
        assert got == list(range(1, plies + 1))  # every update, in order
        frames.append(spectator.raw[1:])
    assert all(f == frames[0] for f in frames)


async def test_a_live_viewer_that_sends_is_ignored_then_closed_for_flooding(make_arena: Any) -> None:
    arena: Harness = await make_arena(messages_per_second=5.0, burst=5)
    live = LiveStream(await arena.client.ws_connect("/live"))
    await live.batch()
    await live.ws.send_str("not json at all")
    await live.ws.send_bytes(b"\x00\x01")
    await arena.bot("alice"), await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"])
    assert (await live.next_of(LiveGameStarted)).game.game_id == game_id  # still served
    for _ in range(30):
        await live.ws.send_str('{"type": "hello"}')
    msg = await live.ws.receive(timeout=5)
    while msg.type is WSMsgType.TEXT:
        msg = await live.ws.receive(timeout=5)
    assert msg.type is WSMsgType.CLOSE and msg.data == 4008 and msg.extra == "flood"
    big = LiveStream(await arena.client.ws_connect("/live"))
    await big.batch()
    await big.ws.send_str("x" * 4096)  # at most 4 KiB: read and dropped
    await arena.bot("carol"), await arena.bot("dave")
    next_id = await arena.start_game(["carol", "dave"])
    assert (await big.next_of(LiveGameStarted)).game.game_id == next_id  # still served
    await big.ws.send_str("x" * 4097)
    msg = await big.ws.receive(timeout=5)
    assert msg.type is WSMsgType.CLOSE and msg.data == 1009


async def test_connections_per_address_are_capped_with_a_typed_refusal(make_arena: Any) -> None:
    arena: Harness = await make_arena(connections_per_ip=2, connections_per_ip_exempt=[])
    first = await arena.client.ws_connect("/live")
    second = await arena.client.ws_connect("/ws")
    for path in ("/ws", "/live"):
        resp = await arena.client.get(path, headers={"Upgrade": "websocket", "Connection": "Upgrade",
                                                     "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(),
                                                     "Sec-WebSocket-Version": "13"})
        assert resp.status == 429
        error = (await resp.json())["error"]
        assert error["code"] == "too_many_connections" and "127.0.0.1" in error["message"]
    await first.close()
    await wait_until(lambda: arena.arena.addresses.open.get("127.0.0.1") == 1, 5, "the closed one was not given back")
    third = await arena.client.ws_connect("/live")
    assert (await third.receive(timeout=5)).type is WSMsgType.TEXT
    await second.close()
    await third.close()
    await wait_until(lambda: not arena.arena.addresses.open, 5, "slots were not given back")


async def test_the_connections_of_one_ipv6_slash_64_are_counted_together(make_arena: Any) -> None:
    """Behind a proxy, WebSockets from three addresses of one IPv6 /64 (one host's) share its
    cap, as those of one IPv4 address do; another /64 has its own."""
    arena: Harness = await make_arena(connections_per_ip=2, connections_per_ip_exempt=[], trust_forwarded_for=True)

    def upgrade(address: str) -> dict[str, str]:
        return {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
                "Sec-WebSocket-Key": base64.b64encode(os.urandom(16)).decode(), "X-Forwarded-For": address}

    held = [await arena.client.ws_connect("/live", headers={"X-Forwarded-For": a}) for a in ("2001:db8::a", "2001:db8::b")]
    resp = await arena.client.get("/ws", headers=upgrade("2001:db8::c:c"))
    assert resp.status == 429 and (await resp.json())["error"]["code"] == "too_many_connections"
    other = await arena.client.ws_connect("/live", headers={"X-Forwarded-For": "2001:db8:0:1::a"})
    assert arena.arena.addresses.open == {"2001:db8::/64": 2, "2001:db8:0:1::/64": 1}
    for ws in (*held, other):
        await ws.close()
    await wait_until(lambda: not arena.arena.addresses.open, 5, "slots were not given back")


def test_loopback_is_exempt_by_default_and_the_cap_counts_per_address() -> None:
    from server.config import Settings
    from server.connections.peers import AddressCap

    settings = Settings()
    cap = AddressCap(settings.connections_per_ip, settings.connections_per_ip_exempt)
    assert all(cap.take("127.0.0.1") for _ in range(5000))  # a local load test
    assert all(cap.take("203.0.113.7") for _ in range(settings.connections_per_ip))
    assert not cap.take("203.0.113.7") and cap.take("203.0.113.8")
    cap.give_back("203.0.113.7")
    assert cap.take("203.0.113.7")


async def test_an_exempt_address_leaving_gives_back_nothing_of_its_slash_64(make_arena: Any) -> None:
    """An exempt IPv6 address is never counted, so its connections' closes take nothing from
    the count of the other clients of its /64, which stay capped."""
    arena: Harness = await make_arena(connections_per_ip=2, connections_per_ip_exempt=["2001:db8::1"],
                                      trust_forwarded_for=True)
    cap = arena.arena.addresses
    closed: list[str] = []
    give_back = cap.give_back

    def noted(address: str) -> None:
        give_back(address)
        closed.append(address)

    cap.give_back = noted  # type: ignore[method-assign]
    held = [await arena.client.ws_connect("/live", headers={"X-Forwarded-For": a}) for a in ("2001:db8::a", "2001:db8::b")]
    for _ in range(2):
        exempt = await arena.client.ws_connect("/live", headers={"X-Forwarded-For": "2001:db8::1"})
        await exempt.close()
    await wait_until(lambda: closed == ["2001:db8::1"] * 2, 5, "the exempt connections did not close")
    assert cap.open == {"2001:db8::/64": 2}
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        await arena.client.ws_connect("/live", headers={"X-Forwarded-For": "2001:db8::c"})
    assert refused.value.status == 429
    for ws in held:
        await ws.close()
    await wait_until(lambda: not cap.open, 5, "slots were not given back")
