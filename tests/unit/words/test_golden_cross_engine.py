"""The cross-engine figures in words: the rows every report shows (`cross_rows`: agreement, the
first greedy mismatch, the flip line, the unknown settings) and the Markdown settings table; the
report tests assert that each medium shows these rows (tests/reports/test_report_cross.py)."""

from __future__ import annotations

from kltui.outputs.reports.common import config_table, cross_rows
from kltui.outputs.reports.md import config_md
from tests.reports.test_report_cross import only, store


def test_the_cross_engine_rows():
    assert cross_rows(only(store()).summary) == [
        ("top-1 agreement", "91.7% (line 95%)"),
        ("top-5 agreement", "98.3%"),
        ("max |Δ logprob|", "1.546e-03"),
        ("mean |Δ logprob|", "5.745e-04"),
        ("union top-k KL", "2.319e-04"),
        ("first greedy mismatch", "sample 1 @ 3"),
        (
            "top-1 flips",
            "1: 0 inside 0.7 nats (expected near a tie), 1 across (not rounding); "
            "widest 9.163e-01 nats at sample 1 @ 2, median 9.163e-01",
        ),
        ("logprob contract", "not checked"),
        ("config mismatches", "dtype, attention_backend"),
        ("not known on both", "chunked_prefill"),
    ]


def test_the_markdown_settings_table():
    rows = config_md(config_table(only(store()).summary))
    assert rows[1:4] == [
        "  | setting | SGLang | vLLM | status | read from |",
        "  |---|---|---|---|---|",
        "  | attention backend | triton | FLASH\\_ATTN (FA3) | mismatch "
        "| SGLang attention\\_backend; vLLM startup log attention\\_backend |",
    ]
