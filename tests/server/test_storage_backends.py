"""The Storage interface, run against every backend (the ``storage`` fixture: SQLite and
PostgreSQL): bots, games, migrations, and ratings written with their game in one transaction."""

from __future__ import annotations

import asyncio
import inspect
import random
import sqlite3
from pathlib import Path
from typing import Any

import msgspec
import pytest

import mandala
from arena_testkit import Harness, elo_replay, gather, play_out, random_policy, wait_until
from mandala.record import played_move
from server.config import Settings
from server.ladder.tally import Tally
from server.ratings import elo
from server.recording.recorder import GameRecorder, rating_update
from server.recording.spool import Spool
from server.storage import (
    INITIAL_RATING,
    GameFilter,
    GameRow,
    NameTaken,
    RatingChange,
    RatingConflict,
    Standing,
    Storage,
    TournamentRow,
)
from server.storage.base import GameWrite, LoggedMove, MoveWrite, RunningGame
from server.storage.sqlite import SqliteStorage
from server.storage.sqlite_schema import SCHEMA_VERSION

START = __import__('datetime').datetime(2026, 1, 1, tzinfo=__import__('datetime').UTC)


def game(gid: str, a: str, b: str, *, status: str = "finished", rated: bool = True, winner: int | None = 0,
         started: str = "2024-01-01T00:00:00.000Z", ended: str | None = "2024-01-01T00:01:00.000Z") -> GameRow:
    done = status != "running"
    return GameRow(
        game_id=gid, players=[a, b], status=status, rated=rated, first_player=0, ply=7 if done else 0,  # type: ignore[arg-type]
        started=started, ended=ended if done else None, end_reason="score" if done else None,
        result={"winner": winner, "end_reason": "score", "scores": [3, 2], "cup_sizes": [5, 4]} if done else None,
        record={"moves": []} if done else None,
    )


async def bots(storage: Storage, *names: str) -> None:
    for i, name in enumerate(names):
        await storage.create_bot(name, f"hash-{name}", f"2024-01-01T00:00:0{i}.000Z")


async def test_bots(storage: Storage) -> None:
    await bots(storage, "Alice", "bob")
    with pytest.raises(NameTaken):
        await storage.create_bot("ALICE", "other-hash", "2024-01-02T00:00:00.000Z")
    assert (await storage.bot_by_name("alice")).name == "Alice"  # type: ignore[union-attr]
    assert (await storage.bot_by_token_hash("hash-bob")).name == "bob"  # type: ignore[union-attr]
    assert await storage.bot_by_name("carol") is None
    assert [b.name for b in await storage.list_bots()] == ["Alice", "bob"]
    assert await storage.standings() == [Standing(bot="Alice", rating=1500.0, rated_games=0),
                                         Standing(bot="bob", rating=1500.0, rated_games=0)]


async def test_a_token_hash_is_replaced_only_while_it_is_the_one_read(storage: Storage) -> None:
    await bots(storage, "Alice")
    assert await storage.replace_token_hash("alice", "hash-Alice", "hash-2")  # names ignore case
    assert not await storage.replace_token_hash("Alice", "hash-Alice", "hash-3")  # the other rotation lost
    assert await storage.bot_by_token_hash("hash-Alice") is None
    assert (await storage.bot_by_token_hash("hash-2")).name == "Alice"  # type: ignore[union-attr]
    assert not await storage.replace_token_hash("carol", "hash-carol", "hash-4")


async def test_games_save_list_and_abort(storage: Storage) -> None:
    await bots(storage, "alice", "bob")
    await storage.save_game(game("g1", "alice", "bob", status="running", started="2024-01-01T00:00:01.000Z"))
    await storage.save_game(game("g2", "bob", "alice", rated=False, started="2024-01-01T00:00:02.000Z"))
    assert await storage.get_game("g2") == game("g2", "bob", "alice", rated=False, started="2024-01-01T00:00:02.000Z")
    assert [g.game_id for g in await storage.list_games(None, 10)] == ["g2", "g1"]
    assert [g.game_id for g in await storage.list_games("running", 10)] == ["g1"]
    assert [g.game_id for g in await storage.list_games("over", 10)] == ["g2"]
    assert await storage.abort_running("2024-01-01T00:05:00.000Z") == 1
    assert [g.game_id for g in await storage.list_games("over", 10)] == ["g2", "g1"]
    g1 = await storage.get_game("g1")
    assert g1 is not None and (g1.status, g1.end_reason, g1.ended) == ("aborted", "aborted", "2024-01-01T00:05:00.000Z")
    assert await storage.get_game("nope") is None


async def test_finish_game_stores_result_ratings_and_history_together(storage: Storage) -> None:
    await bots(storage, "alice", "bob")
    await storage.save_game(game("g1", "alice", "bob", status="running"))
    changes = [RatingChange(bot="alice", rating_before=1500.0, rating_after=1516.0, games_before=0),
               RatingChange(bot="bob", rating_before=1500.0, rating_after=1484.0, games_before=0)]
    await storage.finish_game(game("g1", "alice", "bob"), changes)
    assert (await storage.get_game("g1")).status == "finished"  # type: ignore[union-attr]
    assert await storage.standings() == [Standing(bot="alice", rating=1516.0, rated_games=1),
                                         Standing(bot="bob", rating=1484.0, rated_games=1)]
    (h,) = await storage.rating_history("BOB")
    assert (h.game_id, h.bot, h.rating_before, h.rating_after, h.games_before, h.at) == (
        "g1", "bob", 1500.0, 1484.0, 0, "2024-01-01T00:01:00.000Z")
    assert await storage.rated_results() == [("alice", "bob", 1.0)]
    # Unrated and aborted games are not results.
    await storage.finish_game(game("g2", "bob", "alice", rated=False), [])
    await storage.save_game(game("g3", "bob", "alice", status="aborted", winner=None))
    assert await storage.rated_results() == [("alice", "bob", 1.0)]


async def test_a_failure_between_game_and_ratings_leaves_neither(storage: Storage,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    await bots(storage, "alice", "bob")
    await storage.save_game(game("g1", "alice", "bob", status="running"))

    def boom() -> None:
        raise RuntimeError("killed between the game row and the ratings")

    async def aboom() -> None:
        boom()

    hook = storage._between_game_and_ratings  # type: ignore[attr-defined]
    monkeypatch.setattr(storage, "_between_game_and_ratings", aboom if inspect.iscoroutinefunction(hook) else boom)
    changes = [RatingChange(bot="alice", rating_before=1500.0, rating_after=1516.0, games_before=0),
               RatingChange(bot="bob", rating_before=1500.0, rating_after=1484.0, games_before=0)]
    with pytest.raises(RuntimeError, match="killed"):
        await storage.finish_game(game("g1", "alice", "bob"), changes)
    assert (await storage.get_game("g1")).status == "running"  # type: ignore[union-attr]
    assert {s.rating for s in await storage.standings()} == {INITIAL_RATING}
    assert await storage.rating_history("alice") == [] and await storage.rated_results() == []
    monkeypatch.undo()
    # The same write succeeds once nothing kills it.
    await storage.finish_game(game("g1", "alice", "bob"), changes)
    assert [s.rated_games for s in await storage.standings()] == [1, 1]


async def test_a_stale_rating_change_writes_nothing(storage: Storage) -> None:
    await bots(storage, "alice", "bob")
    stale = [RatingChange(bot="alice", rating_before=1500.0, rating_after=1516.0, games_before=0),
             RatingChange(bot="bob", rating_before=1500.0, rating_after=1484.0, games_before=3)]
    with pytest.raises(RatingConflict):
        await storage.finish_game(game("g1", "alice", "bob"), stale)
    assert await storage.get_game("g1") is None
    assert [s.rated_games for s in await storage.standings()] == [0, 0]


async def test_two_nodes_storing_games_of_one_bot_at_once_rate_one_after_the_other(
        storage: Storage, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a cluster two nodes may store the ends of two rated games of one bot at the same
    moment. The second reads the bot's rating only once the first has committed (its row is
    locked as it is read), so it rates from the first's result and neither write is refused."""
    if isinstance(storage, SqliteStorage):
        pytest.skip("one SQLite file has one server")
    await bots(storage, "alice", "bob", "carol")
    other = await reopened(storage)  # a second node on the same database
    try:
        first_row, second_row = game("g1", "alice", "bob"), game("g2", "bob", "carol")
        for row in (first_row, second_row):
            await storage.save_game(game(row.game_id, *row.players, status="running"))
        paused, go = asyncio.Event(), asyncio.Event()

        async def hold() -> None:  # the first node, between its game row and its ratings
            paused.set()
            await go.wait()

        monkeypatch.setattr(storage, "_between_game_and_ratings", hold)
        elo_settings = Settings().elo
        first = asyncio.create_task(storage.write_games(
            [GameWrite(first_row, final=True, rate=rating_update(first_row, elo_settings))]))
        await wait_until(paused.is_set, 5, "the first write never reached its ratings")
        second = asyncio.create_task(other.write_games(
            [GameWrite(second_row, final=True, rate=rating_update(second_row, elo_settings))]))

        async def second_waits_for_bob() -> bool:
            waiting = await run_sql(storage, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                                             " AND query LIKE '%FROM bots%FOR UPDATE'")
            return bool(waiting[0][0])

        await wait_until(second_waits_for_bob, 5, "the second write read bob's rating without waiting for the first")
        assert not second.done()
        go.set()
        assert await first == frozenset() and await second == frozenset()
    finally:
        await other.close()
    want = elo_replay(["alice", "bob", "carol"], [("alice", "bob", 1.0), ("bob", "carol", 1.0)])
    got = {s.bot: (s.rating, s.rated_games) for s in await storage.standings()}
    assert {n: g for n, (_, g) in got.items()} == {"alice": 1, "bob": 2, "carol": 1}
    for name, (rating, _) in want.items():
        assert got[name][0] == pytest.approx(rating, abs=1e-9)
    assert [h.games_before for h in await storage.rating_history("bob")] == [0, 1]


async def test_a_ratings_reset_beside_a_rated_game_another_node_stores_leaves_nothing_of_it(
        storage: Storage, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another node is storing a rated game (its bots' rows locked, its pair's totals not yet
    written) when the organizer resets the ratings: the reset waits for it, then clears its
    ratings and its pair's totals alike, so the totals still equal the rated results."""
    if isinstance(storage, SqliteStorage):
        pytest.skip("one SQLite file has one server")
    await bots(storage, "alice", "bob")
    other = await reopened(storage)  # a second node on the same database
    try:
        row = game("g1", "alice", "bob")
        await storage.save_game(game("g1", "alice", "bob", status="running"))
        paused, go = asyncio.Event(), asyncio.Event()

        async def hold() -> None:  # the other node, between its game row and its ratings
            paused.set()
            await go.wait()

        monkeypatch.setattr(other, "_between_game_and_ratings", hold)
        stored = asyncio.create_task(other.write_games(
            [GameWrite(row, final=True, rate=rating_update(row, Settings().elo))]))
        await wait_until(paused.is_set, 5, "the other node never reached its ratings")
        reset = asyncio.create_task(storage.reset_ratings())

        async def reset_waits() -> bool:
            waiting = await run_sql(storage, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                                             " AND query LIKE '%bots%'")
            return bool(waiting[0][0])

        await wait_until(reset_waits, 5, "the reset did not wait for the bots' rows")
        go.set()
        assert await stored == frozenset()
        await reset
    finally:
        await other.close()
    assert await storage.pair_tallies() == {} and await storage.rated_results() == []
    assert {(s.bot, s.rating, s.rated_games) for s in await storage.standings()} == {
        ("alice", INITIAL_RATING, 0), ("bob", INITIAL_RATING, 0)}


async def test_ratings_equal_a_replay_of_the_stored_games(storage: Storage, tmp_path: Path) -> None:
    names = ["ann", "ben", "cat"]
    await bots(storage, *names)
    recorder = GameRecorder(Settings(), storage, Spool(tmp_path / "spool", "arena.db"))
    rng = random.Random(7)
    expected: list[tuple[str, str, float]] = []
    for i in range(60):  # past the 30 provisional games for some bots, so both Ks are used
        a, b = rng.sample(names, 2)
        winner = rng.choice([0, 1, None])
        expected.append((a, b, {0: 1.0, 1: 0.0, None: 0.5}[winner]))
        await recorder.store_final(game(f"g{i:02}", a, b, winner=winner))
    # Unrated games in between change nothing.
    await storage.finish_game(game("u1", "ann", "ben", rated=False), [])
    assert await storage.rated_results() == expected
    assert await storage.pair_tallies() == tallies(expected)
    want = elo_replay(names, expected)
    got = {s.bot: (s.rating, s.rated_games) for s in await storage.standings()}
    assert got.keys() == want.keys()
    for n in names:
        assert got[n][1] == want[n][1] and got[n][0] == pytest.approx(want[n][0], abs=1e-9)
    assert max(g for _, g in got.values()) > 30
    history = await storage.rating_history("ann")
    assert len(history) == got["ann"][1]
    assert history[-1].rating_after == pytest.approx(got["ann"][0])
    assert all(h.games_before == i for i, h in enumerate(history))
    # Reset: ratings and history go; the games stay stored but count no more; later games do.
    await storage.reset_ratings()
    assert {(s.rating, s.rated_games) for s in await storage.standings()} == {(INITIAL_RATING, 0)}
    assert await storage.rating_history("ann") == [] and await storage.rated_results() == []
    assert await storage.pair_tallies() == {}
    assert (await storage.get_game("g00")).rated  # type: ignore[union-attr]
    await recorder.store_final(game("after", "cat", "ann", winner=1))
    assert await storage.rated_results() == [("cat", "ann", 0.0)]
    assert await storage.pair_tallies() == {("ann", "cat"): (1, 0, 0)}  # ann, seat 1, won
    assert {s.bot: s.rated_games for s in await storage.standings()} == {"ann": 1, "ben": 0, "cat": 1}


def tallies(results: list[tuple[str, str, float]]) -> dict[tuple[str, str], tuple[int, int, int]]:
    return {pair: (c[0], c[1], c[2]) for pair, c in Tally.of(results).counts.items()}


async def reopened(storage: Storage) -> Storage:
    """The same database, opened again (a new server on it)."""
    if isinstance(storage, SqliteStorage):
        again: Storage = SqliteStorage(storage.path)
    else:
        from server.storage.postgres import PostgresStorage

        assert isinstance(storage, PostgresStorage)
        again = PostgresStorage(storage.url, schema=storage.schema, max_size=2)
    await again.open()
    return again


async def run_sql(storage: Storage, *statements: str) -> list[Any]:
    """Statements on the database behind ``storage``, outside it (as another program would);
    the rows of the last one."""
    rows: list[Any] = []
    if isinstance(storage, SqliteStorage):
        with sqlite3.connect(storage.path) as db:
            for stmt in statements:
                rows = db.execute(stmt).fetchall()
        return rows
    import asyncpg

    from server.storage.postgres import PostgresStorage

    assert isinstance(storage, PostgresStorage)
    conn = await asyncpg.connect(storage.url, server_settings={"search_path": storage.schema or "public"})
    try:
        for stmt in statements:
            rows = await conn.fetch(stmt)
    finally:
        await conn.close()
    return rows


def sql_text(value: Any) -> str:
    """``value`` as JSON in an SQL string literal."""
    return "'" + msgspec.json.encode(value).decode().replace("'", "''") + "'"


async def as_schema_8(storage: Storage) -> None:
    """Turn the (closed) database behind ``storage`` into what schema 8 wrote: each rated
    game's rating changes as two ``rating_history`` rows, the players as JSON, the results as
    JSON, and its indexes (and no table of migration 10)."""
    from server.storage.base import RATING_COLUMNS
    from server.storage.packing import unpack_result

    sqlite = isinstance(storage, SqliteStorage)
    packed = "result" if sqlite else "result_z"
    results = await run_sql(storage, f"SELECT id, {packed} FROM games WHERE {packed} IS NOT NULL")
    key = "bot TEXT NOT NULL COLLATE NOCASE" if sqlite else "bot TEXT NOT NULL"
    serial = "INTEGER PRIMARY KEY AUTOINCREMENT" if sqlite else "BIGSERIAL PRIMARY KEY"
    seats = " UNION ALL ".join(
        f"SELECT id, seat{s} AS bot, rating{s}_before AS rb, rating{s}_after AS ra, games{s}_before AS gb,"
        f" COALESCE(ended, '') AS at, finish_seq, {s} AS seat FROM games WHERE games{s}_before IS NOT NULL"
        for s in (0, 1)
    )
    if not sqlite:  # times as text
        await run_sql(storage, *(
            f"""ALTER TABLE games ALTER COLUMN {c} TYPE TEXT USING to_char((timestamptz 'epoch' + {c} * interval '1 ms')
                AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')""" for c in ("started", "ended")))
    await run_sql(
        storage,
        f"""CREATE TABLE rating_history (id {serial}, game_id TEXT NOT NULL REFERENCES games (id), {key},
            rating_before {"REAL" if sqlite else "DOUBLE PRECISION"} NOT NULL,
            rating_after {"REAL" if sqlite else "DOUBLE PRECISION"} NOT NULL,
            games_before INTEGER NOT NULL, at TEXT NOT NULL, UNIQUE (game_id, bot))""",
        "CREATE INDEX rating_history_bot ON rating_history (bot, id)" if sqlite
        else "CREATE INDEX rating_history_bot ON rating_history (lower(bot), id)",
        "INSERT INTO rating_history (game_id, bot, rating_before, rating_after, games_before, at)"
        f" SELECT id, bot, rb, ra, gb, at FROM ({seats}) AS changes ORDER BY finish_seq, seat",
        f"ALTER TABLE games ADD COLUMN players {'TEXT' if sqlite else 'JSONB'} NOT NULL DEFAULT '[]'",
        "UPDATE games SET players = json_array(seat0, seat1)" if sqlite
        else "UPDATE games SET players = jsonb_build_array(seat0, seat1)",
        *(f"UPDATE games SET result = {sql_text(unpack_result(gid, bytes(data)))}{'' if sqlite else '::jsonb'}"
          f"{'' if sqlite else ', result_z = NULL'} WHERE id = '{gid}'" for gid, data in results),
        "DROP INDEX games_seat0_rated", "DROP INDEX games_seat1_rated", "DROP INDEX games_unfinished",
        "DROP INDEX games_tournament",
        "CREATE INDEX games_status_started ON games (status, started, id)",
        "CREATE INDEX games_kind_started ON games (kind, started)",
        "CREATE INDEX games_tournament ON games (tournament_id, slot)",
        *(stmt for seat in (0, 1) for stmt in (f"DROP INDEX games_seat{seat}_started",
                                               f"CREATE INDEX games_seat{seat}_started ON games (seat{seat}, started, id)")),
        *(f"ALTER TABLE games DROP COLUMN {c}" for c in RATING_COLUMNS.split(", ")),
        *([] if sqlite else ["ALTER TABLE games DROP COLUMN result_z", "ALTER TABLE games ADD COLUMN seq BIGSERIAL",
                             "CREATE INDEX games_finish_seq ON games (finish_seq)"]),
        "DROP TABLE open_pairs",
        "DELETE FROM schema_version WHERE version > 8",
    )


async def as_schema(storage: Storage, version: int) -> None:
    """Turn the (closed) database behind ``storage`` into what schema ``version`` (6, 7 or 8)
    wrote: the tables and columns added later dropped, their versions forgotten."""
    await as_schema_8(storage)
    if version == 8:
        return
    sqlite = isinstance(storage, SqliteStorage)
    later = ["DROP TABLE pair_results"] if version < 7 else []
    later += ["DROP INDEX games_status_started", "DROP INDEX games_seat0_started", "DROP INDEX games_seat1_started",
              "CREATE INDEX games_status ON games (status, started)", "CREATE INDEX games_seat0 ON games (seat0)",
              "CREATE INDEX games_seat1 ON games (seat1)"]
    if not sqlite:  # SQLite keeps compact records in the same columns
        later += ["ALTER TABLE games DROP COLUMN record_z", "ALTER TABLE games DROP COLUMN telemetry_z"]
    await run_sql(storage, *later, f"DELETE FROM schema_version WHERE version > {version}")


async def test_a_database_of_schema_6_gets_its_pair_totals_from_its_rated_games(storage: Storage,
                                                                                 tmp_path: Path) -> None:
    """Migration 7 fills ``pair_results`` from the rated games stored since the last reset:
    a database written by the previous schema loses nothing."""
    names = ["Zed", "ann", "bob", "émile"]  # capitals and accents: the pair's order is by code point
    await bots(storage, *names)
    recorder = GameRecorder(Settings(), storage, Spool(tmp_path / "spool", "arena.db"))
    rng = random.Random(11)
    before_reset = [(a, b) for a, b in (rng.sample(names, 2) for _ in range(5))]
    for i, (a, b) in enumerate(before_reset):
        await recorder.store_final(game(f"old{i}", a, b, winner=0))
    await storage.reset_ratings()
    expected: list[tuple[str, str, float]] = []
    for i in range(40):
        a, b = rng.sample(names, 2)
        winner = rng.choice([0, 1, None])
        expected.append((a, b, {0: 1.0, 1: 0.0, None: 0.5}[winner]))
        await recorder.store_final(game(f"g{i:02}", a, b, winner=winner))
    await storage.finish_game(game("unrated", "ann", "bob", rated=False), [])
    assert await storage.pair_tallies() == tallies(expected)
    await storage.close()
    await as_schema(storage, 6)
    again = await reopened(storage)
    try:
        assert await again.pair_tallies() == tallies(expected)
        assert await again.rated_results() == expected
    finally:
        await again.close()
    await storage.open()  # for the fixture to close


async def test_ladder_place_settings_and_a_bots_games(storage: Storage) -> None:
    await bots(storage, "Ann", "ben")
    assert (await storage.bot_by_name("ann")).ladder == "new"  # type: ignore[union-attr]
    await storage.set_ladder("ANN", "listed", only_from="new")
    await storage.set_ladder("ben", "removed")
    await storage.set_ladder("BEN", "listed", only_from="new")  # removed meanwhile: stays removed
    assert [(b.name, b.ladder) for b in await storage.list_bots()] == [("Ann", "listed"), ("ben", "removed")]
    assert (await storage.bot_by_token_hash("hash-Ann")).ladder == "listed"  # type: ignore[union-attr]
    assert await storage.get_setting("paused") is None
    await storage.put_setting("paused", "1")
    await storage.put_setting("paused", "0")
    assert await storage.get_setting("paused") == "0"
    rows = [
        game("g1", "Ann", "ben", started="2024-01-01T00:00:01.000Z"),
        game("g2", "ben", "Ann", started="2024-01-01T00:00:02.000Z"),
        game("g3", "ben", "cat", started="2024-01-01T00:00:03.000Z"),
    ]
    for row in rows:
        await storage.save_game(msgspec.structs.replace(row, kind="ladder", pair_id="p1"))
    mine = await storage.games_of("Ann", 10)
    assert [g.game_id for g in mine] == ["g2", "g1"]
    assert {(g.kind, g.pair_id) for g in mine} == {("ladder", "p1")}
    assert [g.game_id for g in await storage.games_of("ben", 2)] == ["g3", "g2"]


async def test_a_new_bot_starts_at_the_rating_it_is_given(storage: Storage) -> None:
    await storage.create_bot("ann", "h", "2024-01-01T00:00:00.000Z", rating=1200.0)
    assert await storage.standing("ann") == Standing(bot="ann", rating=1200.0, rated_games=0)


async def test_concurrent_rated_finishes_are_serialized(storage: Storage, tmp_path: Path) -> None:
    import asyncio

    await bots(storage, "ann", "ben", "cat")
    recorder = GameRecorder(Settings(), storage, Spool(tmp_path / "spool", "arena.db"))
    rows = [game(f"g{i}", *pair, winner=0) for i, pair in enumerate([("ann", "ben"), ("ben", "cat"), ("cat", "ann")] * 4)]
    await asyncio.gather(*(recorder.store_final(r) for r in rows))
    results = await storage.rated_results()
    assert len(results) == 12
    want = elo_replay(["ann", "ben", "cat"], results)
    for s in await storage.standings():
        assert s.rated_games == 8 and s.rating == pytest.approx(want[s.bot][0])


async def test_a_game_stored_twice_counts_once(storage: Storage, tmp_path: Path) -> None:
    """A spooled game replayed after a crash may already be stored: nothing changes."""
    await bots(storage, "ann", "ben")
    recorder = GameRecorder(Settings(), storage, Spool(tmp_path / "spool", "arena.db"))
    row = game("g1", "ann", "ben", winner=0)
    await recorder.store_final(row)
    before = await storage.standings()
    await recorder.store_final(row)
    await recorder.store_final(msgspec.structs.replace(row, result={**(row.result or {}), "winner": 1}))
    assert await storage.standings() == before
    assert await storage.rated_results() == [("ann", "ben", 1.0)]
    assert len(await storage.rating_history("ann")) == 1


async def test_tournaments_rows_transitions_and_their_games(storage: Storage) -> None:
    await bots(storage, "ann", "ben")
    row = TournamentRow(tournament_id="t1", name="cup", definition={"format": "round_robin", "participants": ["ann", "ben"]},
                        state="created", created="2024-01-01T00:00:00.000Z", schedule=[[1, "ann", "ben", 0], [1, "ben", "ann", 0]])
    await storage.create_tournament(row)
    later = msgspec.structs.replace(row, tournament_id="t2", created="2024-01-02T00:00:00.000Z")
    await storage.create_tournament(later)
    assert await storage.get_tournament("t1") == row and await storage.get_tournament("nope") is None
    assert [t.tournament_id for t in await storage.list_tournaments()] == ["t2", "t1"]
    running = msgspec.structs.replace(row, state="running", started="2024-01-01T00:00:05.000Z",
                                      schedule=[*row.schedule, [2, "ann", "ben", 1]])
    assert await storage.update_tournament(running, "created")
    assert not await storage.update_tournament(msgspec.structs.replace(row, state="paused"), "created")  # raced: lost
    assert await storage.get_tournament("t1") == running
    # A control read the row before the second round was stored: it sets the state, not the schedule.
    pause = msgspec.structs.replace(row, state="paused", started=running.started)
    assert await storage.set_tournament_state(pause, "running")
    assert not await storage.set_tournament_state(pause, "running")  # raced: lost
    assert await storage.get_tournament("t1") == msgspec.structs.replace(running, state="paused")
    assert [t.tournament_id for t in await storage.list_tournaments(["running", "paused"])] == ["t1"]
    # Slot 0 was cut off (aborted) and replayed; slot 1 finished; slot 2 runs.
    def slot_game(gid: str, slot: int, status: str, started: str) -> GameRow:
        return msgspec.structs.replace(game(gid, "ann", "ben", status=status, rated=False, started=started),
                                       kind="tournament", tournament_id="t1", slot=slot)
    await storage.save_game(slot_game("a", 0, "aborted", "2024-01-01T00:00:06.000Z"))
    await storage.save_game(slot_game("b", 1, "finished", "2024-01-01T00:00:07.000Z"))
    await storage.save_game(slot_game("c", 0, "finished", "2024-01-01T00:00:08.000Z"))
    await storage.save_game(slot_game("d", 2, "running", "2024-01-01T00:00:09.000Z"))
    every = await storage.tournament_games("t1")
    assert [(g.game_id, g.slot) for g in every] == [("a", 0), ("c", 0), ("b", 1), ("d", 2)]
    assert all(g.record is None for g in every)
    counted = await storage.tournament_games("t1", records=True, finished=True)
    assert [g.game_id for g in counted] == ["c", "b"] and all(g.record == {"moves": []} for g in counted)
    assert [g.game_id for g in await storage.tournament_games("t1", finished=True, after_slot=0, limit=5)] == ["b"]
    assert await storage.tournament_games("t2") == []


async def test_tournaments_are_listed_newest_first_a_page_at_a_time(storage: Storage) -> None:
    """Pages after a cursor (the last one's ``created`` and id) list every tournament once, in
    the order of the whole list, those created in the same millisecond in the order stored."""
    def row(tid: str, created: str, state: str = "finished") -> TournamentRow:
        return TournamentRow(tournament_id=tid, name=tid, definition={"format": "round_robin", "participants": ["a", "b"]},
                             state=state, created=f"2024-01-0{created}T00:00:00.000Z")
    rows = [row("q", "1"), row("z", "2", "running"), row("a", "2"), row("m", "2", "running"), row("b", "3")]
    for r in rows:
        await storage.create_tournament(r)
    whole = [t.tournament_id for t in await storage.list_tournaments()]
    assert whole == ["b", "m", "a", "z", "q"]
    for limit in (1, 2, 3, 5):
        seen: list[str] = []
        before = None
        while True:
            page = await storage.list_tournaments(before=before, limit=limit)
            seen += [t.tournament_id for t in page]
            if len(page) < limit:
                break
            before = (page[-1].created, page[-1].tournament_id)
        assert seen == whole, limit
    assert [t.tournament_id for t in await storage.list_tournaments(["running"], before=("2024-01-02T00:00:00.000Z", "m"),
                                                                    limit=5)] == ["z"]
    assert await storage.list_tournaments(before=("2024-01-01T00:00:00.000Z", "q")) == []


async def test_a_pairs_rows_keep_it_open_from_its_first_games_start_to_its_return_games_end(
        storage: Storage) -> None:
    """A duplicate pair is open (its first game's record held, ``server/games/holds.py``) from
    the first game's start row until the return game's last row, forfeit included; the last row
    of a first game that did not finish closes it, and so does a ``PairClose`` (a return game
    dropped)."""
    from server.storage.base import OpenPair, PairClose

    await bots(storage, "ann", "ben")

    def pair_game(gid: str, pair: str, status: str, *, back: bool = False, second: int = 0) -> GameRow:
        players = ("ben", "ann") if back else ("ann", "ben")
        return msgspec.structs.replace(game(gid, *players, status=status, started=f"2024-01-01T00:00:0{second}.000Z"),
                                       kind="ladder", pair_id=pair)

    async def write(*writes: Any) -> None:
        assert await storage.write_games(list(writes)) == frozenset()

    async def opened(*pairs: str) -> list[OpenPair]:
        return await storage.open_pairs(list(pairs))

    # p1 plays both its games.
    await write(GameWrite(pair_game("g1", "p1", "running")))
    assert await opened("p1") == [OpenPair(pair_id="p1", first_game="g1")]
    await write(GameWrite(pair_game("g1", "p1", "finished"), final=True))
    assert await opened("p1") == [OpenPair(pair_id="p1", first_game="g1")]
    await write(GameWrite(pair_game("g2", "p1", "running", back=True, second=1)))
    assert await opened("p1") == [OpenPair(pair_id="p1", first_game="g1", return_game="g2")]
    await write(GameWrite(pair_game("g2", "p1", "finished", back=True, second=1), final=True))
    assert await opened("p1") == []
    # p2's first game is aborted: no return game follows it.
    await write(GameWrite(pair_game("h1", "p2", "running")), GameWrite(pair_game("h1", "p2", "aborted"), final=True))
    # p3's return game is forfeited: a last row only.
    await write(GameWrite(pair_game("i1", "p3", "running")), GameWrite(pair_game("i1", "p3", "finished"), final=True),
                GameWrite(pair_game("i2", "p3", "finished", back=True), final=True))
    # p4's return game is dropped; p5 waits for its return game.
    await write(GameWrite(pair_game("j1", "p4", "running")), GameWrite(pair_game("j1", "p4", "finished"), final=True),
                GameWrite(pair_game("k1", "p5", "running")), GameWrite(pair_game("k1", "p5", "finished"), final=True),
                PairClose("p4"))
    assert await opened("p1", "p2", "p3", "p4", "p5", "p6") == [OpenPair(pair_id="p5", first_game="k1")]
    assert await storage.open_pairs() == [OpenPair(pair_id="p5", first_game="k1")]
    # A game stored again as it was (a spooled game after a crash) opens nothing.
    await write(GameWrite(pair_game("g1", "p1", "finished"), final=True))
    assert await storage.open_pairs() == [OpenPair(pair_id="p5", first_game="k1")]

    # What the holds of tournament games read: the states, and the games of some slots.
    row = TournamentRow(tournament_id="t1", name="cup", definition={}, state="running", created="2024-01-01T00:00:00.000Z")
    await storage.create_tournament(row)
    await storage.create_tournament(msgspec.structs.replace(row, tournament_id="t2", state="cancelled"))
    assert await storage.tournament_states(["t1", "t2", "t3"]) == {"t1": "running", "t2": "cancelled"}
    for gid, slot, status in (("s0", 0, "aborted"), ("s0b", 0, "finished"), ("s1", 1, "running"), ("s2", 2, "finished")):
        await storage.save_game(msgspec.structs.replace(game(gid, "ann", "ben", status=status, rated=False),
                                                        kind="tournament", tournament_id="t1", slot=slot))
    slots = await storage.tournament_slots("t1", [1, 0])
    assert [(g.game_id, g.slot, g.status) for g in slots] == [("s0", 0, "aborted"), ("s0b", 0, "finished"),
                                                              ("s1", 1, "running")]
    assert all(g.record is None for g in slots) and await storage.tournament_slots("t2", [0, 1]) == []


async def test_ladder_games_since_a_time(storage: Storage) -> None:
    await bots(storage, "ann", "ben")
    for i, kind in enumerate(["ladder", "challenge", "ladder", "ladder"]):
        await storage.save_game(msgspec.structs.replace(
            game(f"g{i}", "ann", "ben", started=f"2024-01-01T00:0{i}:00.000Z"), kind=kind))
    assert await storage.ladder_games_since("2024-01-01T00:01:00.000Z") == [
        ("ann", "ben", "2024-01-01T00:02:00.000Z"), ("ann", "ben", "2024-01-01T00:03:00.000Z")]


async def test_reopening_does_not_migrate_again(storage: Storage) -> None:
    await bots(storage, "alice")
    await storage.close()
    await storage.open()
    assert [b.name for b in await storage.list_bots()] == ["alice"]


OLD_SCHEMA = """
CREATE TABLE bots (name TEXT NOT NULL UNIQUE COLLATE NOCASE, token_hash TEXT NOT NULL UNIQUE, created TEXT NOT NULL);
CREATE TABLE games (id TEXT PRIMARY KEY, players TEXT NOT NULL, seat0 TEXT NOT NULL, seat1 TEXT NOT NULL,
    status TEXT NOT NULL, rated INTEGER NOT NULL, first_player INTEGER NOT NULL, ply INTEGER NOT NULL,
    record TEXT, result TEXT, end_reason TEXT, started TEXT NOT NULL, ended TEXT);
INSERT INTO bots VALUES ('old-bot', 'h', '2023-01-01T00:00:00.000Z');
"""


async def test_a_sqlite_file_from_before_migrations_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as db:
        db.executescript(OLD_SCHEMA)
    store = SqliteStorage(str(path))
    await store.open()
    try:
        assert await store.standings() == [Standing(bot="old-bot", rating=1500.0, rated_games=0)]
    finally:
        await store.close()
    with sqlite3.connect(path) as db:
        assert [v for (v,) in db.execute("SELECT version FROM schema_version ORDER BY version")] == \
            list(range(1, SCHEMA_VERSION + 1))
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_a_rated_game_updates_ratings_through_the_server(make_arena: Any, db_path: Path) -> None:
    arena: Harness = await make_arena()
    a = await arena.bot("alice")
    b = await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"], rated=True)
    (over,), _ = await gather(play_out(a, random_policy(5)), play_out(b, random_policy(6)))
    await arena.arena.manager.flush()
    store = arena.arena.storage
    score = {0: 1.0, 1: 0.0, None: 0.5}[over.result.winner]
    assert await store.rated_results() == [("alice", "bob", score)]
    want = elo.update((1500.0, 1500.0), (0, 0), score)
    got = {s.bot: s for s in await store.standings()}
    assert (got["alice"].rating, got["bob"].rating) == pytest.approx(want)
    assert got["alice"].rated_games == got["bob"].rated_games == 1
    (h,) = await store.rating_history("alice")
    assert h.game_id == game_id
    assert (await store.get_game(game_id)).status == "finished"  # type: ignore[union-attr]


def test_the_url_picks_the_backend() -> None:
    from server.config import load_settings
    from server.storage import open_storage
    from server.storage.postgres import PostgresStorage

    assert isinstance(open_storage("arena.db"), SqliteStorage)
    assert open_storage("sqlite:///tmp/x.db").path == "/tmp/x.db"  # type: ignore[attr-defined]
    assert isinstance(open_storage("postgresql://u@h/db"), PostgresStorage)
    url = "postgresql://u@h/db"
    assert load_settings(None, {}, environ={"DATABASE_URL": url}).db == url
    assert load_settings(None, {"db": "x.db"}, environ={"DATABASE_URL": url}).db == "x.db"


async def test_exports_read_games_a_page_at_a_time_in_start_order_with_filters(storage: Storage) -> None:
    await bots(storage, "ann", "ben", "cat")
    rows = []
    for i in range(9):
        a, b = [("ann", "ben"), ("ben", "cat"), ("cat", "ann")][i % 3]
        started = f"2024-01-01T00:00:0{i // 2}.000Z"  # two games a time: ties are ordered by id
        kind = "ladder" if i % 2 else "challenge"
        status = "aborted" if i == 4 else "running" if i == 8 else "finished"
        telemetry = {"decision_ms": 1000, "think_ms": [[1.5], [2.5]], "incidents": [], "dropped": 0}
        rows.append(msgspec.structs.replace(game(f"g{i}", a, b, status=status), started=started, kind=kind,
                                            telemetry=telemetry if status == "finished" else None))
    for row in reversed(rows):
        await storage.save_game(row)
    over = [r for r in rows if r.status != "running"]

    async def export(which: GameFilter, page: int) -> list[str]:
        got: list[str] = []
        after = None
        while True:
            batch = await storage.export_games(which, after, page)
            got += [g.game_id for g in batch]
            assert all(g.record is not None and g.status != "running" for g in batch)
            if len(batch) < page:
                assert await storage.count_games(which) == len(got)
                return got
            after = (batch[-1].started, batch[-1].game_id)

    everything = GameFilter()
    assert await export(everything, 3) == await export(everything, 100) == [r.game_id for r in over]
    assert await export(GameFilter(bot="ann"), 2) == [r.game_id for r in over if "ann" in r.players]
    assert await export(GameFilter(kind="ladder"), 2) == [r.game_id for r in over if r.kind == "ladder"]
    assert await export(GameFilter(statuses=("aborted",)), 2) == ["g4"]
    window = GameFilter(since="2024-01-01T00:00:01.000Z", until="2024-01-01T00:00:03.000Z")
    assert await export(window, 1) == ["g2", "g3", "g4", "g5"]
    assert await export(GameFilter(bot="ben", kind="challenge", statuses=("finished",)), 1) == ["g0", "g6"]
    assert await export(GameFilter(ended_by="2024-01-01T00:01:00.000Z"), 2) == [r.game_id for r in over]
    assert await export(GameFilter(ended_by="2024-01-01T00:00:59.999Z"), 2) == []  # all ended at 00:01
    # The last N games: the export starts just after the key of the game before them.
    ids = [r.game_id for r in over]
    for last in (1, 2, 3, 7):
        start = await storage.export_start(everything, last)
        assert start is not None and start[1] == ids[-last - 1]
        assert [g.game_id for g in await storage.export_games(everything, start, 100)] == ids[-last:]
    assert await storage.export_start(everything, 8) is None and await storage.export_start(everything, 50) is None
    start = await storage.export_start(GameFilter(bot="ann"), 2)  # ann: g0 g2 g3 g5 g6; after g3 come the last two
    assert start is not None and start[1] == "g3"
    assert [g.game_id for g in await storage.export_games(GameFilter(bot="ann"), start, 100)] == ["g5", "g6"]
    # A bot's games carry their telemetry only when asked; never their records.
    health = await storage.games_of("ann", 10, telemetry=True)
    assert {g.game_id for g in health} == {"g8", "g6", "g5", "g3", "g2", "g0"}
    assert all(g.record is None for g in health)
    by_id = {g.game_id: g for g in health}
    assert by_id["g6"].telemetry == rows[6].telemetry and by_id["g8"].telemetry is None
    assert all(g.telemetry is None for g in await storage.games_of("ann", 10))
    assert (await storage.get_game("g6")).telemetry == rows[6].telemetry  # type: ignore[union-attr]


async def test_a_move_log_takes_moves_only_from_the_node_running_the_game_at_its_epoch(storage: Storage) -> None:
    """A running game's move log (a cluster's games): appended in order, read whole by a
    takeover, which moves the game to its next epoch; from then on every write of the former
    host is refused (and reported), a batch retried after a commit it was not told of is
    stored once, and the game's last row drops its log."""
    await bots(storage, "alice", "bob")
    deal = {"deck": None, "first_player": 0, "reshuffle_seed": 7, "reshuffles": None}
    start = msgspec.structs.replace(game("g1", "alice", "bob", status="running"), host="n1", deal=deal, decision_ms=900)
    game_ = mandala.Game.new(seed=7)
    played = []
    for _ in range(3):
        code = game_.legal_codes()[0]
        played.append(played_move(game_.to_move, code))  # type: ignore[arg-type]
        game_.push_code(code)
    logged = [LoggedMove(ply, 0, move, 10.0 + ply) for ply, move in enumerate(played)]

    def move(ply: int, epoch: int) -> MoveWrite:
        return MoveWrite("g1", epoch, msgspec.structs.replace(logged[ply], epoch=epoch))

    assert await storage.write_games([GameWrite(start), move(0, 0), move(1, 0)]) == frozenset()
    assert await storage.write_games([move(1, 0)]) == frozenset()  # a retry: stored once
    assert await storage.running_games() == [RunningGame("g1", "n1", 0)]

    claim = await storage.claim_game("g1", 0, "n2")
    assert claim is not None
    assert (claim.row.host, claim.row.epoch, claim.row.deal, claim.row.decision_ms) == ("n2", 1, deal, 900)
    assert claim.moves == logged[:2]
    assert await storage.claim_game("g1", 0, "n3") is None  # taken already
    # The former host, unaware, appends a move and stores an end: both refused.
    assert await storage.write_games([move(2, 0)]) == frozenset({"g1"})
    over = msgspec.structs.replace(game("g1", "alice", "bob", rated=False), host="n1", epoch=0)
    assert await storage.write_games([GameWrite(over, final=True)]) == frozenset({"g1"})
    assert (await storage.get_game("g1")).status == "running"  # type: ignore[union-attr]
    # The new host's move and end are stored; the end drops the log.
    assert await storage.write_games([move(2, 1)]) == frozenset()
    again = await storage.claim_game("g1", 1, "n3")
    assert again is not None and again.moves == [logged[0], logged[1], msgspec.structs.replace(logged[2], epoch=1)]
    ended = msgspec.structs.replace(over, host="n3", epoch=2)
    assert await storage.write_games([GameWrite(ended, final=True)]) == frozenset()
    assert await storage.running_games() == []
    assert await storage.claim_game("g1", 2, "n1") is None
    stored = await storage.get_game("g1")
    assert stored is not None and (stored.status, stored.host, stored.epoch) == ("finished", "n3", 2)

    # A game given up: aborted at its epoch only, and moved past it.
    await storage.save_game(msgspec.structs.replace(start, game_id="g2"))
    assert not await storage.abandon_game("g2", 3, "2024-01-01T00:09:00.000Z")
    assert await storage.abandon_game("g2", 0, "2024-01-01T00:09:00.000Z")
    g2 = await storage.get_game("g2")
    assert g2 is not None and (g2.status, g2.epoch, g2.end_reason) == ("aborted", 1, "aborted")
    assert await storage.write_games([MoveWrite("g2", 0, logged[0])]) == frozenset({"g2"})


async def test_records_stored_as_json_are_compacted_in_place_and_served_unchanged(storage: Storage) -> None:
    """Migration 8 on a database of schema 7 holding real games with their records and
    telemetry as JSON: each becomes compact (about 200 bytes a record), and reads back as
    the same JSON, byte for byte, as before."""
    from mandala_cli.history_cmd import synth_game

    await bots(storage, "ann", "bob")
    rng = random.Random(5)
    rows = [synth_game(rng, ["ann", "bob"] if i % 2 else ["bob", "ann"], START) for i in range(12)]
    for row in rows:
        await storage.finish_game(row, [])
    served_now = {row.game_id: msgspec.json.encode(await storage.get_game(row.game_id)) for row in rows}
    await storage.close()
    # What schema 7 wrote: the record and telemetry as JSON.
    sqlite = isinstance(storage, SqliteStorage)
    ph = "?" if sqlite else "$1"
    statements = []
    for row in rows:
        record = msgspec.json.encode(row.record).decode().replace("'", "''")
        tel = msgspec.json.encode(row.telemetry).decode().replace("'", "''")
        cast = "" if sqlite else "::jsonb"
        statements.append(f"UPDATE games SET record = '{record}'{cast}, telemetry = '{tel}' WHERE id = '{row.game_id}'")
    assert ph
    if not sqlite:
        statements = [s.replace("WHERE", ", record_z = NULL, telemetry_z = NULL WHERE") for s in statements]
    await run_sql(storage, *statements)
    await as_schema(storage, 7)
    again = await reopened(storage)
    try:
        for row in rows:
            got = await again.get_game(row.game_id)
            assert got is not None
            assert msgspec.json.encode(got) == served_now[row.game_id]  # the same bytes as before
            replayed = mandala.replay(got.record)  # type: ignore[arg-type]
            assert mandala.result(replayed).winner == row.result["winner"]  # type: ignore[index, union-attr]
        sizes = await stored_sizes(again, [row.game_id for row in rows])
        assert max(sizes) < 400, sizes  # was about 6,000
    finally:
        await again.close()
    await storage.open()  # for the fixture to close


async def stored_sizes(storage: Storage, game_ids: list[str]) -> list[int]:
    """Bytes each game's record takes in the database."""
    if isinstance(storage, SqliteStorage):
        with sqlite3.connect(storage.path) as db:
            return [db.execute("SELECT length(record) FROM games WHERE id = ?", (g,)).fetchone()[0] for g in game_ids]
    import asyncpg

    from server.storage.postgres import PostgresStorage

    assert isinstance(storage, PostgresStorage)
    conn = await asyncpg.connect(storage.url, server_settings={"search_path": storage.schema or "public"})
    try:
        return [await conn.fetchval("SELECT length(record_z) FROM games WHERE id = $1 AND record IS NULL", g)
                for g in game_ids]
    finally:
        await conn.close()


async def test_a_record_that_does_not_decode_is_refused_naming_the_game(storage: Storage) -> None:
    from mandala_cli.history_cmd import synth_game
    from server.storage.packing import UnreadableRecord

    await bots(storage, "ann", "bob")
    row = synth_game(random.Random(9), ["ann", "bob"], START)
    await storage.finish_game(row, [])
    column = "record" if isinstance(storage, SqliteStorage) else "record_z"
    damaged = "X'789c0bce'" if isinstance(storage, SqliteStorage) else "'\\x789c0bce'::bytea"
    await run_sql(storage, f"UPDATE games SET {column} = {damaged} WHERE id = '{row.game_id}'")
    with pytest.raises(UnreadableRecord, match=f"game {row.game_id}: its stored record does not decode"):
        await storage.get_game(row.game_id)
    assert [g.game_id for g in await storage.list_games(None, 5)] == [row.game_id]  # lists read no record


async def served(storage: Storage, game_ids: list[str], names: list[str]) -> dict[str, Any]:
    """Everything the server reads of its games, as it reads it: each game whole, every list
    and its next page, each bot's rating changes and their pages, the standings and totals,
    an export, a tournament's games and the last hour's ladder games."""
    out: dict[str, Any] = {"games": [await storage.get_game(g) for g in game_ids]}
    for status in (None, "finished", "running", "aborted", "over"):
        for bot in (None, *names):
            first = await storage.list_games(status, 4, None, bot)  # type: ignore[arg-type]
            cursor = (first[-1].started, first[-1].game_id) if first else None
            out[f"list {status} {bot}"] = [first, await storage.list_games(status, 4, cursor, bot)]  # type: ignore[arg-type]
    for name in names:
        out[f"history {name}"] = [await storage.rating_history(name), await storage.rating_history(name.upper(), 3),
                                  await storage.rating_history(name, 3, 4)]
        out[f"games of {name}"] = await storage.games_of(name, 5, telemetry=True)
    out["standings"] = await storage.standings()
    out["tallies"] = sorted(await storage.pair_tallies())
    out["rated"] = await storage.rated_results()
    out["export"] = await storage.export_games(GameFilter(bot=names[1]), None, 50)
    out["tournament"] = await storage.tournament_games("t1", records=True)
    out["hour"] = await storage.ladder_games_since("2026-01-01T00:10:00.000Z")
    return out


async def test_a_database_of_schema_8_is_served_the_same_after_migration_9(storage: Storage, tmp_path: Path) -> None:
    """Migration 9 moves each rated game's rating changes from ``rating_history`` into its
    row, drops the players column (the seats say it) and changes indexes: on a database
    written by schema 8 (rated games across a ratings reset, unrated, running, aborted and
    tournament games, results of every shape) every read gives the same JSON as before."""
    from datetime import timedelta

    from mandala_cli.history_cmd import synth_game

    names = ["Ann", "bob", "cat"]
    await bots(storage, *names)
    recorder = GameRecorder(Settings(), storage, Spool(tmp_path / "spool", "arena.db"))
    rng = random.Random(21)
    ids = []
    for i in range(40):
        if i == 15:
            await storage.reset_ratings()
        row = synth_game(rng, rng.sample(names, 2), START + timedelta(minutes=i))
        if i % 7 == 3:
            row = msgspec.structs.replace(row, rated=False, kind="challenge")
        await recorder.store_final(row)
        ids.append(row.game_id)
    odd = game("odd", "cat", "Ann", started="2026-01-01T00:50:00.000Z")  # a result of another shape
    await recorder.store_final(odd)
    await storage.save_game(game("run", "bob", "cat", status="running", started="2026-01-01T00:51:00.000Z"))
    await storage.save_game(game("stop", "Ann", "bob", status="aborted", winner=None, started="2026-01-01T00:52:00.000Z"))
    await storage.save_game(msgspec.structs.replace(
        synth_game(rng, ["bob", "Ann"], START + timedelta(minutes=53)), rated=False, kind="tournament",
        tournament_id="t1", slot=0))
    ids += ["odd", "run", "stop"]
    before = msgspec.json.encode(await served(storage, ids, names))
    await storage.close()
    await as_schema(storage, 8)
    (changes,) = await run_sql(storage, "SELECT COUNT(*) FROM rating_history")
    assert changes[0] == 2 * sum(1 for i in range(40) if i % 7 != 3) + 2  # the odd game is rated too
    again = await reopened(storage)
    try:
        assert msgspec.json.encode(await served(again, ids, names)) == before
        history = await again.rating_history("ann")
        assert len(history) > 5 and [h.games_before for h in history] == list(range(len(history)))  # since the reset
    finally:
        await again.close()
    tables = await run_sql(storage, "SELECT name FROM sqlite_master WHERE type = 'table'" if isinstance(storage, SqliteStorage)
                           else "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
    assert "rating_history" not in {t[0] for t in tables}
    await storage.open()  # for the fixture to close


async def test_a_time_written_otherwise_stops_migration_9_naming_its_game(storage: Storage) -> None:
    """PostgreSQL keeps times in milliseconds from schema 9: a stored time the conversion would
    change (not as the server writes times) stops the upgrade, naming the game, and the
    database stays at schema 8, untouched."""
    if isinstance(storage, SqliteStorage):
        pytest.skip("SQLite keeps times as the text they were written")
    await bots(storage, "ann", "bob")
    await storage.finish_game(game("g1", "ann", "bob", rated=False), [])
    await storage.close()
    await as_schema(storage, 8)
    await run_sql(storage, "UPDATE games SET started = '2024-01-01 00:00:00+02' WHERE id = 'g1'")
    with pytest.raises(RuntimeError, match="game g1: its start or end time is not as this server writes times"):
        await reopened(storage)
    (version,) = await run_sql(storage, "SELECT MAX(version) FROM schema_version")
    assert version[0] == 8
    await run_sql(storage, "UPDATE games SET started = '2024-01-01T00:00:00.000Z' WHERE id = 'g1'")
    again = await reopened(storage)
    try:
        assert (await again.get_game("g1")).started == "2024-01-01T00:00:00.000Z"  # type: ignore[union-attr]
    finally:
        await again.close()
    await storage.open()  # for the fixture to close
