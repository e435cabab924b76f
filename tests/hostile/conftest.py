"""The hostile-server tier: in-process runs retry without the real backoff (the `hostile` and
`fast_backoff` fixtures are in tests/conftest.py, shared with the TUI's tests)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _fast_backoff(fast_backoff):
    """Every in-process run of this tier retries at once."""
