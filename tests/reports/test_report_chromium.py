"""The HTML report in a real browser (headless Chromium): the heatmap renders, and markup from
a hostile recording stays text: no script runs, no element is injected.

Needs Chromium (Debian: `apt-get install -y chromium`); skipped with that reason without it."""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest

from kltui.cli.report import load_store
from kltui.metrics.scale import FIRST_BIN, NONFINITE, level_of
from kltui.outputs.reports.heatmap import PALETTE
from kltui.outputs.reports.html import html_report
from tests.chromium import CHROMIUM, HEADLESS
from tests.reports.pngread import read_png
from tests.reports.synth import HelperSpec, hostile_run, record, run_events

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install -y chromium)"
)
TITLE = "kltui report · fail · 0123456789ab"


def write_report(tmp_path, events) -> str:
    store, origin = load_store(record(tmp_path / "r.jsonl", events))
    page = tmp_path / "report.html"
    page.write_text(html_report(store, origin), encoding="utf-8")
    return page.as_uri()


def chromium(tmp_path, url: str, *args: str) -> subprocess.CompletedProcess:
    cmd = [
        CHROMIUM,
        *HEADLESS,
        f"--user-data-dir={tmp_path / 'profile'}",
        *args,
        url,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)


def test_markup_from_a_recording_never_runs(tmp_path):
    url = write_report(tmp_path, hostile_run())
    dom = chromium(tmp_path, url, "--dump-dom").stdout
    assert f"<title>{TITLE}</title>" in dom  # a script setting document.title would show here
    assert "<script" not in dom.lower()  # the report has no script; any would be injected
    assert not re.search(r'<img[^>]+src="x"', dom)
    assert len(re.findall(r"<img\b", dom)) == len(re.findall(r'<img class="heatmap"', dom)) == 2
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;&lt;img src=x" in dom


def test_heatmap_renders(tmp_path):
    events = run_events([HelperSpec("match", nan_rows=(1,))], n_samples=4, verdict="fail")
    url = write_report(tmp_path, events)
    shot = tmp_path / "shot.png"
    chromium(tmp_path, url, f"--screenshot={shot}", "--window-size=1400,2400")
    pixels = read_png(shot.read_bytes())[..., :3]
    # The NaN row is the only large area of this colour: text is never pure black, and the
    # legend's NaN chip is 14x14 pixels.
    nan_colour = np.array(PALETTE[NONFINITE], dtype=np.uint8)
    nan_pixels = int(np.all(pixels == nan_colour, axis=-1).sum())
    assert nan_pixels > 5000, nan_pixels
    # Rows of 16 px across ~1090 px: far more heat-coloured pixels than the legend's
    # fourteen 34x14 swatches and four chips could ever account for.
    heat = np.array(PALETTE[2:], dtype=np.uint8)  # exact zero, the decades and NaN
    on_scale = np.any(np.all(pixels[:, :, None, :] == heat[None, None], axis=-1), axis=-1)
    assert int(on_scale.sum()) > 40_000, int(on_scale.sum())


def test_a_clean_pass_renders_pale_not_alarming(tmp_path):
    # issue 20: with reversed viridis a ~1e-12 pass was bright yellow on the page; the report now
    # uses the one scale's light palette (the kltui-light theme's), calm to alarm
    events = run_events([HelperSpec("match", noise=1e-6)], n_samples=4, verdict="pass")
    url = write_report(tmp_path, events)
    shot = tmp_path / "shot.png"
    chromium(tmp_path, url, f"--screenshot={shot}", "--window-size=1400,2400")
    pixels = read_png(shot.read_bytes())[..., :3]

    def count(levels) -> int:
        colours = np.array([PALETTE[lv] for lv in levels], dtype=np.uint8)
        hit = np.all(pixels[:, :, None, :] == colours[None, None], axis=-1)
        return int(hit.any(axis=-1).sum())

    rounding = range(FIRST_BIN, level_of(1e-9) + 1)  # k3 up to ~1e-9: a clean pass
    alarming = range(level_of(1e-4), NONFINITE)
    # the heatmap's rows are rounding-level colours; the alarming ones appear only as the
    # legend's swatches (34 x 14 px each)
    assert count(rounding) > 20_000, count(rounding)
    assert count(alarming) < 34 * 14 * len(alarming) + 100, count(alarming)
    for lv in rounding:  # and those colours are pale on the white page
        assert min(PALETTE[lv]) >= 0x90, (lv, PALETTE[lv])
