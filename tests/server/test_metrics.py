"""``GET /metrics``: who may scrape it, and what a scraper reads while games are played. A real
server is scraped all the while and every exposition is parsed with ``prometheus_client``'s own
parser; the counters never go back, and once the games are over they are exactly what was
played: games started by kind, finished by kind and end reason, decisions, ``move_accepted``,
refused answers by code, time-outs, and the gauges of connections, spectators and viewers. No
label carries a value a client chose (a bot's name, a game's id), and no token appears."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from importlib import metadata
from typing import Any, get_args

from prometheus_client.parser import text_string_to_metric_families

from arena_testkit import ADMIN, Harness, LiveStream, first_legal, misbehave, play_out, random_policy, wait_until
from protocol.messages import Challenged, Decision, EndReason, ErrorCode, GameKind, GameOver, GameStart, MoveAccepted
from server.games.counters import ACCEPT_BUCKETS_S

AUTH = {"Authorization": f"Bearer {ADMIN}"}
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> Samples:
    """Every sample of an exposition, by name and labels, read by prometheus_client's parser."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


async def scrape(h: Harness) -> tuple[Samples, str]:
    resp = await h.client.get("/metrics", headers=AUTH)
    assert resp.status == 200, await resp.text()
    assert resp.headers["Content-Type"].startswith("text/plain; version=0.0.4; charset=utf-8")
    text = await resp.text()
    return parse(text), text


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def counters_of(samples: Samples) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """The mandala_* counters and histogram counts: what may only go up."""
    return {k: v for k, v in samples.items() if k[0].startswith("mandala_")
            and k[0].endswith(("_total", "_bucket", "_count", "_sum"))}


async def test_metrics_want_the_admin_token_unless_the_operator_opens_them(make_arena: Any) -> None:
    h = await make_arena()
    resp = await h.client.get("/metrics")
    assert resp.status == 401 and (await resp.json())["error"]["code"] == "unauthorized"
    assert resp.headers["WWW-Authenticate"] == "Bearer"
    resp = await h.client.get("/metrics", headers={"Authorization": "Bearer not-the-token"})
    assert resp.status == 403 and (await resp.json())["error"]["code"] == "forbidden"
    samples, _ = await scrape(h)
    assert value(samples, "mandala_ladder_leading") == 1.0

    public = await make_arena(metrics="public")
    resp = await public.client.get("/metrics")
    assert resp.status == 200 and "mandala_games_running 0.0" in await resp.text()

    off = await make_arena(metrics="off")
    resp = await off.client.get("/metrics", headers=AUTH)
    assert resp.status == 404 and (await resp.json())["error"]["code"] == "not_found"


async def test_the_labelled_counters_have_their_series_before_their_first_event(make_arena: Any) -> None:
    """A fresh server shows every refusal code an answer can get, and every kind and end reason
    of a finished game, at 0: ``rate()`` over a series that appears only with its first event
    shows nothing for it, and misses that event."""
    samples, _ = await scrape(await make_arena())
    refused = {dict(labels)["code"]: v for (name, labels), v in samples.items() if name == "mandala_refused_answers_total"}
    assert refused == dict.fromkeys(("bad_json", "not_object", "unknown_type", "invalid_message", "binary_frame",
                                     "frame_too_large", "not_your_turn", "stale_request", "illegal_move",
                                     "game_over"), 0.0)
    finished = {tuple(sorted(dict(labels).values())): v for (name, labels), v in samples.items()
                if name == "mandala_games_finished_total"}
    assert len(finished) == 5 * 7 and set(finished.values()) == {0.0}
    assert finished[("ladder", "timeout")] == finished[("aborted", "tournament")] == 0.0


async def test_openmetrics_for_a_scraper_that_asks_for_it(make_arena: Any) -> None:
    h = await make_arena()
    resp = await h.client.get("/metrics", headers={**AUTH, "Accept": "application/openmetrics-text; version=1.0.0"})
    assert resp.status == 200
    assert resp.headers["Content-Type"].startswith("application/openmetrics-text; version=1.0.0")
    text = await resp.text()
    assert text.endswith("# EOF\n") and "mandala_games_started_total{kind=\"ladder\"} 0.0" in text
    for accept, content_type in [("text/plain", "text/plain; version=0.0.4"),  # the format follows each Accept
                                 ("application/openmetrics-text", "application/openmetrics-text"),
                                 ("", "text/plain; version=0.0.4")]:
        resp = await h.client.get("/metrics", headers={**AUTH, "Accept": accept})
        assert resp.headers["Content-Type"].startswith(content_type), (accept, resp.headers["Content-Type"])


async def test_a_scrape_soon_after_another_gets_the_same_exposition(make_arena: Any) -> None:
    h = await make_arena(metrics_max_age_s=60)
    first = await (await h.client.get("/metrics", headers=AUTH)).text()
    await h.bot("alpha")
    assert await (await h.client.get("/metrics", headers=AUTH)).text() == first  # one bot connected since
    resp = await h.client.get("/metrics?name[]=mandala_bots_connected", headers=AUTH)  # asked by name: afresh
    assert parse(await resp.text()) == {("mandala_bots_connected", ()): 1.0}


async def test_the_counters_move_as_games_are_played(make_arena: Any) -> None:
    h = await make_arena(metrics_max_age_s=0, decision_ms=1000)
    names = ("alpha-7Qx", "beta-3Zk")
    a, b = await h.bot(names[0]), await h.bot(names[1])
    scrapes: list[Samples] = []
    texts: list[str] = []

    async def scraper() -> None:
        while True:
            samples, text = await scrape(h)
            if scrapes:  # a counter never goes back
                before = counters_of(scrapes[-1])
                assert all(samples.get(k, 0.0) >= v for k, v in before.items()), (before, samples)
            scrapes.append(samples)
            texts.append(text)
            await asyncio.sleep(0.005)

    scraping = asyncio.create_task(scraper())
    try:
        # Two admin games played out, and one that a bot plays badly (an illegal move, a frame
        # that is no move, then no answer: it ends on time).
        for seed in (1, 2):
            await h.start_game(list(names))
            await asyncio.gather(play_out(a, random_policy(seed)), play_out(b, random_policy(seed + 10)))
        game_id = await h.start_game(list(names))
        await asyncio.gather(misbehave(a, game_id, '{"type": "move", "game_id": "%s", "request_id": %d}'),
                             play_out(b, random_policy(3)))
        # A challenge the challenged bot resigns, watched by a spectator, with a viewer of /live.
        await a.send({"type": "challenge", "opponent": names[1]})
        challenged = await b.until(Challenged)
        await b.send({"type": "accept", "challenge_id": challenged.challenge_id})
        start = await a.until(GameStart)
        spectator, _ = await h.spectate(start.game_id)
        viewer = LiveStream(await h.client.ws_connect("/live"))
        await viewer.batch()
        during, _ = await scrape(h)
        await b.send({"type": "resign", "game_id": start.game_id})
        await asyncio.gather(a.until(GameOver), b.until(GameOver))
        await wait_until(lambda: len(scrapes) >= 20, 10, "too few scrapes")
    finally:
        scraping.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await scraping
    after, text = await scrape(h)

    assert value(during, "mandala_games_running") == 1.0
    assert value(during, "mandala_audience_spectators") == 1.0
    assert value(during, "mandala_audience_viewers") == 1.0
    assert value(during, "mandala_connections") == 3.0  # the two bots and the spectator (/live is not /ws)
    assert value(during, "mandala_bots_connected") == 2.0

    frames = a.frames + b.frames
    overs = {f.game_id: f for f in frames if isinstance(f, GameOver)}
    assert len(overs) == 4
    started = {f.game_id: f.kind for f in frames if isinstance(f, GameStart)}
    assert {kind: value(after, "mandala_games_started_total", kind=kind) for kind in get_args(GameKind)} == {
        "challenge": 1.0, "ladder": 0.0, "qualification": 0.0, "admin": 3.0, "tournament": 0.0}
    finished = Counter((started[g], o.result.end_reason) for g, o in overs.items())
    assert finished[("admin", "timeout")] == 1 and finished[("challenge", "resign")] == 1
    assert {(dict(k[1])["kind"], dict(k[1])["reason"]): v for k, v in after.items()
            if k[0] == "mandala_games_finished_total" and v} == {k: float(n) for k, n in finished.items()}
    assert value(after, "mandala_games_running") == 0.0
    assert value(after, "mandala_decisions_total") == sum(isinstance(f, Decision) for f in frames)
    accepted = sum(isinstance(f, MoveAccepted) for f in frames)
    assert value(after, "mandala_move_accepted_seconds_count") == accepted
    assert value(after, "mandala_move_accepted_seconds_bucket", le="+Inf") == accepted
    assert 0 < value(after, "mandala_move_accepted_seconds_sum") < accepted * 0.1
    buckets = [value(after, "mandala_move_accepted_seconds_bucket", le=repr(b)) for b in ACCEPT_BUCKETS_S]
    assert buckets == sorted(buckets)
    assert value(after, "mandala_timeouts_total") == 1.0
    # In the game played badly: one illegal move, one frame that is no move.
    assert {dict(k[1])["code"]: v for k, v in after.items() if k[0] == "mandala_refused_answers_total" and v} == {
        "illegal_move": 1.0, "invalid_message": 1.0}
    assert value(after, "mandala_audience_spectators") == 0.0 and value(after, "mandala_degraded") == 0.0
    assert value(after, "mandala_recorder_spooled_games") == 0.0

    # Bounded labels only: nothing a client chose, and never a token.
    bounded = {"kind": set(get_args(GameKind)), "reason": set(get_args(EndReason)), "code": set(get_args(ErrorCode)),
               "le": {repr(b) for b in ACCEPT_BUCKETS_S} | {"+Inf"}, "version": {metadata.version("mandala-arena")}, "protocol": {"1"}}
    for samples in [*scrapes, after]:
        for name, labels in samples:
            if name.startswith("mandala_"):
                assert all(v in bounded[k] for k, v in labels), (name, labels)
    for t in [*texts, text]:
        assert not any(secret in t for secret in (*names, *overs, *h.tokens.values(), ADMIN))
    await spectator.close()
    await viewer.ws.close()


async def test_the_ladder_counts_its_pairs_and_its_standings(make_arena: Any) -> None:
    h = await make_arena(metrics_max_age_s=0, pairing_interval_s=0.05)
    before, _ = await scrape(h)
    refreshed = value(before, "mandala_standings_refreshes_total")
    assert refreshed >= 1 and value(before, "mandala_standings_refresh_seconds_total") > 0
    bot = await h.bot("gamma", max_games=2)
    await bot.send({"type": "seek"})
    await play_out(bot, first_legal, games=2)  # its qualification pair against the house bot

    async def counted() -> Samples | None:
        samples, _ = await scrape(h)
        return samples if value(samples, "mandala_standings_refreshes_total") > refreshed else None

    after = await wait_until(counted, 10, "the standings were not computed again")
    assert value(after, "mandala_ladder_pairings_total", kind="qualification") == 1.0
    assert value(after, "mandala_ladder_pairings_total", kind="ladder") == 0.0
    assert value(after, "mandala_games_started_total", kind="qualification") == 2.0
    assert sum(v for k, v in after.items() if k[0] == "mandala_games_finished_total"
               and dict(k[1])["kind"] == "qualification") == 2.0
