"""Fixtures for the server tests: ``make_arena(**settings)`` starts a real server on a
temp SQLite file; every test gets its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Awaitable, Callable

import pytest
from aiohttp.test_utils import TestClient, TestServer

from server.app import create_app
from server.config import Settings

from arena_testkit import ADMIN, Harness

MakeArena = Callable[..., Awaitable[Harness]]


def settings_for(db: Path, **overrides: Any) -> Settings:
    # Bots here answer as fast as the loop runs: the default 20 messages/s would throttle them.
    values: dict[str, Any] = {"db": str(db), "admin_token": ADMIN, "heartbeat_s": 5.0,
                              "messages_per_second": 10000.0, "burst": 10000}
    values.update(overrides)
    return Settings(**values)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "arena.db"


@pytest.fixture
async def make_arena(aiohttp_client: Any, db_path: Path) -> MakeArena:
    async def make(**overrides: Any) -> Harness:
        client: TestClient = await aiohttp_client(create_app(settings_for(db_path, **overrides)))
        return Harness(client)

    return make
