"""How the client (``mandala_client.Client``) reacts to answers a real server gives only in rare
moments: a ``seek`` or a ``challenge`` refused "for now" (Redis lost, a rate limit), two
challenges at once with room for one game, its own ``challenge()`` of a bot that does not exist.
The peer is a scripted WebSocket server on a real socket: for each frame type the client sends,
the frames it answers with. Nothing sleeps and hopes: each test waits for what the client sends.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
from aiohttp import web

import mandala
from arena_testkit import wait_until
from mandala import Game, Move, View
from mandala_client import Client

WELCOME = {"type": "welcome", "protocol": 1, "bot": "cleo", "games": [],
           "limits": {"decision_ms": 5000, "max_frame_bytes": 16384, "messages_per_second": 20.0, "burst": 40,
                      "max_games": 64, "heartbeat_s": 20.0}}


def error(code: str, **fields: Any) -> dict[str, Any]:
    return {"type": "error", "code": code, "message": f"{code} (scripted)", "game_id": None, "request_id": None,
            "rule": None, "limit": None, "retry_after": None, **fields}


def challenged(challenge_id: str, challenger: str) -> dict[str, Any]:
    return {"type": "challenged", "challenge_id": challenge_id, "challenger": challenger, "expires_ms": 30000}


class FirstLegal:
    def choose(self, view: View, legal: list[Move]) -> Move:
        return legal[0]


@asynccontextmanager
async def scripted(answers: dict[str, list[dict[str, Any]]], **options: Any) -> AsyncIterator[tuple[Client, list[dict[str, Any]]]]:
    """A client running against a server that answers ``welcome`` to its ``hello`` and, to each
    frame of a type in ``answers`` (``"hello"`` included), those frames; and the frames the
    client sent, as they come."""
    sent: list[dict[str, Any]] = []

    async def ws(request: web.Request) -> web.WebSocketResponse:
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        async for frame in socket:
            message = json.loads(frame.data)
            sent.append(message)
            if message["type"] == "hello":
                await socket.send_json(WELCOME)
            for answer in answers.get(message["type"], []):
                await socket.send_json(answer)
        return socket

    app = web.Application()
    app.router.add_get("/ws", ws)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    client = Client(FirstLegal(), url=f"ws://127.0.0.1:{port}/ws", token="mdl_scripted", **options)
    task = asyncio.create_task(client.run())
    try:
        await wait_until(lambda: client.name == "cleo", 5, "the client never said hello")
        yield client, sent
        assert not task.done(), f"the client stopped: {task.exception() if task.done() else ''}"
    finally:
        client.stop()
        await asyncio.gather(task, return_exceptions=True)
        await runner.cleanup()


def of_type(sent: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [m for m in sent if m["type"] == kind]


async def test_a_seek_refused_for_now_is_sent_again() -> None:
    """PROTOCOL.md §5.11, §20.1: ``cluster_unavailable`` (the leader cannot be reached) and
    ``rate_limited`` with ``"limit": "seeks"`` change nothing: try again later."""
    for refusal in (error("cluster_unavailable", retry_after=0.05), error("rate_limited", limit="seeks", retry_after=0.05)):
        async with scripted({"seek": [refusal]}, ladder=True) as (_, sent):
            await wait_until(lambda: len(of_type(sent, "seek")) >= 3, 5, f"the seek refused with {refusal} was not sent again")


async def test_a_challenge_refused_for_now_is_sent_again() -> None:
    async with scripted({"challenge": [error("cluster_unavailable", retry_after=0.05)]}, challenge="bob") as (_, sent):
        await wait_until(lambda: len(of_type(sent, "challenge")) >= 3, 5, "the challenge was not sent again")
    assert {m["opponent"] for m in of_type(sent, "challenge")} == {"bob"}


async def test_two_challenges_at_once_with_room_for_one_game_are_one_accept_and_one_decline() -> None:
    """PROTOCOL.md §5.4: the server starts an accepted game whatever the bot already plays, so
    the client counts its room itself, the games accepted but not started yet included."""
    hello = [challenged("c1", "ann"), challenged("c2", "ben")]
    async with scripted({"hello": hello}, max_games=1) as (_, sent):
        await wait_until(lambda: len(of_type(sent, "accept") + of_type(sent, "decline")) == 2, 5, "not both answered")
    assert [(m["type"], m["challenge_id"]) for m in sent[1:]] == [("accept", "c1"), ("decline", "c2")]


async def test_its_own_challenge_of_a_bot_that_does_not_exist_does_not_stop_a_ladder_client() -> None:
    """The ``challenge`` mode cannot go on without its opponent; a ladder bot's own
    ``client.challenge("nobdy")`` is a mistake to log, not a reason to leave its games."""
    async with scripted({"challenge": [error("unknown_bot")]}, ladder=True) as (client, sent):
        await client.challenge("nobdy")
        await wait_until(lambda: any(e.code == "unknown_bot" for e in client.errors), 5, "the refusal never came")
        await client.seek()
        await wait_until(lambda: len(of_type(sent, "seek")) == 2, 5, "the client stopped after the refusal")


async def test_an_error_code_a_newer_server_added_is_a_plain_refusal_tried_again() -> None:
    """PROTOCOL.md §16: a client of this version reads an error code it does not know, and
    treats it as a plain refusal: wait ``retry_after``, then try again."""
    refusal = error("seeks_paused_for_maintenance", retry_after=0.05)
    async with scripted({"seek": [refusal]}, ladder=True) as (client, sent):
        await wait_until(lambda: len(of_type(sent, "seek")) >= 3, 5, "the seek refused with a new code was not sent again")
    assert client.errors[0].code == "seeks_paused_for_maintenance"


async def test_a_game_with_values_a_newer_server_added_is_played_to_its_end() -> None:
    """A game kind, a ladder state and an end reason this client's types do not list (added
    within the protocol's version, §16): the frames are read, the decision answered, the
    game recorded as the server ended it."""
    game = Game.new(seed=3)
    view = msgspec.to_builtins(mandala.view(game, 0))
    start = {"type": "game_start", "game_id": "g1", "seat": 0, "players": [{"name": "cleo", "seat": 0},
             {"name": "opal", "seat": 1}], "first_player": 0, "decision_ms": 5000, "rated": False,
             "resumed": False, "kind": "exhibition", "pair_id": None, "tournament_id": None, "venue": "hall 2"}
    decision = {"type": "decision", "game_id": "g1", "request_id": 0, "seat": 0, "view": view,
                "legal": [msgspec.to_builtins(m) for m in game.legal_moves], "deadline_ms": 5000}
    ladder = {"type": "ladder", "state": "resting", "seeking": False, "paused": False, "qualification_left": 0,
              "message": "resting (scripted)"}
    over = {"type": "game_over", "game_id": "g1", "record": msgspec.to_builtins(mandala.record_of(game)),
            "result": {"winner": 1, "end_reason": "adjudicated", "scores": [3, 5], "cup_sizes": [2, 2]}}
    async with scripted({"hello": [start, ladder, decision], "move": [over]}) as (client, sent):
        await wait_until(lambda: len(client.finished) == 1, 5, "the game was never recorded as over")
    (move,) = of_type(sent, "move")
    assert (move["game_id"], move["request_id"], move["move"]) == ("g1", 0, decision["legal"][0])
    (finished,) = client.finished
    assert (finished.game_id, finished.kind, finished.result.end_reason) == ("g1", "exhibition", "adjudicated")
    assert client.ladder_status is not None and client.ladder_status.state == "resting"
