"""The browser tests' fixtures: the headless Chromium they drive (a fresh profile per test) and
the reference server their dashboards measure."""

from __future__ import annotations

import pytest

from tests.web.cdp import Browser


@pytest.fixture
def browser(tmp_path):
    b = Browser(tmp_path / "profile")
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def reference_url(reference_servers) -> str:
    """The session's shared deterministic reference server (tests/conftest.py)."""
    return reference_servers.url(deterministic=True)
