"""``GET /api/games``, the list of games, while games start and end: read page by page through its
``Link`` headers, it lists every game once (the running ones first), a game that ends while the
list is read is listed once, as over, and a game that starts meanwhile does not cut the history
short."""

from __future__ import annotations

from typing import Any

from arena_testkit import Harness, WsClient
from protocol.messages import Decision, GameOver


async def resigned_game(arena: Harness, a: WsClient, b: WsClient) -> str:
    """A game between ``a`` and ``b`` (alice and bob), over: alice resigns it at once."""
    game_id = await arena.start_game(["alice", "bob"], first_player=0)
    await a.send({"type": "resign", "game_id": game_id})
    for seat in (a, b):
        while (await seat.until(GameOver)).game_id != game_id:
            pass
    return game_id


async def every_page(arena: Harness, path: str) -> list[list[dict[str, Any]]]:
    """The pages of the list at ``path``, following each ``Link`` to the next."""
    pages = []
    link: str | None = f'<{path}>; rel="next"'
    while link is not None:
        target, rel = link.split("; ")
        assert rel == 'rel="next"'
        resp = await arena.client.get(target.strip("<>"))
        assert resp.status == 200, await resp.text()
        pages.append(await resp.json())
        link = resp.headers.get("Link")
    return pages


def listed_once(pages: list[list[dict[str, Any]]], running: set[str], over: set[str], limit: int) -> None:
    """The pages list every game once: the running ones first, then those over, newest first
    (then by id); each page is full but the last, which ends the list."""
    games = [g for page in pages for g in page]
    assert sorted(g["game_id"] for g in games) == sorted(running | over)
    first, rest = games[:len(running)], games[len(running):]
    assert {g["game_id"] for g in first} == running and all(g["status"] == "running" for g in first)
    assert all(g["status"] != "running" for g in rest)
    assert rest == sorted(rest, key=lambda g: (g["started"], g["game_id"]), reverse=True)
    assert all(len(page) == limit for page in pages[:-1]) and len(pages[-1]) < limit


def when_storage_lists(arena: Harness, meanwhile: Any) -> None:
    """The next read of a games list from storage runs ``meanwhile()`` first (once)."""
    storage = arena.arena.storage
    real = storage.list_games

    async def list_games(*args: Any, **kwargs: Any) -> Any:
        storage.list_games = real  # type: ignore[method-assign]
        await meanwhile()
        return await real(*args, **kwargs)

    storage.list_games = list_games  # type: ignore[method-assign]


async def test_a_game_that_ends_while_the_list_is_read_is_listed_once_as_over(make_arena: Any) -> None:
    arena = await make_arena()
    a = await arena.bot("alice", max_games=2)
    b = await arena.bot("bob", max_games=2)
    earlier = await resigned_game(arena, a, b)
    game_id = await arena.start_game(["alice", "bob"], first_player=0)
    await a.until(Decision)
    manager = arena.arena.manager

    async def game_ends() -> None:
        manager.running[game_id].resign(0)
        await manager.flush()  # stored over, before the list is read

    when_storage_lists(arena, game_ends)
    games = await arena.get_json("/api/games")
    assert [(g["game_id"], g["status"]) for g in games] == [(game_id, "finished"), (earlier, "finished")]


async def test_a_game_that_starts_while_the_list_is_read_does_not_cut_the_pages_short(make_arena: Any) -> None:
    """Its row, the newest, is stored as running while the first page of the games over is read:
    that page must still be full and link to the next, or a client stops paging there."""
    arena = await make_arena()
    a = await arena.bot("alice", max_games=2)
    b = await arena.bot("bob", max_games=2)
    over = [await resigned_game(arena, a, b) for _ in range(3)]
    started: list[str] = []

    async def game_starts() -> None:
        started.append(await arena.start_game(["alice", "bob"]))
        await arena.arena.manager.flush()

    when_storage_lists(arena, game_starts)
    pages = await every_page(arena, "/api/games?limit=2")
    assert len(pages) == 3
    listed_once(pages, set(started), set(over), 2)


async def test_running_games_past_a_page_are_paged_through_then_the_games_over(make_arena: Any) -> None:
    """Five games running and three over, two a page: the pages walk the running games (their
    own cursor), then those over, every game once. With only the running ones asked for, the
    pages end with them. A parameter given twice keeps its first value on every page. (A page
    full of running games had no link: the rest of the list could not be reached.)"""
    arena = await make_arena()
    a = await arena.bot("alice", max_games=8)
    b = await arena.bot("bob", max_games=8)
    over = {await resigned_game(arena, a, b) for _ in range(3)}
    running = {await arena.start_game(["alice", "bob"]) for _ in range(5)}
    pages = await every_page(arena, "/api/games?limit=2")
    assert [len(p) for p in pages] == [2, 2, 2, 2, 0]  # a full page links to the next, here empty
    listed_once(pages, running, over, 2)
    first = [g for page in pages for g in page][:5]
    assert first == sorted(first, key=lambda g: (g["started"], g["game_id"]), reverse=True)
    only_running = await every_page(arena, "/api/games?status=running&limit=2")
    assert [len(p) for p in only_running] == [2, 2, 1]
    assert [g for page in only_running for g in page] == first
    twice = await every_page(arena, "/api/games?limit=2&limit=3&bot=alice&bot=nobody")
    assert [len(p) for p in twice] == [2, 2, 2, 2, 0]  # limit 2 and alice's games on every page
    resp = await arena.client.get("/api/games?limit=2&before=2020-01-01T00:00:00.000Z~x&running_before=2020-01-01T00:00:00.000Z~x")
    assert resp.status == 400 and (await resp.json())["error"]["code"] == "invalid_request"
    resp = await arena.client.get("/api/games?running_before=nope")
    assert resp.status == 400 and (await resp.json())["error"]["code"] == "bad_cursor"
