"""Golden text of the state geometry, one per kind (words/geometry.py), and where it is shown:
the server line of `kltui check`, the Markdown and HTML reports."""

import json
from pathlib import Path

from kltui.engines.geometry import Source, StateGeometry
from kltui.engines.geometry_build import build_geometry
from kltui.engines.model_config import load_model_config
from kltui.engines.sglang import server_identity
from kltui.outputs.check_tables import server_line
from kltui.words.geometry import geometry_line

DATA = Path(__file__).parents[2] / "data" / "geometry"


def _geometry(name: str, source: Source = Source.MODEL_CONFIG) -> StateGeometry:
    info = json.loads((DATA / f"server_info_{name}.json").read_text())
    return build_geometry(info, {}, load_model_config(DATA / f"config_{name}.json", source))


def test_mamba_with_experts():
    assert geometry_line(_geometry("q3n")) == (
        "mamba extra_buffer · track 256 · chunk 64 (server_info, sglang-default)"
        " · MoE 8 experts top-2 (config.json)"
    )


def test_mamba_with_its_chunk_from_the_config():
    assert geometry_line(_geometry("nh")) == (
        "mamba extra_buffer · track 256 · chunk 128 (server_info, config.json)"
    )


def test_sliding_window_from_model_config():
    assert geometry_line(_geometry("go", Source.FLAG)) == (
        "sliding window 128 on 2 of 4 layers · swa_full_tokens_ratio 0.8 (--model-config)"
        " · MoE 8 experts top-2 (--model-config)"
    )


def test_dense_says_nothing():
    assert geometry_line(StateGeometry()) is None


def test_the_check_server_line_shows_the_geometry():
    info = json.loads((DATA / "server_info_q3n.json").read_text())
    s = server_identity("http://127.0.0.1:30001", info, {}, _geometry("q3n"))
    line = server_line(s)
    assert "mamba extra_buffer · track 256 · chunk 64 (server_info, sglang-default)" in line
    assert "MoE 8 experts top-2" in line


def _store_with(geometry: StateGeometry):
    from kltui.session.events import RunStarted
    from kltui.session.store import SessionStore

    info = json.loads((DATA / "server_info_go.json").read_text())
    s = server_identity("http://127.0.0.1:30001", info, {}, geometry).record()
    store = SessionStore()
    store.apply(RunStarted("r", 0.0, {}, [s], {}, "0.1.0"))
    return store


def test_the_reports_show_the_geometry():
    from kltui.outputs.reports.html import html_report
    from kltui.outputs.reports.md import md_report

    store = _store_with(_geometry("go"))
    line = next(x for x in md_report(store).splitlines() if x.startswith("- **Server**"))
    assert "state: sliding window 128 on 2 of 4 layers" in line, line
    html = html_report(store)
    assert "state geometry" in html and "sliding window 128 on 2 of 4 layers" in html


def test_a_dense_server_s_reports_have_no_geometry_row():
    from kltui.outputs.reports.html import html_report

    assert "state geometry" not in html_report(_store_with(StateGeometry()))


def test_the_tui_header_lists_the_geometry_after_the_settings():
    from textual.widgets import Static

    from kltui.session.store import RecordedConfig
    from kltui.tui.widgets.header import server_settings

    info = json.loads((DATA / "server_info_q3n.json").read_text())
    s = server_identity("http://127.0.0.1:1", info, {}, _geometry("q3n"))
    shown = [t.plain for t in server_settings(s, RecordedConfig.of({}), Static())]
    assert shown[-2:] == [
        "mamba extra_buffer · track 256 · chunk 64 (server_info, sglang-default)",
        "MoE 8 experts top-2 (config.json)",
    ]
