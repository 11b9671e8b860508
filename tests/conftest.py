"""Fixtures every test directory may use: ``make_arena(**settings)`` starts a real server
(real sockets, a temp SQLite file) and returns a :class:`arena_testkit.Harness` around it.

``tests/server`` holds the test kit; it is put on ``sys.path`` here so the client, ladder
and web tests drive the server through the same kit as the server tests.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

sys.path.insert(0, str(Path(__file__).resolve().parent / "server"))

from arena_testkit import Harness, settings_for
from server.app import create_app

MakeArena = Callable[..., Awaitable[Harness]]

SHARED_REDIS = "tests/cluster/"
"""The cluster tests share one Redis (its channels are not per database), so under
``pytest -n`` (``make test``) they run one after another on one worker."""


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist's scope scheduling: the cluster tests are one scope, every other test
    file one (so a module's fixtures, such as the install test's builds, are made once).
    xdist's own ``xdist_group`` marks no longer group under pytest 9.2."""
    from xdist.scheduler import LoadScopeScheduling

    class SharedRedisScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return SHARED_REDIS if nodeid.startswith(SHARED_REDIS) else nodeid.split("::", 1)[0]

    return SharedRedisScheduling(config, log)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "arena.db"


@pytest.fixture
async def make_arena(aiohttp_client: Any, db_path: Path) -> MakeArena:
    async def make(**overrides: Any) -> Harness:
        client: TestClient = await aiohttp_client(create_app(settings_for(db_path, **overrides)))
        return Harness(client)

    return make
