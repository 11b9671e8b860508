"""``GET /metrics``: the arena in the Prometheus text format, for the monitoring stack every
operator has (Prometheus, or anything that scrapes its format), through ``prometheus_client``.

Nothing here runs while games play: the games, the ladder, the recorder and the cluster keep
plain counts (``server/games/counters.py`` says why), and :class:`ArenaCollector` reads them
and the server's state when a scraper asks. Each application has a registry of its own (no
module global: several servers run in one test process), with ``prometheus_client``'s process
and Python collectors beside the arena's. Every metric is this node's: in a cluster, scrape
each node (its own port, not HAProxy's) and sum.

No label carries a value a client chooses: a game's kind, an end reason and a refusal's code
are the protocol's closed lists, and a node's name is the operator's.

Who may scrape (the ``metrics`` setting): ``admin``, the default, wants the admin token
(``Authorization: Bearer``, as Prometheus sends it from ``authorization.credentials_file``);
``public`` serves anyone, for a port only the monitoring network reaches; ``off`` answers 404.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import get_args

from aiohttp import hdrs, web
from prometheus_client import GC_COLLECTOR, PLATFORM_COLLECTOR, PROCESS_COLLECTOR, CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, InfoMetricFamily
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector

from protocol.messages import PROTOCOL_VERSION, EndReason, GameKind

from ..arena import ARENA, Arena
from ..games.counters import REFUSED_ANSWER_CODES
from .api import ApiError, require_admin
from .pages import VERSION


class ArenaCollector(Collector):
    """The arena's metrics, read from its parts at each scrape."""

    def __init__(self, arena: Arena) -> None:
        self.arena = arena

    def describe(self) -> list[CounterMetricFamily | GaugeMetricFamily | HistogramMetricFamily | InfoMetricFamily]:
        """The metrics' names, for the registry (``?name[]=`` and its check of duplicates)."""
        return list(self.collect())

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily | HistogramMetricFamily | InfoMetricFamily]:
        arena = self.arena
        manager, recorder, ladder, cluster = arena.manager, arena.manager.recorder, arena.ladder, arena.cluster
        counters = manager.counters
        yield InfoMetricFamily("mandala_build", "The server's version and the protocol it speaks.",
                               value={"version": VERSION, "protocol": str(PROTOCOL_VERSION)})

        yield GaugeMetricFamily("mandala_connections", "Open /ws connections (bots and spectators).",
                                value=len(arena.presence.connections))
        yield GaugeMetricFamily("mandala_bots_connected", "Bots connected to this node.",
                                value=sum(1 for _ in arena.presence.local_bots()))
        yield GaugeMetricFamily("mandala_audience_viewers", "Viewers of /live.", value=len(arena.live.viewers))
        yield GaugeMetricFamily("mandala_audience_spectators",
                                "Spectators of the games this node runs, per game watched (one watching two games counts twice).",
                                value=sum(len(room.spectators) for room in manager.running.values()))

        yield GaugeMetricFamily("mandala_games_running", "Games this node runs now.", value=len(manager.running))
        started = CounterMetricFamily("mandala_games_started", "Games started on this node, by kind.", labels=["kind"])
        for kind in get_args(GameKind):
            started.add_metric([kind], counters.started[kind])
        yield started
        finished = CounterMetricFamily("mandala_games_finished", "Games that ended on this node (announced with "
                                       "game_over), by kind and end reason.", labels=["kind", "reason"])
        # Every kind and reason from the start, at 0 (a forfeit is never announced): a rate has
        # a series before a game first ends so.
        ends = {(kind, reason): 0 for kind in get_args(GameKind) for reason in get_args(EndReason) if reason != "forfeit"}
        for (kind, reason), n in sorted({**ends, **counters.finished}.items()):
            finished.add_metric([kind, reason], n)
        yield finished
        yield CounterMetricFamily("mandala_games_taken_over", "Games of a dead node this node took over.",
                                  value=counters.taken_over)

        yield CounterMetricFamily("mandala_decisions", "Decisions asked of the bots.", value=counters.decisions)
        yield CounterMetricFamily("mandala_timeouts", "Games ended because a decision's clock ran out.",
                                  value=counters.timeouts)
        refused = CounterMetricFamily("mandala_refused_answers", "Answers to decisions refused, by error code.",
                                      labels=["code"])
        for code, n in sorted({**dict.fromkeys(REFUSED_ANSWER_CODES, 0), **counters.refused}.items()):
            refused.add_metric([code], n)
        yield refused
        accepted = counters.accepted
        yield HistogramMetricFamily(
            "mandala_move_accepted_seconds",
            "From a move reaching its game to its move_accepted being sent (in a cluster, the move is stored first).",
            buckets=accepted.cumulative(), sum_value=accepted.sum)

        lag = arena.loop_lag
        yield HistogramMetricFamily(
            "mandala_loop_lag_seconds",
            "How late the event loop woke a timer that asks to wake every 50 ms (nothing else of the node runs "
            "meanwhile).", buckets=lag.cumulative(), sum_value=lag.late_s)

        yield GaugeMetricFamily("mandala_recorder_queue", "Writes waiting for storage (game rows; moves in a cluster).",
                                value=recorder.queued)
        yield GaugeMetricFamily("mandala_recorder_pending_games", "Finished games not yet in the database.",
                                value=recorder.pending)
        yield GaugeMetricFamily("mandala_recorder_spooled_games", "Finished games waiting in the spool file while storage fails.",
                                value=recorder.spooled)
        yield GaugeMetricFamily("mandala_degraded", "1 while storage fails (no game starts; /health answers 503).",
                                value=0 if recorder.failing is None else 1)

        yield GaugeMetricFamily("mandala_ladder_leading", "1 if this node leads the ladder (pairs it, computes the "
                                "standings, runs the tournaments).", value=1 if ladder.leading else 0)
        pairings = CounterMetricFamily("mandala_ladder_pairings", "Duplicate pairs the ladder made on this node, by "
                                       "kind.", labels=["kind"])
        for kind in ("ladder", "qualification"):
            pairings.add_metric([kind], ladder.pairings[kind])
        yield pairings
        yield CounterMetricFamily("mandala_standings_refreshes", "Standings tables computed on this node.",
                                  value=ladder.standings.refreshes)
        yield CounterMetricFamily("mandala_standings_refresh_seconds", "Seconds spent computing them, in all.",
                                  value=ladder.standings.refresh_s)

        if cluster is not None:
            yield InfoMetricFamily("mandala_cluster_node", "This node, and the node that leads the ladder as far as "
                                   "it has heard (empty while none does).",
                                   value={"node": cluster.node, "leader": cluster.leader or ""})
            yield GaugeMetricFamily("mandala_cluster_redis_up", "1 while this node hears the others through Redis.",
                                    value=1 if cluster.healthy else 0)
            yield GaugeMetricFamily("mandala_cluster_bus_backlog", "Messages to other nodes not yet handed to Redis.",
                                    value=cluster.bus.backlog)
            yield CounterMetricFamily("mandala_cluster_bus_lost", "Messages Redis did not take (it failed meanwhile).",
                                      value=cluster.bus.lost)
            yield GaugeMetricFamily("mandala_cluster_games_elsewhere", "Games the other nodes run now.",
                                    value=len(cluster.games))
            yield GaugeMetricFamily("mandala_cluster_games_starting", "Games this node, leading, asked another node "
                                    "to start and has not yet heard started or given up.", value=cluster.games_starting)


def registry_for(arena: Arena) -> CollectorRegistry:
    """A registry of the arena's metrics and ``prometheus_client``'s process and Python ones."""
    registry = CollectorRegistry(auto_describe=False)
    for collector in (ArenaCollector(arena), PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
        registry.register(collector)
    return registry


class Exposition:
    """The exposition as ``prometheus_client`` writes it (in the format the scraper accepts:
    Prometheus' text format or OpenMetrics), written at most once every ``max_age_s`` seconds:
    a scraper that asks more often gets the same bytes. Writing it takes the event loop about
    0.7 ms, which a scraper asking a hundred times a second would take from the games
    (Prometheus itself asks every 15 s or so). A scrape in between costs little more than
    aiohttp's own handling of a request: the format chosen for the last ``Accept`` seen is
    kept (a scraper sends the same one every time), and so is each format's ``Content-Type``."""

    def __init__(self, registry: CollectorRegistry, max_age_s: float) -> None:
        self.registry = registry
        self.max_age_s = max_age_s
        self._written: dict[str, tuple[float, bytes]] = {}
        self._chosen: tuple[str, tuple[Callable[..., bytes], str]] | None = None

    def render(self, accept: str, names: list[str]) -> tuple[bytes, str]:
        """The body and its content type; ``names`` (``?name[]=…``) keeps only those metrics,
        written afresh."""
        chosen = self._chosen
        if chosen is None or chosen[0] != accept:
            chosen = self._chosen = (accept, choose_encoder(accept))
        encode, content_type = chosen[1]
        if names:
            return encode(self.registry.restricted_registry(names)), content_type
        now = time.monotonic()
        written = self._written.get(content_type)
        if written is None or now - written[0] >= self.max_age_s:
            written = self._written[content_type] = (now, encode(self.registry))
        return written[1], content_type


EXPOSITION = web.AppKey("metrics_exposition", Exposition)


async def metrics(request: web.Request) -> web.Response:
    """``GET /metrics``: the exposition, to whom the ``metrics`` setting lets have it. Not
    compressed: a scrape is a few kilobytes, and gzip would cost the event loop more than the
    bytes cost the network."""
    arena = request.app[ARENA]
    if arena.settings.metrics == "off":
        raise ApiError(404, "not_found", "metrics are off on this server (the metrics setting)")
    if arena.settings.metrics == "admin":
        require_admin(request, arena)
    accept = ",".join(request.headers.getall(hdrs.ACCEPT, ()))
    names = request.query.getall("name[]", []) if request.query_string else []  # no query parsed for a plain scrape
    body, content_type = request.app[EXPOSITION].render(accept, names)
    return web.Response(body=body, headers={hdrs.CONTENT_TYPE: content_type})


def setup(app: web.Application) -> None:
    arena = app[ARENA]
    app[EXPOSITION] = Exposition(registry_for(arena), arena.settings.metrics_max_age_s)
    app.router.add_get("/metrics", metrics)
