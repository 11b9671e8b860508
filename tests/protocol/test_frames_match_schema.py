"""The JSON Schema a bot author generates code from is what the server really sends: every frame
the real server sent in a busy session (a challenge with a spectator, a refused move, a seat that
leaves and comes back, the ladder from qualification to a rated pair, a tournament game, the
``/live`` stream, the stored records) validates against the checked-in schema, in which every
field the server always sends is required."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable
from typing import Any

import jsonschema
from referencing import Registry, Resource

from arena_testkit import ADMIN, Harness, LiveStream, WsClient, gather, wait_until
from protocol import schema
from protocol.messages import Decision, GameOver, GameStart, LadderStatus, OpponentAway

AUTH = {"Authorization": f"Bearer {ADMIN}"}


def validator(name: str) -> jsonschema.protocols.Validator:
    document = json.loads((schema.SCHEMA_DIR / name).read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(document)
    cls.check_schema(document)
    return cls(document, registry=Registry().with_resource(name, Resource.from_contents(document)))


def check(name: str, frames: list[str]) -> list[dict[str, Any]]:
    """Validate each raw frame against the schema file ``name``; the decoded frames."""
    v = validator(name)
    decoded = [json.loads(f) for f in frames]
    for frame in decoded:
        errors = sorted(v.iter_errors(frame), key=str)
        assert not errors, f"{name}: {frame['type']} frame does not validate: {errors[0].message}\n{frame}"
    return decoded


def every_property_required(document: dict[str, Any]) -> None:
    """Each definition requires all its properties: a frame that validates carries every
    field the server always sends."""
    for name, definition in document["$defs"].items():
        if "properties" in definition:
            assert sorted(definition["required"]) == sorted(definition["properties"]), name


async def read_all(live: LiveStream) -> None:
    while True:
        await live.batch(60)


def live_events(live: LiveStream) -> set[str]:
    return {m["type"] for raw in live.raw for m in json.loads(raw)["messages"]}


async def play(client: WsClient, done: Callable[[WsClient], bool], rng: random.Random) -> None:
    """Answer every decision with a random legal move until ``done``."""
    while not done(client):
        msg = await client.recv(30)
        if isinstance(msg, Decision):
            await client.send_move(msg, rng.choice(msg.legal))


def starts(client: WsClient, kind: str) -> list[GameStart]:
    return [f for f in client.frames if isinstance(f, GameStart) and f.kind == kind]


def over(client: WsClient, game_id: str) -> bool:
    return any(isinstance(f, GameOver) and f.game_id == game_id for f in client.frames)


async def test_every_frame_the_server_sends_matches_the_schema_with_every_field_required(make_arena: Any) -> None:
    arena: Harness = await make_arena(pairing_interval_s=0.05)
    live = LiveStream(await arena.client.ws_connect("/live"))
    every = LiveStream(await arena.client.ws_connect("/live?games=all"))
    reading = [asyncio.create_task(read_all(live)), asyncio.create_task(read_all(every))]
    alice = await arena.bot("alice", max_games=2)
    bob = await arena.bot("bob", max_games=2)
    rng = random.Random(4)

    # A challenge with a spectator; alice answers one decision with a stale request id, then
    # leaves at her next decision and comes back on a new connection.
    game_id = await arena.start_game(["alice", "bob"], reshuffle_seed=11)
    spectator, _ = await arena.spectate(game_id)
    while True:
        msg = await alice.recv()
        if isinstance(msg, Decision):
            break
        if isinstance(msg, GameStart):
            continue
    await alice.send({"type": "move", "game_id": game_id, "request_id": msg.request_id + 5,
                      "move": {"type": "discard", "card": 0}})
    await alice.error()
    await alice.close()
    await bob.until(OpponentAway)
    alice_again = await arena.connect(arena.tokens["alice"], max_games=2)
    await gather(play(alice_again, lambda c: over(c, game_id), rng), play(bob, lambda c: over(c, game_id), rng),
                 play(spectator, lambda c: over(c, game_id), rng), timeout=60)

    # The ladder: both qualify against the house bot, then play a rated duplicate pair.
    for c in (alice_again, bob):
        await c.send({"type": "seek"})

    def ladder_over(c: WsClient) -> bool:
        return any(over(c, s.game_id) for s in starts(c, "ladder"))

    await gather(play(alice_again, ladder_over, rng), play(bob, ladder_over, rng), timeout=120)
    for c in (alice_again, bob):
        await c.send({"type": "unseek"})

    # A tournament game.
    resp = await arena.client.post("/api/tournaments", headers=AUTH, json={
        "name": "cup", "format": "round_robin", "participants": ["alice", "bob"], "games_per_pairing": 2})
    assert resp.status == 201, await resp.text()
    tid = (await resp.json())["tournament_id"]
    assert (await arena.client.post(f"/api/tournaments/{tid}/start", headers=AUTH)).status == 200

    def tournament_over(c: WsClient) -> bool:
        return any(over(c, s.game_id) for s in starts(c, "tournament"))

    await gather(play(alice_again, tournament_over, rng), play(bob, tournament_over, rng), timeout=120)
    await alice_again.ping()
    kinds = {"games", "standings", "top_changed", "counts", "game_started", "game_ended", "tournament", "health"}
    await wait_until(lambda: live_events(live) >= kinds and live_events(every) >= kinds,
                     10, "/live did not tell of every kind of event")
    for task in reading:
        task.cancel()

    sent = check("server-message.json", alice.raw + alice_again.raw + bob.raw + spectator.raw)
    seen = {f["type"] for f in sent}
    assert seen >= {"welcome", "game_start", "decision", "move_accepted", "update", "game_over", "error",
                    "opponent_away", "opponent_back", "ladder", "pong"}, seen
    game_starts = [f for f in sent if f["type"] == "game_start"]
    assert any(f["resumed"] for f in game_starts)
    assert any(f["kind"] == "ladder" and f["pair_id"] for f in game_starts)
    assert any(f["kind"] == "tournament" and f["tournament_id"] == tid for f in game_starts)
    assert any(isinstance(f, LadderStatus) for f in bob.frames)

    check("live-message.json", live.raw + every.raw)

    # The stored records, as GET /api/games/{id}/record serves them: of the games over whose
    # game_over gave the record (a pair's second game may have begun as the first ended, and
    # runs on: the first game's record is held for it, its game_over checked above).
    records = validator("record.json")
    assert any(f["record"]["deck"] == [] and f["record_held"] for f in sent if f["type"] == "game_over")
    for gid in {f["game_id"] for f in sent if f["type"] == "game_over" and f["record_held"] is None}:
        record = await arena.get_json(f"/api/games/{gid}/record")
        assert not list(records.iter_errors(record)), gid


def test_what_the_server_sends_has_every_field_required_and_a_client_may_leave_defaults_out() -> None:
    for name in ("server-message.json", "live-message.json", "record.json", "view.json"):
        every_property_required(json.loads((schema.SCHEMA_DIR / name).read_text(encoding="utf-8")))
    server = json.loads((schema.SCHEMA_DIR / "server-message.json").read_text(encoding="utf-8"))
    assert {"resumed", "kind", "pair_id", "tournament_id"} <= set(server["$defs"]["GameStart"]["required"])
    live = json.loads((schema.SCHEMA_DIR / "live-message.json").read_text(encoding="utf-8"))
    assert "tournament_id" in live["$defs"]["GameSummary"]["required"]
    client = json.loads((schema.SCHEMA_DIR / "client-message.json").read_text(encoding="utf-8"))
    assert client["$defs"]["Hello"]["required"] == ["type", "protocol"]
