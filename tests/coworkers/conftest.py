"""Fixtures for the provider tests: a fake Anthropic Messages API on loopback, with the environment pointing at it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .fake_anthropic import FakeAnthropic


@pytest.fixture
def fake_anthropic(monkeypatch, settings) -> Iterator[FakeAnthropic]:
    """A started fake; ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY point at it for the test.

    Retries stay the SDK's default count, but the fake's errors carry
    retry-after-ms: 10, so a retried 429 or 529 costs milliseconds. A test
    that hangs fails in seconds, not after the production timeout.
    """
    fake = FakeAnthropic().start()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", fake.api_key)
    settings.ANTHROPIC_MAX_RETRIES = 2
    settings.ANTHROPIC_TIMEOUT_SECONDS = 10.0
    try:
        yield fake
    finally:
        fake.stop()
