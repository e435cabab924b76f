"""Where a threshold came from travels typed (metrics/presets.ThresholdSource), once, in
HelperStarted: the store puts it into the helper's Summary, the JSON report shows its label,
older recordings (a label inside the summary) read the same, and cross_engine gates its verdict
on it without reading label text."""

from __future__ import annotations

import pytest

from kltui.engines.sglang import SGLangClient
from kltui.engines.vllm import VLLMClient
from kltui.helpers.context import HelperContext
from kltui.helpers.cross_engine import CrossRun
from kltui.metrics.presets import ThresholdSource
from kltui.outputs.reports.common import helper_entries
from kltui.run.config import RunConfig, resolve_threshold
from kltui.session.codec import decode, encode
from kltui.session.events import HelperFinished, HelperStarted
from kltui.session.store import SessionStore

URL = "http://127.0.0.1:1"
DETERMINISTIC = "preset deterministic (server reports enable_deterministic_inference) (*)"


def test_labels_are_the_ones_views_showed():
    cfg = RunConfig()
    labels = {
        "default": resolve_threshold(cfg, "match", model="x", tp=1, deterministic=False),
        "deterministic": resolve_threshold(cfg, "match", model="x", tp=1, deterministic=True),
        "ci": resolve_threshold(
            cfg, "match", model="openai/gpt-oss-20b", tp=1, deterministic=False
        ),
    }
    assert {k: t.source.label for k, t in labels.items()} == {
        "default": "default 0.002 (SGLang CI's common value)",
        "deterministic": DETERMINISTIC,
        "ci": "preset sglang-ci (openai/gpt-oss-20b)",
    }
    assert not any(t.source.user_set for t in labels.values())
    cfg.threshold = 0.5
    flag = resolve_threshold(cfg, "match", model="x", tp=1, deterministic=False).source
    assert (flag.kind, flag.label, flag.user_set) == ("flag", "--threshold", True)


@pytest.mark.parametrize(
    ("label", "user_set"),
    [("--threshold", True), ("config thresholds (m)", True), (DETERMINISTIC, False)],
)
def test_an_older_recordings_label_reads_back(label, user_set):
    src = ThresholdSource.of(label)
    assert src is not None and (src.label, src.user_set) == (label, user_set)
    assert ThresholdSource.of("") is None and ThresholdSource.of({"no": "kind"}) is None


def _store(started: HelperStarted, summary: dict) -> SessionStore:
    store = SessionStore()
    for ev in (started, HelperFinished("match", URL, summary)):
        store.apply(decode(encode(ev)))  # as a recording holds them
    return store


def test_threshold_travels_once_in_helper_started():
    src = ThresholdSource("preset", "sglang-ci", model="openai/gpt-oss-20b")
    started = HelperStarted("match", URL, 2, 0.02, 1e-3, threshold_source=src.to_dict())
    store = _store(started, {"status": "pass", "passed": True, "avg_kl_div": 1e-4})
    st = store.helpers[f"match@{URL}"]
    assert st.summary is not None
    assert (st.summary.threshold, st.summary.threshold_source) == (0.02, src)
    entry = helper_entries(store)["match"]
    assert (entry["threshold"], entry["threshold_source"]) == (0.02, src.label)


def test_an_older_recording_keeps_its_summarys_threshold():
    started = HelperStarted("match", URL, 2, 0.02, 1e-3)
    summary = {"status": "pass", "passed": True, "threshold": 0.02}
    summary["threshold_source"] = DETERMINISTIC
    entry = helper_entries(_store(started, summary))["match"]
    assert (entry["threshold"], entry["threshold_source"]) == (0.02, DETERMINISTIC)


@pytest.mark.parametrize(
    ("source", "gated"),
    [
        (ThresholdSource("flag"), True),
        (ThresholdSource("config", model="*"), True),
        (ThresholdSource("preset", "sglang-ci", model="*"), False),
        (ThresholdSource("default"), False),
        (None, False),
    ],
)
async def test_cross_engine_gates_on_kl_only_for_a_threshold_the_user_chose(source, gated):
    client, baseline = SGLangClient(URL), VLLMClient(URL)
    try:
        ctx = HelperContext(client=client, prompts=[], threshold_source=source)
        run = CrossRun(ctx, baseline)
        assert run.kl_gate is gated
        sent = run.started({}).threshold_source
        assert ThresholdSource.of(sent) == source
    finally:
        await client.aclose()
        await baseline.aclose()
