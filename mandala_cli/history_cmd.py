"""``mandala history synth``: a season's history in a database, for capacity tests.

Writes N finished, rated ladder games between K bots (``synth-000`` …) into an empty
database: every game dealt and played to its end by the engine (random legal moves), with its
real record (R23), its result, think times in its telemetry, and its Elo changes, totals and
rating history computed by the storage's own rated-game transaction, in batches — so the
ratings, the per-pair totals and the records are what a server would have stored for the same
games. The same seed gives the same games.

    mandala history synth --db season.db --games 100000 --bots 50 --seed 1
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from datetime import UTC, datetime, timedelta

import msgspec

import mandala
from mandala import Game
from server.config import Settings
from server.games.telemetry import Telemetry
from server.recording.recorder import rating_update
from server.storage import GameRow, Storage, open_storage
from server.storage.base import GameWrite

from .serve_cmd import claim_database, files_fault

BATCH = 500
"""Games stored per transaction."""
START = datetime(2026, 1, 1, tzinfo=UTC)
ID_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("history", help="tools for a ladder's stored history")
    inner = p.add_subparsers(dest="history_command", required=True, metavar="COMMAND")
    s = inner.add_parser("synth", help="write N real, rated ladder games between K bots into an empty database",
                         description=__doc__.split("\n\n")[1])
    s.add_argument("--db", required=True, help="a SQLite file or a postgresql:// URL")
    s.add_argument("--games", type=int, required=True, help="how many games (N)")
    s.add_argument("--bots", type=int, default=50, help="how many bots (K, at least 2; default 50)")
    s.add_argument("--seed", type=int, default=1, help="the same seed writes the same games (default 1)")
    s.add_argument("--force", action="store_true", help="add to a database that already holds bots or games")
    s.set_defaults(run=run)


def iso(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"


def synth_game(rng: random.Random, players: list[str], at: datetime) -> GameRow:
    """One ladder game played by the engine from a random deal, as the server stores it."""
    seed = rng.getrandbits(63)
    first = rng.randrange(2)
    game = Game.new(seed=seed, first_player=first)
    telemetry = Telemetry(5000)
    while game.to_move is not None:
        seat = game.to_move
        telemetry.moved(seat, len(game.history), rng.expovariate(1 / 0.04))  # bots thinking 40 ms on average
        game.push_code(rng.choice(game.legal_codes()))  # the legal moves by number: a third of the time
    result = mandala.result(game)
    assert result is not None
    ended = at + timedelta(seconds=2 + len(game.history) * 0.05)
    return GameRow(
        game_id="".join(rng.choice(ID_ALPHABET) for _ in range(8)),
        players=players, status="finished", rated=True, first_player=first, ply=len(game.history),
        started=iso(at), ended=iso(ended), kind="ladder", end_reason=result.end_reason,
        result={"winner": result.winner, "end_reason": result.end_reason, "scores": list(result.scores),
                "cup_sizes": list(result.cup_sizes)},
        record=msgspec.to_builtins(mandala.record_of(game)), telemetry=telemetry.to_json(),
        decision_ms=5000,
    )


async def synth(storage: Storage, games: int, bots: int, seed: int, *, force: bool = False,
                progress: bool = True) -> float:
    """Write the history; the seconds it took. Refuses a database with bots or games unless
    ``force``."""
    if not force and (await storage.list_bots() or await storage.list_games(None, 1)):
        raise SystemExit("mandala history synth: the database already holds bots or games (give --force to add)")
    began = time.perf_counter()
    names = [f"synth-{i:03d}" for i in range(bots)]
    for i, name in enumerate(names):
        await storage.create_bot(name, f"synth-token-hash-{seed}-{i}", iso(START))
        await storage.set_ladder(name, "listed")
    rng = random.Random(seed)
    elo = Settings().elo
    at = START

    def played(count: int) -> list[GameWrite]:
        """The next ``count`` games, played by the engine (while the batch before is stored)."""
        nonlocal at
        batch = []
        for _ in range(count):
            a, b = rng.sample(names, 2)
            at += timedelta(seconds=rng.uniform(0.1, 2.0))
            row = synth_game(rng, [a, b], at)
            batch.append(GameWrite(row, final=True, rate=rating_update(row, elo)))
        return batch

    loop = asyncio.get_running_loop()
    done = 0
    ahead = loop.run_in_executor(None, played, min(BATCH, games))
    while done < games:
        batch = await ahead
        done += len(batch)
        if done < games:
            ahead = loop.run_in_executor(None, played, min(BATCH, games - done))
        await storage.write_games(batch)
        if progress:
            rate = done / (time.perf_counter() - began)
            print(f"\r{done:,} / {games:,} games ({rate:,.0f}/s)", end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    return time.perf_counter() - began


def run(args: argparse.Namespace) -> int:
    if args.games < 0 or args.bots < 2:
        print("mandala history synth: --games is at least 0 and --bots at least 2", file=sys.stderr)
        return 2

    # As `mandala serve` refuses them: a path that cannot be a database, and a SQLite file a
    # server serves (whose running games and tables would not see the rows written under it).
    # The claim is held while writing, so no server starts on the file meanwhile.
    fault = files_fault(args.db, None, "write to")
    claim = claim_database(args.db) if fault is None else None
    if fault is not None or isinstance(claim, str):
        print(f"mandala history synth: {fault or claim}", file=sys.stderr)
        return 2

    async def go() -> float:
        storage = open_storage(args.db)
        try:
            await storage.open()
        except Exception as e:  # PostgreSQL not there, a file SQLite cannot open
            raise SystemExit(f"mandala history synth: cannot open {args.db}: {e} ({e.__class__.__name__})") from None
        try:
            return await synth(storage, args.games, args.bots, args.seed, force=args.force)
        finally:
            await storage.close()

    try:
        took = asyncio.run(go())
    finally:
        if claim is not None:
            claim.close()
    print(f"{args.games:,} games between {args.bots} bots written to {args.db} in {took:.1f} s")
    return 0
