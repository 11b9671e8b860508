"""The bulk export (``GET /api/games/export``) on a large database: games per second and the
server's memory while it streams, and (``--verify N``) the first N exported records replayed
in the independent reference implementation of RULES.md (``tests/engine/reference.py``).

    python bench/export.py [--games 100000] [--db /tmp/export-bench.db] [--verify 10000]

The database is filled once (kept for the next run, refilled if it holds another number of
games) with real games: random legal moves played by the engine on distinct deals, stored
through the server's storage as finished games between 10 bots. Then ``mandala serve`` runs on
it, pinned to core 0, and the export is read whole, plain and gzip, from this process (core 1);
the server's resident memory (VmRSS) is sampled every 50 ms. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp

import mandala
from mandala import Game
from server.storage import GameRow
from server.storage.base import GameWrite
from server.storage.sqlite import SqliteStorage

ROOT = Path(__file__).resolve().parents[1]
BOTS = [f"bot{i}" for i in range(10)]
BATCH = 1000


def random_game(i: int) -> GameRow:
    """Game ``i``: random legal moves on its own deal, as the server stores a finished game."""
    rand = random.Random(i).random
    game = Game.new(seed=f"export:{i}", first_player=i % 2)  # type: ignore[arg-type]
    while game.to_move is not None:
        codes = game.legal_codes()
        game.push_code(codes[int(rand() * len(codes))])
    res = mandala.result(game)
    assert res is not None
    a, b = BOTS[i % len(BOTS)], BOTS[(i * 7 + 1) % len(BOTS)]
    if a == b:
        b = BOTS[(i + 1) % len(BOTS)]
    started = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=i)
    iso = started.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return GameRow(
        game_id=f"g{i:07d}", players=[a, b], status="finished", rated=False, first_player=i % 2, ply=len(game.history),
        started=iso, ended=iso, kind="ladder" if i % 3 else "challenge", end_reason=res.end_reason,
        result={"winner": res.winner, "end_reason": res.end_reason, "scores": list(res.scores),
                "cup_sizes": list(res.cup_sizes)},
        record=mandala.record_dict(game),
    )


def stored_games(db: Path) -> int:
    if not db.exists():
        return -1
    try:
        with sqlite3.connect(db) as conn:
            return int(conn.execute("SELECT COUNT(*) FROM games").fetchone()[0])
    except sqlite3.Error:
        return -1


async def fill(db: Path, games: int) -> float:
    """Store ``games`` random games in a new database at ``db``; seconds it took."""
    for path in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        path.unlink(missing_ok=True)
    start = time.perf_counter()
    store = SqliteStorage(str(db))
    await store.open()
    try:
        for name in BOTS:
            await store.create_bot(name, f"hash-{name}", "2026-01-01T00:00:00.000Z")
        for first in range(0, games, BATCH):
            rows = [random_game(i) for i in range(first, min(games, first + BATCH))]
            await store.write_games([GameWrite(row, final=True) for row in rows])
            print(f"\rfilling {db}: {first + len(rows)}/{games} games", end="", file=sys.stderr)
        print(file=sys.stderr)
    finally:
        await store.close()
    return time.perf_counter() - start


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def export(url: str, pid: int, query: str, keep: int) -> dict[str, object]:
    """Read one export whole; its figures and the first ``keep`` lines."""
    peak = rss_kb(pid)
    before = peak
    done = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, rss_kb(pid))
            await asyncio.sleep(0.05)

    sampler = asyncio.create_task(sample())
    lines = 0
    size = 0
    kept: list[bytes] = []
    tail = b""
    gz = "compress=gzip" in query
    unpack = zlib.decompressobj(16 + zlib.MAX_WBITS)
    start = time.perf_counter()
    timeout = aiohttp.ClientTimeout(total=None, sock_read=60)
    async with aiohttp.ClientSession(timeout=timeout, auto_decompress=False) as http, \
            http.get(f"{url}/api/games/export?{query}", headers={"Accept-Encoding": "identity"}) as resp:
        assert resp.status == 200, await resp.text()
        async for chunk in resp.content.iter_chunked(1 << 16):
            size += len(chunk)
            data = unpack.decompress(chunk) if gz else chunk
            lines += data.count(b"\n")
            if len(kept) < keep:
                parts = (tail + data).split(b"\n")
                tail = parts.pop()
                kept += parts[: keep - len(kept)]
    seconds = time.perf_counter() - start
    done.set()
    await sampler
    return {"games": lines, "seconds": round(seconds, 2), "games_per_s": round(lines / seconds),
            "mb": round(size / 1e6, 1), "server_rss_mb_before": round(before / 1024, 1),
            "server_rss_mb_peak": round(peak / 1024, 1), "kept": kept}


def verify(lines: list[bytes]) -> dict[str, object]:
    """Replay each exported record in the reference; a game the rules ended must end there
    with the exported result."""
    sys.path.insert(0, str(ROOT / "tests" / "engine"))
    from reference import replay_record

    start = time.perf_counter()
    for line in lines:
        game = json.loads(line)
        ref = replay_record(game["record"]).summary()
        result = game["result"]
        got = (ref["end_reason"], ref["winner"], ref["scores"], ref["cup_sizes"])
        want = (result["end_reason"], result["winner"], result["scores"], result["cup_sizes"])
        if got != want:
            raise SystemExit(f"game {game['game_id']}: the reference ends it {got}, the export says {want}")
    return {"replayed": len(lines), "identical": True, "seconds": round(time.perf_counter() - start, 1)}


async def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--games", type=int, default=100_000)
    p.add_argument("--db", type=Path, default=Path(tempfile.gettempdir()) / "mandala-export-bench.db")
    p.add_argument("--verify", type=int, default=0, metavar="N", help="replay the first N records in the reference")
    p.add_argument("--port", type=int, default=8107)
    args = p.parse_args()
    filled = None
    if stored_games(args.db) != args.games:
        filled = round(await fill(args.db, args.games), 1)
    db_mb = round(args.db.stat().st_size / 1e6, 1)
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "arena.toml"
        config.write_text('admin_token = "bench-admin"\n')
        server = subprocess.Popen(
            ["taskset", "-c", "0", sys.executable, "-m", "mandala_cli.main", "serve", "--db", str(args.db),
             "--port", str(args.port), "--config", str(config)],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=open(Path(tmp) / "serve.log", "w"))  # noqa: SIM115
        try:
            os.sched_setaffinity(0, {1})
            url = f"http://127.0.0.1:{args.port}"
            async with aiohttp.ClientSession() as http:
                for _ in range(300):
                    try:
                        async with http.get(f"{url}/health") as resp:
                            if resp.status == 200:
                                break
                    except aiohttp.ClientError:
                        pass
                    await asyncio.sleep(0.1)
            plain = await export(url, server.pid, "", args.verify)
            gz = await export(url, server.pid, "compress=gzip", 0)
        finally:
            server.terminate()
            server.wait(30)
    kept = plain.pop("kept")
    gz.pop("kept")
    out: dict[str, object] = {"games": args.games, "db_mb": db_mb, "filled_s": filled, "plain": plain, "gzip": gz}
    if args.verify:
        out["verify"] = verify(kept)  # type: ignore[arg-type]
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
