"""TUI test fixtures: apps fed from synthetic or recorded events, and a polling helper."""

from __future__ import annotations

import time

import pytest


@pytest.fixture(autouse=True)
def _fixed_tz(monkeypatch):
    # Recording dates are shown in local time; snapshots need one zone.
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch, tmp_path):
    # A user's own themes or keymaps must not change what the tests see.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("NO_COLOR", raising=False)
