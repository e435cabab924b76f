"""A server's state geometry from its /server_info and its model's config.json (issue 57), on
the shapes real SGLang 0.5.17 served (tests/data/geometry/README.md)."""

import json
from pathlib import Path

import pytest

from kltui.engines.geometry import MambaStrategy, Source, Sourced, StateGeometry, StateKind
from kltui.engines.geometry_build import build_geometry
from kltui.engines.model_config import ModelConfigError, load_model_config
from kltui.engines.sglang import server_identity

DATA = Path(__file__).parents[2] / "data" / "geometry"


def _info(name: str) -> dict:
    return json.loads((DATA / f"server_info_{name}.json").read_text())


def _config(name: str, source: Source = Source.MODEL_CONFIG):
    return load_model_config(DATA / f"config_{name}.json", source)


def test_qwen3_next_default_mamba_cache():
    g = build_geometry(_info("q3n"), {}, _config("q3n"))
    assert g.kind is StateKind.MAMBA and g.known
    m = g.mamba
    assert m is not None
    assert (m.strategy, m.strategy_source) == (MambaStrategy.EXTRA_BUFFER, Source.SERVER_INFO)
    assert m.track_interval == Sourced(256, Source.SERVER_INFO)
    # no mamba_chunk_size in Qwen3-Next's config: FLA's 64, SGLang's default
    assert m.model_chunk_size == Sourced(64, Source.DEFAULT)
    assert m.chunk_size == Sourced(64, Source.DEFAULT)
    assert g.experts is not None and (g.experts.n_experts, g.experts.top_k) == (8, 2)
    assert g.window is None


def test_nemotron_h_chunk_from_config_and_no_experts():
    g = build_geometry(_info("nh"), {}, _config("nh"))
    assert g.mamba is not None and g.mamba.chunk_size == Sourced(128, Source.MODEL_CONFIG)
    assert g.experts is None and g.window is None


def test_nemotron_h_experts_only_where_a_layer_is_moe(tmp_path):
    """transformers writes n_routed_experts 8 into every Nemotron-H config; the real `M-M*-M-M*-`
    checkpoint on SGLang 0.5.17 read "MoE 8 experts" until its block pattern decided."""
    cfg = json.loads((DATA / "config_nh.json").read_text())
    assert cfg["n_routed_experts"] == 8 and "E" not in cfg["hybrid_override_pattern"]
    moe = dict(cfg, hybrid_override_pattern="M-M*-ME-M*E", layers_block_type=None)
    (tmp_path / "config.json").write_text(json.dumps(moe))
    g = build_geometry(_info("nh"), {}, load_model_config(tmp_path, Source.FLAG))
    assert g.experts is not None and (g.experts.n_experts, g.experts.top_k) == (8, 2)


def test_chunk_is_the_larger_of_the_model_chunk_and_the_page():
    info = {**_info("q3n"), "page_size": 256}
    g = build_geometry(info, {}, _config("q3n"))
    assert g.mamba is not None and g.mamba.chunk_size == Sourced(256, Source.SERVER_INFO)
    assert g.mamba.model_chunk_size == Sourced(64, Source.DEFAULT)


def test_gpt_oss_window_on_alternate_layers_with_the_pool_ratio():
    g = build_geometry(_info("go"), {}, _config("go", Source.FLAG))
    assert g.kind is StateKind.SLIDING_WINDOW and g.mamba is None
    w = g.window
    assert w is not None and w.size == Sourced(128, Source.FLAG)
    assert (w.layers, w.n_layers, w.full_tokens_ratio) == ((0, 2), 4, 0.8)
    assert g.experts is not None and g.experts.n_experts == 8


def test_an_older_server_on_a_mamba_model_gets_sglangs_defaults():
    info = {k: v for k, v in _info("q3n").items() if "mamba" not in k}
    g = build_geometry(info, {}, _config("q3n"))
    assert g.mamba is not None
    assert (g.mamba.strategy, g.mamba.strategy_source) == (
        MambaStrategy.EXTRA_BUFFER,
        Source.DEFAULT,
    )
    assert g.mamba.track_interval == Sourced(256, Source.DEFAULT)


def test_without_a_config_the_model_info_architecture_picks_the_chunk_default():
    g = build_geometry(_info("nh"), {"architectures": ["NemotronHForCausalLM"]}, None)
    assert g.mamba is not None and g.mamba.chunk_size == Sourced(256, Source.DEFAULT)
    assert g.config_path is None and g.experts is None


def test_a_dense_server_without_config_is_dense_and_unknown():
    g = build_geometry({"page_size": 16, "disable_radix_cache": False}, {}, None)
    assert g.kind is StateKind.DENSE and not g.known and g.mamba is None
    assert g.page_size == Sourced(16, Source.SERVER_INFO)


def test_a_mamba_model_with_the_radix_cache_off_keeps_its_mamba_state():
    info = {**_info("q3n"), "uses_mamba_radix_cache": False, "disable_radix_cache": True}
    assert build_geometry(info, {}, _config("q3n")).mamba is not None


def test_qwen_use_sliding_window_false_is_no_window(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps({"sliding_window": 4096, "use_sliding_window": False}))
    assert load_model_config(tmp_path, Source.FLAG).window() is None


def test_a_bad_config_names_the_file_and_the_field(tmp_path):
    with pytest.raises(ModelConfigError) as e:
        load_model_config(DATA / "config_bad_window.json", Source.FLAG)
    assert "config_bad_window.json" in str(e.value) and "'sliding_window'" in str(e.value)
    (tmp_path / "config.json").write_text("{")
    with pytest.raises(ModelConfigError, match="is not JSON"):
        load_model_config(tmp_path, Source.FLAG)
    with pytest.raises(ModelConfigError, match="cannot be read"):
        load_model_config(tmp_path / "nope.json", Source.FLAG)


def test_the_identity_records_the_geometry_and_it_reads_back():
    g = build_geometry(_info("q3n"), {}, _config("q3n"))
    ident = server_identity("http://127.0.0.1:1", _info("q3n"), {}, g)
    assert StateGeometry.of(ident.record()["geometry"]) == g
