"""Tournaments through the documented HTTP API, on a real server with bots on real sockets."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tournament_kit import create, crosstable_of, finished, games_read, play, post, records

from arena_testkit import Harness
from mandala_client.bots import RandomBot
from server.ratings import bradley_terry
from server.storage import GameRow
from server.storage.base import score_of_seat0
from server.tournaments import results

FAST = {"pairing_interval_s": 0.05}


async def test_round_robin_every_pairing_plays_the_same_deals_seats_swapped(make_arena: Any) -> None:
    arena: Harness = await make_arena(**FAST)
    names = ["ann", "ben", "cat"]
    clients = {n: await arena.bot(n, max_games=4) for n in names}
    ratings_before = await arena.get_json("/api/bots/ann")
    tasks = [asyncio.create_task(play(c, RandomBot(seed=i))) for i, c in enumerate(clients.values())]
    try:
        created = await create(arena, participants=["ANN", "ben", "cat"], games_per_pairing=4, seed=7)
        tid = created["tournament_id"]
        assert created["state"] == "created" and created["participants"] == names
        assert created["progress"] == {"planned": 12, "played": 0, "running": 0, "forfeits": 0}
        started = await post(arena, f"/api/tournaments/{tid}/start")
        assert started["state"] == "running" and started["started"] is not None
        view = await finished(arena, tid)
    finally:
        for t in tasks:
            t.cancel()
    assert view["progress"] == {"planned": 12, "played": 12, "running": 0, "forfeits": 0}
    lines = await records(arena, tid)
    assert len(lines) == 12 and len({line["game_id"] for line in lines}) == 12
    # Over, it is read from storage once more and then answered from memory: the page's list of
    # tournaments asks every few seconds, and a season's finished tournaments hold many games.
    paths = ("/api/tournaments", f"/api/tournaments/{tid}", f"/api/tournaments/{tid}/results")
    with games_read(arena) as reads:
        first = [await arena.get_json(p) for p in paths]
        assert reads == [] or reads == [tid]  # the director's last publish may have read it already
        again = [await arena.get_json(p) for p in paths]
        assert again == first and len(reads) <= 1
    # Each pairing played two deals of its own, each once in each seat order: no deal reached
    # a second pairing, whose bots would have known its cards from the first one's records.
    by_deal: dict[tuple[Any, ...], set[tuple[str, str]]] = defaultdict(set)
    for line in lines:
        record = line["record"]
        by_deal[(tuple(record["deck"]), record["first_player"])].add(tuple(line["players"]))
    assert len(by_deal) == 6
    for seatings in by_deal.values():
        (a, b), *_ = seatings
        assert seatings == {(a, b), (b, a)}
    # Results equal a recomputation from the records alone.
    results = await arena.get_json(f"/api/tournaments/{tid}/results")
    assert results["played"] == 12 and results["planned"] == 12
    assert results["crosstable"] == crosstable_of(lines)
    ranking = results["ranking"]
    ranks = [r["rank"] for r in ranking]  # 1, 2, 3, or a place shared by equal ratings (1, 1, 3 ...)
    assert ranks[0] == 1
    for i in range(1, len(ranks)):
        assert ranks[i] == i + 1 or (ranks[i] == ranks[i - 1] and ranking[i]["rating"] == ranking[i - 1]["rating"])
    assert [r["rating"] for r in ranking] == sorted((r["rating"] for r in ranking), reverse=True)
    for r in ranking:
        assert r["low"] <= r["rating"] <= r["high"]
        assert r["games"] == 8 and r["wins"] + r["draws"] + r["losses"] == 8
        assert r["score"] == sum(c["score"] for c in results["crosstable"][r["bot"]].values())
    assert all(0.0 <= r["stronger_than_next"] <= 1.0 for r in ranking[:-1]) and ranking[-1]["stronger_than_next"] is None
    # Tournament games are unrated: the ladder's ratings did not move.
    after = await arena.get_json("/api/bots/ann")
    assert after["history"] == ratings_before["history"] == []
    kinds = {g["kind"] for g in after["games"]}
    assert kinds == {"tournament"} and all(not g["rated"] for g in after["games"])
    # The CSV has the same ranking.
    resp = await arena.client.get(f"/api/tournaments/{tid}/results?format=csv")
    assert resp.status == 200 and resp.content_type == "text/csv"
    rows = (await resp.text()).splitlines()
    assert rows[0].split(",")[:3] == ["rank", "bot", "rating"]
    assert [row.split(",")[1] for row in rows[1:]] == [r["bot"] for r in ranking]


def test_bots_with_equal_ratings_share_a_place_listed_by_name() -> None:
    """§21.12: equal ratings share a place, listed by name. dan and ben have alike results
    (each beat two and lost to one), which the fit rates equal up to its rounding (a few
    1e-13): that noise must not decide their places, nor their names' spelling."""
    wins = [("ben", "ann"), ("ben", "cat"), ("cat", "ann"), ("ann", "dan"), ("dan", "ben"), ("dan", "cat")]
    games = [GameRow(game_id=f"g{i}{k}", players=[w, lost] if k == 0 else [lost, w], status="finished", rated=False,
                     first_player=0, ply=10, started="2030-01-01T10:00:00Z", kind="tournament",
                     result={"winner": 0 if k == 0 else 1, "end_reason": "river", "scores": [1, 0], "cup_sizes": [0, 0]})
             for i, (w, lost) in enumerate(wins) for k in (0, 1)]
    participants = ["ann", "ben", "cat", "dan"]
    ranked = results.Tally(participants).update(games).ranking()
    assert [(r.bot, r.score) for r in ranked] == [("ben", 4.0), ("dan", 4.0), ("ann", 2.0), ("cat", 2.0)]
    assert ranked[0].rating == ranked[1].rating and ranked[2].rating == ranked[3].rating
    assert [r.rank for r in ranked] == [1, 1, 3, 3]
    assert ranked[0].stronger_than_next == ranked[2].stronger_than_next == 0.5


def _game(slot: int, players: list[str], status: str, winner: int | None, end_reason: str) -> GameRow:
    return GameRow(game_id=f"g{slot}-{status}", players=players, status=status, rated=False, first_player=0, ply=10,
                   started="2030-01-01T10:00:00Z", kind="tournament", slot=slot, end_reason=end_reason,
                   result={"winner": winner, "end_reason": end_reason, "scores": [1, 0], "cup_sizes": [0, 0]})


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_a_tally_read_again_as_games_end_says_what_one_read_at_the_end_says(data: st.DataObject) -> None:
    """A tournament's tally is kept and brought up to date at each read, the slots' games
    arriving in any order, read again and again, aborted games and replays among them: its
    ranking, crosstable, forfeits and Swiss scores equal those of a tally of all the games read
    once. Each slot counts its finished game once."""
    bots = ["ann", "ben", "cat", "dan", "eve"][:data.draw(st.integers(2, 5))]
    games = []
    for slot in range(data.draw(st.integers(0, 40))):
        players = data.draw(st.permutations(bots))[:2]
        if data.draw(st.booleans()):  # cut off by a restart first, then replayed in its slot
            games.append(_game(slot, players, "aborted", None, "aborted"))
        winner = data.draw(st.sampled_from([0, 1, None]))
        reason = "forfeit" if winner is not None and data.draw(st.booleans()) else "river"
        games.append(_game(slot, players, "finished", winner, reason))
    order = data.draw(st.permutations(games))
    kept = results.Tally(bots)
    for cut in sorted(data.draw(st.lists(st.integers(0, len(order)), max_size=6))) + [len(order)]:
        kept.update(order[:cut])  # each read holds every game stored so far
    once = results.Tally(bots).update(games)
    assert kept.played == once.played == len({g.slot for g in games})
    assert kept.forfeited == once.forfeited == sum(1 for g in games if g.end_reason == "forfeit")
    assert kept.ranking() == once.ranking() and kept.crosstable() == once.crosstable()
    assert kept.scores() == once.scores()
    assert sum(c.games for row in once.crosstable().values() for c in row.values()) == 2 * once.played
    # The fit to the pairs' totals is the fit to the games one by one.
    finished = [(g.players[0], g.players[1], score_of_seat0(g.result)) for g in games if g.status == "finished"]
    by_game = bradley_terry.fit(finished, bots, results.CENTER)
    assert {r.bot: r.rating for r in once.ranking()} == pytest.approx({b: round(f.rating, 1) for b, f in by_game.items()},
                                                                       abs=0.051)
