"""cross_engine's floors (issue 47) in every report: the JSON entry (schema-checked), Markdown,
HTML, JUnit's output and the console, each with the gap read against them."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
from rich.console import Console

from kltui.metrics.cross import Side
from kltui.metrics.floors import floor_figures, floor_positions, read_floors
from kltui.outputs.check_tables import print_cross
from kltui.outputs.reports.common import json_report
from kltui.outputs.reports.html import html_report
from kltui.outputs.reports.junit import junit_report
from kltui.outputs.reports.md import md_report
from kltui.readings.floors import FloorKind, floors_of, read
from kltui.untrusted import html_text as esc
from kltui.words.floors import floor_rows, how, verdict_line
from tests.json_contract import validate
from tests.reports.test_report_cross import md_shows_rows, only, store

IDS = np.arange(6)
TOP = np.tile(np.arange(5), (6, 1))
TOP_LP = np.tile(np.log([0.5, 0.2, 0.1, 0.05, 0.05]), (6, 1))


def floors(sglang_noise: float, vllm_noise: float, gap: float) -> dict:
    def fig(noise: float) -> dict:
        lp = -np.linspace(0.5, 1.5, 6)
        again = lp + noise * np.array([0, 1, 0, -1, 0, 0])
        one = floor_positions(Side(IDS, lp, TOP, TOP_LP), Side(IDS, again, TOP, TOP_LP))
        return floor_figures([(0, one)], k=5).to_json()

    sg, vl = fig(sglang_noise), fig(vllm_noise)
    reading = read_floors(gap, sg["avg_k3"], vl["avg_k3"])
    return {
        "samples": [0], "of": 2, "composition": "one at a time", "first_batch": 2,
        "same_composition": False, "error": None, "sglang": sg, "vllm": vl,
        "gap": {"avg_k3": gap, "mean_abs_delta": 8e-4, "max_abs_delta": 2e-3,
                "top1_agreement": 0.917},
        "reading": reading.to_json(),
    }  # fmt: skip


def test_the_json_entry_has_both_floors_and_the_reading():
    doc = json_report(store(floors=floors(0.0, 1e-3, 1e-4)))
    validate(doc, "check")
    fl = doc["helpers"]["cross_engine"]["floors"]
    assert fl["sglang"]["zero"] is True and fl["sglang"]["avg_k3"] == 0.0
    assert fl["vllm"]["zero"] is False and fl["vllm"]["differing_positions"] == 2
    assert fl["reading"]["kind"] == "above floors" and fl["reading"]["larger_engine"] == "vLLM"
    assert fl["line"] == verdict_line(fl)  # its words (golden: tests/unit/words)
    # a run without floors (and every older recording) has null there
    assert json_report(store())["helpers"]["cross_engine"]["floors"] is None


def test_markdown_html_and_junit_show_the_floors_beside_the_gap():
    st = store(floors=floors(1e-3, 1e-3, 1e-7))
    fl = floors_of(only(st).summary.figures)
    assert read(fl).reading.kind == FloorKind.WITHIN  # 1e-7 apart, each 1e-3 from itself
    # every medium shows the floors' rows as the words say them (golden: test_floors_words)
    rows = floor_rows(fl)
    assert [label for label, _ in rows][-1] == "gap against the floors"
    assert md_shows_rows(md_report(st), st)
    html = html_report(st)
    assert all(f"<th>{esc(k)}</th><td>{esc(v)}</td>" in html for k, v in rows)
    root = ET.fromstring(junit_report(st))
    out = "".join(e.text or "" for e in root.iter("system-out"))
    assert all(f"{k} {v}" in out for k, v in rows)


def test_the_console_puts_the_floors_in_one_table_and_says_a_zero_floor():
    (st,) = store(floors=floors(0.0, 0.0, 1e-4)).helpers.values()
    figures = st.summary.figures
    console = Console(width=200, record=True, color_system=None)
    print_cross(console, figures)
    out = console.export_text()
    fl = floors_of(figures)
    assert read(fl).reading.kind == FloorKind.FLOOR_ZERO  # both floors exactly 0
    assert how(fl) in out  # the table's title (golden: tests/unit/words/test_floors_words.py)
    row = next(ln for ln in out.splitlines() if "vLLM vs itself" in ln)
    assert "0 (exactly 0)" in row and "0/6" in row
    assert f"floors: {verdict_line(fl)}" in out  # the reading's line, as its words say it
