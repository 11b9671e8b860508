"""What the games of this server count for its operator: decisions, time-outs, refused answers,
the time from a ``move`` to its ``move_accepted``, and games started and finished by kind and
end reason. ``GET /metrics`` (``server/http/metrics.py``) reads them when it is scraped.

They are plain integers and lists, not ``prometheus_client``'s own metrics: a counter of
those takes a lock (0.45 µs) and a histogram 1 µs for each observation, together about 2 % of
the server's CPU per decision; these cost about 0.25 µs, and the scrape turns them into
Prometheus metrics. Every label is bounded by the protocol (a game's kind, an end reason, a
refusal's code): never a bot's name or a game's id, which clients choose.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Sequence

ACCEPT_BUCKETS_S = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
"""Upper bounds of the ``move`` → ``move_accepted`` histogram's buckets, in seconds: tens of
microseconds on one node, milliseconds in a cluster (each move is stored first)."""


class Histogram:
    """Observations counted into buckets, as a Prometheus histogram counts them (each bucket's
    bound is inclusive), without a lock: every observation comes from the event loop's thread."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)
        """Observations in each bucket (not cumulative); the last is above every bound."""
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value

    @property
    def count(self) -> int:
        return sum(self.counts)

    def cumulative(self) -> list[tuple[str, int]]:
        """``(le, observations at or below it)`` for each bound and ``+Inf``, as the exposition
        format has them."""
        out, seen = [], 0
        for bound, n in zip((*(repr(b) for b in self.bounds), "+Inf"), self.counts, strict=True):
            seen += n
            out.append((bound, seen))
        return out


REFUSED_ANSWER_CODES = ("bad_json", "not_object", "unknown_type", "invalid_message", "binary_frame", "frame_too_large",
                        "not_your_turn", "stale_request", "illegal_move", "game_over")
"""The codes an answer to a decision can be refused with (a frame that does not read, a move
the game refuses): the metrics show each from the start, at 0, so that a rate over them has a
series before the first refusal."""


class GameCounters:
    """The counts of one server's games (see the module's docstring); the manager keeps one and
    hands it to every room."""

    __slots__ = ("decisions", "timeouts", "refused", "accepted", "started", "finished", "taken_over")

    def __init__(self) -> None:
        self.decisions = 0
        """Decisions asked of the bots (each ``decision`` a game sent)."""
        self.timeouts = 0
        """Games ended because a decision's clock ran out (the answer came late, or not at all)."""
        self.refused: Counter[str] = Counter()
        """Answers refused, by the refusal's code (``illegal_move``, ``stale_request``, …)."""
        self.accepted = Histogram(ACCEPT_BUCKETS_S)
        """Seconds from a ``move`` reaching its game to its ``move_accepted`` being sent."""
        self.started: Counter[str] = Counter()
        """Games started here, by kind."""
        self.finished: Counter[tuple[str, str]] = Counter()
        """Games that ended here and were announced, by kind and end reason."""
        self.taken_over = 0
        """Games of a dead node this node took over (they end here, but did not start here)."""
