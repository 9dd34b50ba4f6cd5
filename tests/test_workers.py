"""The data path's worker pools see the environment as it is when the pool is made, not as it
was when the process's fork server started (a notebook setting AWS credentials after its first
import; CI found lazy streams reading S3 with none)."""

from __future__ import annotations

import os

import pytest

from netfleet.workers import process_pool


def _env(name: str) -> str | None:
    return os.environ.get(name)


def test_workers_get_the_environment_of_the_pools_maker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NETFLEET_TEST_GONE", "old")
    monkeypatch.delenv("NETFLEET_TEST_LATE", raising=False)
    with process_pool(2) as first:  # starts the fork server with the environment as it is now
        assert first.submit(_env, "NETFLEET_TEST_GONE").result() == "old"
        assert first.submit(_env, "NETFLEET_TEST_LATE").result() is None
    monkeypatch.setenv("NETFLEET_TEST_LATE", "set after the fork server started")
    monkeypatch.delenv("NETFLEET_TEST_GONE")
    with process_pool(2) as second:
        got = [second.submit(_env, "NETFLEET_TEST_LATE").result() for _ in range(4)]
        assert got == ["set after the fork server started"] * 4
        assert second.submit(_env, "NETFLEET_TEST_GONE").result() is None
