"""``mandala tournament``: the command against a real ``mandala serve`` process, with bots that
play run as ``mandala-bot`` processes; and its text output on fixed answers."""

from __future__ import annotations

import asyncio
import csv
import gzip
import io
import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from arena_testkit import PROCESS_ADMIN, ServeProcess, free_port, wait_until
from mandala_cli.tournament_cmd import render_list, render_results, render_status

PLAYERS = ["ann", "ben", "cat"]
"""Connected as ``mandala-bot`` processes: they play every game they are given."""
IDLE = ["dot", "eve"]
"""Registered, never connected: a tournament of theirs waits for them."""
CSV_HEADER = "rank,bot,rating,low,high,score,games,wins,draws,losses,forfeits,stronger_than_next"


@dataclass
class Arena:
    url: str
    tmp: Path


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Arena]:
    tmp = tmp_path_factory.mktemp("tournament-cmd")
    config = tmp / "arena.toml"
    config.write_text("messages_per_second = 10000.0\nburst = 10000\n")
    server = ServeProcess(str(tmp / "arena.db"), free_port(), config, tmp / "server.log")
    bots: list[subprocess.Popen[bytes]] = []
    logs = []
    try:
        tokens = asyncio.run(_prepare(server))
        for name in PLAYERS:
            log = (tmp / f"{name}.log").open("wb")
            logs.append(log)
            bots.append(subprocess.Popen(
                [sys.executable, "-m", "mandala_client.cli", "--url", server.url.replace("http", "ws", 1) + "/ws",
                 "--bot", "random", "--max-games", "2"],
                env={**os.environ, "MANDALA_TOKEN": tokens[name]}, stdout=log, stderr=subprocess.STDOUT))
        asyncio.run(_connected(server.url, PLAYERS))
        yield Arena(server.url, tmp)
    finally:
        for bot in bots:
            bot.send_signal(signal.SIGTERM)
        for bot in bots:
            bot.wait(30)
        for log in logs:
            log.close()
        server.kill(signal.SIGTERM)


async def _prepare(server: ServeProcess) -> dict[str, str]:
    async with aiohttp.ClientSession() as http:
        await server.ready(http)
        return await server.create_bots(http, PLAYERS + IDLE)


async def _connected(url: str, names: list[str]) -> None:
    async with aiohttp.ClientSession() as http:

        async def all_in() -> bool:
            async with http.get(url + "/api/bots") as resp:
                bots = {b["name"]: b for b in await resp.json()}
            return all(bots[n]["connected"] for n in names)

        await wait_until(all_in, 60, f"the bots {names} did not connect")


def cli(arena: Arena, *args: str, token: str | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``mandala tournament ACTION --server URL ARGS``; the admin token only in ``$MANDALA_ADMIN_TOKEN``
    when ``token`` is given (tests pass ``--admin-token`` themselves)."""
    env = {k: v for k, v in os.environ.items() if k != "MANDALA_ADMIN_TOKEN"}
    if token is not None:
        env["MANDALA_ADMIN_TOKEN"] = token
    action, *rest = args
    return subprocess.run([sys.executable, "-m", "mandala_cli.main", "tournament", action, "--server", arena.url, *rest],
                          capture_output=True, text=True, timeout=120, env=env, input=stdin)


def get(arena: Arena, path: str) -> Any:
    with urllib.request.urlopen(arena.url + path, timeout=10) as resp:
        return json.load(resp)


def test_create_start_watch_results_and_records(arena: Arena) -> None:
    made = cli(arena, "create", "--name", "cli cup", "--format", "round_robin", "--bots", ",".join(PLAYERS),
               "--games-per-pairing", "2", "--seed", "7", "--start", "--admin-token", PROCESS_ADMIN)
    assert made.returncode == 0, made.stderr
    tid = made.stdout.strip()
    assert made.stdout == tid + "\n" and tid
    assert made.stderr == (f"tournament {tid} created: 'cli cup', round_robin, 3 bots (ann, ben, cat), 6 games planned\n"
                           f"tournament {tid}: running\n")

    watched = cli(arena, "status", tid, "--watch")
    assert watched.returncode == 0, watched.stderr
    progress, summary = watched.stdout.split("\n\n", 1)
    assert progress.splitlines()[-1] == f"finished  [{'#' * 30}]  6/6 games (100%), 0 running, 0 forfeits"
    view = get(arena, f"/api/tournaments/{tid}")
    assert view["state"] == "finished" and view["definition"]["seed"] == 7
    assert summary == render_status(view) + "\n"
    assert f"progress  [{'#' * 30}]  6/6 games (100%), 0 running, 0 forfeits" in summary

    as_json = cli(arena, "status", tid, "--json")
    assert as_json.returncode == 0 and json.loads(as_json.stdout) == view

    table = cli(arena, "results", tid, "--csv")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0] == CSV_HEADER and len(lines) == 1 + len(PLAYERS)
    rows = list(csv.DictReader(io.StringIO(table.stdout)))
    results = get(arena, f"/api/tournaments/{tid}/results")
    assert [r["bot"] for r in rows] == [r["bot"] for r in results["ranking"]]
    assert sorted(r["bot"] for r in rows) == PLAYERS
    assert all(r["games"] == "4" and int(r["wins"]) + int(r["draws"]) + int(r["losses"]) == 4 for r in rows)
    assert [r["rank"] for r in rows] == [str(r["rank"]) for r in results["ranking"]] and rows[0]["rank"] == "1"
    assert rows[-1]["stronger_than_next"] == ""

    text = cli(arena, "results", tid)
    assert text.returncode == 0 and text.stdout == render_results(results) + "\n"
    assert text.stdout.startswith(f"cli cup ({tid}): finished, 6/6 games\n")
    raw = cli(arena, "results", tid, "--json")
    assert raw.returncode == 0 and json.loads(raw.stdout) == results

    out = arena.tmp / "cup.jsonl"
    written = cli(arena, "records", tid, "-o", str(out))
    assert written.returncode == 0, written.stderr
    assert written.stderr == f"6 games written to {out}\n"
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == view["progress"]["planned"] == 6
    assert [r["slot"] for r in records] == list(range(6))
    assert all(set(r["players"]) <= set(PLAYERS) and r["record"] is not None for r in records)
    assert not out.with_name("cup.jsonl.part").exists()
    piped = cli(arena, "records", tid)
    assert piped.returncode == 0 and piped.stdout == out.read_text()
    packed = arena.tmp / "cup.jsonl.gz"  # compressed, as `mandala export` keeps a *.gz
    assert cli(arena, "records", tid, "-o", str(packed)).returncode == 0
    assert gzip.decompress(packed.read_bytes()).decode() == out.read_text()


def test_create_from_a_file_and_the_controls(arena: Arena) -> None:
    definition = {"name": "idle cup", "format": "round_robin", "participants": IDLE, "games_per_pairing": 2,
                  "grace_s": 600}
    path = arena.tmp / "idle.json"
    path.write_text(json.dumps(definition))
    made = cli(arena, "create", "--file", str(path), token=PROCESS_ADMIN)
    assert made.returncode == 0, made.stderr
    tid = made.stdout.strip()
    assert made.stderr == f"tournament {tid} created: 'idle cup', round_robin, 2 bots (dot, eve), 2 games planned\n"

    status = cli(arena, "status", tid)
    assert status.returncode == 0
    assert f"state     created (created {get(arena, f'/api/tournaments/{tid}')['created']})" in status.stdout
    assert f"progress  [{'.' * 30}]  0/2 games (0%), 0 running, 0 forfeits" in status.stdout

    assert cli(arena, "start", tid, token=PROCESS_ADMIN).stdout == "running\n"
    again = cli(arena, "start", tid, token=PROCESS_ADMIN)
    assert again.returncode == 1 and again.stdout == ""
    assert again.stderr == f"error: wrong_state: tournament {tid} is running: it cannot start\n"

    # Neither bot is connected: the tournament waits for both (600 s before they forfeit).
    view = asyncio.run(_waiting_for(arena, tid, IDLE))
    status = cli(arena, "status", tid)
    waiting = [line for line in status.stdout.splitlines() if "away since" in line]
    assert [line[10:].split()[0] for line in waiting] == ["dot:", "eve:"]
    assert waiting[0].startswith(f"waiting   dot: away since {view['waiting'][0]['since']}, forfeits in ")

    assert cli(arena, "pause", tid, token=PROCESS_ADMIN).stdout == "paused\n"
    assert cli(arena, "resume", tid, token=PROCESS_ADMIN).stdout == "running\n"
    assert cli(arena, "cancel", tid, token=PROCESS_ADMIN).stdout == "cancelled\n"
    late = cli(arena, "resume", tid, token=PROCESS_ADMIN)
    assert late.returncode == 1
    assert late.stderr == f"error: wrong_state: tournament {tid} is cancelled: it cannot resume\n"

    watched = cli(arena, "status", tid, "--watch")  # over already: one poll
    assert watched.returncode == 0
    assert watched.stdout.startswith(f"cancelled [{'.' * 30}]  0/2 games (0%), 0 running, 0 forfeits\n\nidle cup ({tid})")
    empty = cli(arena, "records", tid)
    assert empty.returncode == 0 and empty.stdout == ""
    table = cli(arena, "results", tid, "--csv")
    rows = list(csv.DictReader(io.StringIO(table.stdout)))
    assert table.stdout.startswith(CSV_HEADER + "\n") and sorted(r["bot"] for r in rows) == IDLE
    assert all(r["games"] == "0" and r["forfeits"] == "0" for r in rows)


async def _waiting_for(arena: Arena, tid: str, bots: list[str]) -> dict[str, Any]:
    async with aiohttp.ClientSession() as http:

        async def waiting() -> dict[str, Any] | None:
            async with http.get(f"{arena.url}/api/tournaments/{tid}") as resp:
                view: dict[str, Any] = await resp.json()
            return view if [w["bot"] for w in view["waiting"]] == bots else None

        return await wait_until(waiting, 30, "the tournament does not say it waits for its bots")  # type: ignore[no-any-return]


def test_list_shows_the_newest_and_follows_the_pages_with_all(arena: Arena) -> None:
    made = []
    for i in range(3):
        run = cli(arena, "create", "--name", f"listed {i}", "--bots", ",".join(IDLE), token=PROCESS_ADMIN)
        assert run.returncode == 0, run.stderr
        made.append(run.stdout.strip())
    every = get(arena, "/api/tournaments?limit=500")
    assert [t["tournament_id"] for t in every[:3]] == made[::-1]

    newest = cli(arena, "list", "--limit", "2")
    assert newest.returncode == 0, newest.stderr
    assert newest.stdout == render_list(every[:2]) + "\n"
    assert newest.stderr == "(the newest 2; --all lists every one)\n"
    lines = newest.stdout.splitlines()
    assert lines[0].split() == ["id", "name", "format", "state", "games", "running", "created"]
    assert lines[1].split() == [made[2], "listed", "2", "round_robin", "created", "0/2", "0", every[0]["created"]]

    whole = cli(arena, "list", "--limit", "2", "--all")
    assert (whole.returncode, whole.stdout, whole.stderr) == (0, render_list(every) + "\n", "")
    as_json = cli(arena, "list", "--all", "--limit", "1", "--json")
    assert as_json.returncode == 0 and json.loads(as_json.stdout) == every
    for tid in made:
        assert cli(arena, "cancel", tid, token=PROCESS_ADMIN).returncode == 0

    bad = cli(arena, "list", "--limit", "0")
    assert (bad.returncode, bad.stdout) == (1, "")
    assert bad.stderr == "error: invalid_request: limit is a whole number between 1 and 500, not '0'\n"


def test_refusals_exit_1_with_the_servers_code(arena: Arena) -> None:
    unknown = cli(arena, "create", "--name", "x", "--bots", "ann,nobody", "--admin-token", PROCESS_ADMIN)
    assert (unknown.returncode, unknown.stdout, unknown.stderr) == (1, "", "error: unknown_bot: no bot named 'nobody'\n")

    tokenless = cli(arena, "create", "--name", "x", "--bots", "ann,ben")
    assert tokenless.returncode == 1 and tokenless.stdout == ""
    assert tokenless.stderr == ("error: unauthorized: this needs the admin token: Authorization: Bearer <token>\n"
                                "(give the organizer's token with --admin-token or $MANDALA_ADMIN_TOKEN)\n")
    wrong = cli(arena, "create", "--name", "x", "--bots", "ann,ben", token="not-the-token")
    assert (wrong.returncode, wrong.stderr) == (1, "error: forbidden: wrong admin token\n(the admin token was read "
                                                   "from $MANDALA_ADMIN_TOKEN; a server given none makes a new one at "
                                                   "each start and prints it in its banner)\n")
    flag = cli(arena, "create", "--name", "x", "--bots", "ann,ben", "--admin-token", "not-the-token")
    assert flag.returncode == 1 and "(the admin token was read from --admin-token; " in flag.stderr

    swiss = cli(arena, "create", "--name", "x", "--format", "swiss", "--bots", "ann,ben,cat", token=PROCESS_ADMIN)
    assert (swiss.returncode, swiss.stderr) == (1, "error: bad_rounds: a Swiss tournament names its rounds: 1 to 2 for 3 bots\n")
    bad_json = cli(arena, "create", "--file", "-", token=PROCESS_ADMIN, stdin="{not json")
    assert bad_json.returncode == 1 and bad_json.stderr.startswith("error: bad_json: ")

    for args in (["status", "nope"], ["results", "nope", "--csv"], ["records", "nope"], ["start", "nope"]):
        missing = cli(arena, *args, token=PROCESS_ADMIN)
        assert (missing.returncode, missing.stderr) == (1, "error: unknown_tournament: no tournament 'nope'\n"), args
    # An id that begins with "-" goes after "--" (the server makes none such, but one may be asked for).
    dashed = cli(arena, "status", "--", "-nope")
    assert (dashed.returncode, dashed.stderr) == (1, "error: unknown_tournament: no tournament '-nope'\n")
    assert not (arena.tmp / "none.jsonl").exists()
    assert cli(arena, "records", "nope", "-o", str(arena.tmp / "none.jsonl")).returncode == 1
    assert not (arena.tmp / "none.jsonl").exists() and not (arena.tmp / "none.jsonl.part").exists()


def test_an_unreachable_server_exits_1() -> None:
    port = free_port()  # nothing listens there
    done = cli(Arena(f"http://127.0.0.1:{port}", Path()), "status", "abc")
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.startswith(f"error: cannot reach the server at http://127.0.0.1:{port}: ")
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("args", [
    ["create", "--bots", "ann,ben"],  # no --name
    ["create", "--name", "x"],  # no --bots
    ["create", "--name", "x", "--bots", "ann,ben", "--format", "knockout"],
    ["create", "--file", "def.json", "--bots", "ann,ben"],  # --file is the whole definition
    ["create", "--file", "/nonexistent/def.json"],
    ["create", "--name", "x", "--bots", "ann,ben", "--games-per-pairing", "two"],
    ["create", "--name", "x", "--bots", "ann,ben", "--grace-s", "nan"],  # no JSON number
    ["create", "--name", "x", "--bots", "ann,ben", "--grace-s", "inf"],
    ["results", "abc", "--csv", "--json"],
    ["status"],
    ["finish", "abc"],
    ["status", "abc", "--server", "localhost:8080"],  # not an http:// address
    ["status", "abc", "--server", "http://localhost:8080/api"],  # the API's path, which the command adds
])
def test_usage_errors_exit_2(args: list[str]) -> None:
    done = cli(Arena("http://127.0.0.1:9", Path()), *args)
    assert done.returncode == 2 and done.stdout == "" and "usage: mandala tournament" in done.stderr, done.stderr


# ---------------------------------------------------------------------- the text output


RANKING = [
    {"rank": 1, "bot": "ann", "rating": 1612.34, "low": 1490.0, "high": 1734.71, "score": 3.5, "games": 4, "wins": 3,
     "draws": 1, "losses": 0, "forfeits": 0, "stronger_than_next": 0.8123},
    {"rank": 2, "bot": "benjamin", "rating": 1450.0, "low": 1320.5, "high": 1579.5, "score": 1.0, "games": 4, "wins": 1,
     "draws": 0, "losses": 3, "forfeits": 2, "stronger_than_next": 0.5},
    {"rank": 3, "bot": "cat", "rating": 1437.7, "low": 1300.1, "high": 1575.3, "score": 1.5, "games": 4, "wins": 1,
     "draws": 1, "losses": 2, "forfeits": 0, "stronger_than_next": None},
]
CROSSTABLE = {
    "ann": {"benjamin": {"games": 2, "wins": 2, "draws": 0, "losses": 0, "score": 2.0},
            "cat": {"games": 2, "wins": 1, "draws": 1, "losses": 0, "score": 1.5}},
    "benjamin": {"ann": {"games": 2, "wins": 0, "draws": 0, "losses": 2, "score": 0.0},
                 "cat": {"games": 2, "wins": 1, "draws": 0, "losses": 1, "score": 1.0}},
    "cat": {"ann": {"games": 2, "wins": 0, "draws": 1, "losses": 1, "score": 0.5},
            "benjamin": {"games": 2, "wins": 1, "draws": 0, "losses": 1, "score": 1.0}},
}
TABLE = """\
rank  bot       rating      95% interval  score  W/D/L  forfeits  > next
   1  ann       1612.3  [1490.0, 1734.7]    3.5  3/1/0         0   81.2%
   2  benjamin  1450.0  [1320.5, 1579.5]    1.0  1/0/3         2   50.0%
   3  cat       1437.7  [1300.1, 1575.3]    1.5  1/1/2         0"""


def test_status_text() -> None:
    view = {
        "tournament_id": "T1", "name": "cup", "format": "swiss", "state": "running",
        "definition": {"name": "cup", "format": "swiss", "participants": ["ann", "benjamin", "cat", "dot"],
                       "games_per_pairing": 2, "rounds": 3, "bot_under_test": None, "decision_ms": 5000,
                       "max_concurrent": 8, "max_games_per_bot": 2, "grace_s": 60.0, "seed": 1},
        "created": "2030-01-01T10:00:00Z", "started": "2030-01-01T10:01:00Z", "ended": None,
        "progress": {"planned": 12, "played": 5, "running": 2, "forfeits": 2},
        "rounds": 2,
        "running": [
            {"game_id": "g1", "players": ["ann", "cat"], "kind": "tournament", "rated": False, "pair_id": None,
             "status": "running", "started": "2030-01-01T10:05:00Z", "ended": None, "ply": 14, "result": None,
             "tournament_id": "T1"},
            {"game_id": "g2", "players": ["cat", "ann"], "kind": "tournament", "rated": False, "pair_id": None,
             "status": "running", "started": "2030-01-01T10:05:00Z", "ended": None, "ply": 3, "result": None,
             "tournament_id": "T1"},
        ],
        "waiting": [  # as PROTOCOL.md §21.11 shows them: busy on the ladder (no forfeit for that), and away
            {"bot": "benjamin", "reason": "busy", "since": "2030-01-01T10:04:30Z", "forfeits_in_s": None,
             "busy_with": [{"game_id": "x1", "kind": "ladder", "opponent": "eve"}]},
            {"bot": "dot", "reason": "away", "since": "2030-01-01T10:04:00Z", "forfeits_in_s": 12.5, "busy_with": []},
            {"bot": "eve", "reason": "away", "since": "2030-01-01T10:03:00Z", "forfeits_in_s": 0, "busy_with": []},
        ],
        "ranking": RANKING,
        "crosstable": CROSSTABLE,
    }
    assert render_status(view) == f"""\
cup (T1): swiss, 4 bots, 2 games a pairing, 5000 ms a decision
state     running, round 2 of 3 (created 2030-01-01T10:00:00Z, started 2030-01-01T10:01:00Z)
progress  [############..................]  5/12 games (41%), 2 running, 2 forfeits
running   g1  ann vs cat, ply 14
          g2  cat vs ann, ply 3
waiting   benjamin: busy since 2030-01-01T10:04:30Z with ladder x1 against eve
          dot: away since 2030-01-01T10:04:00Z, forfeits in 12.5 s
          eve: away since 2030-01-01T10:03:00Z, forfeits its games as they come due

{TABLE}"""


def test_results_text() -> None:
    results = {"tournament_id": "T1", "name": "cup", "state": "finished", "planned": 6, "played": 6,
               "ranking": RANKING, "crosstable": CROSSTABLE}
    assert render_results(results) == f"""\
cup (T1): finished, 6/6 games

{TABLE}

crosstable: the row's points/games against the column
                 1    2      3
1  ann           *  2/2  1.5/2
2  benjamin    0/2    *    1/2
3  cat       0.5/2  1/2      *"""


def test_list_text() -> None:
    assert render_list([]) == "no tournament"
    listed = [{"tournament_id": "jqd6u8Y3", "name": "spring cup", "format": "round_robin", "state": "running",
               "participants": ["alice", "bob", "carol"], "created": "2026-11-23T22:36:15.618Z",
               "started": "2026-11-23T22:36:17.601Z", "ended": None,
               "progress": {"planned": 12, "played": 4, "running": 1, "forfeits": 0}},
              {"tournament_id": "B42MdrTB", "name": "autumn", "format": "swiss", "state": "finished",
               "participants": ["alice", "bob"], "created": "2026-11-23T22:35:44.822Z", "started": None, "ended": None,
               "progress": {"planned": 112, "played": 112, "running": 0, "forfeits": 8}}]
    assert render_list(listed) == (
        "id        name        format       state     games    running  created\n"
        "jqd6u8Y3  spring cup  round_robin  running   4/12           1  2026-11-23T22:36:15.618Z\n"
        "B42MdrTB  autumn      swiss        finished  112/112        0  2026-11-23T22:35:44.822Z")
