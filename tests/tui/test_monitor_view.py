"""`kltui monitor` in the TUI (issue 48): the probes of a real monitor against a reference
server whose planted fault wakes after probe 1 fill the monitor screen, the change of reading is
marked on its row and said in a toast (rendered), Enter opens a probe's dashboard from its
recording and `m` brings the monitor back; and a hand-made history as a snapshot."""

from __future__ import annotations

import time

import numpy as np

from kltui.readings.diagnosis_parts import Headline
from kltui.readings.findings import Finding, Kind
from kltui.readings.probe import HelperFigures, ProbeError, ProbeReading, RunVerdict, ServerProbe
from kltui.readings.probe_changes import Change, ChangeKind
from kltui.readings.verdict import Diagnosis
from kltui.run.config import RunConfig
from kltui.run.monitor import Monitor, ProbeResult, probe_recordings
from kltui.tui.app import KltuiApp
from kltui.tui.monitor_feed import MonitorFeed
from kltui.tui.screens.monitor import MonitorScreen, ProbeTable
from kltui.words.probe import change_short
from kltui.words.screen_panels import probe_strip_label
from tests.integration.test_monitor import FLUSHES_PER_PROBE, SMALL
from tests.tui.kit import drawn, drawn_at, until
from tests.tui.test_markup import flat, toasts

SIZE = (130, 40)


async def test_the_monitor_screen_follows_real_probes_and_opens_one(reference_servers, tmp_path):
    srv = reference_servers.own(
        deterministic=True,
        fault="stale-prefix",
        extra_args=("--fault-after-flushes", str(FLUSHES_PER_PROBE)),
    )
    monitor = Monitor(
        RunConfig(servers=[srv.url], **SMALL), every=0, probes=3, record=probe_recordings(tmp_path)
    )
    feed = MonitorFeed(monitor)
    app = KltuiApp(feed)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        # the change said as it happens, in a toast (rendered: the harness hides them otherwise)
        await until(pilot, lambda: "condition 2 appeared" in flat(toasts(app)), timeout=120)
        shown = flat(toasts(app))
        assert f"on {srv.url}, first in sample" in shown and "(prefill_cache_hit;" in shown
        await until(pilot, lambda: feed.finished, timeout=120)
        await pilot.pause(0.6)  # the screen's redraw interval
        screen = app.screen
        assert isinstance(screen, MonitorScreen)
        table = screen.query_one(ProbeTable)
        assert table.numbers == [3, 2, 1]  # newest first
        text = drawn_at(screen, "#monitor-table")
        changes = {c.kind: c for c in feed.result(2).changes}  # the fault woke after probe 1
        verdict, change = changes[ChangeKind.VERDICT], changes[ChangeKind.APPEARED]
        assert (verdict.before, verdict.after) == (RunVerdict.PASS, RunVerdict.FAIL)
        assert (change.before, change.after, change.server) == (Kind.EXACT, Kind.TWO, srv.url)
        assert change.paths == ("prefill_cache_hit",) and change.samples
        assert f"▲ {change_short(change)}" in text and "state bug" in text  # its words
        labels = " ".join(drawn(w) for w in screen.query(".monitor-strip-label"))
        (last,) = [
            h.avg_kl_div
            for s in feed.result(3).reading.servers
            for h in s.helpers
            if h.helper == "prefill_cache_hit"
        ]
        want = probe_strip_label("prefill_cache_hit", 3, last)
        assert " ".join(want.split()) in " ".join(labels.split()), labels
        await pilot.press("down")  # probe 2, where condition 2 appeared
        assert "recording: " in drawn_at(screen, "#monitor-detail")
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, MonitorScreen)
        assert feed.shown == 2 and app.store is not None
        assert app.store.run is not None and {st.helper for st in app.store.helpers.values()} == {
            "match",
            "prefill_cache_hit",
        }
        await pilot.press("m")
        await pilot.pause()
        assert isinstance(app.screen, MonitorScreen)


def _probe(n: int, kind: Kind, finding: Finding, avg: float | None, **kw) -> ProbeResult:
    figures = (
        HelperFigures("match", "pass", 0.0, 0.0, 0.0, None, 8, 8, 128),
        HelperFigures(
            "prefill_cache_hit",
            "pass" if not avg else "fail",
            avg,
            0.1 if avg else 0.0,
            avg * 40 if avg else 0.0,
            (3, 11) if avg else None,
            8,
            8,
            128,
        ),
    )
    url = "http://127.0.0.1:30000"
    # a diagnosis whose words are a fixed synthetic line (an imported file's own label)
    said = Diagnosis(url, Finding.IMPORTED, None, Headline(text=f"{finding} (synthetic)"))
    servers = () if avg is None else (ServerProbe(url, "m", finding, kind, said, figures),)
    verdict = kw.pop("verdict", "fail" if avg else "pass")
    errors = kw.pop("errors", ())
    start = time.mktime((2026, 12, 4, 14, 0, 0, 0, 0, -1)) + 60 * n
    return ProbeResult(
        n, start, 2.5, 21, None, ProbeReading(verdict, servers, errors, 256 if servers else 0), **kw
    )


def test_snapshot_of_a_monitor_history(snap_compare, monkeypatch):
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    monitor = Monitor(RunConfig(servers=["http://127.0.0.1:30000"]), every=60, probes=0)
    feed = MonitorFeed(monitor, listen="http://127.0.0.1:9464/metrics")
    url = "http://127.0.0.1:30000"
    appeared = Change(url, ChangeKind.APPEARED, "exact", "2", (3, 5), ("prefill_cache_hit",))
    for n in range(1, 13):
        feed.history.append(_probe(n, Kind.EXACT, Finding.EXACT, 0.0))
    feed.history.append(
        _probe(
            13, Kind.UNKNOWN, Finding.EXACT, None, verdict="error", errors=(ProbeError.UNREACHABLE,)
        )  # fmt: skip
    )
    feed.history.append(_probe(14, Kind.TWO, Finding.STATE_BUG, 3.1e-3, changes=(appeared,)))
    for n in range(15, 18):
        feed.history.append(_probe(n, Kind.TWO, Finding.STATE_BUG, 2.9e-3 * (1 + n % 3)))
    assert np.isfinite([p.seconds for p in feed.history]).all()
    try:
        assert snap_compare(KltuiApp(feed), terminal_size=SIZE, run_before=_settle)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


async def _settle(pilot) -> None:
    await until(pilot, lambda: isinstance(pilot.app.screen, MonitorScreen))
    await pilot.pause(0.7)
