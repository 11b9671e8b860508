"""The clairvoyant benchmark (``bench/clairvoyant.py``): the reference sees the real game,
the honest side sees only its view, and nothing a bot can reach builds the reference.

The reference is told the truth only by the harness that holds the real ``Game``: a bot
spec cannot build it (its options are JSON values), no module of the client or the engine
imports the benchmark, and the honest bot the harness plays is handed ``view(game, seat)``
and the legal moves, exactly what a server sends.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import random
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import pytest

from mandala import Game, Move, View, record_of, view
from mandala.record import move_of
from protocol.messages import GameOver, GameStart, Update

ROOT = Path(__file__).resolve().parents[2]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("clairvoyant_bench", ROOT / "bench" / "clairvoyant.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


bench = _bench()


def _advanced(seed: int, plies: int) -> Game:
    game = Game.new(seed=seed)
    rng = random.Random(seed)
    for _ in range(plies):
        codes = game.legal_codes()
        game.push_code(codes[rng.randrange(len(codes))])
    return game


def test_no_bot_or_engine_module_imports_the_benchmark() -> None:
    for package in ("mandala", "clients/python/mandala_client", "protocol", "server"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                    [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                assert not any(n == "bench" or n.startswith("bench.") or "clairvoyant" in n for n in names), path


def test_a_bot_spec_cannot_build_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    from mandala_client.offline import SpecError, load_bot

    monkeypatch.chdir(ROOT / "bench")  # the directory a spec's module would be found from
    with pytest.raises(SpecError, match=r"TypeError: .*game"):
        load_bot("clairvoyant:Clairvoyant", seed=1)
    with pytest.raises(TypeError, match="real Game"):
        bench.Clairvoyant(view(Game.new(seed=1), 0))


def test_the_reference_searches_copies_of_the_real_game_reshuffles_included() -> None:
    real = _advanced(4, 30)
    copy = bench.TrueGame(real).sample(random.Random(0))
    assert copy is not real and copy.hands == real.hands and copy.deck == real.deck
    assert copy.starting_cups == real.starting_cups
    rng = random.Random(7)
    while not real.is_over:  # the same moves give the same game to the end: the reshuffles to come are the real ones
        code = rng.choice(real.legal_codes())
        real.push_code(code)
        copy.push_code(code)
    assert copy.reshuffles == real.reshuffles and copy.scores() == real.scores()


def test_the_hands_reference_knows_the_opponents_cards_and_not_the_draws() -> None:
    real = _advanced(4, 30)
    source = bench.KNOWS["hands"](real)
    orders = set()
    for seed in range(20):
        sample = source.sample(random.Random(seed))
        assert sample.hands == real.hands and sample.cups == real.cups and sample.starting_cups == real.starting_cups
        assert sorted(sample.deck) == sorted(real.deck)  # the same cards, in an order of its own
        assert view(sample, 0) == view(real, 0) and view(sample, 1) == view(real, 1)
        orders.add(tuple(sample.deck))
    assert len(orders) > 1 and len(real.deck) > 1
    assert bench.KNOWS["all"] is bench.TrueGame


def test_the_references_choice_depends_on_the_hidden_cards() -> None:
    """Two deals that look the same from seat 0 and differ behind it: over a few positions the
    reference (seat 1's search on the truth) must at some point see a difference a view hides."""
    differs = False
    for seed in range(6):
        a = _advanced(seed, 8)
        if a.to_move is None:
            continue
        b = bench.TrueGame(a).sample(random.Random(0))  # then swap a card of the opponent's hand with the deck's top
        top = b.deck[-1]
        opp = 1 - a.to_move
        swap = next((c for c in range(6) if b.hands[opp][c] and c != top), None)
        if swap is None:
            continue
        b.hands[opp][swap] -= 1
        b.hands[opp][top] += 1
        b.deck[-1] = swap
        b._forget_derived()
        assert view(a, a.to_move) == view(b, a.to_move)  # the mover cannot tell them apart
        picks = {bench.Clairvoyant(g, seed=3, iterations=200).decide() for g in (a, b)}
        differs = differs or len(picks) > 1
    assert differs


class Spy:
    """A honest bot that records what it was handed."""

    calls: ClassVar[list[tuple[Any, Any]]] = []

    def __init__(self, seed: int | None = None, budget: float | None = None) -> None:
        self._rng = random.Random(seed)

    def choose(self, v: View, legal: list[Move]) -> Move:
        Spy.calls.append((v, legal))
        return legal[self._rng.randrange(len(legal))]


def test_the_honest_side_is_handed_its_view_and_the_legal_moves_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    Spy.calls = []
    seen: list[tuple[View, list[Move]]] = []
    original = bench.view

    def recording_view(game: Game, seat: int | None = None) -> View:
        v = original(game, seat)
        seen.append((v, game.legal_moves))
        return v

    monkeypatch.setattr(bench, "view", recording_view)
    row = bench.play(bench.Task(deal=0, honest_seat=1, honest="test_clairvoyant_bench:Spy",
                                reference={"iterations": 10}, budget=0.0, seed=0))
    assert row["score"] in (0.0, 0.5, 1.0) and row["honest_seat"] == 1
    assert len(Spy.calls) == len(seen) > 10
    for (v, legal), (expected, expected_legal) in zip(Spy.calls, seen, strict=True):
        assert isinstance(v, View) and v.seat == 1 and v == expected and legal == expected_legal


class Listener(Spy):
    """A honest bot that also hears the game's messages, as a bot on a server does."""

    heard: ClassVar[list[Any]] = []

    def notify(self, message: Any) -> None:
        Listener.heard.append(message)


def test_the_honest_side_hears_what_a_server_would_tell_its_seat(monkeypatch: pytest.MonkeyPatch) -> None:
    """``game_start``, an ``update`` with the seat's view after each move of either side, and
    ``game_over`` with the record: what lets a bot follow the opponent's moves (inference)."""
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    Spy.calls, Listener.heard = [], []
    row = bench.play(bench.Task(deal=1, honest_seat=0, honest="test_clairvoyant_bench:Listener",
                                reference={"iterations": 10}, budget=0.0, seed=0))
    start, first, *updates, over = Listener.heard
    assert isinstance(start, GameStart) and start.seat == 0 and start.first_player == 1
    assert isinstance(first, Update) and first.move is None and first.ply == 0
    assert isinstance(over, GameOver) and over.result.end_reason == row["end_reason"]
    replay = Game.new(seed="clairvoyant:0:1", first_player=1)  # type: ignore[arg-type]
    assert [u.ply for u in updates] == list(range(1, row["plies"] + 1))
    for u in updates:
        assert isinstance(u, Update) and u.move is not None
        replay.push(move_of(u.move))
        assert u.view == view(replay, 0)  # its own seat's view, nothing more
    assert {u.move.player for u in updates if u.move is not None} == {0, 1}
    assert over.record == record_of(replay) and list(replay.scores()) == row["points"]
    again = bench.deal_game(0, 1)  # the row's codes replay the game on its deal
    for code in row["codes"]:
        again.push_code(code)
    assert again.history == replay.history and again.end_reason == row["end_reason"]
    # Every view a decision was handed is one an update carried.
    last = {u.ply: u.view for u in [first, *updates]}
    assert all(v in last.values() for v, _ in Spy.calls)


def test_a_short_run_reports_the_honest_sides_score_with_its_interval(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run.jsonl"
    assert bench.main(["--honest", "search,iterations=5", "--budget", "0.001", "--deals", "1", "--out", str(out)]) == 0
    rows = [line for line in out.read_text().splitlines() if line]
    assert len(rows) == 2
    figures = bench.summary([json.loads(r) for r in rows])
    assert figures["deals"] == 1 and figures["games"] == 2
    assert 0.0 <= figures["score_low"] <= figures["score"] <= figures["score_high"] <= 1.0
    assert bench.main(["--deals", "1", "--out", str(out)]) == 2  # an existing file is added to only with --resume


def test_the_bound_of_inference_is_a_search_told_the_opponents_cards(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--honest-knows hands``: the honest side's search runs on the real game with the draws
    hidden (what knowing the opponent's hand and cup would give); a bot that is no search
    cannot be told."""
    told: list[type] = []
    choose_code = bench.SearchBot.choose_code

    def spying(self: Any, source: Any, codes: Any) -> int:
        told.append(type(source))
        return choose_code(self, source, codes)

    monkeypatch.setattr(bench.SearchBot, "choose_code", spying)
    row = bench.play(bench.Task(deal=1, honest_seat=0, honest="search,iterations=5", reference={"iterations": 5},
                                budget=0.0, seed=0, honest_knows="hands"))
    assert row["score"] in (0.0, 0.5, 1.0) and row["honest_iterations"] == 5
    assert bench.HandsKnown in told and bench.TrueGame in told  # the honest side, then the reference
    with pytest.raises(TypeError, match="needs a search"):
        bench.play(bench.Task(deal=1, honest_seat=0, honest="random", reference={"iterations": 5},
                              budget=0.0, seed=0, honest_knows="hands"))


def test_two_runs_are_compared_deal_by_deal_on_the_deals_both_finished(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def run(scores: dict[tuple[int, int], float]) -> list[dict[str, Any]]:
        return [{"deal": d, "honest_seat": s, "score": x} for (d, s), x in scores.items()]

    a = run({(0, 0): 1.0, (0, 1): 0.0, (1, 0): 1.0, (1, 1): 1.0, (2, 0): 0.5, (2, 1): 0.5, (3, 0): 1.0})
    b = run({(0, 0): 0.0, (0, 1): 0.0, (1, 0): 0.0, (1, 1): 1.0, (2, 0): 0.5, (2, 1): 0.0, (3, 0): 0.0, (3, 1): 0.0})
    # deal 3 is unfinished in a; the differences of deals 0, 1, 2 are 0.5, 0.5 and 0.25
    c = bench.compare(a, b)
    half = 1.96 * (((0.5 - 5 / 12) ** 2 * 2 + (0.25 - 5 / 12) ** 2) / 2 / 3) ** 0.5
    assert c["deals"] == 3 and c["score_a"] == pytest.approx(2 / 3, abs=1e-4) and c["score_b"] == pytest.approx(0.75 / 3, abs=1e-4)
    assert c["difference"] == pytest.approx(5 / 12, abs=1e-4)
    assert (c["difference_low"], c["difference_high"]) == (pytest.approx(5 / 12 - half, abs=1e-4), pytest.approx(5 / 12 + half, abs=1e-4))
    files = []
    for name, rows in (("a", a), ("b", b)):
        files.append(tmp_path / f"{name}.jsonl")
        files[-1].write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert bench.main(["--compare", str(files[0]), str(files[1])]) == 0
    assert json.loads(capsys.readouterr().out) == c
    with pytest.raises(ValueError, match="fewer than two"):
        bench.compare(a[:2], b)


def test_endings_replay_each_game_and_tell_a_forced_sixth_slot_from_a_chosen_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--endings``: a sixth river slot the honest side filled is forced when the claim that
    filled it was its only legal one (the one color missing from its river, alone in the
    mountain), chosen otherwise; the deck's and the reference's ends are counted apart."""
    # Against a reference of 10 iterations the honest side fills its river, by choice and forced;
    # against one of 100 the reference ends games, by its river and on the deck.
    rows = [bench.play(bench.Task(deal=d, honest_seat=s, honest="greedy", reference={"iterations": 10 if d < 3 else 100},
                                  budget=0.0, seed=5)) for d in range(8) for s in (0, 1)]
    expected: dict[str, list[float]] = {"honest_by_choice": [], "honest_forced": [], "reference": [], "deck": []}
    lost_by: list[int] = []
    for r in rows:
        game = Game.new(seed=f"clairvoyant:5:{r['deal']}", first_player=r["deal"] % 2)  # type: ignore[arg-type]
        me, case = r["honest_seat"], None
        for code in r["codes"]:
            choices = len(game.legal_codes())
            game.push_code(code)
            if case is None and len(game.rivers[me]) == 6:
                case = "honest_forced" if choices == 1 else "honest_by_choice"
        assert list(game.scores()) == r["points"] and game.end_reason == r["end_reason"]
        if case is None and r["end_reason"] == "river":
            case = "reference"
        if case is not None:
            expected[case].append(r["score"])
            if case == "honest_by_choice" and r["score"] == 0.0:
                lost_by.append(r["points"][1 - me] - r["points"][me])
        if r["end_reason"] == "deck":
            expected["deck"].append(r["score"])
    out = tmp_path / "run.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert bench.main(["--endings", str(out)]) == 0
    figures = json.loads(capsys.readouterr().out)
    for case, scores in expected.items():
        assert figures[case] == {"games": len(scores), "honest_won": scores.count(1.0)}
    assert sum(len(v) for v in expected.values()) >= len(rows)  # every game ended one of these ways
    assert all(expected.values())  # each way, so each is checked
    assert figures["lost_by_choice_by_points"] == sorted(lost_by)
