"""`s` (and the palette's screenshot entry): the SVG goes to the runs folder, or
--screenshot-dir, and its path is said on screen and printed after quit; the palette offers
one screenshot entry, not Textual's as well."""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from kltui.cli.commands import make_parser
from kltui.tui.commands import KltuiCommands
from kltui.tui.launch import print_screenshots
from tests.reports.pngread import read_png
from tests.tui.kit import replay_app, replayed, until
from tests.tui.test_snapshots import FAULT, replay

SIZE = (140, 45)


async def test_s_saves_into_the_runs_folder_and_says_where(tmp_path, monkeypatch, capsys):
    runs, cwd = tmp_path / "runs", tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("KLTUI_RUNS_DIR", str(runs))  # not there yet: `s` makes it
    app = replay_app()
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        await pilot.press("s")
        await until(pilot, lambda: app.screenshots)
    (saved,) = app.screenshots
    assert os.path.dirname(saved) == str(runs.resolve()) and saved.endswith(".svg")
    assert os.listdir(runs) == [os.path.basename(saved)]
    assert os.listdir(cwd) == []  # not the current directory any more
    assert app.last_message == f"screenshot saved: {saved}"
    print_screenshots(app)
    assert capsys.readouterr().err == f"screenshot: {saved}\n"


async def test_screenshot_dir_wins_and_the_palette_has_one_screenshot_entry(tmp_path):
    app = replay_app(screenshot_dir=str(tmp_path / "shots"))
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        system = [c.title for c in app.get_system_commands(app.screen)]
        ours = [name for name, _cb, _help in KltuiCommands(app.screen)._commands()]
        titles = system + ours
        assert [t for t in titles if "creenshot" in t] == ["Save screenshot (SVG)"], titles
        await pilot.press("s")
        await until(pilot, lambda: app.screenshots)
    assert len(os.listdir(tmp_path / "shots")) == 1


def test_screenshot_dir_option():
    p = make_parser()
    for argv in (["tui", "--server", "x:1"], ["demo"], ["replay", "f.kltui.jsonl"]):
        assert p.parse_args([*argv, "--screenshot-dir", "shots"]).screenshot_dir == "shots"


RSVG = shutil.which("rsvg-convert")
# a run of cells that starts with two spaces, then a glyph: "  ≥ " after avg_kl_div
LEADING = re.compile(
    r'<text [^>]*x="([\d.]+)" y="([\d.]+)" textLength="([\d.]+)"[^>]*>'
    r"((?:&#160;){2}[^&<][^<]*)</text>"
)


def ink(png: np.ndarray) -> np.ndarray:
    """Columns of a rendered strip where anything differs from its left edge's background."""
    rgb = png[..., :3].astype(int)
    return (np.abs(rgb - rgb[:, :1]).sum(axis=2) > 60).any(axis=0)


@pytest.mark.skipif(
    RSVG is None, reason="rsvg-convert is not installed (apt-get install librsvg2-bin)"
)
async def test_the_svg_keeps_its_spaces_in_rsvg_and_leaves_the_toast_out(tmp_path):
    # issue 59: rsvg-convert dropped a text run's leading spaces ("5.187e-01≥", "○ idlerun 1"),
    # and a second screenshot caught the first one's "saved" toast
    app = replay(FAULT, screenshot_dir=str(tmp_path))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await replayed(pilot, app)
        for n in (1, 2):
            await pilot.press("s")
            await until(pilot, lambda n=n: len(app.screenshots) == n)
    svg = Path(app.screenshots[1]).read_text()
    assert "saved" not in svg and "Toast" not in svg
    x, y, length, text = LEADING.search(svg).groups()
    cell = float(length) / len(html.unescape(text))
    # the cells sit in a group moved by the window's frame
    dx, dy = map(
        float, re.search(r'<g transform="translate\(([\d.]+), ([\d.]+)\)" clip', svg).groups()
    )
    left, top = float(x) + dx, float(y) + dy
    out = tmp_path / "strip.png"
    # the three cells of "  ≥", rendered 1:1 by rsvg-convert
    subprocess.run(
        [RSVG, f"--left=-{left:.1f}", f"--top=-{top - 20:.1f}", "--page-width", f"{3 * cell:.0f}",
         "--page-height", "26", "-o", str(out), app.screenshots[1]],
        check=True,
    )  # fmt: skip
    cols = ink(read_png(out.read_bytes()))
    spaces = int(2 * cell)
    assert not cols[1 : spaces - 1].any(), "a leading space was dropped"
    assert cols[spaces:].any(), "the glyph after the spaces is missing"
