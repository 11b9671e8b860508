"""Bulk export: ``GET /api/games/export`` streams every game that is over, with its R23 record,
as JSON Lines in start order, a page at a time; ``mandala export`` saves it with a progress
bar. Every exported record replays in the independent reference implementation of RULES.md
to the result the server announced; running games are never exported; bad filters get typed
errors."""

from __future__ import annotations

import asyncio
import gzip
import json
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import server.http.export
from arena_testkit import BIN, Harness, exit_of, gather, play_out, random_policy
from server.common.clock import utc_now
from test_server_http import api_error

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "engine"))
from reference import replay_record

RULES_END = {"river", "deck", "no_moves", "turn_limit"}


def lines(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in body.splitlines()]


def assert_replays(game: dict[str, Any]) -> None:
    """The record replays move by move in the reference; a game the rules ended ends there
    the same way, with the same scores and winner."""
    ref = replay_record(game["record"])
    result = game["result"]
    if result["end_reason"] in RULES_END:
        summary = ref.summary()
        assert (summary["end_reason"], summary["winner"], summary["scores"], summary["cup_sizes"]) == (
            result["end_reason"], result["winner"], result["scores"], result["cup_sizes"])


async def played(arena: Harness, pairs: list[tuple[str, str]], seed: int) -> list[str]:
    """Play one game per pair, one after the other; their ids in start order."""
    clients = {name: await arena.bot(name) for name in sorted({n for p in pairs for n in p})}
    ids = []
    for i, (a, b) in enumerate(pairs):
        ids.append(await arena.start_game([a, b], reshuffle_seed=seed + i))
        await gather(play_out(clients[a], random_policy(seed + 2 * i)), play_out(clients[b], random_policy(seed + 2 * i + 1)))
    return ids


async def test_export_streams_every_game_over_with_its_record_in_start_order(
        make_arena: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server.http.export, "EXPORT_PAGE", 2)  # several pages for a handful of games
    arena: Harness = await make_arena()
    ids = await played(arena, [("ann", "ben"), ("ben", "cat"), ("cat", "ann"), ("ann", "ben"), ("ben", "ann")], 70)
    running = await arena.start_game(["cat", "ben"])  # never exported while it runs

    resp = await arena.client.get("/api/games/export")
    assert resp.status == 200 and resp.content_type == "application/x-ndjson"
    games = lines(await resp.read())
    assert int(resp.headers["X-Game-Count"]) == len(games) == len(ids)
    assert [g["game_id"] for g in games] == ids and running not in ids
    for g in games:
        assert set(g) == {"game_id", "kind", "rated", "status", "players", "started", "ended", "end_reason",
                          "result", "pair_id", "tournament_id", "record", "record_held"}
        assert g["record"] == await arena.get_json(f"/api/games/{g['game_id']}/record")
        assert g["record_held"] is None
        assert (g["kind"], g["status"], g["rated"]) == ("admin", "finished", False)
        assert_replays(g)

    async def ids_of(query: str) -> list[str]:
        resp = await arena.client.get(f"/api/games/export?{query}")
        assert resp.status == 200, await resp.text()
        got = [g["game_id"] for g in lines(await resp.read())]
        assert int(resp.headers["X-Game-Count"]) == len(got)
        return got

    assert await ids_of("bot=CAT") == [ids[1], ids[2]]  # names compare case-insensitively
    assert await ids_of("kind=admin&status=finished") == ids
    assert await ids_of("kind=ladder") == [] and await ids_of("status=aborted") == []
    middle = games[2]["started"]
    assert await ids_of(f"since={middle}") == ids[2:]
    assert await ids_of(f"until={middle}") == ids[:2]
    assert await ids_of(f"bot=ann&since={middle}&until={games[4]['started']}") == [ids[2], ids[3]]
    day = middle[:10]
    assert await ids_of(f"since={day}") == ids and await ids_of(f"until={day}") == []
    # limit: the last N games of the filter, in the same order (across pages of 2).
    assert await ids_of("limit=3") == ids[2:]
    assert await ids_of("limit=1") == ids[4:]
    assert await ids_of("limit=5") == await ids_of("limit=500000") == ids
    assert await ids_of("bot=ann&limit=2") == [ids[3], ids[4]]
    assert await ids_of(f"until={games[4]['started']}&limit=3") == ids[1:4]
    resp = await arena.client.get("/api/games/export?limit=2")
    assert [g for g in lines(await resp.read())] == games[3:]  # the same lines as the whole export's

    # gzip: a .gz file when asked, or HTTP compression when the client accepts it.
    plain = await (await arena.client.get("/api/games/export")).read()
    resp = await arena.client.get("/api/games/export?compress=gzip", auto_decompress=False)
    assert resp.content_type == "application/gzip" and "games.jsonl.gz" in resp.headers["Content-Disposition"]
    assert gzip.decompress(await resp.read()) == plain
    resp = await arena.client.get("/api/games/export", headers={"Accept-Encoding": "gzip"})
    assert resp.headers["Content-Encoding"] == "gzip" and await resp.read() == plain


async def test_the_last_games_exported_are_those_over_when_asked_not_one_that_ends_meanwhile(
        make_arena: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``limit=2``: of three games over, the last two are G1 and G2; a game R started between
    them runs. R ends, and is stored, while the export looks for where its last two start: the
    export must still be G1 and G2, not G1 and R."""
    arena: Harness = await make_arena()
    ann, ben = await arena.bot("ann"), await arena.bot("ben")
    await arena.bot("cat")
    await arena.bot("dan")
    earlier = await played_by(arena, ann, ben, 78)
    first = await played_by(arena, ann, ben, 80)
    running = await arena.start_game(["cat", "dan"])  # they do not move: it runs on
    second = await played_by(arena, ann, ben, 82)
    manager, storage = arena.arena.manager, arena.arena.storage
    export_start = storage.export_start

    async def it_ends_meanwhile(*args: Any) -> Any:
        start = await export_start(*args)
        asked = utc_now()  # not before the export took its own time
        while utc_now() == asked:  # times count milliseconds: R ends in a later one
            await asyncio.sleep(0.001)
        manager.running[running].resign(0)
        await manager.flush()
        return start

    monkeypatch.setattr(storage, "export_start", it_ends_meanwhile)
    resp = await arena.client.get("/api/games/export?limit=2")
    assert resp.status == 200 and resp.headers["X-Game-Count"] == "2"
    assert [g["game_id"] for g in lines(await resp.read())] == [first, second]
    resp = await arena.client.get("/api/games/export")  # asked now: all three are over
    assert [g["game_id"] for g in lines(await resp.read())] == [earlier, first, running, second]


async def played_by(arena: Harness, a: Any, b: Any, seed: int) -> str:
    """A game of ann (``a``) and ben (``b``) played to its end; its id."""
    game_id = await arena.start_game(["ann", "ben"], reshuffle_seed=seed)
    overs = await gather(play_out(a, random_policy(seed)), play_out(b, random_policy(seed + 1)))
    assert overs[0][0].game_id == game_id
    return game_id


async def test_export_refuses_bad_filters_with_typed_errors(make_arena: Any) -> None:
    arena: Harness = await make_arena()
    await arena.create_bot("ann")
    for query, status, code in [
        ("bot=nobody", 404, "unknown_bot"),
        ("kind=friendly", 400, "unknown_kind"),
        ("status=running", 400, "bad_status"),
        ("status=won", 400, "bad_status"),
        ("since=yesterday", 400, "bad_date"),
        ("until=2026-13-01", 400, "bad_date"),
        ("since=2026-11-02&until=2026-11-01", 400, "bad_range"),
        ("compress=zip", 400, "unknown_compression"),
        ("player=ann", 400, "invalid_request"),
        ("limit=0", 400, "invalid_request"),
        ("limit=-3", 400, "invalid_request"),
        ("limit=three", 400, "invalid_request"),
        ("limit=2.5", 400, "invalid_request"),
        ("limit=1e3", 400, "invalid_request"),
    ]:
        await api_error(await arena.client.get(f"/api/games/export?{query}"), status, code)


async def mandala(*args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "mandala_cli.main", *args,
                                                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
    return await exit_of(proc)


async def test_mandala_export_writes_plain_or_gzip_files_whole(make_arena: Any, tmp_path: Path) -> None:
    arena: Harness = await make_arena()
    ids = await played(arena, [("ann", "ben"), ("ben", "cat"), ("cat", "ann")], 90)
    url = str(arena.client.make_url("/")).rstrip("/")
    plain = await (await arena.client.get("/api/games/export")).read()

    status, err = await mandala("export", "--server", url, "-o", str(tmp_path / "all.jsonl"))
    assert status == 0, err
    assert (tmp_path / "all.jsonl").read_bytes() == plain
    assert f"{len(ids)} games written to {tmp_path / 'all.jsonl'}" in err

    status, err = await mandala("export", "--server", url, "--bot", "ann", "--kind", "admin", "-o",
                                str(tmp_path / "ann.jsonl.gz"))
    assert status == 0, err
    assert [g["game_id"] for g in lines(gzip.decompress((tmp_path / "ann.jsonl.gz").read_bytes()))] == [ids[0], ids[2]]

    status, err = await mandala("export", "--url", url, "--limit", "2", "-o", str(tmp_path / "last.jsonl"))  # --server's alias
    assert status == 0, err
    assert [g["game_id"] for g in lines((tmp_path / "last.jsonl").read_bytes())] == ids[1:]
    assert f"2 games written to {tmp_path / 'last.jsonl'}" in err
    status, err = await mandala("export", "--server", url, "--limit", "0", "-o", str(tmp_path / "none.jsonl"))
    assert status == 2 and "--limit" in err

    status, err = await mandala("export", "--server", url, "--bot", "nobody", "-o", str(tmp_path / "none.jsonl"))
    assert status == 1 and "error: unknown_bot:" in err
    status, err = await mandala("export", "--server", url, "--since", "soon", "-o", str(tmp_path / "none.jsonl"))
    assert status == 1 and "error: bad_date:" in err
    assert not list(tmp_path.glob("none.jsonl*"))  # nothing half-written
    status, err = await mandala("export", "--server", "http://127.0.0.1:9", "-o", str(tmp_path / "none.jsonl"))
    assert status == 1 and "cannot reach the server" in err


async def test_mandala_replay_replays_every_game_of_an_export_plain_or_gzip(make_arena: Any, tmp_path: Path) -> None:
    """As the guides say: each record of an export replays with ``mandala replay``, to the
    result the server announced, each line named by its game."""
    arena: Harness = await make_arena()
    ids = await played(arena, [("ann", "ben"), ("ben", "cat")], 40)
    url = str(arena.client.make_url("/")).rstrip("/")
    exported = lines(await (await arena.client.get("/api/games/export")).read())
    for name in ("games.jsonl", "games.jsonl.gz"):
        status, err = await mandala("export", "--server", url, "-o", str(tmp_path / name))
        assert status == 0, err
        proc = await asyncio.create_subprocess_exec(str(BIN / "mandala"), "replay", str(tmp_path / name),
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err_bytes = await proc.communicate()
        assert proc.returncode == 0, err_bytes
        replayed = [json.loads(line) for line in out.splitlines()]
        assert [r["game_id"] for r in replayed] == ids
        assert [(r["end_reason"], r["winner"], r["scores"], r["cup_sizes"]) for r in replayed] == [
            (g["result"]["end_reason"], g["result"]["winner"], g["result"]["scores"], g["result"]["cup_sizes"])
            for g in exported]
    broken = exported[1] | {"record": exported[1]["record"] | {"first_player": 1 - exported[1]["record"]["first_player"]}}
    (tmp_path / "broken.jsonl").write_text(json.dumps(exported[0]) + "\n" + json.dumps(broken) + "\n")
    proc = await asyncio.create_subprocess_exec(str(BIN / "mandala"), "replay", str(tmp_path / "broken.jsonl"),
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err_bytes = await proc.communicate()
    assert proc.returncode == 2 and len(out.splitlines()) == 1  # the first game, then the broken one stops it
    assert err_bytes.decode().startswith(f"mandala replay: {tmp_path / 'broken.jsonl'}: game {ids[1]}: ply ")


async def test_a_game_written_while_exports_stream_waits_for_one_page_at_most(make_arena: Any, monkeypatch: Any) -> None:
    """SQLite's one worker thread stores the games and reads the exports' pages. Four exports
    at once each have their page read in turn, while a write that comes meanwhile is done
    after the page being read, not behind all of them: four dozen exports of long games had
    held a game's write past ``storage_timeout_s``, and the server took its storage for failing
    and started no game. Here each page read waits in the thread until the test lets it go."""
    arena: Harness = await make_arena()
    storage: Any = arena.arena.storage
    order: list[str] = []
    pages = threading.Semaphore(0)
    read_page, create_bot = storage._export_games, storage._create_bot

    def slow_page(*args: Any) -> Any:
        order.append("page")
        pages.acquire(timeout=5.0)  # bounded: a test that fails still ends
        return read_page(*args)

    def write(*args: Any) -> Any:
        order.append("write")
        return create_bot(*args)

    async def no_games(which: Any) -> int:
        return 0

    monkeypatch.setattr(storage, "_export_games", slow_page)
    monkeypatch.setattr(storage, "_create_bot", write)
    monkeypatch.setattr(storage, "count_games", no_games)  # counted off the thread: only pages queue there
    # Each answer's headers come once its handler waits for its first page (or its turn to read one).
    exports = [await arena.client.get("/api/games/export") for _ in range(4)]
    created = asyncio.create_task(storage.create_bot("newcomer", "0" * 64, utc_now(), 1500.0))
    await asyncio.sleep(0)  # the write is in the thread's queue
    for _ in exports:
        pages.release()
    await created
    assert [(await r.read(), r.status) for r in exports] == [(b"", 200)] * 4
    assert order == ["page", "write", "page", "page", "page"]


def test_a_file_on_a_read_only_disk_is_one_line_not_a_traceback(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """``-o FILE`` on a read-only disk: the partial file can neither be made nor removed, and
    both refusals used to end in a double traceback; it is the command's one line."""
    import errno

    from mandala_cli.http_client import Failure, save

    def read_only(*args: Any, **kwargs: Any) -> Any:
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(Path, "open", read_only)
    monkeypatch.setattr(Path, "unlink", read_only)
    with pytest.raises(Failure) as failed:
        save(str(tmp_path / "x.jsonl"), lambda out: out.write(b"{}\n"))
    assert str(failed.value) == f"error: cannot write {tmp_path / 'x.jsonl'}: Read-only file system"
