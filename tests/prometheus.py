"""Debian's `prometheus` package for the monitor's tests: the real server and `promtool`
(.ci/run installs it). A test that needs them is skipped, with this reason, only where the
binaries are absent."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "docs" / "monitoring" / "kltui-alerts.yml"
RULE_TESTS = ROOT / "tests" / "monitoring" / "kltui-alerts.test.yml"
WHY = "needs Debian's prometheus package (apt-get install prometheus; .ci/run installs it)"

needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason=f"promtool not found: {WHY}")
needs_prometheus = pytest.mark.skipif(
    PROMETHEUS is None, reason=f"the prometheus server not found: {WHY}"
)
