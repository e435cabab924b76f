"""Pure pieces of the TUI: escaping, the heat scale, geometry, themes, feeds' bookkeeping."""

from __future__ import annotations

import numpy as np
import pytest

from kltui.metrics import scale
from kltui.run.driver import LazyRecorder, connect_failed, nth_recording
from kltui.session.events import HelperStarted, Problem, RunFinished, RunStarted, SampleScored
from kltui.session.fold import split_runs
from kltui.session.recording import read_recording
from kltui.session.store import SessionStore
from kltui.tui import heat, themes
from kltui.untrusted import escape_controls, safe
from tests.tui import synth


def test_escape_controls_spells_out_terminal_sequences():
    assert escape_controls("\x1b[31mred") == "\\x1b[31mred"
    assert escape_controls("a\nb\tc\r") == "a\\nb\\tc\\r"
    assert escape_controls("\u202eevil") == "\\u202eevil"  # bidi override
    assert escape_controls("x" * 10, limit=5) == "xxxx…"


def test_safe_text_is_never_markup():
    t = safe("[bold red]x[/] \x1b[31m")
    assert t.plain == "[bold red]x[/] \\x1b[31m"
    assert not t.spans


def test_levels_are_fixed_decades():
    v = np.array([0.0, 5e-13, 1e-12, 3e-7, 9.9e-4, 1e-3, 0.5, 1.0, 1e9, np.inf, np.nan])
    lv = scale.levels(v)
    assert lv[0] == scale.ZERO
    assert lv[1] == scale.FIRST_BIN  # below the scale: lowest bin, still not "zero"
    assert scale.bin_label(lv[2]) == "1e-12"
    assert scale.bin_label(lv[3]) == "1e-7"
    assert scale.bin_label(lv[4]) == "1e-4"
    assert scale.bin_label(lv[5]) == "1e-3"
    assert scale.bin_label(lv[6]) == "1e-1"
    assert lv[7] == lv[8] == scale.NONFINITE - 1  # the top decade, ">= 1"
    assert lv[9] == lv[10] == scale.NONFINITE  # inf and NaN: a fault, as in the HTML report


def test_glyphs_distinguish_levels_without_colour():
    assert (
        len({heat.GLYPHS[i] for i in (scale.EMPTY, scale.PENDING, scale.ZERO, scale.NONFINITE)})
        == 4
    )
    low, high = scale.level_of(1e-11), scale.level_of(1e-2)
    assert heat.GLYPHS[low] != heat.GLYPHS[high] != heat.GLYPHS[scale.ZERO]


def test_shipped_themes_load_with_heat_scales():
    loaded = themes.load_themes()
    names = {t.name for t in loaded.themes}
    assert {"kltui-dark", "kltui-light", "kltui-cb"} <= names
    assert not loaded.errors
    for t in loaded.themes:
        pal = heat.Palette.from_variables({**themes.VARIABLE_DEFAULTS, **t.variables}, "#000000")
        assert len(pal.bg) == scale.N_LEVELS
        ramp = [c.hex for c in pal.colours[scale.FIRST_BIN :]]  # the decades and non-finite
        assert len(set(ramp)) == len(ramp), f"{t.name}: heat levels must differ"


def test_bad_theme_file_is_reported_not_fatal(tmp_path):
    (tmp_path / "broken.yaml").write_text("name: broken\nprimary: '#zzz'\n")
    (tmp_path / "good.yaml").write_text("name: good\nprimary: '#336699'\n")
    loaded = themes.load_themes([tmp_path])
    assert [t.name for t in loaded.themes] == ["good"]
    assert "not a colour" in loaded.errors[0]


def test_nth_recording_keeps_the_given_name_for_the_first_run():
    assert nth_recording("/x/run.kltui.jsonl", 1) == "/x/run.kltui.jsonl"
    assert nth_recording("/x/run.kltui.jsonl", 3) == "/x/run-3.kltui.jsonl"
    assert nth_recording("/x/run.jsonl", 2) == "/x/run-2.jsonl"
    assert nth_recording("/x/out.log", 2) == "/x/out-2.log"
    assert nth_recording(None, 2) is None


def _down_run() -> list:
    return [
        RunStarted("r", 0.0, {}, [{"url": "http://h:1", "error": "refused"}], {}, "0"),
        Problem("http://h:1", "refused (phase: connect)", True, phase="connect"),
        RunFinished({}, "error"),
    ]


def test_lazy_recorder_holds_an_attempt_that_never_connected_until_closed(tmp_path):
    path = tmp_path / "r.kltui.jsonl"
    rec = LazyRecorder(str(path))
    for ev in _down_run():
        rec.write(ev)
    assert not path.exists() and not rec.opened  # a retry drops it unwritten
    rec.close()  # the session's last attempt: recorded, as `kltui check` records it
    assert len(read_recording(str(path)).events) == len(_down_run())
    store = SessionStore()
    for ev in _down_run():
        store.apply(ev)
    assert connect_failed(store)


def test_lazy_recorder_keeps_a_measured_run(tmp_path):
    path = tmp_path / "r.kltui.jsonl"
    rec = LazyRecorder(str(path))
    events = synth.session(n=2, length=8, helpers=("match",))
    for ev in events:
        rec.write(ev)
    rec.close()
    assert rec.opened
    assert len(read_recording(str(path)).events) == len(events)


def test_split_runs_separates_appended_runs():
    a = synth.session(n=2, length=4, helpers=("match",))
    runs = split_runs(a + a, list(range(2 * len(a))))
    assert [len(r[0]) for r in runs] == [len(a), len(a)]


@pytest.mark.parametrize("value", [0.0, 1e-13, 2e-5, 3.0])
def test_palette_styles_exist_for_every_level(value):
    pal = heat.Palette.from_variables(themes.VARIABLE_DEFAULTS, "#101010")
    assert pal.bg[scale.level_of(value)].bgcolor is not None


def test_store_fixture_shapes():
    # guards the synthetic data the other tests rely on
    store = SessionStore()
    for ev in synth.session(n=4, length=16):
        store.apply(ev)
    st = store.helpers[f"prefill_cache_hit@{synth.URL}"]
    assert st.skipped and st.summary.status == "pass"
    assert isinstance(HelperStarted, type) and isinstance(SampleScored, type)
