"""Read-only mode (`--read-only`, for `kltui web` reviewers): keys that act on servers or files
do nothing and are not offered; without it the same keys work."""

from __future__ import annotations

import os

from kltui.tui.commands import KltuiCommands
from tests.tui.kit import drawn, replay_app, replayed, until

SIZE = (140, 45)


async def palette_names(app) -> list[str]:
    return [name for name, _cb, _help in KltuiCommands(app.screen)._commands()]


async def test_read_only_turns_off_rerun_and_screenshots(tmp_path):
    app = replay_app(read_only=True, screenshot_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        gen = app.run_gen
        await pilot.press("r")
        await pilot.press("s")
        await pilot.pause()  # every message handled: the keys' actions would have run
        assert app.run_gen == gen  # no new run started
        assert os.listdir(tmp_path) == []  # no file written
        await app.action_rerun()  # the palette's route, straight to the action
        app.action_screenshot()
        await pilot.pause()
        assert app.run_gen == gen and os.listdir(tmp_path) == []
        names = await palette_names(app)
        assert "Re-run" not in names and "Save screenshot (SVG)" not in names
        footer = drawn(app.query_one("Footer"))
        assert "Re-run" not in footer and "Screenshot" not in footer
        assert "read-only" in drawn(app.query_one("#titlebar"))


async def test_without_read_only_the_same_keys_act(tmp_path):
    app = replay_app(screenshot_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        await replayed(pilot, app)
        gen = app.run_gen
        await pilot.press("s")
        await until(pilot, lambda: len(os.listdir(tmp_path)) == 1)
        await pilot.press("r")
        await until(pilot, lambda: app.run_gen > gen)
        assert "Re-run" in await palette_names(app)
        assert "read-only" not in drawn(app.query_one("#titlebar"))
