"""Server settings: one immutable struct, filled from defaults, a TOML file, the environment
and command-line flags, in that order of precedence (later wins).

Every limit the server enforces lives here so tests can shrink clocks and buckets instead of
sleeping, and so ``welcome`` can tell bots the exact numbers.
"""

from __future__ import annotations

import os
import re
import socket
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from .ratings.elo import EloSettings

Registration = Literal["open", "admin"]
LogFormat = Literal["text", "json"]
MetricsAccess = Literal["admin", "public", "off"]

HARD_FRAME_CAP = 1 << 20
"""The largest frame read: one above 1 MiB is refused by aiohttp itself (close 1009) before the
server sees it; frames between ``max_frame_bytes`` and this get ``frame_too_large``."""


def max_msg_size(largest_frame: int) -> int:
    """aiohttp's ``max_msg_size`` that reads frames up to ``largest_frame`` bytes: it refuses a
    frame of ``max_msg_size`` bytes itself."""
    return largest_frame + 1


class Settings(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """Everything configurable about one server instance."""

    host: str = "127.0.0.1"
    port: Annotated[int, Meta(ge=0, le=65535)] = 8080
    """0: any free port (for tests); above 65535 there is no such port."""
    db: str = "mandala.db"
    """A SQLite file, or a ``postgresql://`` URL for PostgreSQL (env ``DATABASE_URL`` sets it too)."""
    redis: str | None = None
    """A ``redis://`` URL: run as one node of a cluster (needs PostgreSQL; env ``REDIS_URL``)."""
    trust_forwarded_for: bool = False
    """Behind a proxy (HAProxy's ``option forwardfor``): a client's address is the last one in
    its ``X-Forwarded-For`` (for the registration limit and the logs), not the proxy's. Only
    where nothing but the proxy can reach the server."""
    tls_cert: str | None = None
    """A PEM file with the server's certificate (and any intermediate certificates after it):
    serve HTTPS and WSS on ``port`` instead of HTTP and WS (env ``MANDALA_TLS_CERT``; needs
    ``tls_key``)."""
    tls_key: str | None = None
    """The PEM file of the certificate's private key (env ``MANDALA_TLS_KEY``)."""
    tls_handshake_timeout_s: Annotated[float, Meta(gt=0, le=300)] = 10.0
    """A client that has not finished its TLS handshake within this long is closed. From its
    first byte to its close, a TLS connection holds one of its address's ``connections_per_ip``."""
    idle_timeout_s: Annotated[float, Meta(gt=0, le=3600)] = 75.0
    """An HTTP connection with no request in progress (before its first, or after an answer) is
    closed after this long, so that connections opened and left silent do not pile up. A
    WebSocket is never idle so: its heartbeat (``heartbeat_s``) watches it."""
    require_tls: bool = False
    """Refuse tokens that did not come by TLS: a ``hello`` with a token (close 4012) and the
    HTTP requests that carry or issue a token (403 ``tls_required``), unless the connection
    arrived by TLS (here, or through a trusted proxy whose ``X-Forwarded-Proto`` says
    ``https``) or the client is on loopback. For a node a proxy on another machine reaches
    (docs/operating.md, "On the internet")."""
    node: str | None = None
    """This node's name in the cluster, unique among its nodes (env ``MANDALA_NODE``; default
    the host name and port)."""
    log_format: LogFormat = "text"
    """The log on standard error: lines for a person, or one JSON object a line
    (``server/common/logs.py``; env ``MANDALA_LOG_FORMAT``)."""
    decision_ms: Annotated[int, Meta(ge=10, le=600_000)] = 5000
    """Time a bot has for one decision, measured by the server from sending ``decision``."""
    registration: Registration = "open"
    """``open``: anyone may create a bot (rate-limited per IP); ``admin``: only with the admin token."""
    admin_token: Annotated[str, Meta(pattern=r"^\S+$")] | None = None
    """Bearer token for admin API calls; generated at start (and printed) when not configured.
    One that is empty or holds a space is refused at start: no request could ever give it."""
    metrics: MetricsAccess = "admin"
    """Who may scrape ``GET /metrics``: ``admin`` (with the admin token, as a bearer token),
    ``public`` (anyone: for a port only the monitoring network reaches) or ``off`` (404)."""
    metrics_max_age_s: Annotated[float, Meta(ge=0, le=60)] = 1.0
    """A scrape within this many seconds of the last one gets the same exposition (written
    once, so a scraper that asks too often costs the games little; 0: written for each)."""
    registrations_per_hour: Annotated[int, Meta(ge=0)] = 10
    max_frame_bytes: Annotated[int, Meta(ge=1024, le=HARD_FRAME_CAP)] = 16384
    messages_per_second: Annotated[float, Meta(gt=0)] = 20.0
    burst: Annotated[int, Meta(ge=1)] = 40
    flood_after: Annotated[int, Meta(ge=0)] | None = None
    """Refused messages in a row before a connection is closed for flooding; ``None`` means ``burst``."""
    messages_per_second_per_ip: Annotated[float, Meta(ge=0)] = 200.0
    """Frames a second all of one client address's ``/ws`` connections may send together (for
    IPv6, its /64; 0: no such limit), beside each connection's own ``messages_per_second``:
    a client may hold ``connections_per_ip`` connections. The addresses of
    ``connections_per_ip_exempt`` have no such limit, and a bot's first answer to each of its
    decisions counts against neither."""
    burst_per_ip: Annotated[int, Meta(ge=1)] = 400
    requests_per_second_per_ip: Annotated[float, Meta(ge=0)] = 50.0
    """HTTP requests a second one client address may make (for IPv6, its /64; 0: no limit),
    WebSocket upgrades and requests with the admin token aside; the addresses of
    ``connections_per_ip_exempt`` have no such limit (``server/http/budget.py``)."""
    request_burst_per_ip: Annotated[int, Meta(ge=1)] = 200
    max_games: Annotated[int, Meta(ge=1, le=64)] = 64
    """Upper bound on a connection's ``max_games``."""
    heartbeat_s: Annotated[float, Meta(gt=0, le=3600)] = 20.0
    hello_timeout_s: Annotated[float, Meta(gt=0, le=3600)] = 10.0
    challenge_expiry_s: Annotated[float, Meta(gt=0, le=86_400)] = 30.0
    max_open_challenges: Annotated[int, Meta(ge=0)] = 8
    """Open challenges one bot may have at a time (so no bot can be buried in ``challenged``)."""
    send_queue_max: Annotated[int, Meta(ge=1)] = 4096
    """Frames queued for one connection before it is dropped as too slow to read."""
    finished_cache: Annotated[int, Meta(ge=0)] = 512
    """Finished games kept in memory (so late moves get ``game_over``, not ``unknown_game``)."""

    # The audience: /live viewers and spectators (docs/running-a-competition.md, "The page and /live").
    live_batches_per_second: Annotated[float, Meta(gt=0, le=50)] = 4.0
    """At most this many frames a second reach a viewer of ``/live``: what happened meanwhile
    goes in one batch, encoded once for every viewer."""
    spectator_flushes_per_second: Annotated[float, Meta(gt=0, le=100)] = 10.0
    """How often the updates of watched games are written to their spectators (each spectator
    gets every update, several in one write)."""
    audience_budget_ms: Annotated[float, Meta(gt=0, le=100)] = 0.25
    """The longest the event loop writes to the audience before it serves the games again."""
    audience_stall_s: Annotated[float, Meta(gt=0, le=3600)] = 30.0
    """A viewer or spectator that has not caught up (read all that was written to it) for this
    long is dropped (its connection cut: the client sees 1006); until then it is skipped forward, never
    queued for."""
    connections_per_ip: Annotated[int, Meta(ge=0)] = 1000
    """WebSocket connections (``/ws`` and ``/live`` together) one client address may hold; more
    are refused with ``429`` ``too_many_connections`` (0: no limit). On a TLS port every
    connection counts, a WebSocket or not, from its first byte to its close; past the limit a
    new one is closed before its handshake."""
    connections_per_ip_exempt: list[str] = msgspec.field(default_factory=lambda: ["127.0.0.1", "::1"])
    """Addresses never capped (a local load test, a proxy whose clients are not told apart)."""

    # Storage faults (docs/operating.md, "Storage faults").
    spool_path: str | None = None
    """Where finished games wait while the database fails (``server/recording/spool.py``): put it on
    another disk than the database. Default: beside a SQLite file, or ``mandala-spool.jsonl``
    in the working directory for PostgreSQL."""
    storage_timeout_s: Annotated[float, Meta(gt=0, le=3600)] = 10.0
    """A storage call that takes longer counts as a failure."""
    storage_retry_max_s: Annotated[float, Meta(gt=0, le=3600)] = 2.0
    """Failed writes are retried with backoff from 50 ms, doubling up to this."""
    storage_probe_s: Annotated[float, Meta(gt=0, le=3600)] = 5.0
    """How often storage is pinged when nothing is written (to notice an outage early)."""
    storage_wait_s: Annotated[float, Meta(ge=0)] = 300.0
    """At start, how long to wait for storage to open and take the spooled games before giving up."""

    # A cluster's games when their node dies (docs/operating.md, "A game outlives its node").
    takeover_budget_s: Annotated[float, Meta(gt=0, le=3600)] = 30.0
    """How long the node taking over a dead node's game keeps trying to read its move log
    before it gives the game up (aborted, its seats closed with 4010)."""

    # The ladder (docs/running-a-competition.md, "The ladder").
    elo_initial: float = 1500.0
    """A new bot's rating (and every bot's after a ratings reset)."""
    elo_k_provisional: Annotated[float, Meta(ge=0)] = 32.0
    """K while a bot has played fewer than ``elo_provisional_games`` rated games."""
    elo_k: Annotated[float, Meta(ge=0)] = 16.0
    """K after that."""
    elo_provisional_games: Annotated[int, Meta(ge=0)] = 30
    qualification_pairs: Annotated[int, Meta(ge=1, le=100)] = 1
    """Duplicate pairs (two games each) a bot plays against the house bot before it is listed."""
    house_bot: str = "house"
    """Name of the in-process house bot that plays qualification games (reserved at start)."""
    pairing_interval_s: Annotated[float, Meta(gt=0, le=60)] = 1.0
    """The ladder pairs seeking bots at least this often (and at once after a seek or a game end)."""
    pairing_spread: Annotated[float, Meta(gt=0)] = 200.0
    """Rating gap at which a pairing is e times less likely than between equals."""
    pairing_wait_s: Annotated[float, Meta(ge=0, le=600)] = 5.0
    """How long a free bot waits for a busy opponent it has met less before it takes a free one
    (``server/ladder/matchmaking.py``)."""
    pairing_max_lead: Annotated[int, Meta(ge=1, le=50)] = 2
    """Pairs a bot may play against one opponent beyond its least-met active opponent before it
    must wait for that one (so every two bots meet, whatever their speeds)."""
    pairing_large_from: Annotated[int, Meta(ge=16, le=64)] = 32
    """Active bots (listed, connected, seeking; and those qualifying) from which the ladder pairs
    by the large ladder's policy (near opponents, the most telling games, every eighth pair
    across the ladder: ``server/ladder/large.py``) instead of letting everyone meet everyone
    (``server/ladder/matchmaking.py``). With 32, every two bots are sure to meet within 93
    pairs each (``(pairing_max_lead + 1)·(k − 1)``) and a pass that weighs every two free bots
    takes about half a millisecond; with 64, 189 pairs and 2 ms, and it grows with the square
    of the bots. Below 16 the large policy's share cap (no opponent more than an
    eighth of a bot's games: eight opponents at least) would often leave a free bot waiting."""
    seeks_per_minute: Annotated[int, Meta(ge=1, le=10_000)] = 30
    """``seek`` and ``unseek`` messages one bot may send in any minute; more are refused
    (``rate_limited``, limit ``seeks``) and change nothing. Counted per bot, so reconnecting
    does not start the count again: a bot that seeks and leaves in a loop wakes the pairing
    at most this often."""
    return_wait_s: Annotated[float, Meta(ge=0, le=3600)] = 30.0
    """How long the return game of a duplicate pair waits for a bot that left; then it is dropped."""
    ladder_games_per_hour: Annotated[int, Meta(ge=2, le=100_000)] | None = None
    """At most this many ladder games a bot starts in any hour (``None``: no limit). A bot at
    the limit is not paired until its oldest game of the hour is an hour old, so a bot that
    thinks for seconds is not drowned in the games of instant ones."""

    @property
    def node_name(self) -> str:
        """``node``, or the host name and port: in a cluster's messages and in every JSON log line."""
        return self.node or f"{socket.gethostname()}-{self.port}"

    @property
    def flood_limit(self) -> int:
        return self.burst if self.flood_after is None else self.flood_after

    @property
    def elo(self) -> EloSettings:
        return EloSettings(
            initial=self.elo_initial,
            k_provisional=self.elo_k_provisional,
            k_established=self.elo_k,
            provisional_games=self.elo_provisional_games,
        )


ENVIRONMENT = {
    "MANDALA_ADMIN_TOKEN": "admin_token",
    "DATABASE_URL": "db",
    "MANDALA_SPOOL": "spool_path",
    "REDIS_URL": "redis",
    "MANDALA_NODE": "node",
    "MANDALA_TLS_CERT": "tls_cert",
    "MANDALA_TLS_KEY": "tls_key",
    "MANDALA_LOG_FORMAT": "log_format",
}
"""The environment variables that set a setting (when not empty): variable → setting."""


_NODE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,40}")


class ConfigError(ValueError):
    """A config file or flag that does not make valid settings."""


def _settings(values: dict[str, Any], origin: str) -> Settings:
    """The settings ``values`` make, or a :class:`ConfigError` that says where they came from
    (the file, an environment variable): each source is checked alone first, so a bad value
    is blamed on the one that gave it."""
    try:
        return msgspec.convert(values, Settings)
    except msgspec.ValidationError as e:
        raise ConfigError(f"{origin}: {e}") from None


def load_settings(
    config: Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
) -> Settings:
    """Merge defaults < TOML file < ``MANDALA_ADMIN_TOKEN``, ``DATABASE_URL``, ``MANDALA_SPOOL``,
    ``REDIS_URL``, ``MANDALA_NODE``, ``MANDALA_TLS_CERT``, ``MANDALA_TLS_KEY`` and
    ``MANDALA_LOG_FORMAT`` (:data:`ENVIRONMENT`) < ``overrides`` (``None`` values skipped)."""
    values: dict[str, Any] = {}
    if config is not None:
        try:  # utf-8-sig: a file an editor saved with a byte-order mark reads as one without
            values.update(tomllib.loads(config.read_text(encoding="utf-8-sig")))
        except UnicodeDecodeError:
            raise ConfigError(f"{config}: not UTF-8 text (a TOML file is UTF-8: save it so)") from None
        except (OSError, tomllib.TOMLDecodeError) as e:
            raise ConfigError(f"{config}: {e}") from None
        _settings(values, f"{config}: bad setting")
    env = os.environ if environ is None else environ
    for name, setting in ENVIRONMENT.items():
        if env.get(name):
            values[setting] = env[name]
            _settings({setting: env[name]}, f"${name}: bad setting")
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    settings = _settings(values, "bad setting")
    if (settings.tls_cert is None) != (settings.tls_key is None):
        given, missing = ("--tls-cert", "--tls-key") if settings.tls_key is None else ("--tls-key", "--tls-cert")
        raise ConfigError(f"{given} needs {missing} too: TLS takes the certificate and its private key")
    if settings.redis is not None:
        if not settings.db.startswith(("postgresql://", "postgres://")):
            raise ConfigError("a cluster node (--redis) stores its games in PostgreSQL: give --db postgresql://…")
        if not settings.redis.startswith(("redis://", "rediss://", "unix://")):
            raise ConfigError(f"--redis is a redis:// URL, not {settings.redis!r}")
        if settings.node is not None and not _NODE_NAME.fullmatch(settings.node):
            raise ConfigError(f"--node is 1-40 letters, digits, '-', '_' or '.', not {settings.node!r}")
    return settings
