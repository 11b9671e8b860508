"""Fixtures for the server tests (``make_arena`` is in ``tests/conftest.py``): ``storage`` is
an open storage of each backend (SQLite, PostgreSQL) for the tests of the interface itself."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from arena_testkit import required_url
from server.storage import Storage
from server.storage.sqlite import SqliteStorage

PG_URL_ENV = "MANDALA_TEST_DATABASE_URL"


@pytest.fixture(params=["sqlite", "postgres"])
async def storage(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Storage]:
    """An open, empty storage of each backend. The PostgreSQL leg needs a server at
    ``$MANDALA_TEST_DATABASE_URL`` (``make test`` starts one) and gets a fresh schema per test;
    without it the leg is skipped loudly, or fails when ``CI=true``."""
    if request.param == "sqlite":
        store: Storage = SqliteStorage(str(tmp_path / "storage.db"))
        await store.open()
        try:
            yield store
        finally:
            await store.close()
        return
    url = required_url(PG_URL_ENV, "POSTGRESQL LEG", "a throwaway PostgreSQL via scripts/test-postgres.sh")
    from server.storage.postgres import PostgresStorage

    schema = f"test_{uuid.uuid4().hex[:16]}"
    store = PostgresStorage(url, schema=schema, max_size=4)
    await store.open()
    try:
        yield store
    finally:
        await store.close()
        conn = await asyncpg.connect(url)
        try:
            await conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
        finally:
            await conn.close()
