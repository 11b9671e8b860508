"""The ``mandala replay`` and ``mandala selfplay`` commands (R23 records), run as
real subprocesses: the result line and its keys, ``--trace`` output, exit status
2 with the ply and the rule for malformed records and illegal moves, and
selfplay records that replay to the same results."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mandala import MOVES, Game, IllegalMove, encode_record, move_to_dict, record_dict, replay
from mandala.moves import MOUNTAIN, MOVE_PARTS
from rules_random import play_plan

SUMMARY_KEYS = {"scores", "cup_sizes", "winner", "end_reason", "rivers", "cups", "turns"}


def mandala_command() -> list[str]:
    """The installed ``mandala`` script next to this interpreter, else ``python -m``."""
    script = Path(sys.executable).parent / "mandala"
    return [str(script)] if script.exists() else [sys.executable, "-m", "mandala_cli.main"]


def run_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*mandala_command(), *map(str, args)], capture_output=True, text=True, timeout=120, check=False
    )


def expected_summary(game: Game) -> dict[str, Any]:
    from mandala import COLORS

    return {
        "scores": list(game.scores()),
        "cup_sizes": list(game.cup_sizes()),
        "winner": game.winner(),
        "end_reason": game.end_reason,
        "rivers": [[COLORS[c] for c in r] for r in game.rivers],
        "cups": [dict(zip(COLORS, cup, strict=True)) for cup in game.cups],
        "turns": game.turns,
    }


def write_record(path: Path, record: dict[str, Any] | bytes | str) -> Path:
    if isinstance(record, dict):
        record = json.dumps(record)
    path.write_bytes(record.encode() if isinstance(record, str) else record)
    return path


@pytest.fixture(scope="module")
def finished() -> Game:
    game = play_plan(2024, 1, [])
    assert game.is_over and game.reshuffles
    return game


def test_r23_replay_prints_the_result_with_exactly_the_documented_keys(finished: Game, tmp_path: Path) -> None:
    path = write_record(tmp_path / "game.json", encode_record(finished))
    out = run_cli("replay", path)
    assert (out.returncode, out.stderr) == (0, "")
    lines = out.stdout.splitlines()
    assert len(lines) == 1
    result = json.loads(lines[0])
    assert set(result) == SUMMARY_KEYS
    assert result == expected_summary(finished)


def test_r23_replay_of_several_files_prints_one_line_each(finished: Game, tmp_path: Path) -> None:
    running = play_plan(7, 0, [], max_plies=30)
    a = write_record(tmp_path / "a.json", encode_record(finished))
    b = write_record(tmp_path / "b.json", encode_record(running))
    out = run_cli("replay", a, b, a)
    assert out.returncode == 0
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert lines == [expected_summary(finished), expected_summary(running), expected_summary(finished)]
    assert lines[1]["end_reason"] is None and lines[1]["winner"] is None


def test_r23_replay_reads_the_compact_form_the_server_stores(finished: Game, tmp_path: Path) -> None:
    from mandala import compact, record_of

    packed = tmp_path / "game.bin"
    packed.write_bytes(compact.pack(record_of(finished)))
    assert len(packed.read_bytes()) < 400
    out = run_cli("replay", packed, write_record(tmp_path / "game.json", encode_record(finished)))
    assert (out.returncode, out.stderr) == (0, "")
    assert [json.loads(line) for line in out.stdout.splitlines()] == [expected_summary(finished)] * 2
    packed.write_bytes(packed.read_bytes()[:-3])
    out = run_cli("replay", packed)
    assert out.returncode == 2 and "rule R23: neither a JSON record, a compact record nor an export" in out.stderr


def test_r22_trace_prints_each_decisions_sorted_legal_moves(finished: Game, tmp_path: Path) -> None:
    record = record_dict(finished)
    path = write_record(tmp_path / "game.json", record)
    out = run_cli("replay", path, "--trace")
    assert (out.returncode, out.stderr) == (0, "")
    lines = out.stdout.splitlines()
    assert len(lines) == len(record["moves"]) + 1
    assert json.loads(lines[-1]) == expected_summary(finished)
    game = Game(record["deck"], record["first_player"], reshuffles=record["reshuffles"])
    for ply, (line, move) in enumerate(zip(lines[:-1], record["moves"], strict=True)):
        legal = sorted(json.dumps(move_to_dict(m), sort_keys=True) for m in game.legal_moves)
        assert line == f'{{"ply": {ply}, "to_move": {game.to_move}, "legal": [{", ".join(legal)}]}}'
        parsed = json.loads(line)
        assert parsed["to_move"] == move["player"]
        assert {k: v for k, v in move.items() if k != "player"} in parsed["legal"]
        replay_step(game, move)
    assert game.is_over


def replay_step(game: Game, move: dict[str, Any]) -> None:
    from mandala import move_from_dict

    game.push(move_from_dict({k: v for k, v in move.items() if k != "player"}))


def test_r22_trace_takes_exactly_one_file(finished: Game, tmp_path: Path) -> None:
    path = write_record(tmp_path / "game.json", encode_record(finished))
    out = run_cli("replay", "--trace", path, path)
    assert out.returncode == 2 and out.stdout == ""


def _illegal_r9_record() -> tuple[dict[str, Any], int]:
    """A record whose last move is a mountain play that the rule of color forbids."""
    game = Game.new(seed=99)
    rng = random.Random(99)
    while True:
        assert not game.is_over
        if game.phase == "turn":
            for code in range(len(MOVES)):
                if MOVE_PARTS[code][0] != MOUNTAIN:
                    continue
                try:
                    game.copy().push(MOVES[code])
                except IllegalMove as e:
                    if e.rule == "R9":
                        record = record_dict(game)
                        ply = len(record["moves"])
                        record["moves"].append({**move_to_dict(MOVES[code]), "player": game.to_move})
                        return record, ply
        codes = game.legal_codes()
        game.push_code(codes[rng.randrange(len(codes))])


def _cases(finished: Game) -> list[tuple[str, Any, str, str]]:
    """(name, record, where, rule): ``where`` is ``"ply N"`` or ``"record"``."""
    good = record_dict(finished)
    n = len(good["moves"])
    cases: list[tuple[str, Any, str, str]] = []
    cases.append(("not json", "{not json", "record", "R23"))
    cases.append(("not an object", "[1, 2]", "record", "R23"))
    cases.append(("no moves key", {k: v for k, v in good.items() if k != "moves"}, "record", "R23"))
    cases.append(("short deck", {**good, "deck": good["deck"][:-1]}, "record", "R3"))
    cases.append(("bad first player", {**good, "first_player": 3}, "record", "R4"))
    bad_type = [dict(m) for m in good["moves"]]
    bad_type[5] = {"type": "teleport", "player": bad_type[5]["player"]}
    cases.append(("unknown move type", {**good, "moves": bad_type}, "ply 5", "R22"))
    no_player = [dict(m) for m in good["moves"]]
    del no_player[3]["player"]
    cases.append(("move without player", {**good, "moves": no_player}, "ply 3", "R23"))
    wrong_player = [dict(m) for m in good["moves"]]
    wrong_player[0]["player"] = 1 - wrong_player[0]["player"]
    cases.append(("wrong player", {**good, "moves": wrong_player}, "ply 0", "R5"))
    past_end = [*good["moves"], {"type": "pass", "player": 0}]
    cases.append(("move after the end", {**good, "moves": past_end}, f"ply {n}", "R17"))
    extra_shuffle = {**good, "reshuffles": [*good["reshuffles"], ["red"]]}
    cases.append(("unused reshuffle", extra_shuffle, "record", "R23"))
    first_order = list(good["reshuffles"][0])
    first_order[next(i for i, c in enumerate(first_order) if c != "red")] = "red"
    wrong_shuffle = {**good, "reshuffles": [first_order, *good["reshuffles"][1:]]}
    cases.append(("reshuffle not the discard pile", wrong_shuffle, "ply", "R16"))
    r9, ply = _illegal_r9_record()
    cases.append(("rule of color", r9, f"ply {ply}", "R9"))
    return cases


TRACED_CASES = {"short deck", "unknown move type", "move after the end", "rule of color"}


@pytest.mark.parametrize("trace", [False, True])
def test_r23_malformed_records_and_illegal_moves_exit_2_naming_ply_and_rule(
    finished: Game, tmp_path: Path, trace: bool
) -> None:
    cases = _cases(finished)
    assert {name for name, *_ in cases} >= TRACED_CASES
    for name, record, where, rule in cases:
        if trace and name not in TRACED_CASES:
            continue
        path = write_record(tmp_path / "bad.json", record)
        out = run_cli("replay", path, *(["--trace"] if trace else []))
        assert out.returncode == 2, (name, out)
        assert "Traceback" not in out.stderr, name
        message = out.stderr.strip()
        assert message.startswith(f"mandala replay: {path}: {where}"), (name, message)
        assert f"rule {rule}:" in message, (name, message)
        assert len(message.splitlines()) == 1, name
        # the same fault, in-process
        if where.startswith("ply"):
            from mandala import RecordError

            with pytest.raises(RecordError) as info:
                replay(record if isinstance(record, dict) else record.encode())
            assert info.value.rule == rule
            if where != "ply":
                assert info.value.ply == int(where.split()[1])


def test_r23_missing_file_exits_2(tmp_path: Path) -> None:
    out = run_cli("replay", tmp_path / "nope.json")
    assert out.returncode == 2 and "nope.json" in out.stderr


def test_r23_selfplay_records_replay_to_the_same_results(tmp_path: Path) -> None:
    records = tmp_path / "records"
    out = run_cli("selfplay", "--games", "6", "--seed", "7", "--records", records)
    assert out.returncode == 0, out.stderr
    stats = json.loads(out.stdout)
    files = sorted(records.iterdir())
    assert [f.name for f in files] == [f"game-{i:06d}.json" for i in range(6)]
    replayed = run_cli("replay", *files)
    assert replayed.returncode == 0, replayed.stderr
    summaries = [json.loads(line) for line in replayed.stdout.splitlines()]
    assert len(summaries) == 6
    reasons = {"river": 0, "deck": 0, "no_moves": 0, "turn_limit": 0}
    wins = [0, 0]
    for i, (f, summary) in enumerate(zip(files, summaries, strict=True)):
        record = json.loads(f.read_bytes())
        assert record["first_player"] == i % 2
        game = replay(record)
        assert summary == expected_summary(game)
        assert game.is_over
        # selfplay deals game i from the seed "7:i"
        assert record["deck"] == [c for c in record_dict(Game.new(seed=f"7:{i}"))["deck"]]  # type: ignore[arg-type]
        reasons[summary["end_reason"]] += 1
        if summary["winner"] is not None:
            wins[summary["winner"]] += 1
    assert stats["games"] == 6
    assert stats["end_reasons"] == reasons
    assert stats["wins"] == wins and stats["draws"] == 6 - sum(wins)
