"""Storage faults for real, on a running ``mandala serve`` with four bots on the ladder: SQLite on
a disk that fills up, SQLite on a disk the kernel makes read-only, and PostgreSQL stopped and
started again with its data kept; each also with ``kill -9`` during the outage and a restart.

Each run checks what the server promises (docs/operating.md, "Storage faults"): every game a bot received
``game_over`` for is stored with that result once storage is back; the ratings equal a replay of
the stored rated games; ``/health`` said ``degraded`` during the fault; no game started during
it; the spool is empty afterwards; each distinct failure was logged once; and, without the kill,
the same process served throughout.

The disks are real: a tmpfs of 64 MiB and an ext4 image on a loop device, mounted by the test
(root only; otherwise the full disk is a file-size limit set on the server with ``prlimit``, and
the read-only disk is skipped, saying so).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import msgspec
import pytest

from arena_testkit import (
    ADMIN,
    Harness,
    LiveStream,
    Seen,
    ServeProcess,
    assert_ratings_replay,
    elo_replay,
    free_port,
    gather,
    ladder_bot,
    play_out,
    random_policy,
    stored_games,
    wait_until,
)
from protocol.messages import CLOSE_TRY_AGAIN_LATER, PROTOCOL_VERSION, Error, LadderStatus, LiveHealth, Welcome
from server.common.clock import utc_now
from server.config import Settings
from server.recording.recorder import GameRecorder
from server.recording.spool import Spool
from server.storage import GameRow, Storage, open_storage
from server.storage.postgres import SERVE_LOCK
from server.storage.sqlite import SqliteStorage

BOTS = ["ann", "ben", "cat", "dan"]
THINK = [0.0, 0.0, 0.004, 0.008]
"""Seconds each bot takes per move: two instant bots and two slower ones, so games of several
lengths are under way when storage fails."""
ROOT = os.geteuid() == 0
PG_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "test-postgres.sh"


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def mount(*args: str) -> None:
    done = run("mount", *args)
    if done.returncode != 0:
        pytest.skip(f"cannot mount ({' '.join(args)}): {done.stderr.strip()}")


# ---------------------------------------------------------------------- the faults


class Fault:
    """A storage fault: where the database lives, how to break it and how to mend it."""

    db: str
    pid: int | None = None

    def started(self, pid: int) -> None:
        """A server process started on this storage (again, after a kill)."""
        self.pid = pid

    def inject(self) -> None: ...

    def clear(self) -> None: ...

    def close(self) -> None: ...

    async def held(self) -> bool:
        """Whether the server holds its database again (a PostgreSQL one by its lock)."""
        return True


class FullDisk(Fault):
    """The database on a small tmpfs, filled up by a filler file; freed by deleting it. Not
    root: a file-size limit on the server process instead (``prlimit``)."""

    def __init__(self, tmp: Path) -> None:
        self.dir = tmp / "disk"
        self.dir.mkdir()
        self.tmpfs = ROOT and run("mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(self.dir)).returncode == 0
        self.db = str(self.dir / "arena.db")
        self.filler = self.dir / "filler"
        self.full = False

    def started(self, pid: int) -> None:
        super().started(pid)
        if self.full and not self.tmpfs:
            self._limit(pid)

    def inject(self) -> None:
        self.full = True
        if not self.tmpfs:
            assert self.pid is not None
            self._limit(self.pid)
            return
        chunk = b"\0" * 65536
        with self.filler.open("wb", buffering=0) as f:  # unbuffered: closing it writes nothing more
            try:
                while f.write(chunk):
                    pass
            except OSError as e:
                assert e.errno == errno.ENOSPC, e

    def _limit(self, pid: int) -> None:
        size = max((p.stat().st_size for p in self.dir.iterdir()), default=0)
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (size, size))

    def clear(self) -> None:
        self.full = False
        if self.tmpfs:
            self.filler.unlink()
        elif self.pid is not None:
            resource.prlimit(self.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))

    def close(self) -> None:
        if self.tmpfs:
            run("umount", "-l", str(self.dir))


class ReadOnlyDisk(Fault):
    """The database on an ext4 image mounted with ``errors=remount-ro``; the fault is an ext4
    error (``trigger_fs_error``), after which the kernel lets nothing more be written there, as
    with a failing disk. Mended as an operator would: unmount, check, mount again."""

    def __init__(self, tmp: Path) -> None:
        if not ROOT:
            pytest.skip("the read-only disk needs root (to mount an ext4 image on a loop device)")
        if not shutil.which("mkfs.ext4"):
            pytest.skip("mkfs.ext4 is not installed")
        self.image = tmp / "disk.img"
        self.dir = tmp / "disk"
        self.dir.mkdir()
        with self.image.open("wb") as f:
            f.truncate(64 << 20)
        done = run("mkfs.ext4", "-q", str(self.image))
        assert done.returncode == 0, done.stderr
        mount("-o", "loop,errors=remount-ro", str(self.image), str(self.dir))
        self.db = str(self.dir / "arena.db")

    def inject(self) -> None:
        device = Path(run("findmnt", "-no", "SOURCE", str(self.dir)).stdout.strip()).name
        trigger = Path(f"/sys/fs/ext4/{device}/trigger_fs_error")
        if not trigger.exists():
            pytest.skip(f"{trigger} is missing: this kernel cannot fail an ext4 file system on demand")
        trigger.write_text("storage fault test\n")
        options = run("findmnt", "-no", "OPTIONS", str(self.dir)).stdout.strip().split(",")
        assert "ro" in options or "emergency_ro" in options, options

    def clear(self) -> None:
        assert run("umount", "-l", str(self.dir)).returncode == 0
        # The file system lives on, read-only, while the server holds the database open on it
        # (it closes it after its next failed write): check the image only once it is gone, or
        # what it still writes would spoil the check and the new mount would fail again.
        deadline = time.monotonic() + 30
        while run("losetup", "-j", str(self.image)).stdout.strip() and time.monotonic() < deadline:
            time.sleep(0.05)
        fsck = run("e2fsck", "-fy", str(self.image))
        assert fsck.returncode in (0, 1), fsck.stdout + fsck.stderr
        mount("-o", "loop,errors=remount-ro", str(self.image), str(self.dir))

    def close(self) -> None:
        run("umount", "-l", str(self.dir))


class PostgresDown(Fault):
    """A PostgreSQL server of the test's own, stopped (``pg_ctl stop -m fast``, its data
    kept) and started again."""

    def __init__(self, tmp: Path) -> None:
        port = free_port()
        # Under /tmp itself: the server runs as the postgres user, which cannot enter pytest's tmp_path.
        self.env = {**os.environ, "MANDALA_PG_DIR": f"/tmp/mandala-fault-pg-{port}", "MANDALA_PG_PORT": str(port)}
        done = subprocess.run([str(PG_SCRIPT), "start"], capture_output=True, text=True, env=self.env, check=False)
        if done.returncode != 0 or not done.stdout.strip():
            if os.environ.get("CI"):
                pytest.fail(f"PostgreSQL did not start: {done.stderr}")
            pytest.skip(f"POSTGRESQL LEG DID NOT RUN: PostgreSQL did not start: {done.stderr.strip()[-300:]}")
        self.db = done.stdout.strip()

    def _script(self, command: str) -> None:
        done = subprocess.run([str(PG_SCRIPT), command], capture_output=True, text=True, env=self.env, check=False)
        assert done.returncode == 0, done.stderr

    def inject(self) -> None:
        self._script("halt")

    def clear(self) -> None:
        self._script("start")

    def close(self) -> None:
        self._script("stop")

    async def held(self) -> bool:
        """The server took its lock again once PostgreSQL was back (``claim_database``): one
        backend, of a connection from a running server, holds it."""
        conn = await asyncpg.connect(self.db)
        try:
            return await conn.fetchval("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                                       " AND classid = $1 AND objsubid = 2", SERVE_LOCK) == 1
        finally:
            await conn.close()


# ---------------------------------------------------------------------- one run


async def outage(tmp_path: Path, fault: Fault, kill_during: bool) -> None:
    port, log, spool = free_port(), tmp_path / "server.log", tmp_path / "spool" / "arena.spool"
    spool.parent.mkdir()  # the spool's own folder (its own disk), made by the operator: the server refuses a missing one
    config = tmp_path / "arena.toml"
    config.write_text(
        "pairing_interval_s = 0.05\nmessages_per_second = 10000.0\nburst = 10000\n"
        "storage_retry_max_s = 0.25\nstorage_probe_s = 0.2\nstorage_timeout_s = 5.0\n"
    )
    seen = Seen()

    def serve() -> ServeProcess:
        server = ServeProcess(fault.db, port, config, log, "--spool", str(spool))
        fault.started(server.proc.pid)
        return server

    async with aiohttp.ClientSession() as http:
        server = serve()
        bots: list[asyncio.Task[None]] = []
        try:
            await server.ready(http)
            tokens = await server.create_bots(http, BOTS)
            bots = [asyncio.create_task(ladder_bot(http, server.url, tokens[n], i, seen, reconnect=True,
                                                   think=THINK[i]))
                    for i, n in enumerate(BOTS)]
            await wait_until(lambda: server.rated_games(http), 60, "no rated game was played")
            await wait_until(lambda: _rated_at_least(server, http, 12), 60, "the ladder did not get busy")

            fault.inject()
            degraded = await wait_until(lambda: _degraded(server, http), 30, "/health never said degraded")
            assert degraded["storage"] and degraded["since"]
            told = len(seen.over)  # from here on a finished game cannot be stored
            # Games running when storage failed finish meanwhile: their bots are told (spooled).
            await wait_until(lambda: len(seen.over) > told, 30, "no game finished during the outage")
            during = await server.health(http)
            assert during is not None and during[0] == 503 and during[1]["pending"] >= 1, during

            if kill_during:
                server.kill(signal.SIGKILL)
                server = serve()
                # The restart waits for storage before it serves: it says so in its log.
                await wait_until(lambda: "storage failed at start" in log.read_text()
                                 or "storage failed storing the spooled games" in log.read_text(),
                                 30, "the restarted server did not wait for storage")
            mended = utc_now()
            fault.clear()
            pid = server.proc.pid
            await server.ready(http, timeout=60)
            rated_then = await server.rated_games(http)
            await wait_until(lambda: _rated_at_least(server, http, rated_then + 6), 60,
                             "the ladder did not resume by itself")
            assert server.proc.pid == pid and server.proc.poll() is None  # no restart was needed
            await wait_until(fault.held, 30, "the server did not hold its database again")
        finally:
            for task in bots:
                task.cancel()
            await asyncio.gather(*bots, return_exceptions=True)
            if server.proc.poll() is None:
                server.kill(signal.SIGTERM)

    text = log.read_text()
    assert "storage is failing" in text and "storage is back" in text
    # Each distinct failure is logged once with its traceback; the rest are counted.
    assert text.count("Traceback") <= 12, text[-5000:]
    assert spool.exists() and spool.stat().st_size == 0
    await check_stored(fault.db, seen, str(degraded["since"]), mended)


async def _rated_at_least(server: ServeProcess, http: aiohttp.ClientSession, n: int) -> bool:
    return await server.rated_games(http) >= n


async def _degraded(server: ServeProcess, http: aiohttp.ClientSession) -> dict[str, Any] | None:
    got = await server.health(http)
    if got is None or got[0] != 503:
        return None
    assert got[1]["status"] == "degraded"
    return got[1]


async def check_stored(db: str, seen: Seen, since: str, mended: str) -> None:
    store: Storage = open_storage(db)
    await store.open()
    try:
        rows = await stored_games(store)
        # Every game a bot was told had finished is stored, finished, with what it was told.
        assert len(seen.over) >= 14
        for game_id, over in seen.over.items():
            row = rows[game_id]
            if over.result.end_reason == "aborted":
                continue
            assert row.status == "finished", row
            assert row.result == msgspec.to_builtins(over.result)
            full = await store.get_game(game_id)  # lists carry no record
            assert full is not None and full.record is not None
            # A pair's first game held its record for the return game (held whenever storage
            # could not be asked); it is stored all the same.
            assert full.record == msgspec.to_builtins(over.record) if over.record_held is None else over.record.deck == []
        # No game started while the server knew storage was failing.
        during = [g.game_id for g in rows.values() if since < g.started < mended]
        assert not during, f"games started during the outage: {during}"
        assert not [g for g in rows.values() if g.status == "running"]
        # Ratings equal a replay of the stored rated games, in the order they finished.
        await assert_ratings_replay(store, BOTS)
    finally:
        await store.close()


# ---------------------------------------------------------------------- the runs


@pytest.mark.parametrize("kill_during", [False, True], ids=["served-through", "kill-9-during"])
async def test_sqlite_on_a_full_disk(tmp_path: Path, kill_during: bool) -> None:
    fault = FullDisk(tmp_path)
    try:
        await outage(tmp_path, fault, kill_during)
    finally:
        fault.close()


async def test_sqlite_on_a_disk_made_read_only(tmp_path: Path) -> None:
    fault = ReadOnlyDisk(tmp_path)
    try:
        await outage(tmp_path, fault, kill_during=False)
    finally:
        fault.close()


@pytest.mark.parametrize("kill_during", [False, True], ids=["served-through", "kill-9-during"])
async def test_postgres_stopped_and_started_again(tmp_path: Path, kill_during: bool) -> None:
    fault = PostgresDown(tmp_path)
    try:
        await outage(tmp_path, fault, kill_during)
    finally:
        fault.close()



# ---------------------------------------------------------------------- what everyone is told


async def test_what_bots_organizers_and_viewers_are_told_during_an_outage(make_arena: Any) -> None:
    """Writes fail inside the real SQLite storage (between a game's row and its ratings, the
    worst place) until the test mends it: a rated game ends and is announced from the spool,
    stays rated, and is stored with its Elo update once storage is back."""
    arena: Harness = await make_arena(storage_retry_max_s=0.2, storage_probe_s=0.2)
    store = arena.arena.storage
    broken = True

    def fail() -> None:
        if broken:
            raise sqlite3.OperationalError("disk I/O error")

    store._between_game_and_ratings = fail  # type: ignore[attr-defined]
    live = LiveStream(await arena.client.ws_connect("/live"))

    async def live_health() -> LiveHealth:
        return await live.next_of(LiveHealth)

    assert await live_health() == LiveHealth("ok", None, 0)
    alice, bob = await arena.bot("alice"), await arena.bot("bob")
    game_id = await arena.start_game(["alice", "bob"], rated=True)
    (over,), _ = await gather(play_out(alice, random_policy(1)), play_out(bob, random_policy(2)))

    # Told it finished: the game is in the spool, and the server says it is degraded.
    health = await live_health()
    assert health.status == "degraded" and "disk I/O error" in (health.storage or "")
    resp = await arena.client.get("/health")
    body = await resp.json()
    assert resp.status == 503 and resp.headers["Retry-After"] == "1"
    assert (body["status"], body["pending"], body["spooled"]) == ("degraded", 1, 1)
    spool = Path(body["spool"])
    lines = spool.read_bytes().splitlines()
    assert len(lines) == 2 and msgspec.json.decode(lines[1])["game_id"] == game_id

    # No new game starts: the organizer, a challenge, the ladder.
    resp = await arena.client.post("/api/games", json={"players": ["alice", "bob"]},
                                   headers={"Authorization": f"Bearer {ADMIN}"})
    assert resp.status == 503
    error = (await resp.json())["error"]
    assert error["code"] == "storage_unavailable" and error["retry_after"] >= 1.0
    await alice.send({"type": "challenge", "opponent": "bob"})
    refused = await alice.error()
    assert refused.code == "storage_unavailable" and refused.retry_after is not None
    await bob.send({"type": "seek"})
    assert (await bob.expect(LadderStatus)).seeking
    assert (await bob.error()).code == "storage_unavailable"  # the seek stands; no game starts
    assert not arena.arena.manager.running

    # Mended: the spooled game is stored, still rated, with its Elo update; the spool empties.
    broken = False
    assert await live_health() == LiveHealth("ok", None, 0)
    assert (await arena.client.get("/health")).status == 200
    row = await store.get_game(game_id)
    assert row is not None and row.status == "finished" and row.rated
    assert row.result == msgspec.to_builtins(over.result)
    score = {0: 1.0, 1: 0.0, None: 0.5}[over.result.winner]
    assert await store.rated_results() == [("alice", "bob", score)]
    want = elo_replay(["alice", "bob"], [("alice", "bob", score)])
    got = {s.bot: (s.rating, s.rated_games) for s in await store.standings()}
    assert got["alice"] == pytest.approx(want["alice"]) and got["bob"] == pytest.approx(want["bob"])
    assert spool.stat().st_size == 0
    assert await arena.start_game(["alice", "bob"])  # games start again
    await live.close()


async def test_after_a_disk_fault_sqlite_reconnects_but_never_creates_an_empty_database(tmp_path: Path) -> None:
    """While a disk is unmounted its mount point is a bare directory: reconnecting there must
    fail (storage stays failing) rather than start an empty database the server would then use."""
    disk = tmp_path / "disk"
    disk.mkdir()
    store = SqliteStorage(str(disk / "arena.db"))
    await store.open()
    try:
        await store.create_bot("ann", "hash-ann", utc_now())

        def fail() -> None:
            raise sqlite3.OperationalError("disk I/O error")

        store._between_game_and_ratings = fail  # type: ignore[method-assign]
        with pytest.raises(sqlite3.OperationalError):
            await store.finish_game(game_row("g1"), [])
        disk.rename(tmp_path / "away")  # unmounted: the mount point is empty
        disk.mkdir()
        with pytest.raises(sqlite3.OperationalError, match="unable to open"):
            await store.list_bots()
        assert list(disk.iterdir()) == []
        disk.rmdir()
        (tmp_path / "away").rename(disk)  # mounted again
        del store._between_game_and_ratings
        assert [b.name for b in await store.list_bots()] == ["ann"]
        await store.finish_game(game_row("g1"), [])
        assert (await store.get_game("g1")) is not None
    finally:
        await store.close()


class GatedSpool(Spool):
    """A spool whose emptying, in its worker thread, waits for the test to open ``gate``; and
    whose appending of a game in ``late`` waits until its condition holds: the orders a busy
    machine may bring, made certain."""

    def __init__(self, path: Path, db: str) -> None:
        super().__init__(path, db)
        self.emptying = threading.Event()
        self.gate = threading.Event()
        self.late: dict[str, Callable[[], bool]] = {}

    def clear(self) -> None:
        if self.path.exists() and self.path.stat().st_size:
            self.emptying.set()
            assert self.gate.wait(10), "the test never opened the gate"
        super().clear()

    def append(self, rows: list[GameRow]) -> None:
        for row in rows:
            if row.game_id in self.late:
                deadline = time.monotonic() + 10
                while not self.late[row.game_id]():
                    assert time.monotonic() < deadline, f"appending {row.game_id}: its condition never held"
                    time.sleep(0.005)
        super().append(rows)


@contextlib.asynccontextmanager
async def g1_spooled(tmp_path: Path) -> AsyncIterator[tuple[SqliteStorage, GatedSpool, GameRecorder]]:
    """A recorder whose database fails, with g1, finished meanwhile, in its spool: storage still
    fails until the test lets it come back (``del store._between_game_and_ratings``)."""
    db = str(tmp_path / "arena.db")
    store = SqliteStorage(db)
    spool = GatedSpool(tmp_path / "arena.spool", db)
    recorder = GameRecorder(Settings(storage_retry_max_s=0.1), store, spool)
    await recorder.open()
    try:
        def fail() -> None:
            raise sqlite3.OperationalError("disk I/O error")

        store._between_game_and_ratings = fail  # type: ignore[method-assign]
        recorder.finish(game_row("g1"))
        await wait_until(lambda: [r.game_id for r in spool.load()] == ["g1"], 10, "g1 was not spooled")
        assert recorder.failing is not None
        yield store, spool, recorder
    finally:
        spool.gate.set()
        await recorder.close(5.0)
        await store.close()


async def test_a_game_finished_while_the_spool_is_emptied_does_not_stay_in_it(tmp_path: Path) -> None:
    """Storage is back and the recorder empties the spool; a game that finishes meanwhile is
    spooled (storage still counts as failing until the spool is empty), and the database
    stores it, and the recorder finds nothing left to write, before the spool has it. The spool
    is emptied again: a game left in it would be stored anew at every start."""
    async with g1_spooled(tmp_path) as (store, spool, recorder):
        del store._between_game_and_ratings
        await wait_until(spool.emptying.is_set, 10, "the recorder never emptied the spool")
        assert recorder.failing is not None and recorder.pending == 0
        spool.late["g2"] = recorder._drained.is_set  # the queue is empty: g2 is stored
        recorder.finish(game_row("g2"))
        spool.gate.set()
        await recorder.flush()
        await asyncio.gather(*recorder._spooling)  # g2's spooling is over: appended, or found stored
        await wait_until(lambda: recorder.failing is None and spool.load() == [], 5, "g2 stayed in the spool")
        assert [g.game_id for g in await store.list_games("finished", 10, None, None)] == ["g2", "g1"]


async def test_a_game_the_database_stores_while_it_is_being_spooled_is_announced_once(tmp_path: Path) -> None:
    """Storage fails, so a game that finishes is spooled; storage comes back and the database
    stores the game before the spool has it. Both then say the game is recorded: its
    ``game_over`` (the write's ``durable``) must go out once, or the ladder counts its end twice."""
    announced: list[str] = []
    async with g1_spooled(tmp_path) as (store, spool, recorder):
        spool.late["g2"] = recorder._drained.is_set  # its append waits until the database has it
        del store._between_game_and_ratings  # storage is back, and then g2 finishes
        recorder.finish(game_row("g2"), durable=lambda: announced.append("g2"))
        spool.gate.set()
        await recorder.flush()
        await asyncio.gather(*recorder._spooling)
        await wait_until(lambda: recorder.failing is None and spool.load() == [], 5, "the spool was not emptied")
        assert announced == ["g2"]
        assert [g.game_id for g in await store.list_games("finished", 10, None, None)] == ["g2", "g1"]


def game_row(game_id: str) -> GameRow:
    return GameRow(game_id=game_id, players=["ann", "ann2"], status="finished", rated=False, first_player=0,
                   ply=3, started=utc_now(), ended=utc_now(), end_reason="river",
                   result={"winner": 0, "end_reason": "river", "scores": [1, 0], "cup_sizes": [1, 0]},
                   record={"moves": []})


async def test_a_storage_call_that_never_returns_does_not_keep_the_server_from_stopping(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A driver's call cut short may never return, even when cancelled (a node once hung for an
    hour in its stop after PostgreSQL came back). The recorder's close spools what it could not
    store and gives up on its task after ``STOP_WAIT_S``, so the server stops."""
    from server.recording import recorder as recording

    monkeypatch.setattr(recording, "STOP_WAIT_S", 0.2)
    db = str(tmp_path / "arena.db")
    store = SqliteStorage(db)
    spool = Spool(tmp_path / "arena.spool", db)
    recorder = GameRecorder(Settings(storage_timeout_s=30.0), store, spool)
    await recorder.open()
    stuck = asyncio.Event()
    released = asyncio.Event()

    async def write_games(writes: Any) -> frozenset[str]:
        stuck.set()
        while not released.is_set():  # deaf to cancellation, as a call whose reply never comes
            with contextlib.suppress(asyncio.CancelledError):
                await released.wait()
        return frozenset()

    monkeypatch.setattr(store, "write_games", write_games)
    recorder.finish(game_row("g1"))
    await asyncio.wait_for(stuck.wait(), 5)
    with caplog.at_level(logging.ERROR, logger="server.recording.recorder"):
        await asyncio.wait_for(recorder.close(0.1), 5)  # returned: the server goes on stopping
    assert [r.game_id for r in spool.load()] == ["g1"]  # stored at the next start
    assert "did not stop within 0.2 s of being told to" in caplog.text
    released.set()
    await store.close()


async def test_a_hello_while_the_bots_cannot_be_read_is_told_to_come_back(make_arena: Any) -> None:
    """A database that cannot be read (PostgreSQL down) fails the token's lookup: the hello
    gets ``storage_unavailable`` with ``retry_after`` and close 1013 at once, so the bot comes
    back as soon as storage is, where it used to get ``internal_error`` and wait out the
    hello's 10 s (and lose its running games' decisions meanwhile)."""
    arena: Harness = await make_arena(storage_retry_max_s=0.2, storage_probe_s=0.2)
    token = await arena.create_bot("alice")
    store = arena.arena.storage
    lookup = store.bot_by_token_hash

    async def down(token_hash: str) -> Any:
        raise sqlite3.OperationalError("unable to open database file")

    store.bot_by_token_hash = down  # type: ignore[method-assign]
    c = await arena.ws()
    await c.send({"type": "hello", "protocol": PROTOCOL_VERSION, "token": token})
    refused = await c.expect(Error)
    assert refused.code == "storage_unavailable" and refused.retry_after is not None and refused.retry_after >= 1.0
    assert await c.closed() == CLOSE_TRY_AGAIN_LATER
    store.bot_by_token_hash = lookup  # type: ignore[method-assign]
    back = await arena.ws()
    await back.send({"type": "hello", "protocol": PROTOCOL_VERSION, "token": token})
    assert (await back.expect(Welcome)).bot == "alice"
