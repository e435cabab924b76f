"""The hf: reference's server line (issue 46 item 5): "device default · attn_implementation
default" while the reference table said cpu and sdpa. Before the worker loads the line spells
out what a default resolves to; once the reference helper has loaded it, the report's line says
what ran."""

from __future__ import annotations

from kltui.engines.identity import ServerIdentity
from kltui.outputs.reports.md import md_report
from kltui.session.events import HelperFinished, HelperStarted, RunStarted
from kltui.session.servers import HfDefault, hf_settings
from kltui.session.store import SessionStore
from kltui.words.server_facts import hf_fact, server_facts

HF = {
    "url": "hf:/models/llama",
    "engine": "hf",
    "model_path": "/models/llama",
    "dtype": "float32",
    "device": None,
    "attn_implementation": None,
    "batch_size": 1,
}
LOADED = {"dtype": "float32", "device": "cpu", "attn_implementation": "sdpa", "batch_size": 1}


def test_before_it_loads_a_default_is_spelled_out():
    asked = hf_settings(ServerIdentity.of(HF))
    assert asked == {
        "dtype": "float32",  # asked: shown as asked
        "device": HfDefault.DEVICE,
        "attn_implementation": HfDefault.ATTN,
        "batch_size": 1,
    }
    facts = server_facts(ServerIdentity.of(HF))
    assert "device default" not in facts and "attn_implementation default" not in facts
    # the defaults spelled out (words: tests/unit/words/test_golden_server_facts.py)
    assert [hf_fact(k, v) for k, v in asked.items()] == facts[2:6]
    assert "dtype float32" in facts


def test_once_loaded_the_line_says_what_ran():
    facts = server_facts(ServerIdentity.of(HF), LOADED)
    assert "device cpu" in facts and "attn_implementation sdpa" in facts


def test_the_markdown_report_names_what_the_reference_ran_as():
    store = SessionStore()
    sglang = {"url": "http://127.0.0.1:1", "engine": "sglang", "version": "0.5.23"}
    store.apply(RunStarted("r", 0.0, {}, [sglang, HF], {}, "0.1.0"))
    store.apply(HelperStarted("hf_reference", sglang["url"], 1, 1e-3, 1e-3))
    summary = {
        "status": "pass",
        "scored": 1,
        "reference_flips": {"wide": 0},
        "reference_loaded": LOADED,
    }
    store.apply(HelperFinished("hf_reference", sglang["url"], summary))
    line = next(x for x in md_report(store).splitlines() if x.startswith("- **Server** hf:"))
    assert "device cpu" in line and "attn\\_implementation sdpa" in line, line
