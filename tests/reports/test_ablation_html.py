"""The HTML report of a `kltui ablate` sweep (issue 29): the table, the verdict, the failures
with their log tails; every server and log string escaped, nothing loaded from outside (the
same checks as tests/reports/test_report_html.py makes of check's report)."""

from __future__ import annotations

import html
import re

from kltui.ablate.sweep import MEASURED, Sweep
from kltui.outputs.ablation_html import html_report
from kltui.readings.ablation_outcome import outcome, reading
from kltui.words.ablation import verdict_line
from tests.reports.synth import XSS
from tests.unit.ablate.test_ablate_reading import INFO, LAUNCH, noisy, store, sweep, url


def synthetic(tmp_path, hostile: str = "") -> tuple[Sweep, object]:
    """A sweep of three: the base (diverging), deterministic=on (removes it) and
    attention-backend=fa3, which failed to start with `hostile` in its error and its log."""
    p = sweep("deterministic=on", "attention-backend=fa3")
    sw = Sweep(tmp_path, "launch", tuple(LAUNCH), ("deterministic=on", "attention-backend=fa3"))
    sw.add(p.configs)
    base, det, fa3 = sw.runs
    base.status, base.store, base.url, base.verdict = (
        MEASURED,
        store(url(0), INFO, noisy(0)),
        url(0),
        "fail",
    )
    info = INFO | {"enable_deterministic_inference": True}
    det.status, det.store, det.url, det.verdict = (
        MEASURED,
        store(url(1), info, noisy(1, 0.0)),
        url(1),
        "pass",
    )
    (tmp_path / fa3.log).write_text(f"loading\n{hostile}\nValueError: fa3 needs sm90 {hostile}\n")
    fa3.failed(f"{fa3.name}: exited with code 1 before it was healthy: {hostile}", "exited")
    sw.total_s = 10.0
    return sw, reading(sw)


def test_the_page_carries_the_table_the_verdict_and_the_failures_with_log_tails(tmp_path):
    sw, ab = synthetic(tmp_path, "boom")
    page = html_report(sw, outcome(sw))
    assert ab.verdict.kind == "localized"
    assert f"<strong>{html.escape(verdict_line(ab))}</strong>" in page
    rows = dict(re.findall(r"<tr[^>]*><td>([^<]*)</td>(.*?)</tr>", page, re.S))
    assert set(rows) == {"base", "deterministic=on", "attention-backend=fa3"}
    assert "0 (removed)" in rows["deterministic=on"]
    assert "failed (exited)" in rows["attention-backend=fa3"]
    failed = page.split("<h2>Failed configurations</h2>", 1)[1]
    assert "ValueError: fa3 needs sm90 boom" in failed and "exited with code 1" in failed
    assert "server starts" in page and str(tmp_path) in page


def test_untrusted_text_is_shown_literally(tmp_path):
    sw, ab = synthetic(tmp_path, XSS + "\x00\x1b[31m")
    page = html_report(sw, outcome(sw))
    assert "<script" not in page.lower()
    assert "<img src=x" not in page and 'onerror="' not in page
    assert page.count(html.escape(XSS)) >= 3  # the failure line, the log tail (twice)
    assert "\x00" not in page and "\x1b" not in page
    assert "default-src 'none'; img-src data:" in page


def test_page_loads_nothing_from_outside(tmp_path):
    sw, ab = synthetic(tmp_path, "https://evil.example/x.png")
    page = html_report(sw, outcome(sw))
    refs = re.findall(r'\b(?:src|href|action)="([^"]*)"', page)
    assert all(r.startswith(("data:image/png;base64,", "#")) for r in refs), refs
    assert "@import" not in page and "url(" not in page


def test_a_base_that_did_not_start_is_said_without_a_table(tmp_path):
    p = sweep("deterministic=on")
    sw = Sweep(tmp_path, "launch", tuple(LAUNCH))
    sw.add(p.configs)
    sw.base.failed("base: command not found: nosuch", "not_found")
    page = html_report(sw, outcome(sw))
    assert "the base did not start" in page and "command not found: nosuch" in page
    assert "<table" not in page
