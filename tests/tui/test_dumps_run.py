"""The dumper drill-down from the TUI: the launch settings when the server has no dumper hooks
(the embedded reference server has none), and a saved `kltui dumps --json` result opened in the
module table (`kltui --dumps FILE.json`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kltui.cli import main
from kltui.dumps.capture import launch_settings
from kltui.dumps.run import load_result
from kltui.run.config import RunConfig
from kltui.tui.app import KltuiApp
from kltui.tui.feeds import LiveFeed
from kltui.tui.launch import DumpsViewer
from kltui.tui.screens.diagnosis import DiagnosisScreen
from kltui.tui.screens.dumps import DumpsScreen
from kltui.tui.screens.dumps_run import DumpsRunScreen
from kltui.words.advice import dumps_command
from tests.tui.kit import drawn, drawn_at, until

SIZE = (150, 50)
QKV1 = "model.layers.1.self_attn.qkv_proj"


async def test_server_without_hooks_shows_the_launch_settings(reference_servers, tmp_path):
    dump_dir = tmp_path / "dumps"
    srv = reference_servers.server()  # the shared one: no dumper hooks
    cfg = RunConfig(servers=[srv.url], samples=2, max_new_tokens=8, max_prompt_tokens=32)
    app = KltuiApp(LiveFeed(cfg, None), dump_dir=str(dump_dir))
    async with app.run_test(size=(400, 50)) as pilot:  # wide: the settings lines unwrapped
        await until(pilot, lambda: app.store is not None and app.store.finished is not None, 60)
        await until(pilot, lambda: not app.status.running)
        await pilot.press("d")
        assert isinstance(app.screen, DiagnosisScreen)
        await pilot.press("u")
        screen = app.screen
        assert isinstance(screen, DumpsRunScreen)
        await until(pilot, lambda: screen.outcome != "running", 30)
        assert screen.outcome == "hooks-missing"
        log = screen.query_one("#dumps-run-log")
        await until(pilot, lambda: "has no /dumper/ routes" in drawn(log))
        text = drawn(log)
        assert "has no /dumper/ routes" in text
        # how to relaunch and what to run then, as the words say them (golden: tests/unit/words)
        here = str(dump_dir.resolve())
        assert all(ln.strip() in text for ln in launch_settings(here).splitlines())
        assert dumps_command(srv.url, here) in text
        assert screen.steps == [f"checking {srv.url} for the dumper hooks"]  # no torch
        assert not dump_dir.exists()  # nothing was dumped or created
        await pilot.press("escape")
        assert isinstance(app.screen, DiagnosisScreen)


async def test_unreachable_server_is_one_literal_error_line(tmp_path):
    from tests.tui.kit import replay_app

    app = replay_app(dump_dir=str(tmp_path))
    async with app.run_test(size=SIZE) as pilot:
        app.open_dumps("http://127.0.0.1:9/[bold]x[/]")  # port 9: discard, nothing listens
        screen = app.screen
        assert isinstance(screen, DumpsRunScreen)
        await until(pilot, lambda: screen.outcome != "running", 30)
        assert screen.outcome == "error"
        assert "[bold]x[/]" in screen.steps[-1] and "\n" not in screen.steps[-1]


def saved_analysis(tmp_path) -> Path:
    pytest.importorskip("torch")
    from tests.unit.dumps.dumps_synth import make_pair

    a, b = make_pair(tmp_path, plant_decode={"step": 2, "module": QKV1, "eps": 1e-3})
    out = tmp_path / "r.json"
    assert main(["dumps", "analyze", str(a), str(b), "--json", str(out)]) == 1
    return out


async def test_saved_result_opens_in_the_module_table(tmp_path):
    result = load_result(str(saved_analysis(tmp_path)))
    app = DumpsViewer(result)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, DumpsScreen))
        await until(pilot, lambda: QKV1 in drawn_at(app.screen, "#dumps-table"))
        text = drawn_at(app.screen, "#dumps-table")
        assert "first-divergent" in text and "decode step 2" in text
        await pilot.press("escape")
        await until(pilot, lambda: not app.is_running)
    assert app.return_code == 0


async def test_saved_result_on_top_of_the_dashboard(tmp_path):
    from tests.tui.kit import replay_app

    result = load_result(str(saved_analysis(tmp_path)))
    app = replay_app(dumps_result=result)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: isinstance(app.screen, DumpsScreen))
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, DumpsScreen))


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("{", "not JSON"),
        ("[1]", "not an object"),
        ('{"verdict": "x"}', "no 'identical', 'modules', 'prefill'"),
        (
            '{"verdict": "x", "identical": false, "prefill": {}, "modules": [{"module": 1}]}',
            "modules[0].module is missing or of the wrong type",
        ),
    ],
)
def test_bad_saved_result_is_one_line_exit_2(tmp_path, capsys, content, why):
    f = tmp_path / "bad.json"
    f.write_text(content)
    assert main(["--dumps", str(f)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(f) in err and why in err
    assert main(["--dumps", str(tmp_path / "missing.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
