"""`--fleet-require identical`'s outcome as the reports say it: the golden Markdown and HTML lines
for a fleet that passed and one that failed (the failure is `words/fleet.failure_line`'s); the
fleet's integration tests compare the reports with these functions."""

from __future__ import annotations

from kltui.outputs.reports.html import _gate_html
from kltui.outputs.reports.md import fleet_md, gate_text
from kltui.words.fleet import failure_line
from tests.unit.words.test_golden_fleet import SPLIT, fleet


def test_passed():
    f = fleet()
    assert gate_text(f) == "passed"
    assert "- **Fleet must be identical** (`--fleet-require identical`): passed" in fleet_md(f)
    assert _gate_html(f) == "<p>fleet must be identical (--fleet-require identical): passed</p>"


def test_failed_says_why():
    why = failure_line(SPLIT)
    assert why is not None
    assert gate_text(SPLIT) == (
        "**failed**: replicas differ: 2 groups; odd one out http://10.0.0.3:30000, first "
        "difference from http://10.0.0.1:30000 at match sample 1 \\@ 3 (decode side; max \\|Δ\\| "
        "prefill 0, decode 0.5)"
    )
    assert _gate_html(SPLIT) == (
        "<p><strong>fleet must be identical (--fleet-require identical): failed:</strong> "
        f"{why}</p>"
    )


def test_the_default_gate_says_nothing():
    assert _gate_html(fleet(require="gate")) == ""
    assert not [line for line in fleet_md(fleet(require="gate")) if "must be identical" in line]
