"""The organizer's tournament API refuses what it cannot do, with a typed error, and creates
or changes nothing then; reading needs no token, every control does."""

from __future__ import annotations

from typing import Any

import pytest
from tournament_kit import AUTH, create, games_read, post

from arena_testkit import Harness


async def test_malformed_definitions_get_typed_400s_and_create_nothing(make_arena: Any) -> None:
    arena: Harness = await make_arena()
    for name in ("ann", "ben", "cat"):
        await arena.create_bot(name)
    base = {"name": "cup", "format": "round_robin", "participants": ["ann", "ben"], "games_per_pairing": 2}
    cases: list[tuple[dict[str, Any], str]] = [
        ({"participants": ["ann", "nobody"]}, "unknown_bot"),
        ({"participants": ["ann"]}, "too_few_participants"),
        ({"participants": ["ann", "ANN"]}, "duplicate_participant"),
        ({"games_per_pairing": 0}, "bad_games_per_pairing"),
        ({"games_per_pairing": 3}, "bad_games_per_pairing"),
        ({"format": "knockout"}, "unknown_format"),
        ({"format": "swiss"}, "bad_rounds"),
        ({"format": "swiss", "rounds": 2}, "bad_rounds"),  # two bots: one round at most
        ({"rounds": 1}, "bad_rounds"),
        ({"format": "gauntlet"}, "bad_bot_under_test"),
        ({"format": "gauntlet", "bot_under_test": "cat"}, "bad_bot_under_test"),
        ({"games_per_pairing": 1000, "participants": [f"x{i}" for i in range(15)]}, "too_many_games"),
        ({"games_per_pairing": 1002}, "invalid_request"),
        ({"participants": [f"b{i}" for i in range(65)]}, "invalid_request"),
        ({"decision_ms": 0}, "invalid_request"),
        ({"max_concurrent": 0}, "invalid_request"),
        ({"grace_s": -1}, "invalid_request"),
        ({"colour": "red"}, "invalid_request"),
        ({"name": ""}, "invalid_request"),
        ({"name": "   "}, "bad_name"),
        ({"name": "cup\nforged log line"}, "bad_name"),
        ({"name": "cup\u001b[31m"}, "bad_name"),
        ({"name": "cup\u0000"}, "bad_name"),
        ({"name": "cup\u0085"}, "bad_name"),
        ({"name": "cup\u2028"}, "bad_name"),
    ]
    for change, code in cases:
        body = {**base, **change}
        resp = await arena.client.post("/api/tournaments", json=body, headers=AUTH)
        got = await resp.json()
        assert (resp.status, got["error"]["code"]) == (400, code), (change, got)
    resp = await arena.client.post("/api/tournaments", json={**base, "participants": ["ann", "ben", "ANN"]}, headers=AUTH)
    assert (await resp.json())["error"]["message"] == "listed twice (names ignore case): ANN, ann"
    resp = await arena.client.post("/api/tournaments", json={**base, "name": "Coupe d'été · 2026 🏆"}, headers=AUTH)
    assert resp.status == 201, await resp.text()
    assert (await resp.json())["name"] == "Coupe d'été · 2026 🏆"
    await post(arena, f"/api/tournaments/{(await resp.json())['tournament_id']}/cancel")
    resp = await arena.client.post("/api/tournaments", data=b"{not json", headers=AUTH)
    assert (resp.status, (await resp.json())["error"]["code"]) == (400, "bad_json")
    assert [t["name"] for t in await arena.get_json("/api/tournaments")] == ["Coupe d'été · 2026 🏆"]


@pytest.mark.parametrize("headers,status,code", [({}, 401, "unauthorized"),
                                                 ({"Authorization": "Bearer wrong"}, 403, "forbidden")])
async def test_every_organizer_endpoint_needs_the_admin_token(make_arena: Any, headers: dict[str, str], status: int,
                                                             code: str) -> None:
    arena: Harness = await make_arena()
    for name in ("ann", "ben"):
        await arena.create_bot(name)
    tid = (await create(arena, participants=["ann", "ben"]))["tournament_id"]
    body = {"name": "cup", "format": "round_robin", "participants": ["ann", "ben"]}
    calls = [("/api/tournaments", body)] + [(f"/api/tournaments/{tid}/{op}", None)
                                            for op in ("start", "pause", "resume", "cancel")]
    for path, payload in calls:
        resp = await arena.client.post(path, json=payload, headers=headers)
        assert (resp.status, (await resp.json())["error"]["code"]) == (status, code), path
    listed = await arena.get_json("/api/tournaments")
    assert [(t["tournament_id"], t["state"]) for t in listed] == [(tid, "created")]


async def test_controls_follow_the_states_and_refuse_the_rest_with_409(make_arena: Any) -> None:
    arena: Harness = await make_arena()
    for name in ("ann", "ben"):
        await arena.create_bot(name)  # never connected: nothing is played, nothing forfeited yet
    tid = (await create(arena, participants=["ann", "ben"], grace_s=3600, seed=41))["tournament_id"]
    # The seed fixes every deal: hidden until the tournament is over (§21.3).
    assert (await arena.get_json(f"/api/tournaments/{tid}"))["definition"]["seed"] is None
    for op in ("pause", "resume"):
        assert (await post(arena, f"/api/tournaments/{tid}/{op}", status=409))["error"]["code"] == "wrong_state"
    assert (await post(arena, f"/api/tournaments/{tid}/start"))["state"] == "running"
    assert (await post(arena, f"/api/tournaments/{tid}/start", status=409))["error"]["code"] == "wrong_state"
    assert (await post(arena, f"/api/tournaments/{tid}/resume", status=409))["error"]["code"] == "wrong_state"
    assert (await post(arena, f"/api/tournaments/{tid}/pause"))["state"] == "paused"
    assert (await post(arena, f"/api/tournaments/{tid}/resume"))["state"] == "running"
    cancelled = await post(arena, f"/api/tournaments/{tid}/cancel")
    assert cancelled["state"] == "cancelled" and cancelled["ended"] is not None
    for op in ("start", "pause", "resume", "cancel"):
        assert (await post(arena, f"/api/tournaments/{tid}/{op}", status=409))["error"]["code"] == "wrong_state"
    view = await arena.get_json(f"/api/tournaments/{tid}")
    assert view["state"] == "cancelled" and view["progress"]["played"] == 0 and view["definition"]["seed"] == 41
    assert (await post(arena, "/api/tournaments/nope/start", status=404))["error"]["code"] == "unknown_tournament"
    for path in ("/api/tournaments/nope", "/api/tournaments/nope/results", "/api/tournaments/nope/records"):
        resp = await arena.client.get(path)
        assert (resp.status, (await resp.json())["error"]["code"]) == (404, "unknown_tournament")
    resp = await arena.client.get(f"/api/tournaments/{tid}/results?format=xml")
    assert (resp.status, (await resp.json())["error"]["code"]) == (400, "invalid_request")


async def test_the_list_of_tournaments_answers_304_while_it_has_not_changed(make_arena: Any) -> None:
    """The page's list asks every 5 s, and the list grows with every tournament ever made: a
    client that asks again with the ETag it was given (a browser does by itself, the answer
    being ``no-cache``) gets ``304`` and no body until something in it changes."""
    arena: Harness = await make_arena()
    await arena.create_bot("ann")
    await arena.create_bot("ben")
    first = await arena.client.get("/api/tournaments")
    tag = first.headers["ETag"]
    assert first.status == 200 and await first.json() == [] and first.headers["Cache-Control"] == "no-cache"
    again = await arena.client.get("/api/tournaments", headers={"If-None-Match": tag})
    assert (again.status, await again.read(), again.headers["ETag"]) == (304, b"", tag)
    created = await create(arena, participants=["ann", "ben"])
    changed = await arena.client.get("/api/tournaments", headers={"If-None-Match": tag})
    assert changed.status == 200 and changed.headers["ETag"] != tag
    assert [t["tournament_id"] for t in await changed.json()] == [created["tournament_id"]]
    other = await arena.client.get("/api/tournaments", headers={"If-None-Match": '"not-it", ' + changed.headers["ETag"]})
    assert other.status == 304


async def test_the_list_of_tournaments_comes_a_page_at_a_time_each_linking_to_the_next(make_arena: Any) -> None:
    """A season's hundreds of tournaments are not one answer: ``limit`` (1–500, 50 by default)
    a page, newest first, a full page linking to the next; together the pages list each once,
    as one page as long as all of them does."""
    arena: Harness = await make_arena()
    for name in ("ann", "ben"):
        await arena.create_bot(name)
    made = [(await create(arena, name=f"cup {i}", participants=["ann", "ben"]))["tournament_id"] for i in range(5)]
    whole = [t["tournament_id"] for t in await arena.get_json("/api/tournaments?limit=500")]
    assert sorted(whole) == sorted(made) and whole[0] == made[-1] and whole[-1] == made[0]
    path: str | None = "/api/tournaments?limit=2"
    seen, pages = [], 0
    while path is not None:
        resp = await arena.client.get(path)
        assert resp.status == 200
        page = [t["tournament_id"] for t in await resp.json()]
        seen += page
        pages += 1
        link = resp.headers.get("Link")
        assert (link is not None) == (len(page) == 2), (page, link)
        path = link[1:link.index(">")] if link else None
    assert (seen, pages) == (whole, 3)
    for query, code in (("limit=0", "invalid_request"), ("limit=501", "invalid_request"), ("state=running", "invalid_request"),
                        ("before=cup", "bad_cursor"), ("before=2026-13-01T00:00:00.000Z~x", "bad_cursor")):
        resp = await arena.client.get(f"/api/tournaments?{query}")
        assert (resp.status, (await resp.json())["error"]["code"]) == (400, code), query


async def test_a_tournament_over_is_listed_without_reading_its_games_again(make_arena: Any) -> None:
    """The list asks every few seconds and may hold more tournaments than the tallies kept
    between reads: one over has its games read once, however many others were read since."""
    arena: Harness = await make_arena()
    for name in ("ann", "ben"):
        await arena.create_bot(name)
    arena.arena.tournaments.tallies.size = 1  # fewer than the list holds
    tids = [(await create(arena, name=f"cup {i}", participants=["ann", "ben"]))["tournament_id"] for i in range(3)]
    for tid in tids:
        await post(arena, f"/api/tournaments/{tid}/cancel")
    with games_read(arena) as reads:
        first = await arena.get_json("/api/tournaments")
        assert await arena.get_json("/api/tournaments") == first
        assert reads == []  # counted as each was cancelled; not read again, though only one tally is kept
    assert [(t["state"], t["progress"]) for t in first] == [("cancelled", {"planned": 2, "played": 0, "running": 0,
                                                                          "forfeits": 0})] * 3
