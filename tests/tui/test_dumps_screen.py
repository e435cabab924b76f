"""The dumper drill-down screen shows the analysis's module table as computed."""

from __future__ import annotations

import pytest

from kltui.tui.screens.dumps import DumpsScreen
from tests.tui.kit import StyledApp, drawn_at, until

torch = pytest.importorskip("torch")
from kltui.dumps.analyze import analyze  # noqa: E402
from kltui.words.dumps import verdict_words  # noqa: E402
from tests.unit.dumps.dumps_synth import make_pair  # noqa: E402

QKV1 = "model.layers.1.self_attn.qkv_proj"


class Host(StyledApp):
    pass


async def test_screen_shows_first_divergent_module_and_inherited(tmp_path):
    a, b = make_pair(tmp_path, plant_decode={"step": 2, "module": QKV1, "eps": 1e-3})
    result = analyze(a, b, verdict_words)
    result["modules"][0]["module"] = "[bold red]x[/]\x1b[31mRED"  # names come from files
    app = Host()
    async with app.run_test(size=(150, 60)) as pilot:
        app.push_screen(DumpsScreen(result))
        await until(pilot, lambda: isinstance(app.screen, DumpsScreen))
        await until(pilot, lambda: QKV1 in drawn_at(app.screen, "#dumps-table"))
        text = drawn_at(app.screen, "#dumps-table")
        assert "first-divergent" in text and "inherited" in text
        assert "decode step 2" in text and "1.000e-03" in text
        assert "[bold red]x[/]\\x1b[31mRED" in text
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, DumpsScreen))
