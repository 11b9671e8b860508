"""``GET /health`` and ``GET /metrics`` report the event loop's lag (``server/common/loop_lag.py``):
a handler that holds the loop for a known stretch shows up in them as a wake at least that late,
less the one interval the monitor may have been waiting already when the stretch began.

The figures are measurements of a real block, so only their lower bound is asserted: a busy
machine may make them larger, never smaller.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families

from arena_testkit import ADMIN, settings_for, wait_until
from server.app import create_app
from server.arena import ARENA
from server.common.loop_lag import BUCKETS_S, INTERVAL_S, WINDOW_S

BLOCK_S = 0.4
"""How long the blocking handler holds the loop: several of the monitor's intervals."""


async def blocking(request: web.Request) -> web.Response:
    time.sleep(BLOCK_S)  # holds the event loop: nothing else of the server runs meanwhile
    return web.Response(text="blocked")


async def test_health_reports_a_stretch_that_held_the_loop(aiohttp_client: Any, tmp_path: Path) -> None:
    app = create_app(settings_for(tmp_path / "arena.db"))
    app.router.add_get("/block", blocking)
    client = await aiohttp_client(app)
    lag = app[ARENA].loop_lag

    async def health() -> dict[str, Any]:
        resp = await client.get("/health")
        assert resp.status == 200
        return (await resp.json())["loop_lag"]

    await wait_until(lambda: lag.figures().samples >= 3, 10, "the monitor's first wakes")
    before = await health()
    assert set(before) == {"p50_ms", "p99_ms", "max_ms", "samples", "window_s", "interval_ms"}
    assert (before["window_s"], before["interval_ms"]) == (WINDOW_S, INTERVAL_S * 1000)
    assert 0 <= before["p50_ms"] <= before["p99_ms"] <= before["max_ms"]

    resp = await client.get("/block")
    assert await resp.text() == "blocked"
    samples = lag.figures().samples
    await wait_until(lambda: lag.figures().samples > samples, 10, "a wake after the block")

    after = await health()
    assert after["max_ms"] >= (BLOCK_S - INTERVAL_S) * 1000
    assert after["p99_ms"] <= after["max_ms"] and after["samples"] > before["samples"]

    # The histogram since start: every wake counted, one at least in a bucket past the block.
    resp = await client.get("/metrics", headers={"Authorization": f"Bearer {ADMIN}"})
    assert resp.status == 200
    samples = {(s.name, s.labels.get("le")): s.value for family in text_string_to_metric_families(await resp.text())
               if family.name == "mandala_loop_lag_seconds" for s in family.samples}
    count = samples[("mandala_loop_lag_seconds_count", None)]
    assert count >= after["samples"] and samples[("mandala_loop_lag_seconds_bucket", "+Inf")] == count
    below = max(b for b in BUCKETS_S if b <= BLOCK_S - INTERVAL_S)
    assert samples[("mandala_loop_lag_seconds_bucket", repr(below))] < count
    assert samples[("mandala_loop_lag_seconds_sum", None)] >= BLOCK_S - INTERVAL_S
