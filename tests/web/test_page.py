"""The page at ``/`` in a real browser: headless Chromium (Debian's ``chromium``) driven by
Playwright, against a real server (``make_arena``: a real port) with bots on the ladder.

The bots are test WebSocket clients that seek, qualify against the house bot and then play
rated ladder games with random legal moves. They can be told to hold a ladder game at a given
ply, so the page's board can be compared with the API's spectator view of a position that
stands still. Every wait is one of Playwright's auto-waiting ``expect`` assertions with a
timeout, or a wait for a server frame; nothing sleeps.

A bot that misbehaves on purpose (an illegal move, a frame that is no move, then silence until
its clock runs out) is followed from the health on its profile to the seat replay of those
decisions, through its eyes and back to the spectator's.

The storage banner is checked against a real fault: the server's SQLite database lives on a
small tmpfs the test mounts (so it needs root) and fills up, while the spool stays on the
normal disk.

Without ``/usr/bin/chromium`` (or ``$MANDALA_CHROMIUM``) the tests are skipped loudly
(``make test`` installs it with ``scripts/install-package.sh``), and fail when ``CI=true``.
Set ``MANDALA_WEB_SCREENSHOTS`` to a directory to keep screenshots of the standings, of a
board and of the storage banner.

A ladder of ten thousand bots is given to the server as a cluster's leader gives its table to
the other nodes (``arena_testkit.standings_of``): the page must show its top, find a bot and
page through the rest with a bounded number of rows, and apply each ``/live`` batch as the
ladder moves within a long task's 50 ms (the page measures the time each takes with
``performance.now()``; the first, which lays the page out once, is not what is bounded).
"""

from __future__ import annotations

import asyncio
import errno
import json
import math
import os
import re
import subprocess
import tempfile
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import msgspec
import pytest
from tournament_kit import create, play, post, records

from arena_testkit import (
    ADMIN,
    Harness,
    WsClient,
    gather,
    misbehave,
    play_out,
    random_policy,
    settings_for,
    standings_of,
    wait_until,
)
from mandala_client.bots import RandomBot
from protocol.live import TOP
from protocol.messages import Decision, Error, GameOver, GameStart, LadderStatus, LiveStandings
from server.app import create_app
from server.storage import GameRow

CHROMIUM = Path(os.environ.get("MANDALA_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WAIT_MS = 20_000
HOLD_AT = 6
"""The ply at which the bots hold their first ladder game, for the board comparison."""
GARBAGE = re.compile(r"null|undefined|NaN|\[object")
"""What a slip in the page's script would print."""
DECISION_MS = 2000
"""The clock of the game where a bot stops answering: long enough that the bot that plays well
answers in time on a loaded test machine (the other stops answering once and waits it out)."""
SMALL_DISK = "4m"
"""The size of the tmpfs that holds the database in the storage banner test."""


def _unavailable(why: str) -> None:
    why = f"BROWSER TESTS DID NOT RUN: {why}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(why + "; CI=true requires them", pytrace=False)
    pytest.skip(why)


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        _unavailable("the playwright package is not installed (it is in the test extra: pip install -e '.[test]')")
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} is missing (make test installs Debian's chromium with scripts/install-package.sh)")
    with tempfile.TemporaryDirectory(prefix="mandala-chromium-") as profile:
        async with async_playwright() as pw:
            context = await pw.chromium.launch_persistent_context(
                profile, executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True,
                viewport={"width": 1280, "height": 900})
            try:
                yield context
            finally:
                await context.close()


class LadderBot:
    """A connected bot that seeks and answers every decision with a random legal move, except
    that in a ladder game it holds its move from ply ``hold_at`` on until ``release()``, and
    tells ``held`` the game's id. It keeps reading frames meanwhile (pings are answered)."""

    def __init__(self, client: WsClient, seed: int, held: asyncio.Queue[str]) -> None:
        self.client = client
        self.held = held
        self.policy = random_policy(seed)
        self.kinds: dict[str, str] = {}
        self.hold_at: int | None = HOLD_AT
        self.go_on = asyncio.Event()
        self.listed = asyncio.Event()
        self.task = asyncio.get_running_loop().create_task(self._run())
        self.waiting: set[asyncio.Task[None]] = set()

    def release(self) -> None:
        self.hold_at = None
        self.go_on.set()

    async def _answer_later(self, decision: Decision) -> None:
        await self.go_on.wait()
        await self.client.send_move(decision, self.policy(decision))

    async def _run(self) -> None:
        await self.client.send({"type": "seek"})
        try:
            while True:
                msg = await self.client.recv(timeout=120)
                if isinstance(msg, GameStart):
                    self.kinds[msg.game_id] = msg.kind
                elif isinstance(msg, LadderStatus) and msg.state == "listed":
                    self.listed.set()
                elif isinstance(msg, Error):
                    raise AssertionError(f"server refused: {msg}")
                elif isinstance(msg, Decision):
                    if self.kinds.get(msg.game_id) == "ladder" and self.hold_at is not None and msg.request_id >= self.hold_at:
                        self.held.put_nowait(msg.game_id)
                        task = asyncio.get_running_loop().create_task(self._answer_later(msg))
                        self.waiting.add(task)
                        task.add_done_callback(self.waiting.discard)
                    else:
                        await self.client.send_move(msg, self.policy(msg))
        finally:
            for task in list(self.waiting):
                task.cancel()


async def ladder_bots(arena: Harness, held: asyncio.Queue[str]) -> list[LadderBot]:
    """alice and bob, seeking, once both are listed."""
    bots = [LadderBot(await arena.bot(name), seed, held) for seed, name in enumerate(("alice", "bob"), 1)]
    await asyncio.wait_for(asyncio.gather(*(b.listed.wait() for b in bots)), 30)
    return bots


def points(x: float) -> str:
    """A tournament score as the page writes it: "3", "2.5"."""
    return str(int(x)) if x == int(x) else f"{x:.1f}"


def shown(x: float) -> str:
    """A rating as the page rounds it (JavaScript's ``Math.round``: halves up)."""
    return str(math.floor(x + 0.5))


async def standing_numbers(row: Any) -> list[int]:
    """[low, rating, high] as one standings (or ranking) row shows them, read at one instant
    (the row changes live)."""
    return await row.evaluate("""(tr) => {
        const text = (id) => tr.querySelector(`[data-testid="${id}"]`).textContent;
        const [low, high] = text("interval").split("–").map(Number);
        return [low, Number(text("rating")), high];
    }""")  # type: ignore[no-any-return]


def board_counts(view: dict[str, Any]) -> dict[str, Any]:
    """What the board must show of a spectator view, in the shape :func:`shown_counts` reads."""
    areas: dict[str, dict[str, int]] = {}
    for m, md in enumerate(view["mandalas"]):
        areas[f"mountain-{m}"] = md["mountain"]
        for seat in (0, 1):
            areas[f"field-{m}-{seat}"] = md["fields"][seat]
    areas["discard"] = view["discard"]
    return {
        "areas": {k: {c: n for c, n in cards.items() if n} for k, cards in areas.items()},
        "rivers": [p["river"] for p in view["players"]],
        "cups": [str(p["cup_size"]) for p in view["players"]],
        "hands": [str(p["hand_size"]) for p in view["players"]],
        "deck": str(view["deck_size"]),
    }


async def shown_counts(page: Any) -> dict[str, Any]:
    """The same, read from the rendered board."""
    return await page.evaluate("""() => {
        const q = (id) => document.querySelector(`[data-testid="${id}"]`);
        const chips = (id) => Object.fromEntries([...q(id).querySelectorAll(".chip")]
            .map((c) => [c.dataset.color, Number(c.dataset.count)]));
        const ids = ["mountain-0", "mountain-1", "field-0-0", "field-0-1", "field-1-0", "field-1-1", "discard"];
        return {
            areas: Object.fromEntries(ids.map((id) => [id, chips(id)])),
            rivers: [0, 1].map((s) => [...q(`river-${s}`).querySelectorAll(".slot.filled")].map((e) => e.dataset.color)),
            cups: [0, 1].map((s) => q(`cup-size-${s}`).textContent),
            hands: [0, 1].map((s) => q(`hand-size-${s}`).textContent),
            deck: q("deck-size").textContent.split(" ")[0],
        };
    }""")


async def test_standings_live_games_board_and_replay(make_arena: Any, browser: Any) -> None:
    from playwright.async_api import expect

    arena: Harness = await make_arena(pairing_interval_s=0.05, decision_ms=120_000, elo_provisional_games=3)
    held: asyncio.Queue[str] = asyncio.Queue()
    bots = await ladder_bots(arena, held)
    shots = os.environ.get("MANDALA_WEB_SCREENSHOTS")
    try:
        game_id = await asyncio.wait_for(held.get(), 30)
        page = await browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        await page.goto(str(arena.client.make_url("/")))
        await page.evaluate("window.sameDocument = true")

        # The standings from /live: both bots listed, no rated game finished yet.
        await expect(page.get_by_test_id("live-status")).to_have_attribute("data-state", "open", timeout=WAIT_MS)
        rows = page.get_by_test_id("standing-row")
        await expect(rows).to_have_count(2, timeout=WAIT_MS)
        alice = page.locator('[data-testid="standing-row"][data-bot="alice"]')
        ladder = (await arena.get_json("/api/ladder"))["standings"]
        listed = next(s for s in ladder if s["bot"] == "alice")
        start_rating = shown(listed["rating"])
        # The Rating column is the Bradley–Terry rating that orders the table, its 95% interval
        # beside it (containing it); the live Elo has its own column.
        await expect(alice.get_by_test_id("rating")).to_have_text(start_rating)
        await expect(alice.get_by_test_id("interval")).to_have_text(f"{shown(listed['low'])}–{shown(listed['high'])}")
        await expect(alice.get_by_test_id("elo")).to_have_text(shown(listed["elo"]))
        assert await standing_numbers(alice) == [int(shown(listed[k])) for k in ("low", "rating", "high")]
        await expect(page.get_by_test_id("rating-head")).to_have_text("Rating")
        await expect(page.get_by_test_id("elo-head")).to_have_text("Elo (live)")
        for head in ("rating-head", "interval-head", "elo-head"):
            await expect(page.get_by_test_id(head)).to_have_attribute(
                "title", re.compile(r"Ranked by the Bradley–Terry rating.* all rated games.*95% interval.*"
                                    r"Elo \(live\) moves after every rated game and depends on the order"))
        await expect(alice.get_by_test_id("games")).to_have_text("0")
        await expect(page.get_by_test_id("games-head")).to_have_attribute("title", re.compile("^Rated games finished since"))
        await expect(alice.get_by_test_id("games")).to_have_attribute(
            "title", re.compile(r"^0 rated games finished since the last ratings reset; \d+ ladder games? paired in the last hour$"))
        # "Met": the distinct opponents of its rated games, explained in the column's title.
        assert next(s for s in ladder if s["bot"] == "alice")["opponents"] == 0
        await expect(alice.get_by_test_id("opponents")).to_have_text("0")
        await expect(page.get_by_test_id("met-head")).to_have_text("Met")
        await expect(page.get_by_test_id("met-head")).to_have_attribute("title", re.compile("different bots .* rated games"))
        await expect(alice.get_by_test_id("online")).to_have_attribute("data-online", "true")
        await expect(alice.get_by_test_id("provisional")).to_be_visible()

        # The live stream drops (as when the server restarts): the page says so and reconnects.
        await arena.arena.live.close()
        status = page.get_by_test_id("live-status")
        await expect(status).to_have_attribute("data-state", "closed", timeout=WAIT_MS)
        await expect(status).to_have_attribute("data-state", "open", timeout=WAIT_MS)
        await expect(rows).to_have_count(2)

        # The held ladder game is in the running list; its page shows the board of that position.
        running = page.locator(f'[data-testid="running-game"][data-game-id="{game_id}"]')
        await expect(running).to_be_visible(timeout=WAIT_MS)
        await expect(running).to_contain_text("alice")
        if shots:
            await page.screenshot(path=f"{shots}/standings.png", full_page=True)
        await running.click()
        await expect(page).to_have_url(re.compile(f"#/game/{game_id}$"))
        board = page.get_by_test_id("board")
        await expect(board).to_have_attribute("data-ply", str(HOLD_AT), timeout=WAIT_MS)
        await expect(page.get_by_test_id("game-status")).to_have_text("live")
        await expect(page.get_by_test_id("ply")).to_have_text(str(HOLD_AT))
        state = await arena.get_json(f"/api/games/{game_id}")
        assert state["ply"] == HOLD_AT and state["status"] == "running"
        assert await shown_counts(page) == board_counts(state["view"])
        for m in (0, 1):
            mountain = state["view"]["mandalas"][m]["mountain"]
            await expect(page.get_by_test_id(f"mountain-{m}")).to_have_attribute("data-total", str(sum(mountain.values())))
        to_move = state["players"][state["view"]["to_move"]]
        await expect(page.get_by_test_id("to-move")).to_contain_text(to_move)
        if shots:
            await page.screenshot(path=f"{shots}/board-live.png", full_page=True)

        # The bots play on: the page follows the game to its end, then steps through it.
        for bot in bots:
            bot.release()
        await expect(page.get_by_test_id("game-status")).to_have_text("finished", timeout=WAIT_MS)
        await expect(page.get_by_test_id("result")).to_be_visible()
        replay = await arena.get_json(f"/api/games/{game_id}/replay")
        last = len(replay["plies"]) - 1
        result = replay["result"]
        winner, scores = result["winner"], result["scores"]
        await expect(page.get_by_test_id("result")).to_contain_text(
            f"Draw {scores[0]}–{scores[1]}" if winner is None
            else f"{replay['players'][winner]} wins {scores[winner]}–{scores[1 - winner]}")
        await expect(board).to_have_attribute("data-ply", str(last))
        assert await shown_counts(page) == board_counts(replay["plies"][-1]["view"])
        await page.get_by_test_id("replay-first").click()
        await expect(page.get_by_test_id("ply")).to_have_text("0")
        await expect(page.get_by_test_id("last-move")).to_contain_text("deal")
        await page.get_by_test_id("replay-next").click()
        await expect(page.get_by_test_id("ply")).to_have_text("1")
        first_mover = replay["players"][replay["plies"][1]["move"]["player"]]
        await expect(page.get_by_test_id("last-move")).to_contain_text(first_mover)
        assert await shown_counts(page) == board_counts(replay["plies"][1]["view"])
        await page.keyboard.press("ArrowRight")
        await expect(page.get_by_test_id("ply")).to_have_text("2")
        await page.keyboard.press("End")
        await expect(page.get_by_test_id("ply")).to_have_text(str(last))
        await expect(page.get_by_test_id("replay-next")).to_be_disabled()
        await expect(board).not_to_contain_text(GARBAGE)
        await expect(page.get_by_test_id("move-list")).not_to_contain_text(GARBAGE)
        if shots:
            await page.get_by_test_id("replay-first").click()
            for _ in range(min(40, last)):
                await page.keyboard.press("ArrowRight")
            await page.screenshot(path=f"{shots}/board-replay.png", full_page=True)

        # Back on the ladder, in the same document: finished games are listed as results, and
        # the ratings move as the bots play on, without a reload.
        await page.get_by_role("link", name="← Ladder").click()
        recent = page.get_by_test_id("recent-game").first
        await expect(recent).to_be_visible(timeout=WAIT_MS)
        await expect(recent).to_contain_text(re.compile(r"\d+–\d+"))
        recent_id = await recent.get_attribute("data-game-id")
        assert (await arena.get_json(f"/api/games/{recent_id}"))["status"] == "finished"
        await expect(alice.get_by_test_id("games")).not_to_have_text("0", timeout=WAIT_MS)
        await expect(alice.get_by_test_id("opponents")).to_have_text("1", timeout=WAIT_MS)  # bob, however often
        await expect(alice.get_by_test_id("opponents")).to_have_attribute("title", re.compile("1 different bot "))
        ladder = (await arena.get_json("/api/ladder"))["standings"]
        assert {s["bot"]: s["opponents"] for s in ladder} == {"alice": 1, "bob": 1}
        await expect(alice.get_by_test_id("rating")).not_to_have_text(start_rating, timeout=WAIT_MS)
        seen = await alice.get_by_test_id("rating").text_content()
        await expect(alice.get_by_test_id("rating")).not_to_have_text(seen or "", timeout=WAIT_MS)
        seen = await alice.get_by_test_id("elo").text_content()
        await expect(alice.get_by_test_id("elo")).not_to_have_text(seen or "", timeout=WAIT_MS)
        for row in (alice, page.locator('[data-testid="standing-row"][data-bot="bob"]')):
            low, rating, high = await standing_numbers(row)
            assert low <= rating <= high
        await expect(alice.get_by_test_id("provisional")).to_have_count(0, timeout=WAIT_MS)
        await expect(page.get_by_test_id("standings")).not_to_contain_text(GARBAGE)
        assert await page.evaluate("window.sameDocument") is True

        # A bot's name opens its profile. Its two game counts say what each counts, so that
        # more ladder games in the last hour than rated games is no contradiction.
        async with page.expect_response(lambda r: r.url.endswith("/api/bots/alice")) as answered:
            await alice.get_by_role("link", name="alice").click()
        profile = await (await answered.value).json()
        await expect(page.get_by_test_id("bot-state")).to_have_text("listed", timeout=WAIT_MS)
        mine = profile["standing"]
        running_now = sum(1 for g in profile["games"] if g["status"] == "running" and g["kind"] == "ladder")
        await expect(page.get_by_test_id("bot-rated-games")).to_have_text(str(mine["games"]))
        await expect(page.get_by_test_id("bot-rated-games")).to_have_attribute(
            "title", re.compile(r"^rated games finished since the last ratings reset"))
        recent = mine["recent_games"]
        await expect(page.get_by_test_id("bot-recent-games")).to_have_text(
            f"{recent} ladder game{'' if recent == 1 else 's'} paired ({running_now} running)")
        await expect(page.get_by_test_id("bot-recent-games")).to_have_attribute(
            "title", re.compile(r"both games of a duplicate pair count .* running games, aborted ones .* Not its rated games"))
        assert recent >= 2  # the first pair, both of its games counted from the pairing
        await expect(page.locator("#bot dt").filter(has_text="Rated games")).to_have_count(1)
        await expect(page.locator("#bot dt").filter(has_text="Last hour")).to_have_count(1)
        if shots:
            await page.screenshot(path=f"{shots}/profile.png", full_page=True)
        await expect(page.get_by_test_id("bot-rating")).to_have_text(re.compile(r"^\d+$"))
        await expect(page.get_by_test_id("bot-interval")).to_have_text(re.compile(r"^\d+–\d+$"))
        await expect(page.get_by_test_id("bot-elo")).to_have_text(re.compile(r"^\d+$"))
        await expect(page.get_by_test_id("bot-game").first).to_be_visible()
        assert errors == []
    finally:
        for bot in bots:
            bot.task.cancel()
        await asyncio.gather(*(b.task for b in bots), return_exceptions=True)


LONG_TASK_MS = 50.0
"""What a batch may take the page's main thread, applied and drawn: the browser's own measure of
a task long enough to delay what the user does (the Long Tasks API's 50 ms)."""


def swapped(table: LiveStandings, i: int) -> LiveStandings:
    """The table after a refresh in which the bots at rows ``i`` and ``i + 1`` changed places."""
    rows = list(table.standings)
    rows[i], rows[i + 1] = (msgspec.structs.replace(rows[i + 1], rank=i + 1, rating=rows[i].rating),
                            msgspec.structs.replace(rows[i], rank=i + 2, rating=rows[i + 1].rating))
    return LiveStandings(paused=table.paused, standings=rows, total=table.total, offset=0)


async def test_ten_thousand_bots_the_top_a_bot_found_by_name_and_pages_in_bounded_rows(make_arena: Any, browser: Any) -> None:
    from playwright.async_api import expect

    arena: Harness = await make_arena()

    def refresh(table: LiveStandings) -> None:  # what the ladder does with a table it computed
        arena.arena.ladder.table = table
        arena.arena.live.publish(table)

    table = standings_of(10_000)
    refresh(table)
    page = await browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    await page.goto(str(arena.client.make_url("/")))
    status = page.get_by_test_id("live-status")
    await expect(status).to_have_attribute("data-state", "open", timeout=WAIT_MS)

    # The top of the table, live, and how many bots there are.
    top = page.get_by_test_id("standing-row")
    await expect(top).to_have_count(TOP)
    await expect(top.first).to_have_attribute("data-bot", "bot-00000")
    await expect(page.get_by_test_id("standings-total")).to_have_text("10,000")
    await expect(page.get_by_test_id("top-caption")).to_have_text(f"Top {TOP} of 10,000")

    # A bot found by name: its rank and ten rows on either side.
    await page.get_by_test_id("standings-search-input").fill("bot-04321")
    await page.get_by_test_id("standings-search-go").click()
    await expect(page).to_have_url(re.compile(r"#/\?bot=bot-04321$"))
    rows = page.get_by_test_id("page-row")
    await expect(rows).to_have_count(21, timeout=WAIT_MS)
    await expect(page.get_by_test_id("page-caption")).to_have_text("Around bot-04321: rank 4,322 of 10,000")
    me = page.locator('[data-testid="page-row"][data-me="true"]')
    await expect(me).to_have_attribute("data-bot", "bot-04321")
    await expect(me.get_by_test_id("rank")).to_have_text("4322")
    await expect(rows.first.get_by_test_id("rank")).to_have_text("4312")
    await expect(rows.last.get_by_test_id("rank")).to_have_text("4332")
    # The rows below it, a page at a time, and back.
    await page.get_by_test_id("page-next").click()
    await expect(page.get_by_test_id("page-caption")).to_have_text("Ranks 4,333–4,353 of 10,000")
    await expect(rows.first.get_by_test_id("rank")).to_have_text("4333")
    await page.get_by_test_id("page-prev").click()
    await expect(me.get_by_test_id("rank")).to_have_text("4322")
    # A name no bot has: said so, and no page shown.
    await page.get_by_test_id("standings-search-input").fill("nobody")
    await page.get_by_test_id("standings-search-go").click()
    await expect(page.get_by_test_id("standings-search-error")).to_have_text("no bot named 'nobody'")
    await expect(page.get_by_test_id("ladder-page")).to_be_hidden()
    # The ranks just below the top.
    await page.get_by_test_id("standings-more").click()
    await expect(rows).to_have_count(50, timeout=WAIT_MS)
    await expect(page.get_by_test_id("page-caption")).to_have_text("Ranks 21–70 of 10,000")
    # Ten thousand bots, a bounded number of rows in the document.
    assert await page.evaluate("document.querySelectorAll('tr[data-bot]').length") == TOP + 50

    # The ladder moves: each refresh that reorders the top reaches the page as one batch (no
    # game runs: nothing else changes), applied and drawn well within a long task.
    took = []
    for i in range(3):
        batches = int(await status.get_attribute("data-batches") or 0)
        table = swapped(table, i)
        refresh(table)
        await expect(status).to_have_attribute("data-batches", str(batches + 1), timeout=WAIT_MS)
        took.append(float(await status.get_attribute("data-batch-ms") or "inf"))
        await expect(top.nth(i)).to_have_attribute("data-bot", table.standings[i].bot)
        await expect(top.nth(i + 1)).to_have_attribute("data-bot", table.standings[i + 1].bot)
        await expect(top.nth(i).get_by_test_id("rank")).to_have_text(str(i + 1))
    assert max(took) < LONG_TASK_MS, f"/live batches took the page {took} ms"
    assert await page.evaluate("document.querySelectorAll('tr[data-bot]').length") == TOP + 50

    # Every game only when asked for: until then the server sends this page the sample.
    hub = arena.arena.live
    assert hub.viewers and not hub.followers
    await page.get_by_test_id("every-game").click()
    await expect(page.get_by_test_id("every-game")).to_have_attribute("aria-pressed", "true")
    await wait_until(lambda: len(hub.followers) == 1 and len(hub.viewers) == 1, 10, "the page never asked for every game")
    await expect(page.get_by_test_id("arena-counts")).to_have_text(
        "0 games finished in the last minute · 0 bots connected", timeout=WAIT_MS)
    assert errors == []


async def shown_cup(page: Any, seat: int) -> dict[str, int]:
    """A cup's chips as the board shows them: color -> count."""
    return await page.get_by_test_id(f"cup-{seat}").evaluate(  # type: ignore[no-any-return]
        "(cup) => Object.fromEntries([...cup.querySelectorAll('.chip:not(.hidden-card)')]"
        ".map((c) => [c.dataset.color, Number(c.dataset.count)]))")


async def final_cups_match_the_record(page: Any, arena: Harness, game_id: str) -> None:
    """At a finished game's last position the board shows both whole cups, and the score each
    gives (R21, counted here from the board's rivers) is the record's; one step back, the
    starting cards are unseen again, as during the game."""
    from playwright.async_api import expect

    replay = await arena.get_json(f"/api/games/{game_id}/replay")
    end = replay["plies"][-1]["view"]
    board = page.get_by_test_id("board")
    await expect(board).to_have_attribute("data-ply", str(len(replay["plies"]) - 1), timeout=WAIT_MS)
    await expect(board).to_have_attribute("data-final", "true")
    rivers = await shown_counts(page)
    for seat in (0, 1):
        cup = {c: n for c, n in replay["cups"][seat].items() if n}
        assert await shown_cup(page, seat) == cup
        river = rivers["rivers"][seat]
        assert river == end["players"][seat]["river"]
        score = sum(slot * cup.get(color, 0) for slot, color in enumerate(river, 1))
        assert score == replay["result"]["scores"][seat]
        await expect(page.get_by_test_id(f"final-score-{seat}")).to_have_text(f"· scores {score}")
        await expect(page.get_by_test_id(f"cup-{seat}")).not_to_contain_text("unseen")
    await page.get_by_test_id("replay-prev").click()
    await expect(board).to_have_attribute("data-final", "false")
    for seat in (0, 1):
        await expect(page.get_by_test_id(f"cup-{seat}")).to_contain_text("unseen")
        await expect(page.get_by_test_id(f"final-score-{seat}")).to_have_count(0)
    await page.get_by_test_id("replay-last").click()
    await expect(board).to_have_attribute("data-final", "true")


async def held_play(client: WsClient, bot: Any, go: asyncio.Event) -> None:
    """``tournament_kit.play``, except that every move waits for ``go``; frames are read on
    meanwhile (so the server's pings are answered)."""
    pending: set[asyncio.Task[None]] = set()

    async def answer(decision: Decision) -> None:
        await go.wait()
        move = await asyncio.to_thread(bot.choose, decision.view, decision.legal)
        await client.send_move(decision, move)

    try:
        while True:
            msg = await client.recv(timeout=120)
            if isinstance(msg, Decision):
                if go.is_set():
                    await answer(msg)
                else:
                    task = asyncio.get_running_loop().create_task(answer(msg))
                    pending.add(task)
                    task.add_done_callback(pending.discard)
    finally:
        for task in list(pending):
            task.cancel()


async def test_a_tournament_live_from_the_list_to_its_final_ranking(make_arena: Any, browser: Any) -> None:
    """Three bots on WebSockets play a round robin (two games a pairing: six) while the page
    follows it: the list, then the tournament's progress, live games, the bot it waits for, its
    crosstable and its ranking, all pushed by ``/live`` without a reload."""
    from playwright.async_api import expect

    arena: Harness = await make_arena(decision_ms=120_000)
    names = ["ann", "ben", "cat"]
    go = asyncio.Event()
    clients = {n: await arena.bot(n, max_games=2) for n in ("ann", "ben")}
    cat_token = await arena.create_bot("cat")  # connects later: the tournament waits for it meanwhile
    tasks = [asyncio.create_task(held_play(c, RandomBot(seed=i), go)) for i, c in enumerate(clients.values())]
    try:
        tid = (await create(arena, name="web cup", participants=names, games_per_pairing=2, grace_s=600.0,
                            seed=11))["tournament_id"]
        page = await browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        await page.goto(str(arena.client.make_url("/")))
        await page.evaluate("window.sameDocument = true")
        await expect(page.get_by_test_id("live-status")).to_have_attribute("data-state", "open", timeout=WAIT_MS)

        # The list, from the navigation: created, nothing played of the six games planned.
        await page.get_by_test_id("nav-tournaments").click()
        await expect(page).to_have_url(re.compile(r"#/tournaments$"))
        await expect(page.get_by_test_id("tournaments")).to_be_visible()
        row = page.locator(f'[data-testid="tournament-row"][data-tournament-id="{tid}"]')
        await expect(row).to_have_count(1, timeout=WAIT_MS)
        await expect(row.get_by_test_id("row-name")).to_have_text("web cup")
        await expect(row.get_by_test_id("row-format")).to_have_text("round robin")
        await expect(row.get_by_test_id("row-state")).to_have_text("created")
        await expect(row.get_by_test_id("row-participants")).to_have_text("3")
        await expect(row.get_by_test_id("row-played")).to_have_text("0 / 6")

        # Started: the list follows the tournament message of /live.
        await post(arena, f"/api/tournaments/{tid}/start")
        await expect(row.get_by_test_id("row-state")).to_have_text("running", timeout=WAIT_MS)

        # The tournament: ann and ben play the first game of their deal (held at its first
        # decision; the second, seats swapped, waits for its end), cat is waited for, nothing is
        # played yet.
        await row.get_by_role("link", name="web cup").click()
        await expect(page).to_have_url(re.compile(f"#/tournaments/{tid}$"))
        view = page.get_by_test_id("tournament-view")
        await expect(page.get_by_test_id("tournament-name")).to_have_text("web cup", timeout=WAIT_MS)
        await expect(page.get_by_test_id("tournament-format")).to_have_text("round robin")
        await expect(page.get_by_test_id("tournament-state")).to_have_text("running")
        progress = page.get_by_test_id("tournament-progress")
        await expect(progress).to_have_attribute("max", "6")
        await expect(progress).to_have_attribute("value", "0")
        await expect(page.get_by_test_id("tournament-played")).to_have_text("0 / 6")
        live_games = page.get_by_test_id("tournament-game")
        await expect(live_games).to_have_count(1, timeout=WAIT_MS)
        running = (await arena.get_json(f"/api/tournaments/{tid}"))["running"]
        assert [g["players"] for g in running] == [["ann", "ben"]]
        for g in running:
            game = live_games.and_(page.locator(f'[data-game-id="{g["game_id"]}"]'))
            await expect(game).to_have_attribute("href", f"#/game/{g['game_id']}")
            await expect(game).to_contain_text("live")
        waiting = page.get_by_test_id("waiting-bot")
        await expect(waiting).to_have_count(1, timeout=WAIT_MS)
        await expect(waiting).to_have_attribute("data-bot", "cat")
        await expect(waiting).to_have_attribute("data-reason", "away")
        await expect(waiting).to_contain_text(re.compile(r"^cat — away since just now"))
        await expect(waiting.get_by_test_id("forfeits-in")).to_have_text(re.compile(r"forfeits in \d+ s$"))
        # The list of its games holds the running one, live, a link to the game.
        listed = page.get_by_test_id("t-game")
        await expect(listed).to_have_count(1, timeout=WAIT_MS)
        for g in running:
            item = page.locator(f'[data-testid="t-game"][data-game-id="{g["game_id"]}"]')
            await expect(item).to_have_attribute("data-status", "running")
            await expect(item.get_by_test_id("t-game-link")).to_have_attribute("href", f"#/game/{g['game_id']}")
            await expect(item.get_by_test_id("t-game-score")).to_have_text("live")
        await expect(page.get_by_test_id("cross-cell").and_(page.locator('[data-games="0"]'))).to_have_count(6)
        shots = os.environ.get("MANDALA_WEB_SCREENSHOTS")
        if shots:
            await page.screenshot(path=f"{shots}/tournament-live.png", full_page=True)

        # A live game opens the game view, and leads back to its tournament.
        await live_games.first.click()
        await expect(page.get_by_test_id("game-status")).to_have_text("live", timeout=WAIT_MS)
        await page.get_by_test_id("game-tournament").click()
        await expect(page).to_have_url(re.compile(f"#/tournaments/{tid}$"))
        await expect(live_games).to_have_count(1, timeout=WAIT_MS)

        # cat comes and everybody plays: every value the bar shows is recorded as it changes.
        await progress.evaluate("""(bar) => {
            window.playedSeen = [];
            new MutationObserver(() => window.playedSeen.push(Number(bar.getAttribute("value"))))
                .observe(bar, { attributes: true, attributeFilter: ["value"] });
        }""")
        cat = await arena.connect(cat_token, max_games=2)
        tasks.append(asyncio.create_task(play(cat, RandomBot(seed=2))))
        go.set()
        await expect(page.get_by_test_id("tournament-played")).to_have_text("6 / 6", timeout=WAIT_MS)
        await expect(progress).to_have_attribute("value", "6")
        await expect(page.get_by_test_id("tournament-state")).to_have_text("finished", timeout=WAIT_MS)
        seen = await page.evaluate("window.playedSeen")
        assert seen == sorted(seen) and seen[0] > 0 and seen[-1] == 6, seen
        await expect(live_games).to_have_count(0)
        # Over: nothing plays and nobody is waited for any more, so those boxes are gone.
        await expect(page.get_by_test_id("tournament-running-panel")).to_be_hidden()
        await expect(page.get_by_test_id("tournament-waiting-panel")).to_be_hidden()
        await expect(view).not_to_contain_text("Playing now", use_inner_text=True)
        await expect(view).not_to_contain_text("Waiting for", use_inner_text=True)

        # Its six games, in schedule order, each with its players, result and end, and a link.
        games = await arena.get_json(f"/api/tournaments/{tid}/games")
        lines = {line["game_id"]: line for line in await records(arena, tid)}
        assert [g["slot"] for g in games] == list(range(6)) and {g["game_id"] for g in games} == set(lines)
        await expect(listed).to_have_count(6, timeout=WAIT_MS)
        await expect(page.get_by_test_id("tournament-games-count")).to_have_text("6")
        await expect(page.get_by_test_id("tournament-games-more")).to_be_hidden()
        assert await listed.evaluate_all("(lis) => lis.map((li) => li.dataset.gameId)") == [g["game_id"] for g in games]
        reasons = {"river": "a river is full", "deck": "the deck ran out", "no_moves": "no cards left to play",
                   "turn_limit": "the turn limit was reached"}
        for i, g in enumerate(games):
            result, players = lines[g["game_id"]]["result"], lines[g["game_id"]]["players"]
            assert g["result"] == result and g["players"] == players
            winner, scores = result["winner"], result["scores"]
            item = listed.nth(i)
            await expect(item).to_have_attribute("data-status", "finished")
            await expect(item.get_by_test_id("t-game-link")).to_have_attribute("href", f"#/game/{g['game_id']}")
            await expect(item.get_by_test_id("t-game-link")).to_contain_text(f"{players[0]}vs{players[1]}")
            await expect(item.get_by_test_id("t-game-score")).to_have_text(f"{scores[0]}–{scores[1]}")  # as the names
            await expect(item.get_by_test_id("t-game-result")).to_have_text("Draw" if winner is None else f"{players[winner]} wins")
            await expect(item.get_by_test_id("t-game-reason")).to_have_attribute("data-reason", result["end_reason"])
            await expect(item.get_by_test_id("t-game-reason")).to_have_text(reasons[result["end_reason"]])
            await expect(item).to_contain_text(f"game {g['slot'] + 1} · round {g['round']}")

        # The crosstable and the ranking are the API's final results, in ranking order.
        results = await arena.get_json(f"/api/tournaments/{tid}/results")
        assert results["played"] == results["planned"] == 6
        ranking = results["ranking"]
        order = [r["bot"] for r in ranking]
        assert sorted(order) == names
        cross = page.get_by_test_id("crosstable")
        await expect(cross.get_by_test_id("cross-col")).to_have_count(3)
        assert await cross.get_by_test_id("cross-col").evaluate_all("(ths) => ths.map((th) => th.dataset.bot)") == order
        assert await cross.get_by_test_id("cross-row").evaluate_all("(trs) => trs.map((tr) => tr.dataset.bot)") == order
        await expect(cross.get_by_test_id("cross-self")).to_have_count(3)
        for bot in order:
            await expect(cross.locator(f'[data-testid="cross-self"][data-bot="{bot}"]')).to_have_text("")
        await expect(cross.get_by_test_id("cross-cell")).to_have_count(6)
        for a in order:
            for b in order:
                if a == b:
                    continue
                c = results["crosstable"][a][b]
                assert c["games"] == 2
                cell = cross.locator(f'[data-testid="cross-cell"][data-bot="{a}"][data-opponent="{b}"]')
                await expect(cell.get_by_test_id("cross-wdl")).to_have_text(f"{c['wins']}-{c['draws']}-{c['losses']}")
                await expect(cell.get_by_test_id("cross-score")).to_have_text(points(c["score"]))
        table = page.get_by_test_id("tournament-ranking")
        lines = table.get_by_test_id("ranking-row")
        await expect(lines).to_have_count(3)
        assert await lines.evaluate_all("(trs) => trs.map((tr) => tr.dataset.bot)") == order
        for i, r in enumerate(ranking):
            line = lines.nth(i)
            await expect(line.get_by_test_id("rank")).to_have_text(str(r["rank"]))
            await expect(line.get_by_test_id("bot")).to_have_text(r["bot"])
            await expect(line.get_by_test_id("rating")).to_have_text(shown(r["rating"]))
            await expect(line.get_by_test_id("interval")).to_have_text(f"{shown(r['low'])}–{shown(r['high'])}")
            low, rating, high = await standing_numbers(line)
            assert low <= rating <= high
            await expect(line.get_by_test_id("score")).to_have_text(points(r["score"]))
            await expect(line.get_by_test_id("games")).to_have_text("4")
            await expect(line.get_by_test_id("wdl")).to_have_text(f"{r['wins']}–{r['draws']}–{r['losses']}")
            await expect(line.get_by_test_id("forfeits")).to_have_text("0")
            p = r["stronger_than_next"]
            await expect(line.get_by_test_id("stronger")).to_have_text(
                "" if p is None else ">99%" if p > 0.995 else "<1%" if p < 0.005 else f"{math.floor(p * 100 + 0.5)}%")
        await expect(page.get_by_test_id("results-csv")).to_have_attribute("href", f"/api/tournaments/{tid}/results?format=csv")
        await expect(page.get_by_test_id("records-jsonl")).to_have_attribute("href", f"/api/tournaments/{tid}/records")
        resp = await arena.client.get(f"/api/tournaments/{tid}/results?format=csv")
        assert [line.split(",")[1] for line in (await resp.text()).splitlines()[1:]] == order
        await expect(view).not_to_contain_text(GARBAGE)
        if shots:
            await page.screenshot(path=f"{shots}/tournament-finished.png", full_page=True)

        # A game of the list opens its replay at the end: both cups whole (the record is
        # public now), and the score each gives is the record's final score.
        await listed.nth(5).get_by_test_id("t-game-link").click()
        await expect(page).to_have_url(re.compile(f"#/game/{games[5]['game_id']}$"))
        await expect(page.get_by_test_id("game-status")).to_have_text("finished", timeout=WAIT_MS)
        await final_cups_match_the_record(page, arena, games[5]["game_id"])
        if shots:
            await page.screenshot(path=f"{shots}/replay-final-cups.png", full_page=True)
        await page.get_by_test_id("game-tournament").click()
        await expect(page).to_have_url(re.compile(f"#/tournaments/{tid}$"))
        await expect(listed).to_have_count(6, timeout=WAIT_MS)

        # Back to the list, still the same document: finished, all played.
        await page.get_by_test_id("nav-tournaments").click()
        await expect(row.get_by_test_id("row-state")).to_have_text("finished", timeout=WAIT_MS)
        await expect(row.get_by_test_id("row-played")).to_have_text("6 / 6")
        assert await page.evaluate("window.sameDocument") is True
        assert errors == []
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def test_a_tournament_waits_for_a_bot_busy_with_a_ladder_game_and_says_with_which(
        make_arena: Any, browser: Any) -> None:
    """alice's only slot is taken by a ladder game (held) when a tournament with her starts:
    "Waiting for" names her busy, with a link to that game and no forfeit countdown. Once the
    ladder game is over the tournament plays to its end, and the boxes go."""
    from playwright.async_api import expect

    arena: Harness = await make_arena(pairing_interval_s=0.05, decision_ms=120_000)
    held: asyncio.Queue[str] = asyncio.Queue()
    bots = await ladder_bots(arena, held)
    carol = await arena.bot("carol")
    tasks = [asyncio.create_task(play(carol, RandomBot(seed=5)))]
    try:
        ladder_game = await asyncio.wait_for(held.get(), 30)
        assert ladder_game in bots[0].kinds and bots[0].kinds[ladder_game] == "ladder"
        tid = (await create(arena, name="busy cup", participants=["alice", "carol"], games_per_pairing=2,
                            grace_s=1.0, seed=3))["tournament_id"]
        await post(arena, f"/api/tournaments/{tid}/start")
        page = await browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        await page.goto(str(arena.client.make_url("/")) + f"#/tournaments/{tid}")

        waiting = page.get_by_test_id("waiting-bot")
        await expect(waiting).to_have_count(1, timeout=WAIT_MS)
        await expect(waiting).to_have_attribute("data-bot", "alice")
        await expect(waiting).to_have_attribute("data-reason", "busy")
        await expect(waiting).to_contain_text(re.compile(r"^alice — busy: ladder game vs bob · since "))
        link = waiting.get_by_test_id("busy-game")
        await expect(link).to_have_count(1)
        await expect(link).to_have_attribute("href", f"#/game/{ladder_game}")
        await expect(waiting.get_by_test_id("forfeits-in")).to_have_text("")
        entry = next(w for w in (await arena.get_json(f"/api/tournaments/{tid}"))["waiting"] if w["bot"] == "alice")
        assert (entry["reason"], entry["forfeits_in_s"]) == ("busy", None)
        assert entry["busy_with"] == [{"game_id": ladder_game, "kind": "ladder", "opponent": "bob"}]
        shots = os.environ.get("MANDALA_WEB_SCREENSHOTS")
        if shots:
            await page.screenshot(path=f"{shots}/tournament-busy.png", full_page=True)

        # Past the grace (1 s) a busy bot is still waited for, never forfeited.
        since = datetime.fromisoformat(entry["since"].replace("Z", "+00:00"))

        async def past_the_grace() -> bool:
            view = await arena.get_json(f"/api/tournaments/{tid}")
            assert view["progress"]["forfeits"] == 0 and [w["reason"] for w in view["waiting"]] == ["busy"]
            return (datetime.now(UTC) - since).total_seconds() > 2.0

        await wait_until(past_the_grace, 10, "the busy bot was not waited for past its grace")
        await expect(page.get_by_test_id("tournament-played")).to_have_text("0 / 2")
        await expect(waiting.get_by_test_id("forfeits-in")).to_have_text("")

        # The ladder game ends; the tournament plays, then ends, and its boxes with it.
        for bot in bots:
            bot.release()
        await expect(page.get_by_test_id("tournament-state")).to_have_text("finished", timeout=WAIT_MS)
        results = await arena.get_json(f"/api/tournaments/{tid}/results")
        assert {r["bot"]: r["forfeits"] for r in results["ranking"]} == {"alice": 0, "carol": 0}
        await expect(page.get_by_test_id("tournament-waiting-panel")).to_be_hidden()
        await expect(page.get_by_test_id("tournament-running-panel")).to_be_hidden()
        await expect(page.get_by_test_id("t-game")).to_have_count(2)
        assert errors == []
    finally:
        for bot in bots:
            bot.task.cancel()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*(b.task for b in bots), *tasks, return_exceptions=True)


async def test_a_long_tournament_lists_its_games_a_page_at_a_time(make_arena: Any, browser: Any) -> None:
    """Sixty stored games: the page lists the first fifty in schedule order and says there are
    more; "More games" appends the rest, and then it says there is nothing more."""
    from playwright.async_api import expect

    arena: Harness = await make_arena()
    for name in ("ann", "ben"):
        await arena.create_bot(name)
    tid = (await create(arena, name="long cup", participants=["ann", "ben"], games_per_pairing=60))["tournament_id"]
    for slot in range(60):
        await arena.arena.storage.save_game(GameRow(
            game_id=f"g{slot:02d}", players=["ann", "ben"] if slot % 2 == 0 else ["ben", "ann"], status="finished",
            rated=False, first_player=0, ply=30, started=f"2020-01-01T00:{slot:02d}:00.000Z",
            kind="tournament", tournament_id=tid, slot=slot, ended=f"2020-01-01T00:{slot:02d}:30.000Z",
            end_reason="river", result={"winner": slot % 2, "end_reason": "river",
                                        "scores": [30, 20] if slot % 2 == 0 else [20, 30], "cup_sizes": [5, 5]}))
    page = await browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    await page.goto(str(arena.client.make_url("/")) + f"#/tournaments/{tid}")
    listed = page.get_by_test_id("t-game")
    await expect(listed).to_have_count(50, timeout=WAIT_MS)
    await expect(page.get_by_test_id("tournament-games-count")).to_have_text("50+")
    more = page.get_by_test_id("tournament-games-more")
    await expect(more).to_be_visible()
    await more.click()
    await expect(listed).to_have_count(60, timeout=WAIT_MS)
    await expect(page.get_by_test_id("tournament-games-count")).to_have_text("60")
    await expect(more).to_be_hidden()
    assert await listed.evaluate_all("(lis) => lis.map((li) => li.dataset.gameId)") == [f"g{i:02d}" for i in range(60)]
    await expect(listed.nth(59)).to_contain_text("game 60 · round 1")
    await expect(listed.nth(59).get_by_test_id("t-game-result")).to_have_text("ann wins")  # seat 1 of slot 59
    await expect(listed.nth(59).get_by_test_id("t-game-score")).to_have_text("20–30")  # in seat order, as the names
    assert errors == []


async def test_a_tournament_list_read_past_its_first_five_hundred_games_keeps_them_as_games_start(
        make_arena: Any, browser: Any) -> None:
    """560 games stored, all over: the organizer reads the list to its end ("More games" eleven
    times). Then the tournament starts and its slots 560 and 561 are played: the list
    gains that game at its end and keeps the 560 before it. (It read its first 500 again at each
    event and dropped the rest.)"""
    from playwright.async_api import expect

    arena: Harness = await make_arena(decision_ms=120_000)
    clients = [await arena.bot(name) for name in ("ann", "ben")]
    tid = (await create(arena, name="long cup", participants=["ann", "ben"], games_per_pairing=562,
                        grace_s=600.0))["tournament_id"]
    stored = 560
    for slot in range(stored):
        at = f"2020-01-01T{slot // 60:02d}:{slot % 60:02d}"
        await arena.arena.storage.save_game(GameRow(
            game_id=f"g{slot:03d}", players=["ann", "ben"] if slot % 2 == 0 else ["ben", "ann"], status="finished",
            rated=False, first_player=0, ply=30, started=f"{at}:00.000Z", kind="tournament", tournament_id=tid,
            slot=slot, ended=f"{at}:30.000Z", end_reason="river",
            result={"winner": 0, "end_reason": "river", "scores": [30, 20], "cup_sizes": [5, 5]}))
    page = await browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    await page.goto(str(arena.client.make_url("/")) + f"#/tournaments/{tid}")
    listed = page.get_by_test_id("t-game")
    more = page.get_by_test_id("tournament-games-more")
    for shown in range(50, stored, 50):
        await expect(listed).to_have_count(shown, timeout=WAIT_MS)
        await more.click()
    await expect(listed).to_have_count(stored, timeout=WAIT_MS)
    await expect(more).to_be_hidden()

    tasks = [asyncio.create_task(play(c, RandomBot(seed=i))) for i, c in enumerate(clients)]
    try:
        await post(arena, f"/api/tournaments/{tid}/start")
        await expect(page.get_by_test_id("tournament-state")).to_have_text("finished", timeout=WAIT_MS)
        played = [g["game_id"] for g in await arena.get_json(f"/api/tournaments/{tid}/games?after_slot={stored - 1}")]
        assert len(played) == 2
        await expect(listed).to_have_count(stored + 2, timeout=WAIT_MS)
        assert await listed.evaluate_all("(lis) => lis.map((li) => li.dataset.gameId)") == [
            *(f"g{i:03d}" for i in range(stored)), *played]
        await expect(page.get_by_test_id("tournament-games-count")).to_have_text(str(stored + 2))
        assert errors == []
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


HOSTILE = '{"type": "move", "game_id": "%s", "request_id": %d, "move": {"type": "<img src=x onerror=window.pwned=1>"}}'
"""A frame that decodes as JSON but not as a move: the page must show its text as text."""


async def test_a_bot_author_goes_from_the_health_on_the_profile_to_the_decision_that_went_wrong(
        make_arena: Any, browser: Any) -> None:
    """slowpoke answers its 2nd decision with an illegal move, then a frame that is no move
    (with markup in it), then a legal move; at its 4th decision it stops answering and loses
    on time. Its profile counts that and links each incident to the seat replay at that
    decision, which shows its hand, the decision, its answer and the incidents in words."""
    from playwright.async_api import expect

    arena: Harness = await make_arena(decision_ms=DECISION_MS)
    slow = await arena.bot("slowpoke")
    steady = await arena.bot("steady")
    game_id = await arena.start_game(["slowpoke", "steady"], reshuffle_seed=9)
    done, _ = await gather(misbehave(slow, game_id, HOSTILE), play_out(steady, random_policy(3)))
    sent, illegal_at, stalled_at = done.sent, done.illegal_at, done.stalled_at
    health = (await arena.get_json("/api/bots/slowpoke"))["health"]
    assert (health["timeouts"], health["illegal_moves"], health["invalid_answers"]) == (1, 1, 1)
    replay = await arena.get_json(f"/api/games/{game_id}/replay?seat=0")
    at_illegal = replay["plies"][illegal_at]
    refused = at_illegal["incidents"][0]
    assert refused["code"] == "illegal_move" and refused["sent"] == sent

    page = await browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    await page.goto(str(arena.client.make_url("/")) + "#/bot/slowpoke")

    # The profile's health: the counts, the game lost on time, the incidents.
    box = page.get_by_test_id("bot-health")
    await expect(box).to_be_visible(timeout=WAIT_MS)
    for key, n in [("timeouts", 1), ("illegal-moves", 1), ("invalid-answers", 1), ("late-answers", 0),
                   ("disconnects", 0), ("resignations", 0), ("forfeits", 0), ("games-lost", 1)]:
        await expect(box.get_by_test_id(f"health-{key}")).to_have_text(str(n))
    think = health["think_ms"]
    await expect(box.get_by_test_id("health-slowest")).to_have_attribute(
        "href", f"#/game/{game_id}?seat=0&ply={think['slowest']['ply']}")
    lost = box.get_by_test_id("health-lost-row")
    await expect(lost).to_have_count(1)
    await expect(lost).to_have_attribute("data-cause", "timeout")
    await expect(lost).to_contain_text("vs steady")
    await expect(lost).to_contain_text("ran out of time")
    await expect(lost.get_by_test_id("health-lost-link")).to_have_attribute(
        "href", f"#/game/{game_id}?seat=0&ply={stalled_at}")
    rows = box.get_by_test_id("health-incident")
    await expect(rows).to_have_count(3)
    await expect(rows.get_by_test_id("health-incident-kind")).to_have_text([
        f"refused: illegal_move ({refused['rule']})", "refused: invalid_message", "time-out"])
    # What was sent, cut short in the table, all of it in the title.
    hostile = HOSTILE % (game_id, illegal_at)
    compact = json.dumps(sent, separators=(",", ":"))  # as the page's JSON.stringify writes it
    await expect(rows.nth(1).locator("code")).to_have_text(hostile[:59] + "…")
    await expect(rows.nth(1).locator("code")).to_have_attribute("title", hostile)
    await expect(rows.nth(0).locator("code")).to_have_text(compact)
    await expect(box).not_to_contain_text(GARBAGE)
    shots = os.environ.get("MANDALA_WEB_SCREENSHOTS")
    if shots:
        await page.screenshot(path=f"{shots}/bot-health.png", full_page=True)

    # The illegal move's link: the seat replay at that decision, through slowpoke's eyes.
    await rows.nth(0).get_by_test_id("health-incident-link").click()
    await expect(page).to_have_url(re.compile(re.escape(f"#/game/{game_id}?seat=0&ply={illegal_at}") + "$"))
    await expect(page.get_by_test_id("ply")).to_have_text(str(illegal_at), timeout=WAIT_MS)
    await expect(page.get_by_test_id("eyes-seat-0")).to_have_attribute("aria-pressed", "true")
    await expect(page.get_by_test_id("eyes-seat-0")).to_have_text("slowpoke")
    await expect(page.get_by_test_id("eyes-spectator")).to_have_attribute("aria-pressed", "false")
    decision = page.get_by_test_id("replay-decision")
    await expect(decision.get_by_test_id("decision-request")).to_have_text(f"request {illegal_at}")
    await expect(decision.get_by_test_id("decision-answer")).not_to_contain_text("no answer")
    clock = re.escape(f"{DECISION_MS / 1000:.1f} s")  # the page writes 2000 ms as "2.0 s"
    await expect(decision.get_by_test_id("decision-think")).to_contain_text(re.compile(rf"thought [\d.]+ m?s of {clock}"))
    legal = at_illegal["decision"]["legal"]
    await expect(decision.get_by_test_id("decision-legal")).to_have_attribute("data-count", str(len(legal)))
    await expect(decision.get_by_test_id("legal-answer")).to_have_count(1)
    await expect(decision.get_by_test_id("legal-move")).to_have_count(len(legal) - 1)
    incidents = decision.get_by_test_id("replay-incident")
    await expect(incidents).to_have_count(2)
    await expect(incidents.nth(0)).to_contain_text(re.compile(
        rf"^refused: illegal_move \({re.escape(refused['rule'])}\) after [\d.]+ m?s — sent {re.escape(compact)}"))
    await expect(incidents.nth(1)).to_contain_text("refused: invalid_message after")
    await expect(incidents.nth(1).get_by_test_id("incident-sent")).to_have_text(hostile)
    assert await page.evaluate("window.pwned") is None
    await expect(page.locator("#game img")).to_have_count(0)
    # Its own hand is on the board (the opponent's is not), and the incidents are marked.
    hand = at_illegal["view"]["private"]["hand"]
    await expect(page.get_by_test_id("hand-0")).to_have_attribute("data-total", str(sum(hand.values())))
    await expect(page.get_by_test_id("hand-1")).to_have_count(0)
    marked = page.get_by_test_id("incident-mark")
    await expect(marked).to_have_count(2)
    assert await marked.evaluate_all("(ms) => ms.map((m) => Number(m.dataset.ply))") == [illegal_at, stalled_at]
    if shots:
        await page.screenshot(path=f"{shots}/seat-replay.png", full_page=True)

    # The last decision: never answered, the clock ran out.
    await page.get_by_test_id("replay-last").click()
    await expect(page.get_by_test_id("ply")).to_have_text(str(stalled_at))
    await expect(decision.get_by_test_id("decision-request")).to_have_text(f"request {stalled_at}")
    await expect(decision.get_by_test_id("decision-answer")).to_have_text("Answer: no answer")
    await expect(decision.get_by_test_id("legal-answer")).to_have_count(0)
    await expect(incidents).to_have_count(1)
    await expect(incidents).to_have_text(re.compile(r"^timed out after [\d.]+ m?s$"))
    await expect(page).to_have_url(re.compile(re.escape(f"#/game/{game_id}?seat=0") + "$"))

    # Through the spectator's eyes: no hand, no decision; and back.
    await page.get_by_test_id("eyes-spectator").click()
    await expect(page.get_by_test_id("eyes-spectator")).to_have_attribute("aria-pressed", "true")
    await expect(decision).to_be_hidden()
    await expect(page.get_by_test_id("hand-0")).to_have_count(0)
    await expect(page.get_by_test_id("ply")).to_have_text(str(stalled_at))
    await expect(page).to_have_url(re.compile(re.escape(f"#/game/{game_id}") + "$"))
    await page.get_by_test_id("eyes-seat-0").click()
    await expect(decision.get_by_test_id("decision-answer")).to_have_text("Answer: no answer")
    await expect(page.get_by_test_id("hand-0")).to_be_visible()
    await page.get_by_test_id("eyes-seat-1").click()
    await expect(decision.get_by_test_id("no-decision")).to_have_text("No decision of steady at this position.")
    await expect(decision.get_by_test_id("replay-incident")).to_have_count(0)
    await expect(page.get_by_test_id("hand-1")).to_be_visible()
    await expect(page.get_by_test_id("hand-0")).to_have_count(0)
    await expect(page.get_by_test_id("game-view")).not_to_contain_text(GARBAGE)

    # A hash that names the bot instead of its seat, typed in, lands on the same decision.
    await page.evaluate(f"location.hash = '#/game/{game_id}?bot=slowpoke&ply={illegal_at}'")
    await expect(page.get_by_test_id("eyes-seat-0")).to_have_attribute("aria-pressed", "true", timeout=WAIT_MS)
    await expect(page.get_by_test_id("ply")).to_have_text(str(illegal_at))
    await expect(incidents).to_have_count(2)
    await expect(page).to_have_url(re.compile(re.escape(f"#/game/{game_id}?seat=0&ply={illegal_at}") + "$"))
    assert errors == []


def fill(path: Path) -> None:
    """Write ``path`` in 64 KiB chunks until its disk is full."""
    chunk = bytes(64 * 1024)
    with path.open("wb", buffering=0) as f:
        try:
            while True:
                f.write(chunk)
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise


def unmount(path: Path) -> None:
    if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


async def test_storage_banner_follows_a_full_disk(aiohttp_client: Any, browser: Any, tmp_path: Path) -> None:
    from playwright.async_api import expect

    if os.geteuid() != 0:
        pytest.skip("the storage banner test mounts a tmpfs for the database to fill up: it needs root")
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SMALL_DISK}", "tmpfs", str(disk)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs for the database: {mounted.stderr.strip()}")
    filler = disk / "filler"
    arena: Harness | None = None
    try:
        # make_arena's server, with its database on the small disk and its spool on the normal one.
        settings = settings_for(disk / "arena.db", spool_path=str(tmp_path / "arena.spool"),
                                storage_retry_max_s=0.2, storage_probe_s=0.2, decision_ms=120_000)
        arena = Harness(await aiohttp_client(create_app(settings)))
        alice = await arena.bot("alice")
        await arena.bot("bob")
        page = await browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        await page.goto(str(arena.client.make_url("/")))

        # Storage works: /live says so, and the banner stays hidden.
        await expect(page.get_by_test_id("live-status")).to_have_attribute("data-state", "open", timeout=WAIT_MS)
        banner = page.get_by_test_id("storage-banner")
        await expect(banner).to_have_attribute("data-status", "ok", timeout=WAIT_MS)
        await expect(banner).to_be_hidden()

        # The database's disk fills up; the next write (a new game's first row) fails.
        await asyncio.to_thread(fill, filler)
        resp = await arena.client.post("/api/games", json={"players": ["alice", "bob"]},
                                       headers={"Authorization": f"Bearer {ADMIN}"})
        assert resp.status == 201, await resp.text()
        game_id = (await resp.json())["game_id"]
        await expect(banner).to_be_visible(timeout=WAIT_MS)
        await expect(banner).to_have_attribute("data-status", "degraded")
        await expect(banner).to_contain_text("Storage is failing")
        await expect(banner).to_contain_text("no new games start")
        await expect(page.get_by_test_id("storage-why")).to_contain_text("disk is full")
        await expect(page.get_by_test_id("storage-pending")).to_have_text("")
        health = await arena.get_json("/health", 503)
        assert health["status"] == "degraded" and health["pending"] == 0

        # A game finishes meanwhile: it goes to the spool, its bots hear it is over, and the
        # banner counts it as waiting to be stored.
        await alice.send({"type": "resign", "game_id": game_id})
        over = await alice.until(GameOver, timeout=WAIT_MS / 1000)
        assert over.game_id == game_id and over.result.end_reason == "resign"
        await expect(banner).to_contain_text("1 finished game waiting to be stored", timeout=WAIT_MS)
        shots = os.environ.get("MANDALA_WEB_SCREENSHOTS")
        if shots:
            await page.screenshot(path=f"{shots}/storage-banner.png")
        assert (await arena.get_json("/health", 503))["spooled"] == 1

        # Space again: the waiting game is stored, the banner goes away by itself.
        filler.unlink()
        await expect(banner).to_be_hidden(timeout=WAIT_MS)
        await expect(banner).to_have_attribute("data-status", "ok")
        health = await arena.get_json("/health")
        assert health["status"] == "ok"
        assert (await arena.get_json(f"/api/games/{game_id}"))["status"] == "finished"
        assert errors == []
    finally:
        filler.unlink(missing_ok=True)
        if arena is not None:
            await arena.client.close()  # the database is closed before its disk goes away
        unmount(disk)


async def test_a_link_cut_off_mid_escape_and_a_server_out_of_reach_leave_the_page_working(
        make_arena: Any, browser: Any) -> None:
    """A game's address with a broken ``%`` escape shows that there is no such game, and the
    live stream still opens; a game page whose request fails (the server restarting) says so
    and asks again until it is answered, instead of waiting for good."""
    from playwright.async_api import expect

    arena: Harness = await make_arena(decision_ms=60_000)
    await arena.bot("alice"), await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"])
    page = await browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    base = str(arena.client.make_url("/"))
    await page.goto(base + "#/game/%ZZ")
    await expect(page.get_by_test_id("live-status")).to_have_attribute("data-state", "open", timeout=WAIT_MS)
    await expect(page.locator("#game")).to_contain_text("There is no game %ZZ.", timeout=WAIT_MS)

    refused: list[str] = []

    async def unreachable(route: Any) -> None:
        refused.append(route.request.url)
        await route.abort()

    await page.route(f"**/api/games/{game_id}", unreachable)
    await page.goto(base + f"#/game/{game_id}")
    await wait_until(lambda: len(refused) >= 2, 10, "the page did not ask again after a failed request")
    await page.unroute(f"**/api/games/{game_id}", unreachable)
    await expect(page.get_by_test_id("board")).to_be_visible(timeout=WAIT_MS)  # asked again, and answered
    assert errors == []


async def test_the_open_tournament_list_shows_a_tournament_created_or_cancelled_before_it_starts(
        make_arena: Any, browser: Any) -> None:
    """/live tells of running and paused tournaments only: an open list reads itself again, so
    one created meanwhile appears, and one cancelled before it started says so."""
    from playwright.async_api import expect

    arena: Harness = await make_arena()
    for name in ("ann", "ben"):
        await arena.create_bot(name)
    page = await browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    await page.goto(str(arena.client.make_url("/")) + "#/tournaments")
    await expect(page.get_by_test_id("tournaments")).to_be_visible(timeout=WAIT_MS)
    tid = (await create(arena, name="late cup", participants=["ann", "ben"]))["tournament_id"]
    row = page.locator(f'[data-testid="tournament-row"][data-tournament-id="{tid}"]')
    await expect(row.get_by_test_id("row-state")).to_have_text("created", timeout=WAIT_MS)
    await post(arena, f"/api/tournaments/{tid}/cancel")
    await expect(row.get_by_test_id("row-state")).to_have_text("cancelled", timeout=WAIT_MS)
    assert errors == []


async def test_the_tournament_list_shows_the_newest_fifty_and_older_ones_when_asked(make_arena: Any, browser: Any) -> None:
    """A season's list comes a page at a time: the page shows the newest 50 tournaments and
    "Older tournaments" the next 50, which it then keeps current like the first."""
    from playwright.async_api import expect

    arena: Harness = await make_arena()
    for name in ("ann", "ben"):
        await arena.create_bot(name)
    tids = [(await create(arena, name=f"cup {i}", participants=["ann", "ben"]))["tournament_id"] for i in range(52)]
    page = await browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    await page.goto(str(arena.client.make_url("/")) + "#/tournaments")
    rows = page.get_by_test_id("tournament-row")
    await expect(rows).to_have_count(50, timeout=WAIT_MS)
    assert await rows.first.get_attribute("data-tournament-id") == tids[-1]
    assert await rows.last.get_attribute("data-tournament-id") == tids[2]
    more = page.get_by_test_id("tournaments-more")
    await expect(more).to_be_visible()
    await more.click()
    await expect(rows).to_have_count(52, timeout=WAIT_MS)
    assert await rows.last.get_attribute("data-tournament-id") == tids[0]
    await expect(more).to_be_hidden()
    await post(arena, f"/api/tournaments/{tids[0]}/cancel")  # the oldest, shown since "more": kept current
    row = page.locator(f'[data-testid="tournament-row"][data-tournament-id="{tids[0]}"]')
    await expect(row.get_by_test_id("row-state")).to_have_text("cancelled", timeout=WAIT_MS)
    assert errors == []


async def test_the_tournament_list_reads_itself_again_for_a_new_tournament_not_for_one_older_than_it_shows(
        make_arena: Any, browser: Any) -> None:
    """/live tells of every running tournament: one older than the newest 50 the list shows is
    not on it, and its news (as often as every 0.2 s) must not have the page read the list
    again; a new one's must."""
    from playwright.async_api import expect

    arena: Harness = await make_arena()
    for name in ("ann", "ben"):
        await arena.create_bot(name)
    tids = [(await create(arena, name=f"cup {i}", participants=["ann", "ben"], grace_s=600.0))["tournament_id"]
            for i in range(51)]
    page = await browser.new_page()
    now = datetime.now(UTC)
    await page.clock.install(time=now)
    await page.clock.pause_at(now)  # no timer runs: not the list's own refresh, every 5 s
    reads: list[str] = []
    page.on("request", lambda r: reads.append(r.url) if "/api/tournaments?" in r.url else None)
    await page.goto(str(arena.client.make_url("/")) + "#/tournaments")
    await expect(page.get_by_test_id("live-status")).to_have_attribute("data-state", "open", timeout=WAIT_MS)
    rows = page.get_by_test_id("tournament-row")
    await expect(rows).to_have_count(50, timeout=WAIT_MS)
    assert len(reads) == 1
    for op in ("start", "pause", "resume", "pause"):  # the oldest, not on the list: news each time
        await post(arena, f"/api/tournaments/{tids[0]}/{op}")
    newest = (await create(arena, name="new cup", participants=["ann", "ben"], grace_s=600.0))["tournament_id"]
    await post(arena, f"/api/tournaments/{newest}/start")  # its news comes after the oldest's
    await expect(rows.first).to_have_attribute("data-tournament-id", newest, timeout=WAIT_MS)
    assert len(reads) == 2


async def test_a_game_whose_record_is_held_shows_its_end_and_what_it_waits_for_then_its_replay(
        make_arena: Any, browser: Any) -> None:
    """A pair's first game is over, its record held for the return game (PROTOCOL.md §12.1):
    its page shows the result and the last position, says what it waits for (a link to the
    return game once that runs), and steps through the replay once the return game is over,
    never asking for the replay while it is held (the browser logs each refusal as an error)."""
    from playwright.async_api import expect
    from test_held_records import first_game_played

    arena: Harness = await make_arena(pairing_interval_s=60)
    ladder = arena.arena.ladder
    a, b, first, _ = await first_game_played(arena)
    page = await browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    refused: list[str] = []  # answers 409: the browser logs each as an error in its console
    polls: list[str] = []
    page.on("response", lambda r: refused.append(r.url) if r.status == 409 else None)
    page.on("request", lambda r: polls.append(r.url) if r.url.endswith(f"/api/games/{first.game_id}") else None)
    await page.goto(str(arena.client.make_url("/")) + f"#/game/{first.game_id}")
    note = page.get_by_test_id("record-held")
    await expect(note).to_contain_text(f"held until the return game of pair {first.pair_id} is over", timeout=WAIT_MS)
    # While it waits, the page asks for the game, which says whether the record is still held,
    # not for the replay, which is refused while it is.
    await wait_until(lambda: len(polls) >= 3, WAIT_MS / 1000, "the page did not ask for the game again")
    assert refused == []
    await expect(page.get_by_test_id("game-status")).to_have_text("over")
    await expect(page.get_by_test_id("result")).to_be_visible()
    await expect(page.get_by_test_id("board")).to_have_attribute("data-ply", str((await arena.get_json(
        f"/api/games/{first.game_id}"))["ply"]))
    await expect(page.get_by_test_id("replay-controls")).to_be_hidden()

    ladder.pair_now()  # the return game: the page names it, as it asks again
    back, _ = await gather(a.until(GameStart), b.until(GameStart))
    await expect(page.get_by_test_id("held-for")).to_have_attribute("href", f"#/game/{back.game_id}", timeout=WAIT_MS)
    await gather(play_out(a, random_policy(3)), play_out(b, random_policy(4)))
    await expect(page.get_by_test_id("game-status")).to_have_text("finished", timeout=WAIT_MS)
    replay = await arena.get_json(f"/api/games/{first.game_id}/replay")
    await expect(page.get_by_test_id("replay-controls")).to_be_visible()
    await expect(page.get_by_test_id("board")).to_have_attribute("data-ply", str(len(replay["plies"]) - 1))
    assert not errors
    assert refused == []


async def test_a_tournament_with_long_names_stays_within_its_column_and_the_window(
        make_arena: Any, browser: Any) -> None:
    """Bot names may be 32 characters long: the ranking and the crosstable scroll inside their
    panels, which stay left of the games beside them on a wide window and within a phone's
    width on a narrow one, and the games list wraps a long winner's name instead of running
    out of its panel."""
    from playwright.async_api import expect

    arena: Harness = await make_arena()
    names = [c * 32 for c in "WMQ"]
    for name in names:
        await arena.create_bot(name)
    tid = (await create(arena, name="wide cup", participants=names, games_per_pairing=2))["tournament_id"]
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    for slot, (a, b) in enumerate(pairs):
        await arena.arena.storage.save_game(GameRow(
            game_id=f"g{slot:02d}", players=[a, b], status="finished", rated=False, first_player=0, ply=30,
            started=f"2020-01-01T00:{slot:02d}:00.000Z", kind="tournament", tournament_id=tid, slot=slot,
            ended=f"2020-01-01T00:{slot:02d}:30.000Z", end_reason="river",
            result={"winner": 0, "end_reason": "river", "scores": [30, 20], "cup_sizes": [5, 5]}))
    page = await browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    overflow = """() => {
      const main = document.querySelector('.t-main'), side = main.nextElementSibling;
      const right = Math.max(...[...main.children].map((p) => p.getBoundingClientRect().right));
      const meta = Math.max(...[...document.querySelectorAll('[data-testid=t-game] .g-meta')]
        .map((m) => m.scrollWidth - m.clientWidth));
      return {panels: right - main.getBoundingClientRect().right, side: side.getBoundingClientRect().left,
              main: main.getBoundingClientRect().right, page: document.documentElement.scrollWidth - innerWidth, meta};
    }"""
    for width in (1280, 390):
        await page.set_viewport_size({"width": width, "height": 900})
        await page.goto(str(arena.client.make_url("/")) + f"#/tournaments/{tid}")
        await expect(page.get_by_test_id("t-game")).to_have_count(len(pairs), timeout=WAIT_MS)
        await expect(page.get_by_test_id("crosstable")).to_contain_text(names[2])
        got = await page.evaluate(overflow)
        assert got["panels"] <= 0.5, got  # no panel wider than its column
        assert got["page"] == 0, got  # no sideways scrolling of the whole page
        assert got["meta"] == 0, got  # a long winner's name wraps inside its game
        if width == 1280:
            assert got["main"] < got["side"], got  # the column ends before the games beside it
    assert errors == []


async def test_a_phone_sees_the_rating_of_a_bot_with_a_long_name(make_arena: Any, browser: Any) -> None:
    """On a phone's width the standings keep the rank, the name, the rating and the Elo on
    screen: a 32-character name is cut short (its link still opens its profile and shows it
    whole on hover) rather than pushing the rating out of sight behind a sideways scroll."""
    from playwright.async_api import expect

    arena: Harness = await make_arena()
    table = standings_of(3)
    long = "W" * 32
    table = msgspec.structs.replace(
        table, standings=[msgspec.structs.replace(table.standings[0], bot=long), *table.standings[1:]])
    arena.arena.ladder.table = table
    arena.arena.live.publish(table)
    page = await browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    await page.set_viewport_size({"width": 390, "height": 844})
    await page.goto(str(arena.client.make_url("/")))
    first = page.get_by_test_id("standing-row").first
    await expect(first).to_have_attribute("data-bot", long, timeout=WAIT_MS)
    await expect(first.locator("a.bot")).to_have_attribute("href", f"#/bot/{long}")
    await expect(first.locator("a.bot")).to_have_attribute("title", long)  # the whole name on hover
    got = await page.evaluate("""() => {
      const wrap = document.querySelector('[data-testid=standings]').closest('.table-wrap');
      const row = document.querySelector('[data-testid=standing-row]');
      return {elo: row.querySelector('td.elo').getBoundingClientRect().right,
              edge: wrap.getBoundingClientRect().right};
    }""")
    assert got["elo"] <= got["edge"], got  # the rating and the Elo in sight without scrolling
    assert errors == []


async def test_a_bot_s_profile_left_open_follows_its_games(make_arena: Any, browser: Any) -> None:
    """A bot author leaves its bot's profile open: a game of the bot starts and ends, and the
    profile shows it playing, then its result, without being loaded again by hand (it stayed
    as first read). Reading it again keeps what is shown, so the page never flashes empty."""
    from playwright.async_api import expect

    arena: Harness = await make_arena(heartbeat_s=60.0)  # the bots read nothing while the page loads
    alice, bob = await arena.bot("alice"), await arena.bot("bob")
    page = await browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    await page.goto(str(arena.client.make_url("/")) + "#/bot/Alice")  # any case, as names are
    await expect(page.locator("#bot")).to_contain_text("No game yet.", timeout=WAIT_MS)
    game_id = await arena.start_game(["alice", "bob"])
    row = page.get_by_test_id("bot-game")
    await expect(row).to_have_count(1, timeout=WAIT_MS)
    await expect(row.locator("a")).to_have_attribute("href", f"#/game/{game_id}")
    await gather(play_out(alice, random_policy(1)), play_out(bob, random_policy(2)))
    over = await arena.get_json(f"/api/games/{game_id}")
    winner = over["result"]["winner"]
    text = "draw" if winner is None else "win" if over["players"][winner] == "alice" else "loss"
    await expect(row.locator("td.outcome")).to_contain_text(text, timeout=WAIT_MS)
    assert errors == []
