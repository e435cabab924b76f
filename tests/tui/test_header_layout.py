"""The server panel at real terminal widths: settings break between settings, never inside one."""

from __future__ import annotations

from kltui.tui.widgets.header import ServersPanel
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
