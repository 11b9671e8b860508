"""``mandala serve``: run the Mandala Arena server (HTTP API, WebSocket, SQLite or PostgreSQL storage)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import gc
import hashlib
import logging
import os
import signal
import socket
import ssl
import sys
from pathlib import Path
from typing import Any


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("serve", help="run the arena server")
    p.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default 8080)")
    p.add_argument("--db", help="SQLite file or postgresql:// URL (default $DATABASE_URL, else mandala.db)")
    p.add_argument("--spool", metavar="FILE",
                   help="where finished games wait while the database fails; put it on another disk "
                        "(default $MANDALA_SPOOL, else beside a SQLite file)")
    p.add_argument("--redis", metavar="URL",
                   help="redis:// URL: run as one node of a cluster; needs --db postgresql://… "
                        "(default $REDIS_URL; without it, one node)")
    p.add_argument("--node", metavar="NAME",
                   help="this node's name, unique in the cluster (default $MANDALA_NODE, else host-port)")
    p.add_argument("--trust-forwarded-for", action="store_true", default=None,
                   help="behind a proxy such as HAProxy: take a client's address from X-Forwarded-For "
                        "(and, with --require-tls, whether it came by TLS from X-Forwarded-Proto)")
    p.add_argument("--tls-cert", metavar="FILE",
                   help="serve HTTPS and WSS with this PEM certificate (and its chain); needs --tls-key "
                        "(default $MANDALA_TLS_CERT)")
    p.add_argument("--tls-key", metavar="FILE", help="the certificate's PEM private key (default $MANDALA_TLS_KEY)")
    p.add_argument("--require-tls", action="store_true", default=None,
                   help="refuse tokens that did not come by TLS (a hello with a token, the token and admin "
                        "requests), except from loopback; for a node a proxy on another machine reaches")
    p.add_argument("--config", type=Path, metavar="FILE", help="TOML file with any setting (flags win over it)")
    p.add_argument("--decision-ms", type=int, metavar="N", help="time per decision in ms (default 5000)")
    p.add_argument("--registration", choices=("open", "admin"), help="who may create bots (default open)")
    p.add_argument("--metrics", choices=("admin", "public", "off"),
                   help="who may scrape GET /metrics: with the admin token, anyone, or no one (default admin)")
    p.add_argument("--ladder-games-per-hour", type=int, metavar="N",
                   help="at most N ladder games a bot starts in any hour (default: no limit)")
    p.add_argument("--log-level", choices=LOG_LEVELS, default=os.environ.get("MANDALA_LOG_LEVEL", "info").lower(),
                   help="info logs connections, ladder events and faults; debug adds every game's start and end "
                        "(default $MANDALA_LOG_LEVEL, else info)")
    p.add_argument("--log-format", choices=LOG_FORMATS,
                   help="text, or one JSON object a line with time, level, logger, message and the game, bot, node "
                        "and request id where known (default $MANDALA_LOG_FORMAT, else text)")
    p.set_defaults(run=run)


LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("text", "json")
GC_THRESHOLD = (50_000, 20, 20)
"""The collector's thresholds for a server: every decision allocates views and frames that die
at once, so young collections are made rarer and the objects made at startup are frozen out
of the full ones (``make load``: about 5 µs less server CPU per decision)."""


def prepare_process() -> None:
    """Before serving: build the engine's move tables (a fixed cost, paid once), then freeze
    everything made so far out of the collector's full passes and make young ones rarer."""
    from mandala.game import build_move_tables

    build_move_tables()
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)


def banner(url: str, admin_token: str, generated: bool, registration: str, prog: str = "mandala",
           db: str = "mandala.db") -> str:
    """What the operator needs to get started, printed once at startup: the database it serves
    among it (a server started in another folder than the last one starts an empty ladder)."""
    file = sqlite_file(db)
    where = _safe(db) if file is None else os.path.abspath(file)
    lines = [
        f"Mandala Arena listening on {url}  (WebSocket: {url.replace('http', 'ws', 1)}/ws)",
        f"Database: {where}",
        "",
        "Create a bot (the token is shown once):",
        f"  {prog} bot create my-bot --server {url}"
        + ("    # with MANDALA_ADMIN_TOKEN set: it reads the token there" if registration == "admin" else ""),
        f"  curl -X POST {url}/api/bots -H 'Content-Type: application/json' -d '{{\"name\": \"my-bot\"}}'"
        + (" -H \"Authorization: Bearer $MANDALA_ADMIN_TOKEN\"" if registration == "admin" else ""),
        *(["  (a certificate of a private authority, or self-signed: add --ca-file CA.pem, curl --cacert CA.pem)"]
          if url.startswith("https://") else []),
        "Then connect to /ws and send {\"type\": \"hello\", \"protocol\": 1, \"token\": \"<token>\"}.",
        f"Registration is {registration}; running games: {url}/api/games?status=running",
    ]
    if generated:
        lines += [
            "",
            "Admin token (generated for this run; set MANDALA_ADMIN_TOKEN or admin_token in --config to keep one):",
            f"  {admin_token}",
        ]
    return "\n".join(lines)


def event_loop() -> tuple[asyncio.AbstractEventLoop, str]:
    """uvloop where it is installed (a dependency on Linux and macOS: a cheaper loop for every
    frame the server reads and writes), else asyncio's own."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop(), "asyncio"
    return uvloop.new_event_loop(), f"uvloop {uvloop.__version__}"


def run(args: argparse.Namespace) -> int:
    from aiohttp import web

    from server.app import create_app
    from server.arena import ARENA
    from server.cluster.bus import ClusterUnavailable
    from server.common import logs
    from server.config import ConfigError, load_settings
    from server.http.tls import tls_context
    from server.ladder.fitting import stop_worker
    from server.recording.recorder import StorageUnavailable
    from server.recording.spool import SpoolError
    from server.storage.base import DatabaseServed, SchemaTooNew

    try:
        settings = load_settings(
            args.config,
            {
                "host": args.host,
                "port": args.port,
                "db": args.db,
                "redis": args.redis,
                "node": args.node,
                "trust_forwarded_for": args.trust_forwarded_for,
                "tls_cert": args.tls_cert,
                "tls_key": args.tls_key,
                "require_tls": args.require_tls,
                "spool_path": args.spool,
                "decision_ms": args.decision_ms,
                "registration": args.registration,
                "ladder_games_per_hour": args.ladder_games_per_hour,
                "metrics": args.metrics,
                "log_format": args.log_format,
            },
        )
        context = None if settings.tls_cert is None or settings.tls_key is None else \
            tls_context(settings.tls_cert, settings.tls_key)
    except ConfigError as e:
        print(f"mandala serve: {e}", file=sys.stderr)
        return 2
    if args.log_level not in LOG_LEVELS:
        print(f"mandala serve: --log-level is one of {', '.join(LOG_LEVELS)}, not {args.log_level!r}", file=sys.stderr)
        return 2
    fault = files_fault(settings.db, settings.spool_path)
    if fault is not None:
        print(f"mandala serve: {fault}", file=sys.stderr)
        return 2
    taken = port_taken(settings.host, settings.port)
    if taken is not None:
        print(f"mandala serve: {taken}", file=sys.stderr)
        return 2
    claim = claim_database(settings.db)
    if isinstance(claim, str):
        print(f"mandala serve: {claim}", file=sys.stderr)
        return 2
    logs.configure(args.log_level, settings.log_format, settings.node_name)
    if settings.redis is not None:
        fault = asyncio.run(cluster_services_fault(settings.db, settings.redis))
        if fault is not None:
            print(f"mandala serve: {fault}", file=sys.stderr)
            return 1
    loop, loop_name = event_loop()
    logging.getLogger("mandala.serve").info("event loop: %s", loop_name)
    asyncio.set_event_loop(loop)
    stop_on_signals(loop)
    app = create_app(settings)
    prepare_process()
    arena = app[ARENA]
    url = f"{'http' if context is None else 'https'}://{settings.host}:{settings.port}"
    prog = sys.argv[0] if Path(sys.argv[0]).name == "mandala" else "mandala"  # e.g. .venv/bin/mandala
    text = banner(url, arena.admin_token, settings.admin_token is None, settings.registration, prog, settings.db)
    try:
        if context is None:
            web.run_app(app, host=settings.host, port=settings.port, print=lambda _: print(text, flush=True), loop=loop,
                        keepalive_timeout=settings.idle_timeout_s, handle_signals=False)
        else:
            run_tls(app, context, text, loop)
    except (SpoolError, SchemaTooNew) as e:
        print(f"mandala serve: {e}", file=sys.stderr)
        return 2
    except DatabaseServed as e:
        print(f"mandala serve: cannot serve {_safe(settings.db)}: {e}", file=sys.stderr)
        return 2
    except ClusterUnavailable as e:
        print(f"mandala serve: {e}", file=sys.stderr)
        return 1
    except StorageUnavailable as e:
        print(f"mandala serve: cannot serve {_safe(settings.db)}: {e}", file=sys.stderr)
        return 1
    finally:
        # The server has stopped and the process is ending: a second Ctrl-C cuts nothing short
        # from here on (the worker's end, the interpreter's), and the exit status stays the stop's.
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        stop_worker()
        if claim is not None:
            claim.close()
    return 0


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def stop_on_signals(loop: asyncio.AbstractEventLoop) -> None:
    """Ctrl-C (SIGINT), SIGTERM and SIGHUP (the terminal closed) stop the server: its running
    games aborted and stored, its worker ended. The first starts the stop; one that comes while
    it runs (a second Ctrl-C) is logged and ignored, since cutting the stop short would leave
    games unstored and a traceback (SIGKILL ends it at once). SIGHUP is left ignored when the
    server was started so (``nohup``: it is to outlive its terminal)."""
    from aiohttp import web

    stopping = False

    def stop(sig: signal.Signals) -> None:
        nonlocal stopping
        if stopping:
            logging.getLogger("mandala.serve").warning("%s: already stopping (SIGKILL ends it at once)", sig.name)
            return
        stopping = True
        raise web.GracefulExit()

    for sig in STOP_SIGNALS:
        if sig != signal.SIGHUP or signal.getsignal(sig) is not signal.SIG_IGN:
            loop.add_signal_handler(sig, stop, sig)


def run_tls(app: Any, context: ssl.SSLContext, text: str, loop: asyncio.AbstractEventLoop) -> None:
    """What ``web.run_app`` does, with the TLS site (``server/http/tls.py``) in place of its
    TCP site: serve until a stop signal (:func:`stop_on_signals`), then shut down as it does."""
    from aiohttp import web

    from server.arena import ARENA
    from server.http.tls import TlsSite, tls_runner

    async def serve() -> None:
        settings = app[ARENA].settings
        runner = tls_runner(app, settings)
        await runner.setup()
        try:
            await TlsSite(runner, settings.host, settings.port, context, settings, app[ARENA].addresses).start()
            print(text, flush=True)
            while True:
                await asyncio.sleep(3600)
        finally:
            await runner.cleanup()

    main = loop.create_task(serve())
    try:
        loop.run_until_complete(main)
    except (web.GracefulExit, KeyboardInterrupt):
        pass
    finally:
        try:
            if not main.done():
                main.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    loop.run_until_complete(main)
        finally:
            rest = asyncio.all_tasks(loop)
            for task in rest:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*rest, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()


def sqlite_file(db: str) -> str | None:
    """The path of the SQLite file ``db`` names (``None``: PostgreSQL, or ``:memory:``)."""
    from server.storage import is_postgres_url

    if is_postgres_url(db) or db == ":memory:":
        return None
    return db.removeprefix("sqlite://") if db.startswith("sqlite:///") else db


SQLITE_HEADER = b"SQLite format 3\x00"


def files_fault(db: str, spool: str | None, verb: str = "serve") -> str | None:
    """Why the SQLite file or the spool cannot be used, if either cannot: asked before the
    server starts, since waiting (``storage_wait_s``, meant for a database that is down for a
    while) cannot mend a mistyped path, a folder that is not writable or a file that is not a
    database. A mistyped path is refused, not served from folders made for it (an empty ladder;
    a spool where nobody looks)."""
    file = sqlite_file(db)
    if file is not None:
        path = os.path.abspath(file)
        why = _unwritable(path, "database")
        if why is None and os.path.isfile(path):
            with open(path, "rb") as f:
                head = f.read(len(SQLITE_HEADER))
            if head and head != SQLITE_HEADER:
                why = "it is not a SQLite database"
        if why is not None:
            return f"cannot {verb} {path}: {why}"
    if spool is not None:
        why = _unwritable(os.path.abspath(spool), "spool")
        if why is not None:
            return f"cannot spool to {os.path.abspath(spool)} (spool_path): {why}"
    return None


def _unwritable(path: str, what: str) -> str | None:
    """Why this process cannot write the file ``path`` and beside it (SQLite's journal, a
    spool's rewrite), if it cannot."""
    folder = os.path.dirname(path)
    if not os.path.isdir(folder):
        return f"its folder {folder} does not exist (a mistyped path? make the folder first)"
    if os.path.isdir(path):
        return f"it is a folder, not a {what} file"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"its folder {folder} is not writable by this user"
    if os.path.exists(path) and not os.access(path, os.R_OK | os.W_OK):
        return "it is not readable and writable by this user"
    return None


def port_taken(host: str, port: int) -> str | None:
    """Why ``host``:``port`` cannot be listened on, if it cannot. Asked before storage is
    opened: a start opens the database, marks the games it holds as running aborted and publishes
    the held records of the pairs it does not continue, so a second server started by mistake
    on a running one's port and database would do that to the running server's games before
    it found the port taken."""
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as e:
        return f"cannot listen on {host}:{port}: {e}"
    for family, kind, proto, _, address in infos:
        with socket.socket(family, kind, proto) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server's own listener
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
            except OSError as e:
                return f"cannot listen on {host}:{port}: {e.strerror or e}"
    return None


def claim_database(db: str) -> socket.socket | str | None:
    """This machine's one ``mandala serve`` of a SQLite file, or why there cannot be another.

    A start marks the games the database holds as running aborted and publishes the held
    records of the pairs it does not continue: a second server on a running one's file (on
    another port, say) would do that to the running server's games. The claim is a Unix
    socket in Linux's abstract namespace named after the file's real path: nothing is written
    to disk or left behind, no file is held open on the database's disk (which may be
    unmounted and mended while the server runs, "Storage faults"), and the kernel gives the
    name up when the process ends, ``kill -9`` included. Elsewhere than Linux, and for
    PostgreSQL (whose nodes share one database), nothing is claimed (``None``); nor for
    SQLite's ``:memory:``, a database of the process alone, not a file another could serve."""
    file = sqlite_file(db)
    if file is None or not sys.platform.startswith("linux"):
        return None
    path = os.path.realpath(file)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(b"\0mandala-serve-sqlite:" + hashlib.sha256(path.encode()).hexdigest().encode())
    except OSError as e:
        sock.close()
        if e.errno != errno.EADDRINUSE:
            return None  # no claim to be had (a sandbox without Unix sockets): serve as before
        return f"{path} is served by another mandala serve on this machine (one database, one server)"
    return sock


PROBE_TIMEOUT_S = 5.0


async def cluster_services_fault(db: str, redis_url: str) -> str | None:
    """Before a cluster node starts: what keeps it from reaching PostgreSQL or Redis, if anything."""
    import asyncpg
    import redis.asyncio as aioredis

    try:
        conn = await asyncpg.connect(db, timeout=PROBE_TIMEOUT_S)
        await conn.close()
    except Exception as e:
        return f"cannot reach PostgreSQL at {_safe(db)}: {e}"
    client = aioredis.Redis.from_url(redis_url, socket_connect_timeout=PROBE_TIMEOUT_S, socket_timeout=PROBE_TIMEOUT_S)
    try:
        await client.ping()
    except Exception as e:
        return f"cannot reach Redis at {_safe(redis_url)}: {e}"
    finally:
        await client.aclose()
    return None


def _safe(url: str) -> str:
    """A URL without its password, for messages."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    return url.replace(f":{parts.password}@", ":***@", 1)
