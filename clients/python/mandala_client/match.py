"""``mandala-bot match A B`` (and ``mandala match A B``): two bots play each other offline on
duplicate deals.

It lives in the bot author's distribution, beside the bots and the offline games it plays, so
that a bot can be rated with nothing but ``pip install mandala-arena-client``; the arena's
``mandala`` command offers it too.

Each deal is played twice with the seats swapped (same cards, same first
player), so luck of the deal cancels out; ``--games`` counts games and is
rounded up to an even number. Games run in parallel worker processes.
The figures are A's: wins, draws, losses, score, Elo difference with a 95 %
interval (Wilson's over the games, counted by the deals' spread:
:mod:`mandala_client.stats`; at a perfect or a zero score only one end is
finite, and that end is what is printed), and with ``--sprt``
a sequential test that stops the match once it is decided (after at least
``MIN_SPRT_DEALS`` deals). The last line of output is one JSON object with
every figure, for scripts.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import random
import signal
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TextIO

from mandala import Game, encode_record

from .offline import DECISION_MS, SpecError, bot_factory, check_bot, close_bots, play_game
from .stats import Sprt, Summary, pair_units, sprt, summarize

HELP = "play two bots against each other offline on duplicate deals and rate them"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The match's arguments, the same under ``mandala-bot match`` and ``mandala match``."""
    p.add_argument("a", metavar="A", help="bot spec: random, greedy, search, house:1 … house:5, package.module:Class,"
                   " policy:package.module:attr (a policy trained in mandala_client.env) or 'cmd:COMMAND ...'"
                   " (options: search,iterations=400)")
    p.add_argument("b", metavar="B", help="the opponent, same forms as A")
    p.add_argument("--games", type=int, default=100, help="games to play, rounded up to even (default 100)")
    p.add_argument("--seed", type=int, default=0, help="seed for the deals and the bots (default 0)")
    p.add_argument("--records", type=Path, metavar="DIR", help="write each game's R23 record to DIR/game-NNNNNN.json")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes (default: all cores)")
    p.add_argument("--sprt", type=float, nargs=2, metavar=("ELO0", "ELO1"),
                   help="test H0: elo=ELO0 against H1: elo=ELO1 (alpha=beta=0.05); stop once decided"
                        " (after at least 10 deals)")
    p.add_argument("--budget", type=float, metavar="SECONDS", help="thinking time per decision for bots that take one")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """``mandala match``, a subcommand of the arena's command line."""
    p = sub.add_parser("match", help=HELP, description=HELP)
    add_arguments(p)
    p.set_defaults(run=run, prog="mandala match")


def main(argv: Sequence[str], prog: str = "mandala-bot match") -> int:
    """``mandala-bot match``: the match from the arguments after ``match``."""
    p = argparse.ArgumentParser(prog=prog, description=HELP)
    add_arguments(p)
    p.set_defaults(prog=prog)
    return run(p.parse_args(argv))


@dataclass(frozen=True)
class Task:
    """One game of the match: deal ``index // 2``, A in seat ``a_seat``."""

    index: int
    a: str
    b: str
    seed: int
    budget: float | None
    records: str | None

    @property
    def deal(self) -> int:
        return self.index // 2

    @property
    def a_seat(self) -> int:
        return self.index % 2


MIN_SPRT_DEALS = 10
"""The SPRT may stop a match only after this many deals: its normal approximation
needs a variance estimate, and a handful of pairs gives a poor one."""


def _bot_seed(seed: int, index: int, side: str) -> int:
    return random.Random(f"{seed}:{index}:{side}").getrandbits(63)


def play_task(task: Task) -> dict[str, Any]:
    """Play one game of the match (in a worker process) and report it from A's side."""
    start = time.perf_counter()
    a_seat = task.a_seat
    bot_a = bot_factory(task.a)(seed=_bot_seed(task.seed, task.index, "a"), budget=task.budget)
    bot_b = bot_factory(task.b)(seed=_bot_seed(task.seed, task.index, "b"), budget=task.budget)
    bots = [bot_a, bot_b] if a_seat == 0 else [bot_b, bot_a]
    names = ("A", "B") if a_seat == 0 else ("B", "A")
    game = Game.new(seed=f"{task.seed}:{task.deal}", first_player=task.deal % 2)  # type: ignore[arg-type]
    decision_ms = int(task.budget * 1000) if task.budget else DECISION_MS
    try:
        outcome = play_game(bots, game, f"match-{task.index}", names, decision_ms)
    finally:
        close_bots(bots)
    if task.records is not None:
        Path(task.records, f"game-{task.index:06d}.json").write_bytes(encode_record(game))
    w = outcome.winner
    return {
        "index": task.index,
        "a_score": 0.5 if w is None else 1.0 if w == a_seat else 0.0,
        "end_reason": outcome.end_reason,
        "forfeit": None if outcome.forfeit is None else ("A" if outcome.forfeit == a_seat else "B"),
        "error": outcome.error,
        "plies": outcome.plies,
        "seconds": time.perf_counter() - start,
    }


class Progress:
    """A one-line progress bar on ``stream``, redrawn with ``\\r`` at most ten times a second."""

    def __init__(self, total: int, label: str, stream: TextIO = sys.stderr, width: int = 30) -> None:
        self.total, self.label, self.stream, self.width = total, label, stream, width
        self._last = 0.0

    def show(self, done: int, scores: list[float], force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < 0.1:
            return
        self._last = now
        filled = self.width * done // max(1, self.total)
        wins = sum(1 for s in scores if s == 1.0)
        losses = sum(1 for s in scores if s == 0.0)
        pct = 100 * sum(scores) / len(scores) if scores else 50.0
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {done}/{self.total}  A +{wins} ={len(scores) - wins - losses} -{losses}  {pct:5.1f}% ")
        self.stream.flush()

    def finish(self) -> None:
        self.stream.write("\n")
        self.stream.flush()


def _decided_prefix(results: list[dict[str, Any] | None]) -> list[float]:
    """A's scores over the leading run of fully played deals (both games in)."""
    scores: list[float] = []
    for i in range(0, len(results) - 1, 2):
        first, second = results[i], results[i + 1]
        if first is None or second is None:
            break
        scores += [first["a_score"], second["a_score"]]
    return scores


def _finite(x: float) -> float | None:
    """An Elo figure for the JSON line: one decimal as in the text, ``None`` where it is unbounded."""
    return round(x, 1) if math.isfinite(x) else None


def _bounded(s: Summary) -> str:
    """Which ends of the interval are finite: ``"both"``, or ``"below"`` at a perfect score, ``"above"`` at zero."""
    if math.isinf(s.elo_low) and math.isinf(s.elo_high):
        return "neither"  # no games
    if math.isinf(s.elo_high):
        return "below"
    if math.isinf(s.elo_low):
        return "above"
    return "both"


def _elo_line(s: Summary) -> str:
    """The Elo figure in words: an estimate with its interval, or at an extreme score the one finite bound."""
    bounded = _bounded(s)
    if bounded == "neither":
        return "no games, no figure"
    if bounded == "below":
        return f"at least {s.elo_low:+.1f} (95% interval bounded below only: A won every game)"
    if bounded == "above":
        return f"at most {s.elo_high:+.1f} (95% interval bounded above only: A lost every game)"
    return f"{s.elo:+.1f} (95% interval {s.elo_low:+.1f} to {s.elo_high:+.1f})"


def run(args: argparse.Namespace) -> int:
    """Play the match ``args`` describe and print its figures; the exit status."""
    if args.games < 1 or args.jobs < 1:
        print(f"{args.prog}: --games and --jobs must be at least 1", file=sys.stderr)
        return 2
    for spec in (args.a, args.b):
        try:
            check_bot(spec, args.budget)
        except SpecError as e:
            print(f"{args.prog}: {e}", file=sys.stderr)
            return 2
    games = args.games + args.games % 2
    # Ctrl-C (SIGINT) stops the match even where it started ignored (a script's `&` sets that).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if args.records is not None:
        args.records.mkdir(parents=True, exist_ok=True)
    records = str(args.records) if args.records is not None else None
    tasks = [Task(i, args.a, args.b, args.seed, args.budget, records) for i in range(games)]
    results: list[dict[str, Any] | None] = [None] * games
    progress = Progress(games, f"{args.a} vs {args.b}")
    start = time.perf_counter()
    stopped = interrupted = False
    done: list[float] = []

    def record(result: dict[str, Any]) -> bool:
        """Store one finished game; True when the SPRT has decided and the match may stop."""
        results[result["index"]] = result
        if result["forfeit"]:
            progress.stream.write(f"\rgame {result['index']}: {result['forfeit']} forfeits: {result['error']}\n")
        done.append(result["a_score"])
        progress.show(len(done), done)
        if args.sprt is None:
            return False
        units = pair_units(_decided_prefix(results))
        return len(units) >= MIN_SPRT_DEALS and sprt(units, *args.sprt).verdict != "continue"

    try:
        if args.jobs == 1:
            for task in tasks:
                if record(play_task(task)):
                    stopped = True
                    break
        else:
            stopped = _run_pool(tasks, args.jobs, record)
    except KeyboardInterrupt:
        interrupted = True
    progress.show(len(done), done, force=True)
    progress.finish()
    scores = _decided_prefix(results) if stopped or interrupted else [r["a_score"] for r in results if r is not None]
    counted = results[: len(scores)]
    if interrupted:
        sys.stderr.write(f"{args.prog}: interrupted; the {len(scores)} games of the deals played out:\n")
    report(args, games, scores, counted, time.perf_counter() - start, stopped)  # type: ignore[arg-type]
    return 130 if interrupted else 0


def _run_pool(tasks: list[Task], jobs: int, record: Callable[[dict[str, Any]], bool]) -> bool:
    """Play ``tasks`` on ``jobs`` worker processes, handing out a few at a time (so memory and
    the wait over what is pending do not grow with the match), until ``record`` says the match
    may stop; whether it did. The workers leave Ctrl-C to the driver, which then stops them at
    once rather than wait for their games (a wait a second Ctrl-C could hang)."""
    pool = ProcessPoolExecutor(max_workers=jobs, initializer=_ignore_ctrl_c)
    queue = iter(tasks)
    pending: set[Future[dict[str, Any]]] = set()
    stopped = False
    try:
        while not stopped:
            while len(pending) < 2 * jobs and (later := next(queue, None)) is not None:
                pending.add(pool.submit(play_task, later))
            if not pending:
                break
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                stopped = record(future.result()) or stopped
    except BaseException:
        for child in multiprocessing.active_children():
            child.terminate()
        # With its workers gone the pool's manager thread ends at once; joined here, it is not
        # woken at exit through a pipe it may have closed (a traceback, now and then).
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True, cancel_futures=True)
    return stopped


def _ignore_ctrl_c() -> None:
    """A worker's start: Ctrl-C reaches the whole process group; the driver alone answers it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def report(args: argparse.Namespace, planned: int, scores: list[float], results: list[dict[str, Any]],
           seconds: float, stopped: bool) -> None:
    """Print the figures as text, then as one JSON line."""
    s: Summary = summarize(scores, paired=True)
    test: Sprt | None = sprt(pair_units(scores), *args.sprt) if args.sprt is not None else None
    reasons: dict[str, int] = {}
    for r in results:
        reasons[r["end_reason"]] = reasons.get(r["end_reason"], 0) + 1
    forfeits = {"A": sum(1 for r in results if r["forfeit"] == "A"), "B": sum(1 for r in results if r["forfeit"] == "B")}
    out = sys.stdout
    out.write(f"A = {args.a}, B = {args.b}: {s.games} games ({s.games // 2} duplicate deals), seed {args.seed}\n")
    out.write(f"A: {s.wins} wins, {s.draws} draws, {s.losses} losses; score {100 * s.score:.1f}%\n")
    out.write(f"Elo difference A - B: {_elo_line(s)}\n")
    if test is not None:
        out.write(f"SPRT H0: elo={test.elo0:g} vs H1: elo={test.elo1:g} (alpha=beta=0.05): "
                  f"LLR {test.llr:.2f} in [{test.lower:.2f}, {test.upper:.2f}]: {test.verdict}"
                  f"{' (stopped early)' if stopped else ''}\n")
    figures: dict[str, Any] = {
        "a": args.a, "b": args.b, "seed": args.seed, "games_planned": planned,
        "games": s.games, "deals": s.games // 2, "wins": s.wins, "draws": s.draws, "losses": s.losses,
        "score": round(s.score, 4), "elo": _finite(s.elo), "elo_low": _finite(s.elo_low), "elo_high": _finite(s.elo_high),
        "elo_bounded": _bounded(s),
        "end_reasons": reasons, "forfeits": forfeits, "seconds": round(seconds, 2), "stopped_early": stopped,
        "sprt": None,
    }
    if test is not None:
        figures["sprt"] = {**{k: round(v, 4) for k, v in asdict(test).items()}, "verdict": test.verdict}
    out.write(json.dumps(figures) + "\n")
    out.flush()
