"""The HTML report: self-contained, escaped, and a heatmap whose pixels are the k3 levels."""

from __future__ import annotations

import base64
import html
import re

import numpy as np

from kltui.cli.report import load_store
from kltui.metrics.scale import EMPTY, FIRST_BIN, NONFINITE, ZERO
from kltui.outputs.reports.heatmap import (
    MAX_COLUMNS,
    PALETTE,
    _reduce_max,
    heat_levels,
    heat_rows,
    k3_levels,
)
from kltui.outputs.reports.html import html_report
from kltui.session.events import HelperStarted, SampleScored
from kltui.session.store import SessionStore
from kltui.words.report_headline import Partial, banner
from tests.reports.pngread import read_png
from tests.reports.synth import (
    XSS,
    demo_run,
    error_run,
    hostile_run,
    multi_server_run,
    record,
)


def build(tmp_path, events) -> str:
    store, origin = load_store(record(tmp_path / "r.jsonl", events))
    return html_report(store, origin)


def sections(page: str) -> dict[str, str]:
    """helper section id -> its HTML."""
    return dict(re.findall(r'<section class="helper" id="(h\d+)">(.*?)</section>', page, re.S))


def test_untrusted_text_is_shown_literally(tmp_path):
    page = build(tmp_path, hostile_run())
    assert "<script" not in page.lower()  # the report itself has no script at all
    assert "<img src=x" not in page and 'onerror="' not in page
    assert page.count(html.escape(XSS)) >= 6  # model, served name, problems, prompts, helper
    assert "\x00" not in page and "\x1b" not in page and "\\x00\\x1b[31m" in page
    assert "default-src &#x27;none&#x27;" not in page  # the CSP is ours, not escaped data
    assert "default-src 'none'; img-src data:" in page


def test_page_loads_nothing_from_outside(tmp_path):
    page = build(tmp_path, demo_run())
    refs = re.findall(r'\b(?:src|href|action)="([^"]*)"', page)
    assert refs and all(r.startswith(("data:image/png;base64,", "#h")) for r in refs)
    assert "@import" not in page and "url(" not in page


def test_levels_distinguish_zero_tiny_and_non_finite():
    lp_b = np.array([-1.0, -0.6000000000000001, -2.0, -0.5, -0.1, -np.inf, -1.0])
    lp_a = np.array([-1.0, -0.6, -2.0 + 1e-4, -0.5 + 2.0, np.nan, -np.inf, -np.inf])
    from kltui.metrics.k3 import k3

    levels = k3_levels(k3(lp_a, lp_b), lp_a, lp_b)
    # equal; differs with a rounding-negative k3; k3 ~5e-9; k3 ~4.4; NaN; -inf == -inf; one -inf
    assert levels.tolist() == [
        ZERO,
        FIRST_BIN,
        FIRST_BIN + 4,
        FIRST_BIN + 13,
        NONFINITE,
        ZERO,
        NONFINITE,
    ]


def test_wide_rows_reduce_by_max_and_keep_a_single_bad_token():
    grid = np.full((3, 5000), ZERO, dtype=np.uint8)
    grid[1, 4321] = NONFINITE
    grid[2, 4000:] = EMPTY
    out, bucket = _reduce_max(grid, 1, MAX_COLUMNS)
    assert out.shape == (3, -(-5000 // bucket)) and out.shape[1] <= MAX_COLUMNS
    assert out[1, 4321 // bucket] == NONFINITE and (out[1] == NONFINITE).sum() == 1
    assert (out[2, 4000 // bucket + 1 :] == EMPTY).all() and out[2, 0] == ZERO


def test_heatmap_pixels_are_the_levels(tmp_path):
    store = SessionStore()
    store.apply(HelperStarted("match", "s", 3, 2e-3, 1e-3))
    lp = np.array([-0.5, -1.0, -2.0])
    store.apply(SampleScored("match", "s", 0, np.arange(3), lp, lp, 0, 5))
    store.apply(SampleScored("match", "s", 2, np.arange(2), lp[:2] + 0.5, lp[:2], 0, 5))
    st = store.helpers["match@s"]
    rows = heat_rows(st)
    assert rows == [0, 1, 2]
    expected = heat_levels(st, rows)
    page = html_report(store)
    b64 = re.search(r'class="heatmap" src="data:image/png;base64,([^"]+)"', page).group(1)
    pixels = read_png(base64.b64decode(b64))
    assert pixels.shape == (3, 3, 3)
    assert np.array_equal(pixels, np.array(PALETTE, dtype=np.uint8)[expected])
    assert expected[0].tolist() == [ZERO] * 3  # bit-identical sample
    assert expected[1].tolist() == [1, 1, 1]  # never scored: the whole row is grey
    assert expected[2, 2] == EMPTY and expected[2, 0] > ZERO


def test_demo_report_has_every_part(tmp_path):
    page = build(tmp_path, demo_run())
    for text in (
        "Results against thresholds",
        "Diagnosis",
        "inconclusive",  # 8 samples: too few for a cache-hit verdict
        "attention backend",
        "radix cache",
        "deterministic inference",
        "cuda graph",
        "sha256 <code>9f2c4e1a7b3d5c60</code>",
        "temperature 0.7 is not 0 or 1",
        "Largest k3 tokens",
        "Per-sample results (8 samples)",
        "skipped: no radix hit (cached_tokens=0)",
    ):
        assert text in page, text
    parts = sections(page)
    assert [("heatmap" in p) for p in parts.values()] == [True, False, True]
    assert "No sample was scored" in parts["h2"] and "○ vacuous" in parts["h2"]
    assert "✗ fail" in parts["h3"] and "1.239e-01" in parts["h3"]


def test_multiple_servers_side_by_side(tmp_path):
    page = build(tmp_path, multi_server_run())
    head = re.search(r'<table class="settings"><thead>(.*?)</thead>', page, re.S).group(1)
    assert head.count("<th>") == 4  # label + three servers
    assert "http://10.0.0.9:30000 was not reachable: connection refused" in page
    assert "flashinfer" in page
    assert "match@http://127.0.0.1:30000" in page and "match@http://127.0.0.1:30001" in page
    assert "! error" in page  # the verdict


def test_error_and_unfinished_helpers(tmp_path):
    page = build(tmp_path, error_run())
    parts = sections(page)
    assert "! error" in parts["h1"] and "error: HTTP 500 from /generate" in parts["h1"]
    assert "… incomplete" in parts["h2"] and "did not finish" in parts["h2"]
    banners = re.findall(r'<div class="banner">(.*?)</div>', page)
    assert banners == [html.escape(banner(Partial.UNFINISHED))]  # golden: test_golden_report


def test_largest_k3_tokens_show_their_text_escaped_and_short_logprobs():
    # issue 59: ids without their text, logprobs with 15 digits
    store = SessionStore()
    store.apply(HelperStarted("match", "s", 1, 2e-3, 1e-3))
    lp_b = np.array([-0.123456789012345, -1.0, -2.0])
    lp_a = lp_b + np.array([1e-7, 0.25, 0.0])
    texts = [" the", "<img src=x onerror=alert(1)>", "\x1b[31m"]
    store.apply(SampleScored("match", "s", 0, np.array([7, 8, 9]), lp_a, lp_b, 0, 5, texts=texts))
    page = html_report(store)
    table = re.search(r"<h4>Largest k3 tokens</h4><table.*?</table>", page, re.S).group(0)
    rows = re.findall(r"<tr><td class='n'>.*?</tr>", table)
    assert len(rows) == 2  # position 2 is bit-identical: not listed
    assert "<td class='n'>8</td><td><code>&lt;img␣src=x␣onerror=alert(1)&gt;</code></td>" in rows[0]
    assert "<code>␣the</code>" in rows[1] and "-0.123457" in rows[1]
    assert "<td class='n'>1.000e-07</td>" in rows[1]  # r shows what 6 decimals cannot
    assert "0.123456789" not in table and "<img" not in table
