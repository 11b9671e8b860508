"""Wall-clock timestamps for storage and the API (game clocks use the loop's monotonic time)."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_now() -> str:
    """Now, as ISO 8601 UTC with millisecond precision (sorts as text)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
