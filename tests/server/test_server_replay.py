"""``GET /api/games/{id}/replay``: every ply of a game that is over, each with the spectator's
view, equal to what a spectator watching live was sent; nothing in it depends on a hidden
card (R24); a running game, an unknown one and one without a record are refused."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import msgspec
import pytest

import mandala
from arena_testkit import Harness, gather, play_out, random_policy
from protocol.messages import GameOver, Update
from server.storage import GameRow
from test_server_http import api_error
from test_server_spectators import hidden_card_runs


def totals(cards: dict[str, int]) -> int:
    return sum(cards.values())


async def test_replay_steps_through_what_a_spectator_saw(make_arena: Any) -> None:
    arena: Harness = await make_arena()
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"], reshuffle_seed=11)
    spectator, _ = await arena.spectate(game_id)
    await api_error(await arena.client.get(f"/api/games/{game_id}/replay"), 409, "game_running")
    (over,), _ = await gather(play_out(a, random_policy(21)), play_out(b, random_policy(22)))
    assert await spectator.until(GameOver) == over
    live = [msgspec.to_builtins(f) for f in spectator.frames if isinstance(f, Update) and f.game_id == game_id]

    replay = await arena.get_json(f"/api/games/{game_id}/replay")
    record = msgspec.to_builtins(over.record)
    assert (replay["game_id"], replay["players"], replay["status"]) == (game_id, ["alice", "bob"], "finished")
    assert replay["result"] == msgspec.to_builtins(over.result)
    plies = replay["plies"]
    assert len(plies) == len(record["moves"]) + 1
    assert [p["ply"] for p in plies] == list(range(len(plies)))
    assert plies[0]["move"] is None
    assert [p["move"] for p in plies[1:]] == record["moves"]
    # Ply by ply, the very views the spectator was sent while the game ran.
    assert len(live) == len(plies)
    assert [p["view"] for p in plies] == [u["view"] for u in live]
    assert plies[-1]["view"] == (await arena.get_json(f"/api/games/{game_id}"))["view"]
    for p in plies:
        view = p["view"]
        assert view["seat"] is None and view["private"] is None
        # The spectator knows no hand and no starting cup: all of them are unseen.
        hidden = view["deck_size"] + sum(s["hand_size"] + s["cup_unknown"] for s in view["players"])
        assert totals(view["unseen"]) == hidden

    resp = await arena.client.get(f"/api/games/{game_id}/replay", headers={"Accept-Encoding": "gzip"})
    assert resp.headers["Content-Encoding"] == "gzip" and await resp.json() == replay

    # The same once the game has left the server's memory and is read back from storage.
    arena.arena.manager.finished.clear()
    assert await arena.get_json(f"/api/games/{game_id}/replay") == replay


def river_score(river: list[str], cup: dict[str, int]) -> int:
    """R21, counted independently of the engine: each cup card whose color is in the river
    scores that river slot's number."""
    return sum(slot * cup[color] for slot, color in enumerate(river, 1))


async def test_a_replay_shows_both_whole_cups_once_the_game_is_over(make_arena: Any) -> None:
    """The record is public once the game is over (R24), so every replay gives both cups'
    whole contents at the end, starting cards included: the final score can be checked
    against them. The spectator's views themselves stay as a spectator saw them."""
    arena: Harness = await make_arena()
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"], reshuffle_seed=5)
    (over,), _ = await gather(play_out(a, random_policy(31)), play_out(b, random_policy(32)))
    spectator = await arena.get_json(f"/api/games/{game_id}/replay")
    seats = [await arena.get_json(f"/api/games/{game_id}/replay?seat={s}") for s in (0, 1)]
    cups = spectator["cups"]
    assert seats[0]["cups"] == seats[1]["cups"] == cups
    end = spectator["plies"][-1]["view"]
    assert [river_score(end["players"][s]["river"], cups[s]) for s in (0, 1)] == over.result.scores
    assert [totals(c) for c in cups] == over.result.cup_sizes == [p["cup_size"] for p in end["players"]]
    for s in (0, 1):
        # The claimed part the spectator saw, plus the two starting cards it never saw.
        claimed = end["players"][s]["cup_claimed"]
        assert all(cups[s][c] >= claimed[c] for c in cups[s])
        assert totals(cups[s]) - totals(claimed) == end["players"][s]["cup_unknown"] == 2
        # A seat's own last view holds the same cup.
        assert seats[s]["plies"][-1]["view"]["private"]["cup"] == cups[s]
    assert end["private"] is None and totals(end["unseen"]) >= 4  # the starting cards stay unseen in the views
    # A running game gives nothing: its replay is refused before anything is read.
    c = await arena.bot("carol")
    d = await arena.bot("dave")
    running = await arena.start_game(["carol", "dave"])
    for query in ("", "?seat=0", "?seat=1"):
        body = await api_error(await arena.client.get(f"/api/games/{running}/replay{query}"), 409, "game_running")
        assert "cups" not in body
    await gather(play_out(c, random_policy(33)), play_out(d, random_policy(34)))


async def test_replay_views_do_not_depend_on_hidden_cards(make_arena: Any) -> None:
    arena = await make_arena()
    runs = await hidden_card_runs(arena, seed=303, deals=3, plies=24)
    views = []
    for *_, over in runs:
        replay = await arena.get_json(f"/api/games/{over.game_id}/replay")
        views.append([p["view"] for p in replay["plies"]])
    assert all(len(v) == 24 + 1 for v in views)
    assert views[1] == views[0] and views[2] == views[0]
    # The comparison is sharp: the deals, which the records publish, differ.
    assert len({tuple(over.record.deck) for *_, over in runs}) == len(runs)


async def test_replay_refusals(make_arena: Any) -> None:
    arena = await make_arena()
    await api_error(await arena.client.get("/api/games/nosuchgame/replay"), 404, "unknown_game")
    await api_error(await arena.client.post("/api/games/nosuchgame/replay"), 405, "method_not_allowed")
    # A game that was running when a server died is aborted without a record.
    await arena.create_bot("alice")
    await arena.create_bot("bob")
    await arena.arena.storage.save_game(GameRow(
        game_id="lost", players=["alice", "bob"], status="aborted", rated=False, first_player=0, ply=3,
        started="2030-01-01T00:00:00.000Z", ended="2030-01-01T00:01:00.000Z", end_reason="aborted"))
    await api_error(await arena.client.get("/api/games/lost/replay"), 404, "no_record")


@pytest.mark.parametrize("path", ["replay?seat=0", "replay", ""])
async def test_a_stored_game_is_replayed_off_the_event_loop(make_arena: Any, monkeypatch: Any, path: str) -> None:
    """A long game's seat replay costs a tenth of a second of CPU: built on the event loop, a
    few dozen requests at once held every clock of the server for seconds, and bots that
    answered at once lost on time. While a replay (or a stored game's last view) is being
    built, here held in its worker until the test lets it go, the server answers a bot."""
    arena: Harness = await make_arena()
    a, b = await arena.bot("alice"), await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"], reshuffle_seed=5)
    await gather(play_out(a, random_policy(1)), play_out(b, random_policy(2)))
    arena.arena.manager.finished.clear()  # read back from storage, as any game that ended a while ago
    loop = asyncio.get_running_loop()
    building, release = asyncio.Event(), threading.Event()

    replay = mandala.replay

    def held(*args: Any, **kwargs: Any) -> Any:
        loop.call_soon_threadsafe(building.set)
        release.wait(2.0)  # bounded: on the event loop (the defect), it would hold it this long
        return replay(*args, **kwargs)

    monkeypatch.setattr(mandala, "replay", held)
    request = asyncio.create_task(arena.client.get(f"/api/games/{game_id}/{path}".rstrip("/")))
    await building.wait()
    await a.ping()  # answered while the replay is being built
    assert not request.done()
    release.set()
    resp = await request
    assert resp.status == 200 and (await resp.json())["game_id"] == game_id
