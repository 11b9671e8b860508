"""A ladder pair plays one deal twice, seats swapped: the first game's record, which tells the
return game's hidden cards, is held until the return game is over or given up (PROTOCOL.md
§12.1), everywhere a record leaves the server: ``game_over`` to both seats and a spectator,
``GET /api/games/{id}/record`` and ``…/replay`` (any eyes), the export and ``/live``.

The tests run each pairing pass themselves (``ladder.pair_now()``, the loop stopped), so the
return game starts exactly when they say."""

from __future__ import annotations

import asyncio
import json
import random
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from test_held_slots import stop_pairing_loop
from test_ladder import AUTH
from test_ladder_switch import seeking_bots

from arena_testkit import Harness, LiveStream, WsClient, gather, play_out, random_policy, wait_until
from protocol.messages import Decision, Error, GameOver, GameStart, LiveGameEnded
from test_export import lines, mandala

DECK = '"deck":["'
"""What a record's deal begins with and nothing else sent does (a view says ``deck_size``; a
held record's public part has ``"deck":[]``)."""


async def bots_ready(arena: Harness) -> tuple[WsClient, WsClient]:
    """bot00 and bot01, listed and seeking, the ladder running with its pairing loop stopped:
    a pair starts at :func:`pair_started`, and its return game at the next ``ladder.pair_now()``."""
    a, b = await seeking_bots(arena, 2)
    stop_pairing_loop(arena.arena.ladder)
    await arena.arena.ladder.set_paused(False)
    return a, b


async def pair_started(arena: Harness, a: WsClient, b: WsClient) -> GameStart:
    """Pair ``a`` and ``b``: the first game's start."""
    arena.arena.ladder.pair_now()
    first, other = await gather(a.until(GameStart), b.until(GameStart))
    assert first.game_id == other.game_id and first.kind == "ladder" and first.pair_id is not None
    return first


async def first_game_played(arena: Harness) -> tuple[WsClient, WsClient, GameStart, list[GameOver]]:
    """bot00 and bot01 (:func:`bots_ready`) play the first game of a pair and nothing more.
    Their connections, the game's start, and the ``game_over`` each seat got."""
    a, b = await bots_ready(arena)
    first = await pair_started(arena, a, b)
    (over_a,), (over_b,) = await gather(play_out(a, random_policy(1)), play_out(b, random_policy(2)))
    await arena.arena.manager.flush()
    return a, b, first, [over_a, over_b]


async def held(arena: Harness, path: str) -> dict[str, Any]:
    """The ``409`` ``record_held`` error's body of ``path``."""
    resp = await arena.client.get(path)
    body = await resp.json()
    assert (resp.status, body["error"]["code"]) == (409, "record_held"), body
    return body["error"]  # type: ignore[no-any-return]


async def exported(arena: Harness) -> tuple[str, dict[str, dict[str, Any]]]:
    resp = await arena.client.get("/api/games/export")
    assert resp.status == 200
    text = await resp.text()
    return text, {g["game_id"]: g for g in lines(text.encode())}


async def test_a_pairs_first_record_is_held_everywhere_until_its_return_game_is_over(make_arena: Any) -> None:
    arena: Harness = await make_arena(pairing_interval_s=60)
    a, b = await bots_ready(arena)
    ladder = arena.arena.ladder
    live = LiveStream(await arena.client.ws_connect("/live?games=all"))
    first = await pair_started(arena, a, b)
    watcher, _ = await arena.spectate(first.game_id)
    (over_a,), (over_b,), seen = await gather(play_out(a, random_policy(1)), play_out(b, random_policy(2)),
                                              watcher.until(GameOver))
    await arena.arena.manager.flush()
    pair = {"pair_id": first.pair_id, "tournament_id": None, "slot": None, "game_id": None}

    # Both seats and the spectator: the result, no record, and what it waits for.
    for over in (over_a, over_b, seen):
        assert over.game_id == first.game_id and over.result.end_reason != "aborted"
        assert (over.record.deck, over.record.reshuffles) == ([], []) and msgspec.to_builtins(over.record_held) == pair
    assert not [raw for raw in a.raw + b.raw + watcher.raw if DECK in raw]
    # Over HTTP: the record and every replay are refused, naming the pair.
    for path in ("record", "replay", "replay?seat=0", "replay?seat=1"):
        error = await held(arena, f"/api/games/{first.game_id}/{path}")
        assert error["record_held"] == pair and first.pair_id in error["message"]
    # The export has the game, without its record.
    text, games = await exported(arena)
    held_line = games[first.game_id]
    assert (held_line["record"]["deck"], held_line["record"]["reshuffles"], held_line["record_held"]) == ([], [], pair)
    assert held_line["record"]["moves"] == msgspec.to_builtins(over_a.record.moves)  # its public part
    assert DECK not in text
    # What is public anyway stays so: the game, its result, its last position as a spectator saw it.
    game = await arena.get_json(f"/api/games/{first.game_id}")
    assert game["status"] == "finished" and game["result"] == msgspec.to_builtins(over_a.result)
    assert game["view"]["seat"] is None and game["view"]["phase"] == "over"
    assert game["record_held"] == pair  # what the record waits for, without a refusal

    # The return game starts: the record now waits for that game, by its id.
    ladder.pair_now()
    back, _ = await gather(a.until(GameStart), b.until(GameStart))
    assert back.pair_id == first.pair_id and back.game_id != first.game_id
    await arena.arena.manager.flush()  # its start row is stored
    error = await held(arena, f"/api/games/{first.game_id}/record")
    assert error["record_held"] == {**pair, "game_id": back.game_id}
    assert (await arena.get_json(f"/api/games/{first.game_id}"))["record_held"] == {**pair, "game_id": back.game_id}
    assert (await arena.get_json(f"/api/games/{back.game_id}"))["record_held"] is None  # running: no record yet

    # It ends: its game_over carries its record, and from then on the first game's is served.
    (ret_a,), (ret_b,) = await gather(play_out(a, random_policy(3)), play_out(b, random_policy(4)))
    assert len(ret_a.record.deck) == 108 and ret_a.record_held is None and ret_b.record == ret_a.record
    record = await arena.get_json(f"/api/games/{first.game_id}/record")
    assert (record["deck"], record["first_player"]) == (ret_a.record.deck, ret_a.record.first_player)
    for game_id in (first.game_id, back.game_id):
        assert (await arena.get_json(f"/api/games/{game_id}"))["record_held"] is None
    assert record == (await arena.arena.storage.get_game(first.game_id)).record  # type: ignore[union-attr]
    for seat in ("", "?seat=0", "?seat=1"):
        replay = await arena.get_json(f"/api/games/{first.game_id}/replay{seat}")
        assert len(replay["plies"]) == len(record["moves"]) + 1
    _, games = await exported(arena)
    assert games[first.game_id]["record"] == record and games[first.game_id]["record_held"] is None
    assert games[back.game_id]["record"] == msgspec.to_builtins(ret_a.record)

    # /live told of both games' ends, and of no record.
    ended: set[str] = set()
    while ended != {first.game_id, back.game_id}:
        ended.add((await live.next_of(LiveGameEnded)).game.game_id)
    assert not [raw for raw in live.raw if DECK in raw]
    await live.close()


async def away(arena: Harness, clients: dict[str, WsClient]) -> None:
    """Close the connections of ``clients`` (by bot), and wait until the server knows them gone."""
    for c in clients.values():
        await c.close()
    await wait_until(lambda: not any(arena.arena.presence.is_connected(n) for n in clients), 5, "a bot stayed")


GIVEN_UP = ["forfeit", "both away", "ratings reset", "bot removed", "new leader"]


@pytest.mark.parametrize("how", GIVEN_UP)
async def test_a_return_game_forfeited_or_given_up_releases_the_first_record(make_arena: Any, how: str) -> None:
    """The return game will never be played: forfeited by the bot that stayed away past
    ``return_wait_s`` (its forfeit, the deal with no moves, is public too), dropped because
    both stayed away, because a ratings reset cut the pair, because the organizer removed a
    bot, or because a new leader (a restart, another node) continues no pair it did not
    make. The first game's record is served from then on."""
    arena: Harness = await make_arena(pairing_interval_s=60, return_wait_s=0.2)
    a, b, first, overs = await first_game_played(arena)
    ladder, manager = arena.arena.ladder, arena.arena.manager
    pair = {"pair_id": first.pair_id, "tournament_id": None, "slot": None, "game_id": None}
    assert all(o.record.deck == [] and msgspec.to_builtins(o.record_held) == pair for o in overs)
    await held(arena, f"/api/games/{first.game_id}/record")

    if how == "forfeit":
        await away(arena, {"bot01": b})
    elif how == "both away":
        await away(arena, {"bot00": a, "bot01": b})
    elif how == "ratings reset":
        assert (await arena.client.post("/api/ladder/reset", headers=AUTH)).status == 200
    elif how == "bot removed":
        assert (await arena.client.delete("/api/ladder/bots/bot01", headers=AUTH)).status == 200
    else:
        ladder.follow()
        await ladder.lead()
        stop_pairing_loop(ladder)

    def given_up() -> bool:
        ladder.pair_now()  # the pass that forfeits or drops a return game waited for too long
        return first.pair_id not in ladder.pairs

    await wait_until(given_up, 5, "the return game was not given up")
    await manager.flush()
    record = await arena.get_json(f"/api/games/{first.game_id}/record")
    assert record == (await arena.arena.storage.get_game(first.game_id)).record  # type: ignore[union-attr]
    _, games = await exported(arena)
    assert games[first.game_id]["record"] == record and games[first.game_id]["record_held"] is None
    pair_games = [g for g in games.values() if g["pair_id"] == first.pair_id]
    if how == "forfeit":  # stored beside the first game, on its deal, with no moves: bot00 wins it
        (forfeit,) = [g for g in pair_games if g["game_id"] != first.game_id]
        assert forfeit["players"] == [p.name for p in reversed(first.players)]
        assert (forfeit["result"]["end_reason"], forfeit["result"]["winner"]) == ("forfeit", forfeit["players"].index("bot00"))
        assert forfeit["record"]["deck"] == record["deck"] and forfeit["record"]["moves"] == []
        assert forfeit["record_held"] is None
        assert await arena.get_json(f"/api/games/{forfeit['game_id']}/record") == forfeit["record"]
    else:
        assert [g["game_id"] for g in pair_games] == [first.game_id]
    assert first.pair_id not in [p.pair_id for p in await arena.arena.storage.open_pairs()]


async def test_mandala_replay_passes_over_a_record_an_export_held(make_arena: Any, tmp_path: Path) -> None:
    """``mandala export`` while a pair's first record is held, then ``mandala replay`` of the
    file: the game without its record is passed over, named on standard error, and every other
    game replays (a challenge played meanwhile); once the return game is over, a new export
    replays both. The bots read nothing while the commands run (seconds each on a busy machine):
    the heartbeat is set past that."""
    arena: Harness = await make_arena(pairing_interval_s=60, heartbeat_s=60.0)
    a, b, first, _ = await first_game_played(arena)
    challenge = await arena.start_game(["bot01", "bot00"])
    await gather(play_out(a, random_policy(5)), play_out(b, random_policy(6)))
    url = str(arena.client.make_url("/")).rstrip("/")

    async def replayed(name: str) -> tuple[list[str], str]:
        status, err = await mandala("export", "--server", url, "-o", str(tmp_path / name))
        assert status == 0, err
        proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "mandala_cli.main", "replay", str(tmp_path / name),
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err_bytes = await proc.communicate()
        assert proc.returncode == 0, err_bytes
        return [json.loads(line)["game_id"] for line in out.splitlines()], err_bytes.decode()

    ids, err = await replayed("held.jsonl")
    assert ids == [challenge]
    assert err == (f"mandala replay: {tmp_path / 'held.jsonl'}: game {first.game_id}: record held until the return "
                   f"game of pair {first.pair_id} was over (export it again then), passed over\n")
    arena.arena.ladder.pair_now()  # the return game
    await gather(play_out(a, random_policy(7)), play_out(b, random_policy(8)))
    ids, err = await replayed("later.jsonl.gz")
    assert len(ids) == 3 and ids[0] == first.game_id and challenge in ids and err == ""


async def test_a_first_game_over_before_its_start_is_stored_has_its_record_held(make_arena: Any) -> None:
    """The rule reads the pair's state from storage, which the first game's start row opens. A
    bot resigns that game at once, while its start row still waits to be stored (here: storage
    is held up); the record and the replays asked for meanwhile wait until that row is stored,
    then answer that the record is held, as its ``game_over`` says. (They served it: the rule
    found no open pair yet.)"""
    arena: Harness = await make_arena(pairing_interval_s=60)
    a, b = await bots_ready(arena)
    storage = arena.arena.storage
    go = asyncio.Event()
    real = storage.write_games

    async def held_up(writes: Any) -> Any:
        await go.wait()  # the start row (and what follows it) waits here
        return await real(writes)

    storage.write_games = held_up  # type: ignore[method-assign]
    first = await pair_started(arena, a, b)
    await a.send({"type": "resign", "game_id": first.game_id})
    room = arena.arena.manager.lookup(first.game_id)
    await wait_until(lambda: room is not None and room.status == "finished", 10, "the resignation was not applied")
    asked = [asyncio.ensure_future(arena.client.get(f"/api/games/{first.game_id}/{path}"))
             for path in ("record", "replay", "replay?seat=1")]
    done, _ = await asyncio.wait(asked, timeout=2.0)  # they wait for the start row (they did not)
    assert not done
    go.set()
    storage.write_games = real  # type: ignore[method-assign]
    for resp in await asyncio.gather(*asked):
        body = await resp.json()
        assert (resp.status, body["error"]["code"], body["error"]["record_held"]["pair_id"]) == (
            409, "record_held", first.pair_id), body
    for seat in (a, b):
        over = await seat.until(GameOver)
        assert over.game_id == first.game_id and over.record.deck == [] and over.record_held is not None


async def test_a_held_games_incidents_are_counted_but_not_listed_until_its_record_is_public(
        make_arena: Any) -> None:
    """An illegal move's incident tells what the bot sent and the refusal's words tell its
    hand ("you hold 2 yellow card(s)"): a hand of a deal still to be played. While the first
    game's record is held, the bot's profile counts the incident but does not list it; once
    the return game is over, it lists it. (It listed it at once.)"""
    arena: Harness = await make_arena(pairing_interval_s=60)
    a, b = await bots_ready(arena)
    ladder = arena.arena.ladder
    first = await pair_started(arena, a, b)
    name = next(p.name for p in first.players if p.seat == first.seat)
    rng = random.Random(5)

    async def one_illegal_then_legal(client: WsClient) -> None:
        tried = False
        while True:
            msg = await client.recv()
            if isinstance(msg, GameOver):
                return
            if isinstance(msg, Decision):
                if not tried and msg.view.phase == "turn":
                    tried = True
                    await client.send({"type": "move", "game_id": msg.game_id, "request_id": msg.request_id,
                                       "move": {"type": "discard", "color": "red", "count": 9}})
                    await client.until(Error)
                await client.send_move(msg, rng.choice(msg.legal))

    await gather(one_illegal_then_legal(a), play_out(b, random_policy(2)))
    await arena.arena.manager.flush()
    health = (await arena.get_json(f"/api/bots/{name}"))["health"]
    assert health["illegal_moves"] == 1 and not [i for i in health["incidents"] if i["game_id"] == first.game_id]
    ladder.pair_now()  # the return game, played out: the first game's record is public, and its incident
    await gather(play_out(a, random_policy(3)), play_out(b, random_policy(4)))
    await arena.arena.manager.flush()
    health = (await arena.get_json(f"/api/bots/{name}"))["health"]
    listed = [i for i in health["incidents"] if i["game_id"] == first.game_id]
    assert health["illegal_moves"] == 1 and [i["code"] for i in listed] == ["illegal_move"]
