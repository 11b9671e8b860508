"""Wall-clock timestamps for storage and the API (game clocks use the loop's monotonic time)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


def utc_now(ago_s: float = 0.0) -> str:
    """Now (or ``ago_s`` seconds ago), as ISO 8601 UTC with millisecond precision (sorts as text)."""
    at = datetime.now(UTC) - timedelta(seconds=ago_s)
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def seconds_since(iso: str) -> float:
    """Seconds from an ISO 8601 timestamp of :func:`utc_now` to now."""
    return (datetime.now(UTC) - datetime.fromisoformat(iso.replace("Z", "+00:00"))).total_seconds()
