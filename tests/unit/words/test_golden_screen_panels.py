"""Screen lines that are not a finding's own words (`words/screen_panels.py`): the diagnosis
screen's statistics hint (folded, one line, shown), the fleet heading's failure and group lines,
the monitor's strip label; the heatmap's status and zoom notes (`words/screen_heatmap.py`,
every kind); what `kltui web` says each tab runs (`words/web.py`)."""

from __future__ import annotations

from kltui.words.screen_heatmap import NoZoom, no_zoom, zoom_status
from kltui.words.screen_panels import fleet_failed, fleet_group, probe_strip_label, statistics_fold
from kltui.words.web import tab_runs


def test_the_statistics_hint():
    assert statistics_fold(4, shown=False) == "4 statistics lines · space to show"
    assert statistics_fold(1, shown=False) == "1 statistics line · space to show"
    assert statistics_fold(4, shown=True) == "space folds the statistics"


def test_the_fleet_heading():
    assert fleet_failed("2 of 40 replicas differ") == (
        "fleet must be identical: failed: 2 of 40 replicas differ"
    )
    assert fleet_group(2, 2, [("enable_deterministic_inference", "false")]) == (
        "group 2 (2): enable_deterministic_inference false"
    )
    assert fleet_group(1, 38, [("page_size", "1"), ("disable_radix_cache", "true")]) == (
        "group 1 (38): page_size 1, disable_radix_cache true"
    )
    assert fleet_group(1, 40, []) == "group 1 (40)"


def test_the_monitor_strip_label():
    assert probe_strip_label("prefill_cache_hit", 3, 0.012345) == (
        "prefill_cache_hit avg_kl_div along 3 probe(s), last 0.0123 (· bit-identical; a full "
        "non-finite bar: a probe error)"
    )


def test_the_heatmap_status():
    assert zoom_status(1, None, 64) == "1 token/cell · fit · 64 positions"
    assert zoom_status(2.46, None, 300) == "≈2.5 tokens/cell, max shown · fit · 300 positions"
    assert (
        zoom_status(4, 4, 300)
        == "4 tokens/cell, max shown · zoomed, shift+←/→ pans · 300 positions"
    )


ZOOM = {
    NoZoom.NO_POSITIONS: ("fit", "fit: no positions yet"),
    NoZoom.ALL_FIT: ("zoom in", "zoom in: all 64 positions fit at 1 token/cell: nothing to zoom"),
    NoZoom.MOST_IN: ("zoom in", "zoom in: 1 token/cell already: the most zoomed in"),
    NoZoom.ALREADY_FIT: ("zoom out", "zoom out: already fit: all 64 positions in 50 cells"),
}


def test_every_zoom_note():
    assert set(ZOOM) == set(NoZoom)
    for kind, (key, words) in ZOOM.items():
        assert no_zoom(key, kind, 64, 50) == words, kind


def test_what_each_tab_runs():
    assert tab_runs(["replay", "/runs/a b", "--read-only"]) == (
        "kltui web: each browser tab runs: kltui replay '/runs/a b' --read-only"
    )
