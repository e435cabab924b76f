"""`kltui check --baseline`: the cross-engine figures a CI job reads are in the JSON report
(`helpers.cross_engine`), the Markdown and HTML reports and the JUnit case and properties."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np

from kltui.metrics.cross import Side, cross_positions, cross_summary
from kltui.metrics.cross_figures import GreedyMismatch
from kltui.metrics.k3 import ScoreBook
from kltui.outputs.reports.common import config_table, cross_rows, json_report
from kltui.outputs.reports.html import html_report
from kltui.outputs.reports.junit import junit_report
from kltui.outputs.reports.md import config_md, md_report
from kltui.session.events import (
    HelperFinished,
    HelperStarted,
    RunFinished,
    RunStarted,
    SampleScored,
)
from kltui.session.store import SessionStore
from kltui.untrusted import md_text
from tests.json_contract import validate

URL, BASE = "http://127.0.0.1:30000", "http://127.0.0.1:8000"


def store(contract: dict | None = None, floors: dict | None = None) -> SessionStore:
    rng = np.random.default_rng(3)
    lp_a = -rng.random((2, 6))
    lp_b = lp_a + rng.normal(0, 1e-3, (2, 6))
    book = ScoreBook()
    events = [
        RunStarted("r1", 1.7e9, {"helpers": ["cross_engine"]}, [{"url": URL}], {}, "0.1.0"),
        HelperStarted("cross_engine", URL, 2, 1e-3, 1e-3, {}),
    ]
    cross = []
    for s in range(2):
        ids = np.arange(6) + 10 * s
        book.add(s, ids, lp_a[s], lp_b[s])
        events.append(SampleScored("cross_engine", URL, s, ids, lp_a[s], lp_b[s], 0, 5))
        top = np.tile(np.arange(5), (6, 1))
        top_b = top.copy()
        top_b[2, 0] = 7 if s == 1 else 0  # one top-1 disagreement
        lp_top = np.tile(np.log([0.5, 0.2, 0.1, 0.05, 0.05]), (6, 1))
        a = Side(ids, lp_a[s], top, lp_top)
        b = Side(ids, lp_b[s], top_b, lp_top)
        cross.append((s, cross_positions(a, b)))
    summary = book.summary(n_samples=2, n_skipped=0, threshold=1e-3)
    summary.update(
        cross_summary(
            cross,
            [
                (0, None),
                (1, GreedyMismatch(3, 5, 6, a_in_top_b=True, b_in_top_a=True, passed=True)),
            ],
            k=5,
        ).to_json()
    )
    summary["config_mismatches"] = ["dtype", "attention_backend"]
    summary["config_unknown"] = ["chunked_prefill"]
    summary["alignment"] = [
        {"key": "attention_backend", "label": "attention backend", "sglang": "triton",
         "vllm": "FLASH_ATTN (FA3)", "status": "mismatch", "severity": "warn", "why": "w",
         "note": "", "source": "SGLang attention_backend; vLLM startup log attention_backend"},
        # a value that came from a server: escaped in every medium
        {"key": "chunked_prefill", "label": "chunked prefill", "sglang": "<script>x</script>|",
         "vllm": None, "status": "unknown", "severity": "warn", "why": "w", "note": "",
         "source": "SGLang chunked_prefill_size; vLLM enable_chunked_prefill (not reported)"},
    ]  # fmt: skip
    summary["status"] = "pass"
    if contract is not None:
        summary["contract"] = contract
    if floors is not None:
        summary["floors"] = floors
    events += [HelperFinished("cross_engine", URL, summary), RunFinished({}, "pass")]
    st = SessionStore()
    for ev in events:
        st.apply(ev)
    return st


def only(st: SessionStore):
    """The store's one helper (cross_engine)."""
    (h,) = st.helpers.values()
    return h


def md_shows_rows(md: str, st: SessionStore) -> bool:
    """The Markdown line shows every cross-engine row as `cross_rows` words it (golden:
    tests/unit/words/test_golden_cross_engine.py), escaped for Markdown."""
    rows = cross_rows(only(st).summary)
    return bool(rows) and all(f"{md_text(label)} {md_text(v)}" in md for label, v in rows)


def test_json_has_the_cross_engine_figures():
    doc = json_report(store())
    validate(doc, "check")
    h = doc["helpers"]["cross_engine"]
    for key in (
        "top1_agreement",
        "top5_agreement",
        "max_abs_delta",
        "mean_abs_delta",
        "union_topk_kl",
        "first_greedy_mismatch",
        "config_mismatches",
    ):
        assert key in h, key
    assert 0 < h["top1_agreement"] < 1 and h["max_abs_delta"] > h["mean_abs_delta"] > 0
    assert h["config_mismatches"] == ["dtype", "attention_backend"]
    assert h["first_greedy_mismatch"]["position"] == 3


def test_markdown_html_and_junit_show_them():
    st = store()
    md = md_report(st)
    assert md_shows_rows(md, st)  # the rows' words: tests/unit/words/test_golden_cross_engine
    html = html_report(st)
    assert "Against the baseline" in html and "first greedy mismatch" in html
    root = ET.fromstring(junit_report(st))
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["cross_engine.config_mismatches"] == "dtype,attention_backend"
    assert props["cross_engine.first_greedy_mismatch"] == "sample 1 @ 3"
    assert float(props["cross_engine.max_abs_delta"]) > 0
    out = "".join(e.text or "" for e in root.iter("system-out"))
    assert "top-5 agreement" in out and "mean |Δ logprob|" in out


def test_the_settings_table_is_in_every_report_and_unknowns_are_named():
    st = store()
    doc = json_report(st)
    validate(doc, "check")
    h = doc["helpers"]["cross_engine"]
    assert h["config_unknown"] == ["chunked_prefill"]
    assert [r["key"] for r in h["config_table"]] == ["attention_backend", "chunked_prefill"]
    assert h["config_table"][0]["source"].endswith("startup log attention_backend")
    md = md_report(st)
    assert dict(cross_rows(only(st).summary))["not known on both"] == "chunked_prefill"
    assert md_shows_rows(md, st) and config_md(config_table(only(st).summary))[3] in md
    assert "<script>" not in md and "\\<script\\>" in md
    html = html_report(st)
    assert "Engine settings (SGLang vs vLLM)" in html and "FLASH_ATTN (FA3)" in html
    assert "<script>x" not in html and "&lt;script&gt;x" in html
    root = ET.fromstring(junit_report(st))
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["cross_engine.config_unknown"] == "chunked_prefill"


def test_the_console_prints_the_table_and_what_is_unknown():
    from rich.console import Console

    from kltui.outputs.check_tables import alignment_table, cross_line

    figures = store().helpers[next(iter(store().helpers))].summary.figures
    console = Console(width=200, record=True, color_system=None)
    console.print(cross_line(figures))
    console.print(alignment_table(figures))
    out = console.export_text()
    assert "not known on both: chunked_prefill" in out
    assert "triton" in out and "FLASH_ATTN (FA3)" in out and "<script>x</script>|" in out
    assert "vLLM startup log attention_backend" in out


def test_flip_margins_in_json_markdown_html_and_junit():
    st = store()
    doc = json_report(st)
    validate(doc, "check")
    fm = doc["helpers"]["cross_engine"]["flip_margins"]
    # sample 1 position 2: vLLM ranks id 7 first where SGLang ranks 0, both 0.92 nats clear
    assert (fm["flips"], fm["within_line"], fm["across_line"]) == (1, 0, 1)
    assert fm["largest"] == {"sample": 1, "position": 2, "id_a": 0, "id_b": 7,
                             "margin_a": fm["max_margin"], "margin_b": fm["max_margin"]}  # fmt: skip
    assert abs(fm["max_margin"] - np.log(0.5 / 0.2)) < 1e-12
    assert md_shows_rows(md_report(st), st)  # the flip line's words: test_golden_cross_engine
    assert "top-1 flips" in html_report(st)
    root = ET.fromstring(junit_report(st))
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["cross_engine.flips"] == "1"
    assert props["cross_engine.flips_across_margin_line"] == "1"
    assert props["cross_engine.flip_margin_line"] == "0.7"
    assert float(props["cross_engine.flip_max_margin"]) > 0.7


def test_a_contract_difference_is_named_in_every_report():
    from kltui.metrics.contract import judge, sglang_contract, vllm_contract

    sg, v = sglang_contract("prompt"), vllm_contract("prompt", "raw_logits")
    verdict = judge(sg, v)
    side = {"sglang": sg.to_json(), "vllm": v.to_json(), **verdict.to_json()}
    st = store({"status": verdict.status, "setting": verdict.setting,
                "message": verdict.message, "prompt": side,
                "sampled": {**side, "used_for": "ranks"}})  # fmt: skip
    doc = json_report(st)
    validate(doc, "check")
    c = doc["helpers"]["cross_engine"]["contract"]
    assert c["status"] == "difference" and c["setting"] == "--logprobs-mode raw_logits"
    assert dict(cross_rows(only(st).summary))["logprob contract"] == verdict.message
    assert md_shows_rows(md_report(st), st)  # the judge's words, as its row
    assert "--logprobs-mode raw\\_logits" in md_report(st)
    assert "contract difference" in html_report(st)
    root = ET.fromstring(junit_report(st))
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["cross_engine.logprob_contract"] == "difference"
    assert props["cross_engine.logprob_contract_setting"] == "--logprobs-mode raw_logits"
