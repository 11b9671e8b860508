"""The information limit: an honest bot against the same search told the true hidden cards.

The reference (:class:`Clairvoyant`) is the shipped search (``SearchBot``) whose
iterations all run on copies of the real game: the opponent's hand and cup, the
deck order and, through the copied generator, every future reshuffle. Only this
harness can build it, because only the harness holds the real :class:`mandala.Game`;
a bot's seat gets views (R24), and nothing in ``mandala_client`` imports this file.
The honest side is any bot spec ``mandala match`` takes, and it is handed only
``view(game, seat)`` and the legal moves, and (if it has ``notify``) the ``game_start``,
``update`` and ``game_over`` messages of its seat, as a server would.

Each deal is played twice with the seats swapped (same cards, same first player),
both sides get the same time per decision, measured by default on each thread's
CPU clock so that a busy machine slows both alike (``--clock wall`` for
wall-clock), and the honest side's score comes with the Wilson interval of
``mandala match`` (pairs as units, :mod:`mandala_client.stats`).

    python bench/clairvoyant.py --budget 0.3 --deals 100 --jobs 2 --out clv-0.3.jsonl
    python bench/clairvoyant.py --summarize clv-0.3.jsonl      # figures of a finished (or partial) run
    python bench/clairvoyant.py --compare new-0.3.jsonl old-0.3.jsonl   # two runs, deal by deal
    python bench/clairvoyant.py --endings clv-0.3.jsonl        # how its games ended, replayed

Every finished game is appended to ``--out`` as one JSON line, with its moves' codes (replay
them on ``deal_game(seed, deal)`` to study a game), so an interrupted run keeps its games and
``--resume`` plays only the deals still missing.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import random
import sys
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mandala import Game, view
from mandala.moves import MOVES
from mandala_client.bots.search import SearchBot
from mandala_client.offline import Messages, bot_factory
from mandala_client.stats import summarize
from protocol.messages import GameResult

REFERENCE: dict[str, Any] = {"exploration": 0.2, "policy": "weighted", "depth": 10, "evaluation": "hand",
                             "reuse": False}
"""The reference search's options: those of ``SearchBot`` as issue 32 measured it, pinned here
so that the reference stays put when the shipped search changes."""


class TrueGame:
    """A source of games for the search that always returns a copy of the real one."""

    __slots__ = ("game",)

    def __init__(self, game: Game) -> None:
        self.game = game

    def sample(self, rng: random.Random) -> Game:
        return self.game.copy()  # the copy carries the generator's state: the same reshuffles to come


class HandsKnown(TrueGame):
    """The real game with its draws hidden: the opponent's hand and cup as they are, the deck's
    order and every future reshuffle drawn anew for each iteration (``--knows hands``). Against
    it, the honest side's score says how much of the information limit is the opponent's cards
    and how much the order of the draws, which no inference can learn."""

    __slots__ = ()

    def sample(self, rng: random.Random) -> Game:
        game = self.game.copy()
        rng.shuffle(game.deck)
        game._rng = random.Random(rng.getrandbits(64))
        return game


KNOWS: dict[str, type[TrueGame]] = {"all": TrueGame, "hands": HandsKnown}
"""What the reference is told: every hidden card (``all``) or only the opponent's (``hands``)."""


class Clairvoyant:
    """The search on the true state. It takes the harness's live ``Game``, never a view,
    so no bot spec can build it (a spec's options are JSON values)."""

    def __init__(self, game: Game, seed: int | None = None, budget: float | None = None,
                 knows: str = "all", **options: Any) -> None:
        if not isinstance(game, Game):
            raise TypeError("the clairvoyant reference needs the harness's real Game")
        self._source = KNOWS[knows](game)
        self.search = SearchBot(seed=seed, budget=budget, **{**REFERENCE, **options})

    def decide(self) -> int:
        """The code of the move to play in the real game's current decision."""
        codes = self._source.game.legal_codes()
        if len(codes) == 1:
            return codes[0]
        return self.search.choose_code(self._source, codes)


@dataclass(frozen=True)
class Task:
    """One game: deal ``deal``, the honest bot in seat ``honest_seat``."""

    deal: int
    honest_seat: int
    honest: str
    reference: dict[str, Any]
    budget: float
    seed: int
    honest_knows: str = "view"
    """``view``: the honest side is handed its view, as a server would; ``hands``: it is the
    search told the opponent's hand and cup (``--honest-knows hands``), a bound on what any
    inference over the opponent's moves could give it, never an honest bot."""


def deal_game(seed: int, deal: int) -> Game:
    """The game of deal ``deal``: the deck and the reshuffles to come follow from the seed."""
    return Game.new(seed=f"clairvoyant:{seed}:{deal}", first_player=deal % 2)  # type: ignore[arg-type]


def play(task: Task) -> dict[str, Any]:
    """Play one game; the honest side's score and how much each side searched."""
    start = time.perf_counter()
    game = deal_game(task.seed, task.deal)
    me = task.honest_seat
    bot_seed = random.Random(f"{task.seed}:{task.deal}:{me}").getrandbits(63)
    honest = bot_factory(task.honest)(seed=bot_seed, budget=task.budget)
    told = None if task.honest_knows == "view" else KNOWS[task.honest_knows](game)
    if told is not None and not isinstance(honest, SearchBot):
        raise TypeError(f"--honest-knows {task.honest_knows} needs a search, not {task.honest}")
    ref = Clairvoyant(game, seed=bot_seed ^ 1, budget=task.budget, **task.reference)
    messages = Messages([honest if s == me else None for s in (0, 1)], game, decision_ms=round(1000 * task.budget))
    messages.started(me)
    iterations = [[], []]  # per searched decision: honest, reference
    while game.to_move is not None:
        mover = game.to_move
        if mover == me:
            legal = game.legal_moves
            if told is None:
                move = honest.choose(view(game, me), legal)
            else:
                codes = game.legal_codes()
                move = MOVES[codes[0] if len(codes) == 1 else honest.choose_code(told, codes)]
            if len(legal) > 1 and hasattr(honest, "last_iterations"):
                iterations[0].append(honest.last_iterations)
        else:
            many = len(game.legal_codes()) > 1
            move = MOVES[ref.decide()]
            if many:
                iterations[1].append(ref.search.last_iterations)
        game.push(move)
        messages.moved(move, mover)
    w = game.winner()
    messages.over(GameResult(w, game.end_reason or "", list(game.scores()), list(game.cup_sizes())))  # type: ignore[arg-type]
    return {
        "seed": task.seed, "deal": task.deal, "honest_seat": me, "score": 0.5 if w is None else 1.0 if w == me else 0.0,
        "points": list(game.scores()), "end_reason": game.end_reason, "plies": len(game.history),
        "codes": [code for _, code in game.history],
        "honest_iterations": _mean(iterations[0]), "reference_iterations": _mean(iterations[1]),
        "seconds": round(time.perf_counter() - start, 2),
    }


def _mean(xs: list[int]) -> float | None:
    return round(sum(xs) / len(xs), 1) if xs else None


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The honest side's figures over the deals whose two games are both in."""
    pairs = _finished_deals(rows)
    scores = [pairs[deal][seat] for deal in sorted(pairs) for seat in (0, 1)]
    s = summarize(scores, paired=True)
    its = [r["honest_iterations"] for r in rows if r["honest_iterations"]]
    ref = [r["reference_iterations"] for r in rows if r["reference_iterations"]]
    return {
        "deals": s.games // 2, "games": s.games, "wins": s.wins, "draws": s.draws, "losses": s.losses,
        "score": round(s.score, 4), "score_low": round(_score_of(s.elo_low), 4), "score_high": round(_score_of(s.elo_high), 4),
        "elo": round(s.elo, 1), "elo_low": round(s.elo_low, 1), "elo_high": round(s.elo_high, 1),
        "honest_iterations": round(sum(its) / len(its)) if its else None,
        "reference_iterations": round(sum(ref) / len(ref)) if ref else None,
    }


def compare(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> dict[str, Any]:
    """How much more the honest side of run ``a`` scored than that of run ``b`` on the deals both
    finished, deal by deal (so the deals' own luck cancels): the mean difference in points of a
    deal's two games and its 95 % interval (normal, the deals as units)."""
    sa, sb = ({d: (pair[0] + pair[1]) / 2 for d, pair in _finished_deals(run).items()} for run in (a, b))
    common = sorted(set(sa) & set(sb))
    if len(common) < 2:
        raise ValueError("the two runs share fewer than two finished deals")
    diffs = [sa[d] - sb[d] for d in common]
    n = len(diffs)
    mean = sum(diffs) / n
    half = 1.96 * math.sqrt(sum((x - mean) ** 2 for x in diffs) / (n - 1) / n)
    return {"deals": n, "score_a": round(sum(sa[d] for d in common) / n, 4), "score_b": round(sum(sb[d] for d in common) / n, 4),
            "difference": round(mean, 4), "difference_low": round(mean - half, 4), "difference_high": round(mean + half, 4)}


def endings(rows: list[dict[str, Any]], seed: int = 0) -> dict[str, Any]:
    """How a run's games ended, each replayed from its codes on its deal (``seed`` for rows
    written before they carried theirs): who filled a sixth river slot (R17a), the honest side
    by choice or forced (with five colors in its river only one is missing, so the claim that
    filled the slot was avoidable exactly when it had another legal one), and the honest side's
    score in each case; the games that ended on the deck; and by how many points the honest
    side lost the games it ended by choice."""
    counts: dict[str, list[float]] = {"honest_by_choice": [], "honest_forced": [], "reference": [], "deck": []}
    lost_by: list[int] = []
    for r in rows:
        game = deal_game(r.get("seed", seed), r["deal"])
        me = r["honest_seat"]
        case = None
        for code in r["codes"]:
            choices = len(game.legal_codes())
            game.push_code(code)
            if case is None and len(game.rivers[me]) == 6:
                case = "honest_by_choice" if choices > 1 else "honest_forced"
        if game.end_reason == "river" and len(game.rivers[1 - me]) == 6 and case is None:
            case = "reference"
        if game.end_reason == "deck":
            counts["deck"].append(r["score"])
        if case is not None:
            counts[case].append(r["score"])
            if case == "honest_by_choice" and r["score"] == 0.0:
                lost_by.append(r["points"][1 - me] - r["points"][me])
    out: dict[str, Any] = {k: {"games": len(v), "honest_won": sum(1 for x in v if x == 1.0)} for k, v in counts.items()}
    out["lost_by_choice_by_points"] = sorted(lost_by)
    return out


def _finished_deals(rows: list[dict[str, Any]]) -> dict[int, dict[int, float]]:
    """The honest side's score in each seat, for the deals whose two games are both in."""
    by_deal: dict[int, dict[int, float]] = {}
    for r in rows:
        by_deal.setdefault(r["deal"], {})[r["honest_seat"]] = r["score"]
    return {d: pair for d, pair in by_deal.items() if len(pair) == 2}


def _score_of(elo: float) -> float:
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def _read(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--honest", default="search", help="the honest bot's spec, as for mandala match (default search)")
    p.add_argument("--budget", type=float, default=0.3, help="seconds per decision for both sides (default 0.3)")
    p.add_argument("--knows", choices=tuple(KNOWS), default="all",
                   help="what the reference is told: every hidden card (all, the default) or only the "
                        "opponent's hand and cup, its draws still hidden (hands)")
    p.add_argument("--honest-knows", choices=("view", "hands"), default="view",
                   help="view (the default): the honest side gets its view; hands: a search on the honest "
                        "side is told the opponent's hand and cup, the bound of any inference over its moves")
    p.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                   help="what both sides' budgets are measured on (default cpu: each thread's CPU time)")
    p.add_argument("--deals", type=int, default=100, help="duplicate deals, two games each (default 100)")
    p.add_argument("--seed", type=int, default=0, help="seed of the deals (default 0)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--out", type=Path, help="append each finished game to this JSON-lines file")
    p.add_argument("--resume", action="store_true", help="play only the games missing from --out")
    p.add_argument("--summarize", type=Path, metavar="FILE", help="print the figures of a run's file and stop")
    p.add_argument("--compare", type=Path, nargs=2, metavar=("A", "B"),
                   help="print how much more run A's honest side scored than run B's, deal by deal, and stop")
    p.add_argument("--endings", type=Path, metavar="FILE", help="print how a run's games ended (replayed) and stop")
    args = p.parse_args(argv)
    if args.endings:
        print(json.dumps(endings(_read(args.endings), args.seed)))
        return 0
    if args.summarize:
        print(json.dumps(summary(_read(args.summarize))))
        return 0
    if args.compare:
        print(json.dumps(compare(_read(args.compare[0]), _read(args.compare[1]))))
        return 0
    honest = args.honest
    if args.clock != "wall" and honest.split(",")[0] == "search" and "clock=" not in honest:
        honest += f",clock={args.clock}"
    reference = {"clock": args.clock, "knows": args.knows}
    done = {(r["deal"], r["honest_seat"]) for r in _read(args.out)} if args.out and args.resume else set()
    rows = _read(args.out) if args.out and args.resume else []
    if args.out and not args.resume and args.out.exists():
        print(f"{args.out} exists: pass --resume to add to it", file=sys.stderr)
        return 2
    tasks = [Task(d, s, honest, reference, args.budget, args.seed, args.honest_knows)
             for d in range(args.deals) for s in (0, 1) if (d, s) not in done]
    print(f"# {honest} knowing {args.honest_knows} vs clairvoyant search {REFERENCE} knowing {args.knows} at {args.budget} s ({args.clock}) a decision; "
          f"{len(tasks)} games to play; {platform.python_implementation()} {platform.python_version()}, "
          f"{os.cpu_count()} cores", file=sys.stderr)
    out = args.out.open("a") if args.out else None

    def keep(row: dict[str, Any]) -> None:
        rows.append(row)
        if out:
            out.write(json.dumps(row) + "\n")
            out.flush()
        s = summary(rows)
        print(f"\r{len(rows)} games: {s['wins']}-{s['draws']}-{s['losses']} score {100 * s['score']:.1f}% "
              f"over {s['deals']} deals", end="", file=sys.stderr, flush=True)

    try:
        if args.jobs == 1:
            for t in tasks:
                keep(play(t))
        else:
            with ProcessPoolExecutor(max_workers=args.jobs) as pool:
                pending: set[Future[dict[str, Any]]] = {pool.submit(play, t) for t in tasks}
                while pending:
                    finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for f in finished:
                        keep(f.result())
    finally:
        if out:
            out.close()
    print(file=sys.stderr)
    print(json.dumps({"honest": honest, "honest_knows": args.honest_knows, "knows": args.knows, "budget": args.budget, "clock": args.clock,
                      "seed": args.seed, **summary(rows)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
