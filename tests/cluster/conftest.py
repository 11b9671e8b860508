"""Fixtures for the cluster tests: ``redis_url`` is a real Redis server (``make test`` starts
one with ``scripts/test-redis.sh``); without it the tests are skipped loudly, or fail when
``CI=true``."""

from __future__ import annotations

import pytest

from arena_testkit import required_url

REDIS_URL_ENV = "MANDALA_TEST_REDIS_URL"


@pytest.fixture
def redis_url() -> str:
    return required_url(REDIS_URL_ENV, "CLUSTER TESTS", "a throwaway Redis via scripts/test-redis.sh")
