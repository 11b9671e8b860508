"""Fixtures for the cluster tests: ``redis_url`` is a real Redis server and ``pg_url`` a real
PostgreSQL (``make test`` starts both, with ``scripts/test-redis.sh`` and
``scripts/test-postgres.sh``); without them the tests are skipped loudly, or fail when
``CI=true``. ``make_cluster(n)`` starts ``n`` arena nodes in this process, each a real server
on its own port, sharing one PostgreSQL schema and one (emptied) Redis."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import asyncpg
import pytest
import redis.asyncio as aioredis
from aiohttp.test_utils import TestClient

from arena_testkit import Harness, required_url, settings_for
from server.app import create_app

REDIS_URL_ENV = "MANDALA_TEST_REDIS_URL"
PG_URL_ENV = "MANDALA_TEST_DATABASE_URL"

MakeCluster = Callable[..., Awaitable[list[Harness]]]


@pytest.fixture
def redis_url() -> str:
    return required_url(REDIS_URL_ENV, "CLUSTER TESTS", "a throwaway Redis via scripts/test-redis.sh")


@pytest.fixture
async def fresh_redis(redis_url: str) -> str:
    """``redis_url``, emptied (for nodes as processes: nothing of an earlier test's cluster)."""
    r = aioredis.Redis.from_url(redis_url)
    await r.flushdb()
    await r.aclose()
    return redis_url


@pytest.fixture
def pg_url() -> str:
    return required_url(PG_URL_ENV, "CLUSTER TESTS", "a throwaway PostgreSQL via scripts/test-postgres.sh")


@pytest.fixture
async def pg_schema(pg_url: str) -> AsyncIterator[str]:
    """A fresh PostgreSQL schema for one test's cluster, dropped after it."""
    schema = f"cluster_{uuid.uuid4().hex[:12]}"
    yield schema
    conn = await asyncpg.connect(pg_url)
    try:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await conn.close()


@pytest.fixture
async def database(pg_url: str) -> AsyncIterator[str]:
    """A fresh PostgreSQL database (nodes as processes use the default schema), dropped after."""
    name = f"cluster_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(pg_url)
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    base, _, _ = pg_url.rpartition("/")
    yield f"{base}/{name}"
    conn = await asyncpg.connect(pg_url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


@pytest.fixture
async def make_cluster(pg_schema: str, aiohttp_client: Any, redis_url: str, pg_url: str,
                       tmp_path: Path) -> MakeCluster:
    """``await make_cluster(n, **settings)``: ``n`` nodes named n1, n2, … started one after
    the other (n1 takes the pairing lease first); ``redis`` may be a list, each node's URL."""
    from server.storage.postgres import PostgresStorage

    r = aioredis.Redis.from_url(redis_url)
    await r.flushdb()
    await r.aclose()

    async def make(n: int, **overrides: Any) -> list[Harness]:
        nodes = []
        redis = overrides.pop("redis", redis_url)  # one URL for all, or each node's
        for i in range(1, n + 1):
            settings = settings_for(pg_url, redis=redis if isinstance(redis, str) else redis[i - 1], node=f"n{i}",
                                    spool_path=str(tmp_path / f"n{i}-spool.jsonl"), **overrides)
            storage = PostgresStorage(pg_url, schema=pg_schema, max_size=4)
            client: TestClient = await aiohttp_client(create_app(settings, storage=storage))
            nodes.append(Harness(client))
        return nodes

    return make
