"""Every node of a cluster answers for every game: a game is watchable from any node as soon as
``POST /api/games`` answered, even when its host's link to Redis is slow, and a node that does
not host a running game reports it as its host does — ``GET /api/games/{id}`` (ply and view),
``GET /api/games?status=running`` and a bot's profile — with the seats, the spectator and the
HTTP readers on different nodes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest

from arena_testkit import Harness, WsClient, gather, wait_until
from cluster_kit import SlowLink
from conftest import MakeCluster
from protocol.messages import Challenged, Error, GameOver, GameStart, Update
from server.games.room import REQUEST_EPOCH
from test_cluster_games import bots_on
from test_game_takeover import play_out, play_until
from test_games_list import every_page, listed_once, resigned_game

GAMES = 18
"""Games started one after the other, each watched from the two other nodes at once."""


@pytest.fixture
async def slow(redis_url: str) -> AsyncIterator[SlowLink]:
    """The test's Redis through a link that passes on what a node says 50 ms late (requested
    before ``make_cluster``, it outlives the nodes)."""
    async with SlowLink(redis_url, 0.05) as link:
        yield link


async def test_a_game_is_watchable_from_every_node_as_soon_as_its_creation_is_answered(
        slow: SlowLink, make_cluster: MakeCluster, redis_url: str) -> None:
    """The host's link to Redis is slow, the seats and two spectators are on the other nodes:
    each game, watched from both the moment ``POST /api/games`` answered, is shown to both."""
    n1, n2, n3 = await make_cluster(3, redis=[slow.url, redis_url, redis_url], decision_ms=60_000)
    await bots_on([n1, n2, n3], {"alice": 1, "bob": 2}, max_games=GAMES)
    spectators = [await n2.connect(None), await n3.connect(None)]
    refused: list[str] = []
    for _ in range(GAMES):
        game_id = await n1.start_game(["alice", "bob"])
        for spectator in spectators:
            await spectator.send({"type": "watch", "game_id": game_id})
        for spectator in spectators:
            first = await spectator.recv()
            if isinstance(first, Error):
                refused.append(f"{first.code}: {first.message}")
            else:
                assert isinstance(first, Update) and first.game_id == game_id and first.ply == 0, first
    assert refused == [], f"{len(refused)} of {2 * GAMES} watches refused: {refused[:3]}"


async def test_a_game_is_watchable_from_another_node_as_soon_as_a_seat_on_its_host_heard_of_it(
        slow: SlowLink, make_cluster: MakeCluster, redis_url: str) -> None:
    """A challenge's game starts on the node holding the challenge, where both seats are: they
    hear ``game_start`` before the host has told Redis anything; a spectator elsewhere given the
    id at once can watch it (the node it asks finds the game's host by asking every node)."""
    n1, n2 = await make_cluster(2, redis=[slow.url, redis_url], decision_ms=60_000)
    bots = await bots_on([n1, n2], {"alice": 0, "bob": 0}, max_games=GAMES // 3)
    alice, bob = bots["alice"], bots["bob"]
    spectator = await n2.connect(None)
    for _ in range(GAMES // 3):
        await alice.send({"type": "challenge", "opponent": "bob"})
        got = await bob.until(Challenged)
        await bob.send({"type": "accept", "challenge_id": got.challenge_id})
        start = await alice.until(GameStart)
        await spectator.send({"type": "watch", "game_id": start.game_id})
        first = await spectator.recv()
        assert isinstance(first, Update) and first.game_id == start.game_id, first
    unknown = "no-such-game"
    await spectator.send({"type": "watch", "game_id": unknown})
    refused = await spectator.recv()
    assert isinstance(refused, Error) and refused.code == "unknown_game" and refused.game_id == unknown


async def test_every_node_reports_a_running_game_as_its_host_does(make_cluster: MakeCluster) -> None:
    n1, n2, n3 = await make_cluster(3, decision_ms=60_000)
    bots = await bots_on([n1, n2, n3], {"alice": 1, "bob": 2})  # seats on n2 and n3
    nodes = [n1, n2, n3]
    game_id = await n1.start_game(["alice", "bob"], first_player=0)  # hosted by n1
    spectator, first = await n3.spectate(game_id)
    seats = {0: bots["alice"], 1: bots["bob"]}

    at_start = await same_everywhere(nodes, game_id)
    assert at_start["ply"] == 0 and at_start["view"] == msgspec.to_builtins(first.view)

    for ply in (1, 10):
        # The seat to move holds its decision: the game stands still while every node is asked.
        held = await play_until(seats, game_id, lambda d, ply=ply: d.request_id % REQUEST_EPOCH >= ply)
        state = await same_everywhere(nodes, game_id)
        assert state["ply"] == held.request_id % REQUEST_EPOCH == len(n1.arena.manager.running[game_id].game.history)
        assert state["view"] == await watched_view(spectator, game_id, state["ply"])
        await seats[held.seat].send_move(held, held.legal[0])

    over, _ = await gather(play_out(seats, game_id), spectator.until(GameOver))
    for node in nodes:
        state = await node.get_json(f"/api/games/{game_id}")
        assert state["status"] == "finished" and state["ply"] == len(over.record.moves)
        assert await node.get_json("/api/games?status=running") == []


async def same_everywhere(nodes: list[Harness], game_id: str) -> dict[str, Any]:
    """``GET /api/games/{id}``, the running games and both players' profiles, from the host
    (the first node) then from each other node: the same answers. The game's state."""
    host = nodes[0]
    state = await host.get_json(f"/api/games/{game_id}")
    assert state["status"] == "running" and state["view"] is not None
    running = await host.get_json("/api/games?status=running")
    (summary,) = [g for g in running if g["game_id"] == game_id]
    assert summary["ply"] == state["ply"]
    for node in nodes[1:]:
        assert await node.get_json(f"/api/games/{game_id}") == state
        assert await node.get_json("/api/games?status=running") == running
    for node in nodes:
        for bot in summary["players"]:
            profile = await node.get_json(f"/api/bots/{bot}")
            assert [g for g in profile["games"] if g["game_id"] == game_id] == [summary]
    return state  # type: ignore[no-any-return]


async def watched_view(spectator: WsClient, game_id: str, ply: int) -> Any:
    """The view of the spectator's update of ``game_id`` at ``ply`` (it comes at the audience's
    pace)."""
    while True:
        update = await spectator.until(Update)
        if update.game_id == game_id and update.ply >= ply:
            assert update.ply == ply
            return msgspec.to_builtins(update.view)


async def test_every_node_pages_through_the_games_over_past_the_running_games_of_others(
        make_cluster: MakeCluster) -> None:
    """The database holds every node's running games as running rows, the newest: a node that
    hosts none of them must still fill its pages of the games over, and link to the next."""
    n1, n2 = await make_cluster(2)
    bots = await bots_on([n1, n2], {"alice": 0, "bob": 0}, max_games=3)
    over = {await resigned_game(n1, bots["alice"], bots["bob"]) for _ in range(3)}
    running = {await n1.start_game(["alice", "bob"]) for _ in range(2)}
    cluster = n2.arena.cluster
    assert cluster is not None
    await wait_until(lambda: running <= set(cluster.games), 5, "n2 never heard of the running games")
    for node in (n1, n2):
        pages = await every_page(node, "/api/games?limit=3")
        assert len(pages) == 2
        listed_once(pages, running, over, 3)
