"""Fixtures for the hostile-server tests (also importable by other suites, e.g. the TUI's:
`from tests.hostile.conftest import hostile` or `pytest_plugins`)."""

from __future__ import annotations

import pytest

from kltui.engines.http import HttpEngine
from tests.hostile.server import HostileServer


@pytest.fixture
def hostile():
    """Factory: `srv = hostile(fault="reset-mid-stream", phase="decode")` starts a server that
    is stopped when the test ends."""
    started: list[HostileServer] = []

    def make(**kw) -> HostileServer:
        srv = HostileServer(**kw).start()
        started.append(srv)
        return srv

    yield make
    for srv in started:
        srv.stop()


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch):
    """In-process runs count retries; waiting the real backoff would only slow the suite. The
    subprocess tests run with the real delays (and one of them checks them)."""
    monkeypatch.setattr(HttpEngine, "retry_base_delay", 0.01)
