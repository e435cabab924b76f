"""The headless Chromium both browser test modules drive (a fresh profile per test)."""

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
