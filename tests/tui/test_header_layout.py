"""The server panel at real terminal widths: settings break between settings, never inside one."""

from __future__ import annotations

from textual.widgets import Footer

from kltui.session.events import Problem, RunFinished
from kltui.tui.widgets.counters import Counters
from kltui.tui.widgets.diagnosis import DiagnosisBar
from kltui.tui.widgets.header import ServersPanel, TitleBar
from kltui.tui.widgets.heatpanel import HeatmapPanel
from kltui.tui.widgets.progress import HelperProgress
from tests.tui import synth
from tests.tui.kit import drawn, replay_app, replayed

# a pip-installed demo reports its checkpoint path: long enough to push the line past 200 columns
MODEL = "/home/someone/.venvs/kltui/lib/python3.11/site-packages/kltui/reference/checkpoint"
SETTINGS = [
    "sglang 0.5.23",
    "tp 1",
    "dtype bfloat16",
    "attn triton",
    "page 1",
    "radix on",
    "deterministic off",
    "cuda graph off",
    "stream incremental",
    "fault stale-prefix",
]


def panel_lines(app) -> list[str]:
    rows = drawn(app.query_one(ServersPanel)).splitlines()[1:-1]  # inside the border
    return [r.strip("│").strip() for r in rows]


def check_unbroken(lines: list[str]) -> None:
    server = [ln for ln in lines if not ln.startswith("prompts")]
    joined = " · ".join(server)
    for setting in SETTINGS:
        assert sum(setting in ln for ln in server) == 1, (setting, server)
    # continuation lines start with a whole setting, and no line ends on a dangling separator
    for ln in server:
        assert not ln.endswith("·"), ln
    assert "deterministic\n" not in joined


async def test_settings_never_break_inside_a_setting_at_200_and_120_columns():
    s = synth.server(model_path=MODEL, served_model_name=None, kltui_fault="stale-prefix")
    app = replay_app(synth.session(n=3, length=16, servers=[s]))
    async with app.run_test(size=(200, 50)) as pilot:
        await replayed(pilot, app)
        wide = panel_lines(app)
        check_unbroken(wide)
        assert len([ln for ln in wide if not ln.startswith("prompts")]) == 2
        await pilot.resize_terminal(120, 50)
        await pilot.pause()
        narrow = panel_lines(app)
        check_unbroken(narrow)
        # re-laid out for the new width: more lines, every one within the panel
        assert len(narrow) > len(wide)
        assert all(len(ln) <= 120 - 4 for ln in narrow)


async def test_two_servers_on_one_host_read_apart_and_the_verdict_survives_80x24():
    """Issue 21 item 2: `match@http://localhost:3…` twice at 160 columns; `avg_kl_` at 80."""
    urls = ["http://localhost:30000", "http://localhost:30001"]
    servers = [synth.server(u) for u in urls]
    events = synth.session(n=3, length=16, servers=servers, helpers=(), finish=False)
    for u in urls:
        events.extend(synth.helper_events("match", url=u, n=3, length=16))
    events.append(RunFinished({"helpers": 2}, "pass"))
    app = replay_app(events)
    async with app.run_test(size=(160, 50)) as pilot:
        await replayed(pilot, app)
        wide = drawn(app.query_one(HelperProgress))
        assert "match@:30000" in wide and "match@:30001" in wide, wide
        name = f"match@:3000{urls.index(app.selected.split('@', 1)[1])}"
        assert f"k3 heatmap · {name}" in str(app.query_one(HeatmapPanel).border_title)
        assert str(app.query_one(Counters).border_title) == f"counters · {name}"
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        app.refresh_views()
        await pilot.pause()
        small = drawn(app.query_one(HelperProgress))
        rows = [r for r in small.splitlines() if "match@" in r]
        assert len(rows) == 2, small
        for row in rows:
            assert "PASS" in row and "e-0" in row and "…" not in row, small
        assert "avg_kl_div" in small.splitlines()[0]  # the border names the value column


async def test_the_replay_title_drops_whole_parts_instead_of_cutting_one():
    """At 200 columns the replay header ended in `kltui 0.1…`."""
    app = replay_app(synth.session(n=2, length=8))
    async with app.run_test(size=(200, 50)) as pilot:
        await replayed(pilot, app)
        seen = []
        for width in range(200, 79, -3):
            await pilot.resize_terminal(width, 50)
            await pilot.pause()
            app.refresh_views()
            await pilot.pause()
            line = drawn(app.query_one(TitleBar)).splitlines()[0].rstrip()
            assert line.endswith("PASS") and len(line) <= width, line
            # each part is shown whole or not at all (the replay label itself fits from 80 on)
            assert "…" not in line, line
            assert (" · kltui" in line) == (" · kltui 0.1.0" in line), line
            seen.append("kltui 0.1.0" in line)
    assert seen[0] and not seen[-1]  # 200 columns have room for it, 80 do not


async def test_the_problems_key_stays_in_the_footer_at_80_columns():
    """Issue 21 item 3: with problems, `e` is in the footer; at 80 columns it was past the edge."""
    problem = Problem("http://127.0.0.1:30000", "a payload was malformed", False, "match")
    app = replay_app(synth.session(n=2, length=8, problems=[problem]))
    async with app.run_test(size=(80, 24)) as pilot:
        await replayed(pilot, app)
        await pilot.pause()
        keys = {drawn(k).strip(): k for k in app.query_one(Footer).query("FooterKey")}
        e = next((k for text, k in keys.items() if text.startswith("e ")), None)
        assert e is not None, list(keys)
        assert 0 <= e.region.x and e.region.right <= 80, (e.region, list(keys))


async def test_a_run_error_gets_its_lines_in_the_diagnosis_at_80x24():
    """Issue 21 item 3 at 80x24: the diagnosis folds to one line, but not the run's error."""
    line = (
        "error: http://localhost:1: cannot connect for /health (All connection attempts "
        "failed) (after 4 attempts over 1.9 s)"
    )
    app = replay_app(synth.session(n=2, length=8))
    async with app.run_test(size=(80, 24)) as pilot:
        await replayed(pilot, app)
        bar = app.query_one(DiagnosisBar)
        bar.show([], False, error=line, ended=True)
        await pilot.pause()
        rows = [r.strip("│ ") for r in drawn(bar).splitlines()[1:-1]]
        assert " ".join(rows).split() == line.split(), rows
