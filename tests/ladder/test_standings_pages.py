"""``GET /api/ladder`` a page at a time (PROTOCOL.md §18.4): a table of ten thousand bots is
read in pages that say where they are in it and link to the next, one bot is found with the
page around it, a short table still comes whole, and bad parameters get a typed 400 that
changes nothing.

The table is given to the ladder as a cluster's leader gives it to the other nodes
(``arena_testkit.standings_of``): what is tested here is what is served of a table, whatever
its size; the fit that computes one is tested in ``test_ladder.py`` and measured in ``bench/``.
"""

from __future__ import annotations

from typing import Any

from arena_testkit import Harness, standings_of

BIG = 10_000


async def page(arena: Harness, query: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The answer to ``GET /api/ladder{query}`` and its ``Link`` targets by relation."""
    resp = await arena.client.get(f"/api/ladder{query}")
    assert resp.status == 200, await resp.text()
    links = {}
    for part in filter(None, resp.headers.get("Link", "").split(", ")):
        target, rel = part.split("; ")
        links[rel.removeprefix('rel="').removesuffix('"')] = target.strip("<>")
    return await resp.json(), links


def ranks(body: dict[str, Any]) -> list[int]:
    return [s["rank"] for s in body["standings"]]


async def test_a_table_of_ten_thousand_comes_a_page_at_a_time_each_saying_where_it_is(make_arena: Any) -> None:
    arena: Harness = await make_arena()
    arena.arena.ladder.table = standings_of(BIG)

    first, links = await page(arena, "")
    assert (first["type"], first["paused"], first["total"], first["offset"]) == ("standings", False, BIG, 0)
    assert ranks(first) == list(range(1, 101))  # 100 rows without a limit
    assert first["standings"][0]["bot"] == "bot-00000"
    assert links == {"next": "/api/ladder?limit=100&offset=100"}

    second, links = await page(arena, links["next"].removeprefix("/api/ladder"))
    assert ranks(second) == list(range(101, 201)) and second["offset"] == 100
    assert links == {"prev": "/api/ladder?limit=100&offset=0", "next": "/api/ladder?limit=100&offset=200"}

    last, links = await page(arena, "?limit=7&offset=9995")
    assert ranks(last) == [9996, 9997, 9998, 9999, 10000] and last["total"] == BIG
    assert links == {"prev": "/api/ladder?limit=7&offset=9988"}

    past, links = await page(arena, "?offset=20000")
    assert past["standings"] == [] and past["total"] == BIG and past["offset"] == 20000
    assert links == {"prev": "/api/ladder?limit=100&offset=19900"}

    most, _ = await page(arena, "?limit=500&offset=1000")
    assert ranks(most) == list(range(1001, 1501))


async def test_a_bot_is_found_with_the_page_around_it(make_arena: Any) -> None:
    arena: Harness = await make_arena()
    await arena.create_bot("unlisted")  # registered, never seeking: not in the standings
    arena.arena.ladder.table = standings_of(BIG)

    around, links = await page(arena, "?bot=bot-04321&limit=21")
    assert ranks(around) == list(range(4312, 4333)) and around["offset"] == 4311 and around["total"] == BIG
    assert around["standings"][10] == {**around["standings"][10], "bot": "bot-04321", "rank": 4322}
    assert links == {"prev": "/api/ladder?limit=21&offset=4290", "next": "/api/ladder?limit=21&offset=4332"}
    assert await page(arena, "?bot=BOT-04321&limit=21") == (around, links)  # names ignore case, as everywhere

    # At either end of the table the page is full, the bot off centre.
    top, links = await page(arena, "?bot=bot-00003&limit=21")
    assert ranks(top) == list(range(1, 22)) and "prev" not in links
    bottom, links = await page(arena, "?bot=bot-09999&limit=21")
    assert ranks(bottom) == list(range(9980, 10001)) and "next" not in links
    default, _ = await page(arena, "?bot=bot-05000")
    assert ranks(default) == list(range(4951, 5051))  # 100 rows, rank 5001 in the middle

    assert (await arena.get_json("/api/ladder?bot=nobody", 404))["error"]["code"] == "unknown_bot"
    unlisted = (await arena.get_json("/api/ladder?bot=unlisted", 404))["error"]
    assert unlisted["code"] == "not_listed" and "unlisted is not in the standings" in unlisted["message"]
    profile = await arena.get_json("/api/bots/unlisted")
    assert profile["standing"] is None


async def test_a_short_table_comes_whole_as_before(make_arena: Any) -> None:
    arena: Harness = await make_arena()
    table = standings_of(3, paused=True)
    arena.arena.ladder.table = table
    resp = await arena.client.get("/api/ladder")
    assert resp.status == 200 and "Link" not in resp.headers
    body = await resp.json()
    assert body == {"type": "standings", "paused": True, "total": 3, "offset": 0,
                    "standings": [{f: getattr(s, f) for f in s.__struct_fields__} for s in table.standings]}
    empty = await arena.get_json("/api/ladder?limit=1&offset=3")
    assert empty["standings"] == [] and empty["total"] == 3


async def test_bad_parameters_are_refused_with_a_typed_error_and_change_nothing(make_arena: Any) -> None:
    arena: Harness = await make_arena()
    table = standings_of(250)
    arena.arena.ladder.table = table
    for query, named in [("limit=0", "limit"), ("limit=501", "limit"), ("limit=ten", "limit"), ("limit=+5", "limit"),
                         ("offset=-1", "offset"), ("offset=1.5", "offset"), ("bot=bot-00001&offset=3", "offset")]:
        error = (await arena.get_json(f"/api/ladder?{query}", 400))["error"]
        assert error["code"] == "invalid_request" and named in error["message"], (query, error)
    assert arena.arena.ladder.table is table
    assert ranks((await page(arena, "?limit=2&offset=248"))[0]) == [249, 250]
    assert len((await page(arena, "?limit=&offset="))[0]["standings"]) == 100  # empty: left out, as everywhere
