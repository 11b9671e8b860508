"""Settings loading and the ``mandala serve`` / ``mandala bot create`` commands."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from arena_testkit import BIN, ServeProcess, exit_of, free_port
from mandala_cli.http_client import DEFAULT_SERVER
from mandala_cli.main import build_parser, main
from mandala_cli.serve_cmd import banner
from mandala_cli.tournament_cmd import CONTROLS
from server.config import ConfigError, Settings, load_settings


def test_settings_precedence(tmp_path: Path) -> None:
    config = tmp_path / "arena.toml"
    config.write_text('port = 9000\ndecision_ms = 2000\nregistration = "admin"\nadmin_token = "from-file"\n')
    s = load_settings(config, {"port": 9100, "db": None}, environ={})
    assert (s.port, s.decision_ms, s.registration, s.admin_token, s.db) == (9100, 2000, "admin", "from-file", "mandala.db")
    s = load_settings(config, {}, environ={"MANDALA_ADMIN_TOKEN": "from-env"})
    assert s.admin_token == "from-env"
    with pytest.raises(ConfigError, match="admin_token"):  # the organizer would be locked out
        load_settings(None, environ={"MANDALA_ADMIN_TOKEN": "  "})
    assert load_settings(None, {}, environ={}) == Settings()
    config.write_text("colour = 3\n")
    with pytest.raises(ConfigError) as bad:
        load_settings(config, environ={})
    assert str(bad.value) == f"{config}: bad setting: Object contains unknown field `colour`"  # which file said it
    with pytest.raises(ConfigError) as bad:  # and which variable
        load_settings(None, environ={"MANDALA_LOG_FORMAT": "yaml"})
    assert str(bad.value) == "$MANDALA_LOG_FORMAT: bad setting: Invalid enum value 'yaml' - at `$.log_format`"
    # A file saved with a byte-order mark reads as without; one in another encoding is one line.
    config.write_bytes(b"\xef\xbb\xbfport = 9001\n")
    assert load_settings(config, environ={}).port == 9001
    config.write_bytes("port = 9001\n".encode("utf-16"))
    with pytest.raises(ConfigError) as bad:
        load_settings(config, environ={})
    assert str(bad.value) == f"{config}: not UTF-8 text (a TOML file is UTF-8: save it so)"
    config.write_text('registration = "everyone"\n')
    with pytest.raises(ConfigError, match="registration"):
        load_settings(config, environ={})
    with pytest.raises(ConfigError):
        load_settings(tmp_path / "missing.toml", environ={})


@pytest.mark.parametrize("line", ["pairing_spread = 0", "pairing_interval_s = -1", "pairing_wait_s = 1e9",
                                  "pairing_max_lead = 0", "return_wait_s = -5", "qualification_pairs = 0",
                                  'admin_token = ""', 'admin_token = "  "', 'admin_token = "two words"',
                                  "decision_ms = -5", "decision_ms = 0", "port = 70000", "port = -1", "burst = 0",
                                  "messages_per_second = -1", "max_games = 0", "max_games = 65", "heartbeat_s = 0",
                                  "hello_timeout_s = -1", "max_frame_bytes = 0", "send_queue_max = 0",
                                  "finished_cache = -1", "storage_timeout_s = -1", "storage_probe_s = 0",
                                  "storage_wait_s = -1", "elo_k = -16", "elo_provisional_games = -1",
                                  "challenge_expiry_s = -1", "flood_after = -1", "registrations_per_hour = -1",
                                  "messages_per_second_per_ip = -1", "burst_per_ip = 0",
                                  "requests_per_second_per_ip = -1", "request_burst_per_ip = 0"])
def test_a_setting_out_of_range_stops_the_server_naming_it(tmp_path: Path, line: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "arena.toml"
    config.write_text(line + "\n")
    name = line.split()[0]
    with pytest.raises(ConfigError, match=name):
        load_settings(config, environ={})
    assert main(["serve", "--config", str(config), "--db", str(tmp_path / "x.db")]) == 2
    assert f"$.{name}" in capsys.readouterr().err
    assert not (tmp_path / "x.db").exists()


def test_banner_says_how_to_start() -> None:
    text = banner("http://127.0.0.1:8080", "S3CRET", True, "open", ".venv/bin/mandala", "arena.db")
    assert "http://127.0.0.1:8080" in text and "ws://127.0.0.1:8080/ws" in text
    assert f"\nDatabase: {Path('arena.db').resolve()}\n" in text  # the whole path: which ladder this is
    assert "\nDatabase: postgresql://arena:***@db:5432/arena\n" in banner(
        "http://h:1", "S3CRET", False, "open", db="postgresql://arena:pw@db:5432/arena")
    assert ".venv/bin/mandala bot create my-bot --server http://127.0.0.1:8080" in text
    assert "curl -X POST http://127.0.0.1:8080/api/bots" in text
    assert "S3CRET" in text
    assert "S3CRET" not in banner("http://h:1", "S3CRET", False, "admin")
    assert "--ca-file" not in text and "  (a certificate of a private authority, or self-signed: add --ca-file CA.pem" \
        in banner("https://h:1", "S3CRET", False, "open")


def test_a_database_or_spool_path_that_cannot_serve_is_refused_at_once_and_nothing_is_made(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A mistyped ``--db`` would serve an empty ladder from folders made for it, and a file that
    is not a database (or a folder) would be retried for ``storage_wait_s`` (five minutes), as if
    a disk were coming back; a spool where it cannot be written would fail only when it is needed
    (the database down). Each is one line naming the whole path and why, exit 2, before anything."""
    db = tmp_path / "no" / "such" / "arena.db"
    (tmp_path / "cert.pem").write_text("-----BEGIN CERTIFICATE-----\n")
    (tmp_path / "a-folder").mkdir()
    good = str(tmp_path / "arena.db")
    cases = [
        (["--db", str(db)], f"cannot serve {db}: its folder {db.parent} does not exist (a mistyped path? make the "
                            "folder first)"),
        (["--db", f"sqlite://{db}"], f"cannot serve {db}: its folder {db.parent} does not exist (a mistyped path? "
                                     "make the folder first)"),
        (["--db", str(tmp_path / "a-folder")], f"cannot serve {tmp_path / 'a-folder'}: it is a folder, not a "
                                               "database file"),
        (["--db", str(tmp_path / "cert.pem")], f"cannot serve {tmp_path / 'cert.pem'}: it is not a SQLite database"),
        (["--db", good, "--spool", str(tmp_path / "nope" / "spool.jsonl")],
         f"cannot spool to {tmp_path / 'nope' / 'spool.jsonl'} (spool_path): its folder {tmp_path / 'nope'} does not "
         "exist (a mistyped path? make the folder first)"),
        (["--db", good, "--spool", str(tmp_path / "a-folder")],
         f"cannot spool to {tmp_path / 'a-folder'} (spool_path): it is a folder, not a spool file"),
    ]
    for flags, said in cases:
        assert main(["serve", "--port", str(free_port()), *flags]) == 2, flags
        assert capsys.readouterr().err == f"mandala serve: {said}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-folder", "cert.pem"]  # nothing made
    assert list((tmp_path / "a-folder").iterdir()) == []


async def test_bot_create_command(make_arena: Any, capsys: Any) -> None:
    arena = await make_arena(registration="admin")
    url = str(arena.client.make_url("/")).rstrip("/")
    code = await asyncio.to_thread(main, ["bot", "create", "cli-bot", "--server", url, "--admin-token", "admin-secret-token"])
    out = capsys.readouterr().out
    assert code == 0 and "cli-bot" in out
    token = out.strip().splitlines()[-1]
    await arena.connect(token)  # the printed token works
    # --url, its name before --server, still works (hidden).
    code = await asyncio.to_thread(main, ["bot", "create", "cli-bot", "--url", url, "--admin-token", "admin-secret-token"])
    assert code == 1 and "error: name_taken: " in capsys.readouterr().err
    code = await asyncio.to_thread(main, ["bot", "create", "cli-bot2", "--url", url, "--admin-token", "admin-secret-token"])
    assert code == 0 and "bot cli-bot2 created" in capsys.readouterr().out
    code = await asyncio.to_thread(main, ["bot", "create", "other", "--url", url, "--admin-token", ""])
    assert code == 1 and "error: unauthorized: " in capsys.readouterr().err


def _leaves(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], argparse.ArgumentParser]:
    """Every command of the parser that takes options of its own, by its words (``("bot", "create")``)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return {path: parser}
    found = {}
    for name, child in subs[0].choices.items():
        found.update(_leaves(child, path + (name,)))
    return found


def test_every_command_that_talks_to_a_server_names_it_server_and_still_takes_url() -> None:
    leaves = _leaves(build_parser())
    talking = {path for path, p in leaves.items() if "--server" in p._option_string_actions}
    assert talking == {("bot", "create"), ("bot", "rotate"), ("bot", "revoke"), ("export",), ("tournament", "create"), ("tournament", "status"),
                       ("tournament", "results"), ("tournament", "records"), ("tournament", "list")} | {
        ("tournament", op) for op in CONTROLS}
    # No command names the server any other way (serve and demo run one: --host and --port).
    assert not [path for path, p in leaves.items() if "--url" in p._option_string_actions and path not in talking]
    for path in talking:
        parser = leaves[path]
        assert "--server URL" in parser.format_help() and "--url" not in parser.format_help()
        needs = {("bot", "create"): ["NAME"], ("bot", "rotate"): ["NAME"], ("bot", "revoke"): ["NAME"], ("export",): [],
                 ("tournament", "create"): [], ("tournament", "list"): []}.get(path, ["ID"])
        for flag in ("--server", "--url"):
            args = parser.parse_args([*needs, flag, "http://arena.example:9000/"])
            assert args.server == "http://arena.example:9000"
        assert parser.parse_args(needs).server == DEFAULT_SERVER == "http://127.0.0.1:8080"


def test_the_log_format_and_the_metrics_from_file_environment_and_flag(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "arena.toml"
    config.write_text('log_format = "json"\nmetrics = "public"\nmetrics_max_age_s = 5\n')
    s = load_settings(config, {}, environ={})
    assert (s.log_format, s.metrics, s.metrics_max_age_s) == ("json", "public", 5.0)
    assert load_settings(None, {}, environ={"MANDALA_LOG_FORMAT": "json"}).log_format == "json"
    s = load_settings(config, {"log_format": "text", "metrics": "off"}, environ={"MANDALA_LOG_FORMAT": "json"})
    assert (s.log_format, s.metrics) == ("text", "off")  # a flag wins
    for line in ('log_format = "xml"', 'metrics = "everyone"', "metrics_max_age_s = -1"):
        config.write_text(line + "\n")
        name = line.split()[0]
        with pytest.raises(ConfigError, match=name):
            load_settings(config, environ={})
        assert main(["serve", "--config", str(config), "--db", str(tmp_path / "x.db")]) == 2
        assert f"$.{name}" in capsys.readouterr().err
    assert not (tmp_path / "x.db").exists()


async def test_the_organizers_token_commands_as_the_guide_gives_them(make_arena: Any, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: Any) -> None:
    """docs/running-a-competition.md: create into a token file (its folder made), revoke, and
    rotate with the revoked token still in the file: the admin token reissues it."""
    arena = await make_arena(registration="admin")
    url = str(arena.client.make_url("/")).rstrip("/")
    monkeypatch.setenv("MANDALA_ADMIN_TOKEN", "admin-secret-token")
    monkeypatch.delenv("MANDALA_TOKEN", raising=False)
    file = tmp_path / "tokens" / "entrant-7.token"  # a folder that does not exist yet
    assert await asyncio.to_thread(main, ["bot", "create", "entrant-7", "--server", url, "--token-file", str(file)]) == 0
    first = file.read_text().strip()
    assert oct(file.parent.stat().st_mode & 0o777) == "0o700" and oct(file.stat().st_mode & 0o777) == "0o600"
    assert await asyncio.to_thread(main, ["bot", "revoke", "entrant-7", "--server", url]) == 0
    assert await asyncio.to_thread(main, ["bot", "rotate", "entrant-7", "--server", url, "--token-file", str(file)]) == 0
    second = file.read_text().strip()
    assert second != first
    capsys.readouterr()
    await arena.connect(second)  # the reissued token works
    # A token file that cannot be written is refused before the server is asked: no bot is made.
    (tmp_path / "taken").mkdir()
    code = await asyncio.to_thread(main, ["bot", "create", "entrant-8", "--server", url, "--token-file",
                                          str(tmp_path / "taken")])
    assert code == 1 and "nothing was asked of the server" in capsys.readouterr().err
    # Nor is a file that holds a token already (a command copied from the last bot's): it stays as it was.
    code = await asyncio.to_thread(main, ["bot", "create", "entrant-8", "--server", url, "--token-file", str(file)])
    assert code == 1 and capsys.readouterr().err == (
        f"mandala bot create: error: {file} exists (another bot's token?): give a file that does not, or remove it "
        "first; nothing was asked of the server\n")
    assert file.read_text().strip() == second
    assert [b["name"] for b in await arena.get_json("/api/bots")] == ["entrant-7"]
    # An empty file (made ready for the token, say) is no one's token: it is written.
    (tmp_path / "empty.token").touch()
    assert await asyncio.to_thread(main, ["bot", "create", "entrant-9", "--server", url, "--token-file",
                                          str(tmp_path / "empty.token")]) == 0
    capsys.readouterr()
    # A name that begins with "-": the revoke's advice is a command that can be typed as shown.
    assert await asyncio.to_thread(main, ["bot", "create", "--server", url, "--", "-dash"]) == 0
    capsys.readouterr()
    assert await asyncio.to_thread(main, ["bot", "revoke", "--server", url, "--", "-dash"]) == 0
    advice = capsys.readouterr().out
    assert "until `mandala bot rotate -- -dash` (with the admin token)" in advice
    assert await asyncio.to_thread(main, ["bot", "rotate", "--server", url, "--", "-dash"]) == 0


def test_a_database_of_a_newer_release_stops_the_server_with_one_line(tmp_path: Path) -> None:
    """A rollback, or an older node beside newer ones: refused at start, naming both versions,
    as a bad setting is (exit 2, no traceback), and the database is not migrated."""
    db = tmp_path / "future.db"
    assert subprocess.run([str(BIN / "mandala"), "history", "synth", "--db", str(db), "--games", "3"],
                          capture_output=True, timeout=120).returncode == 0
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO schema_version VALUES (999)")
    done = subprocess.run([str(BIN / "mandala"), "serve", "--port", str(free_port()), "--db", str(db)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.endswith("has schema version 999; this server knows up to "
                                f"{_sqlite_schema()}: it was written by a newer release\n")
    assert "Traceback" not in done.stderr and done.stderr.count("mandala serve: ") == 1
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT version FROM schema_version ORDER BY version").fetchall()[-2:] == [
            (_sqlite_schema(),), (999,)]


def test_a_database_that_cannot_be_opened_stops_the_server_naming_it(tmp_path: Path) -> None:
    """Storage is waited for ``storage_wait_s`` at start (a disk not mounted yet); then the
    server stops with one line naming the database and why (it ended in a traceback that
    named neither)."""
    config = tmp_path / "arena.toml"
    config.write_text("storage_wait_s = 0\n")
    done = subprocess.run([str(BIN / "mandala"), "serve", "--port", str(free_port()), "--db", "/proc/arena.db",
                           "--config", str(config)], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        "mandala serve: cannot serve /proc/arena.db: storage did not open in 0 s (storage_wait_s): "
        "unable to open database file (sqlite3.OperationalError)")


async def _second_serve(tmp_path: Path, *, same_port: bool) -> tuple[int, str, str, str]:
    """A server with a game running, and ``mandala serve`` run again by mistake on its database
    (on its port, or on another): the second one's exit status and stderr, and the game's
    status as the database and the running server then say. The first one is then stopped
    (``SIGTERM``): its log says it aborted the game."""
    db, port, log = str(tmp_path / "arena.db"), free_port(), tmp_path / "server.log"
    config = tmp_path / "arena.toml"
    config.write_text("decision_ms = 600000\n")
    async with aiohttp.ClientSession() as http:
        server = ServeProcess(db, port, config, log)
        try:
            await server.ready(http)
            ws, game_id = await server.game_between(http, ["ann", "bob"])
            again = await asyncio.create_subprocess_exec(
                str(BIN / "mandala"), "serve", "--port", str(port if same_port else free_port()), "--db", db,
                cwd=tmp_path, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE)
            code, err = await exit_of(again, 30)  # one that serves is killed and fails the test
            with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
                (stored,), = conn.execute("SELECT status FROM games WHERE id = ?", (game_id,)).fetchall()
            async with http.get(f"http://127.0.0.1:{port}/api/games/{game_id}") as resp:
                served = (await resp.json())["status"]
            for conn in ws:
                await conn.close()
        finally:
            stopped = server.kill(signal.SIGTERM)
    said = log.read_text()
    assert stopped == 0 and "stopping: 1 running game(s) aborted" in said and said.rstrip().endswith("stopped"), said
    return code, err, stored, served


async def test_sighup_stops_the_server_as_sigterm_does_unless_started_with_nohup(tmp_path: Path) -> None:
    """Its terminal closed (SIGHUP), the server stops cleanly: its running game aborted and
    stored, its worker ended, nothing leaked. Started with SIGHUP ignored (``nohup``), it serves on."""
    config = tmp_path / "arena.toml"
    config.write_text("decision_ms = 600000\n")
    async with aiohttp.ClientSession() as http:
        kept = ServeProcess(str(tmp_path / "kept.db"), free_port(), config, tmp_path / "kept.log", ignore_hangup=True)
        try:
            await kept.ready(http)
            kept.proc.send_signal(signal.SIGHUP)
            await kept.game_between(http, ["cat", "dan"])  # it still serves: a game starts on it
            assert kept.proc.poll() is None
        finally:
            assert kept.kill(signal.SIGTERM) == 0
        db, log = str(tmp_path / "arena.db"), tmp_path / "server.log"
        server = ServeProcess(db, free_port(), config, log)
        try:
            await server.ready(http)
            ws, game_id = await server.game_between(http, ["ann", "bob"])
        finally:
            stopped = server.kill(signal.SIGHUP)
        for conn in ws:
            await conn.close()
    said = log.read_text()
    assert stopped == 0 and "stopping: 1 running game(s) aborted" in said and said.rstrip().endswith("stopped"), said
    assert "leaked" not in said and "Traceback" not in said, said
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        assert conn.execute("SELECT status FROM games WHERE id = ?", (game_id,)).fetchall() == [("aborted",)]


async def test_a_second_ctrl_c_while_the_server_stops_leaves_no_traceback(tmp_path: Path) -> None:
    """A terminal's Ctrl-C pressed twice: whenever the second comes while the server stops (its
    worker is ended last), the server stops as after one, without a traceback."""
    config = tmp_path / "arena.toml"
    config.write_text("decision_ms = 600000\n")
    async with aiohttp.ClientSession() as http:
        for gap in (0.0, 0.01, 0.03, 0.1, 0.3):
            log = tmp_path / f"server-{gap}.log"
            server = ServeProcess(str(tmp_path / f"arena-{gap}.db"), free_port(), config, log)
            await server.ready(http)
            assert len(server.family()) >= 1  # the standings' worker, which the end of a stop joins
            server.proc.send_signal(signal.SIGINT)
            await asyncio.sleep(gap)
            assert server.kill(signal.SIGINT) == 0
            said = log.read_text()
            assert said.rstrip().endswith("stopped") and "Traceback" not in said and "KeyboardInterrupt" not in said, said


async def test_a_second_server_on_a_taken_port_stops_before_it_touches_the_database(tmp_path: Path) -> None:
    """It stops with one line before opening storage, so the running server's game is not
    marked aborted under it (nor its held records published)."""
    code, err, stored, served = await _second_serve(tmp_path, same_port=True)
    assert (code, stored, served) == (2, "running", "running")
    assert err.startswith("mandala serve: cannot listen on 127.0.0.1:") and err.endswith(": Address already in use\n")


async def test_a_second_server_on_the_same_sqlite_file_is_refused(tmp_path: Path) -> None:
    """On another port it would serve beside the first one, having marked its running game
    aborted as it started: it is refused, naming the file, and the game plays on."""
    code, err, stored, served = await _second_serve(tmp_path, same_port=False)
    assert (code, stored, served) == (2, "running", "running")
    assert err == (f"mandala serve: {(tmp_path / 'arena.db').resolve()} is served by another mandala serve "
                   "on this machine (one database, one server)\n")



async def test_two_servers_on_in_memory_databases_both_serve(tmp_path: Path) -> None:
    """``--db :memory:`` is a database of the process alone, none other's: a second one is not
    refused as if they shared a file."""
    config = tmp_path / "arena.toml"
    config.write_text("")
    servers = [ServeProcess(":memory:", free_port(), config, tmp_path / f"server{i}.log", "--spool",
                            str(tmp_path / f"spool{i}.jsonl")) for i in range(2)]
    try:
        async with aiohttp.ClientSession() as http:
            for server in servers:
                await server.ready(http)
    finally:
        for server in servers:
            server.kill()

def _sqlite_schema() -> int:
    from server.storage.sqlite_schema import SCHEMA_VERSION

    return SCHEMA_VERSION
