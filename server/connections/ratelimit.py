"""Rate limits: a token bucket per WebSocket connection, token buckets per key (a client
address: its connections' frames together, its HTTP requests), and a sliding window per key
for bot registration.

Both take the current time as an argument so they are pure and trivially testable; callers
pass ``loop.time()`` / ``time.monotonic()``.
"""

from __future__ import annotations

from collections import deque


class TokenBucket:
    """``rate`` tokens a second, at most ``burst`` saved up; one message costs one token."""

    __slots__ = ("rate", "burst", "_tokens", "_last")

    def __init__(self, rate: float, burst: int, now: float) -> None:
        self.rate = rate
        self.burst = burst
        self._tokens = float(burst)
        self._last = now

    def tokens(self, now: float) -> float:
        """The tokens it would hold at ``now``."""
        return min(float(self.burst), self._tokens + (now - self._last) * self.rate)

    def take(self, now: float) -> float | None:
        """Spend a token: ``None`` if allowed, else the seconds until one is available."""
        self._tokens = self.tokens(now)
        self._last = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return None
        return (1.0 - self._tokens) / self.rate if self.rate > 0 else float("inf")


class KeyedBuckets:
    """A :class:`TokenBucket` for each key (a client), made when the key is first charged and
    forgotten once it has filled up again: a full bucket and a new one are the same, so the
    table holds only the keys charged within the last ``burst / rate`` seconds (pruned when it
    has doubled, as :class:`WindowLimiter`'s)."""

    __slots__ = ("rate", "burst", "buckets", "_prune_above")

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = burst
        self.buckets: dict[str, TokenBucket] = {}
        self._prune_above = 10_000

    def take(self, key: str, now: float) -> float | None:
        """Spend one of ``key``'s tokens: ``None`` if allowed, else the seconds until one is."""
        bucket = self.buckets.get(key)
        if bucket is None:
            if len(self.buckets) > self._prune_above:
                self._prune(now)
                self._prune_above = max(10_000, 2 * len(self.buckets))
            bucket = self.buckets[key] = TokenBucket(self.rate, self.burst, now)
        return bucket.take(now)

    def _prune(self, now: float) -> None:
        full = [k for k, b in self.buckets.items() if b.tokens(now) >= b.burst]
        for key in full:
            del self.buckets[key]


class WindowLimiter:
    """At most ``limit`` events per ``window`` seconds for each key."""

    __slots__ = ("limit", "window", "_events", "_prune_above")

    def __init__(self, limit: int, window: float) -> None:
        self.limit = limit
        self.window = window
        self._events: dict[str, deque[float]] = {}
        self._prune_above = 10_000

    def hit(self, key: str, now: float) -> float | None:
        """Count one event for ``key``: ``None`` if allowed, else seconds until one is allowed."""
        if len(self._events) > self._prune_above:
            self._prune(now)
            # Pruned again only once the table has doubled: with more keys active in the
            # window than that (ten thousand bots seeking after a restart), a prune at every
            # hit would make each hit cost them all.
            self._prune_above = max(10_000, 2 * len(self._events))
        events = self._events.setdefault(key, deque())
        while events and events[0] <= now - self.window:
            events.popleft()
        if len(events) >= self.limit:
            return events[0] + self.window - now
        events.append(now)
        return None

    def give_back(self, key: str) -> None:
        """Uncount the latest event of ``key``: what it was counted for did not happen."""
        events = self._events.get(key)
        if events:
            events.pop()

    def _prune(self, now: float) -> None:
        """Forget keys with no event in the window, so the table cannot grow without bound."""
        for key in [k for k, ev in self._events.items() if not ev or ev[-1] <= now - self.window]:
            del self._events[key]
