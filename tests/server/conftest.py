"""Fixtures for the server tests: ``make_arena(**settings)`` starts a real server on a
temp SQLite file; every test gets its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Awaitable, Callable

import pytest
from aiohttp.test_utils import TestClient

from server.app import create_app

from arena_testkit import Harness, settings_for

MakeArena = Callable[..., Awaitable[Harness]]


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "arena.db"


@pytest.fixture
async def make_arena(aiohttp_client: Any, db_path: Path) -> MakeArena:
    async def make(**overrides: Any) -> Harness:
        client: TestClient = await aiohttp_client(create_app(settings_for(db_path, **overrides)))
        return Harness(client)

    return make
