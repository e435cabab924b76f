"""`s` (and the palette's screenshot entry): the SVG goes to the runs folder, or
--screenshot-dir, and its path is said on screen and printed after quit; the palette offers
one screenshot entry, not Textual's as well."""

from __future__ import annotations

import os

from kltui.cli.commands import make_parser
from kltui.tui.commands import KltuiCommands
from kltui.tui.launch import print_screenshots
from tests.tui.kit import replay_app, replayed, until

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
