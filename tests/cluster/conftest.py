"""Fixtures for the cluster tests: ``redis_url`` is a real Redis server (``make test`` starts
one with ``scripts/test-redis.sh``); without it the tests are skipped loudly, or fail when
``CI=true``."""

from __future__ import annotations

import os

import pytest

REDIS_URL_ENV = "MANDALA_TEST_REDIS_URL"


@pytest.fixture
def redis_url() -> str:
    url = os.environ.get(REDIS_URL_ENV)
    if not url:
        why = (f"CLUSTER TESTS DID NOT RUN: ${REDIS_URL_ENV} is not set (run `make test`, which starts a "
               "throwaway Redis via scripts/test-redis.sh, or point it at a server)")
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(why + "; CI=true requires it", pytrace=False)
        pytest.skip(why)
    return url
