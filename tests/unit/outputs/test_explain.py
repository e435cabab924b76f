"""`kltui check --explain` (issue 57): the console prints each diagnosis's plain lines by
default and the statistics' lines (the one-path test, the paired tests, the stated limits) only
with --explain; the HTML report keeps them in a <details> block."""

import io

from rich.console import Console

from kltui.outputs.headless import HeadlessView
from kltui.outputs.reports.html import diagnosis_html
from kltui.readings.diagnosis import diagnose
from kltui.readings.diagnosis_parts import Count
from kltui.run.config import RunConfig
from kltui.words.evidence import line as evidence_line
from tests.unit.readings.test_geometry_evidence import PROMPTS, feed, store_of

STATISTIC = "a state bug needs p<"


def _store():
    st = store_of(None)
    feed(st, "match", PROMPTS, [0] * 16, {})
    feed(st, "prefill_cache_hit", PROMPTS, [p - 1 for p in PROMPTS], {i: 0 for i in range(12)})
    feed(st, "decode_cache_hit", PROMPTS, [p - 1 for p in PROMPTS], {})
    return st


def _printed(explain: bool) -> str:
    out = io.StringIO()
    HeadlessView(_store(), Console(file=out, width=400), explain).report()
    return out.getvalue()


def test_the_statistics_lines_are_printed_only_with_explain():
    plain, full = _printed(False), _printed(True)
    assert "condition 2 (state bug)" in plain and "condition 2 (state bug)" in full
    assert STATISTIC not in plain and STATISTIC in full
    (d,) = diagnose(_store())
    count = {e.helper: e for e in d.evidence if isinstance(e, Count)}["prefill_cache_hit"]
    assert (count.differing, count.scored) == (12, 16)
    # every evidence line in full; in plain all but the statistics' (words: tests/unit/words)
    shown = {evidence_line(e): e.statistic for e in d.evidence}
    assert any(shown.values()) and not all(shown.values())
    for text, statistic in shown.items():
        assert text in full and (text in plain) is not statistic, text


def test_the_flag_is_a_run_setting():
    assert RunConfig().explain is False and RunConfig(explain=True).explain is True


def test_the_html_report_folds_the_statistics_into_details():
    html = diagnosis_html(diagnose(_store()))
    assert "<details><summary>Statistics</summary>" in html
    head, _, folded = html.partition("<details>")
    escaped = STATISTIC.replace("<", "&lt;")
    assert escaped not in head and escaped in folded
