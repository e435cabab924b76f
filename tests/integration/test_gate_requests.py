"""The gate sends exactly SGLang's requests; the drill-down's extras come from a request of their
own after it; `check` does not stream and the live view streams in few chunks; durations come
from the events. Real HTTP against the reference server (requests captured on the client)."""

from __future__ import annotations

import httpx
import numpy as np
import orjson
import pytest

from kltui.run.config import RunConfig
from kltui.run.runner import run_session
from kltui.session.events import ExtrasFetched, HelperFinished, HelperStarted, SampleScored
from kltui.session.recording import read_recording
from kltui.session.store import SessionStore
from tests.integration.checkrun import check_run

SMALL = dict(samples=6, max_new_tokens=20, max_prompt_tokens=48)
# SGLang's kl_test_utils: the top-level keys and sampling_params of every /generate it sends
SGLANG_LOGPROB_KEYS = {
    "input_ids",
    "sampling_params",
    "return_logprob",
    "return_text_in_logprobs",
    "logprob_start_len",
}
SGLANG_SAMPLING = {"temperature", "max_new_tokens", "ignore_eos"}
# beyond them, SGLang's own `rid` (one per prompt, echoed as meta_info.id): it ties each answer
# to its prompt (answers swapped between prompts); it changes nothing the server computes
RID = "rid"


@pytest.fixture
def captured(monkeypatch):
    """Every /generate body this process sends, in order (the real request still goes out)."""
    bodies: list[dict] = []
    send = httpx.AsyncClient.send

    async def spy(self, request, **kw):
        if request.url.path == "/generate":
            bodies.append(orjson.loads(request.content))
        return await send(self, request, **kw)

    monkeypatch.setattr(httpx.AsyncClient, "send", spy)
    return bodies


async def check(url: str, tmp_path, **kw) -> tuple[int, dict, str]:
    return await check_run(url, tmp_path, width=250, **{**SMALL, **kw})


def _is_extras(body: dict) -> bool:
    return "top_logprobs_num" in body


async def test_gate_requests_are_sglangs_and_extras_come_after(
    reference_servers, tmp_path, captured
):
    rc, res, text = await check(reference_servers.url(), tmp_path)
    gate = [b for b in captured if "input_ids" in b and not _is_extras(b)]
    extras = [b for b in captured if _is_extras(b)]
    # match 2, prefill_cache_hit 3, decode_cache_hit 3 (turn 1 with logprobs, as SGLang's)
    assert len(gate) == 8, [sorted(b) for b in gate]
    for b in gate:
        assert "stream" not in b
        assert set(b["sampling_params"]) == SGLANG_SAMPLING
        assert len(set(b[RID])) == len(b["input_ids"])
        if b.get("return_logprob"):
            assert set(b) == SGLANG_LOGPROB_KEYS | {RID}
            assert b["return_text_in_logprobs"] is False
            assert b["logprob_start_len"] in (-1, 0)
        else:  # prefill_cache_hit's warm-up: no logprob keys at all
            assert set(b) == {"input_ids", "sampling_params", RID}
    # one extras request for the whole server, after every gate request
    assert len(extras) == 1 and captured[-1] is extras[0]
    ex = extras[0]
    assert ex["top_logprobs_num"] == 5 and ex["return_text_in_logprobs"] is True
    assert ex["sampling_params"]["max_new_tokens"] == 0
    assert 0 < len(ex["input_ids"]) <= 3 * 3 * 2  # 3 worst samples x 3 helpers x <= 2 windows

    rec = read_recording(str(tmp_path / "r.jsonl"))
    fetched = [e for e in rec.events if isinstance(e, ExtrasFetched)]
    assert len(fetched) == len(ex["input_ids"])
    last_finished = max(i for i, e in enumerate(rec.events) if isinstance(e, HelperFinished))
    assert all(rec.events.index(e) > last_finished for e in fetched)
    store = SessionStore()
    for ev in rec.events:
        store.apply(ev)
    for e in fetched:
        st = store.helpers[f"{e.helper}@{e.server}"]
        sc = st.book.samples[e.sample]
        n = len(e.token_ids)
        assert np.array_equal(e.token_ids, sc.token_ids[e.start : e.start + n])
        assert len(e.top) == n and all(len(pos) == 5 for pos in e.top)
        assert e.texts is not None and len(e.texts) == n
        assert e.reason == "worst"
        # the window holds the sample's first divergence or its largest k3
        m = sc.metrics
        assert any(e.start <= p < e.start + n for p in (m.first_divergence, m.argmax_k3))
    assert store.token_text  # the drill-down can show text for the fetched tokens
    # nothing about the gate changed: the same run without extras gives the same numbers
    (tmp_path / "b").mkdir()
    _, res0, _ = await check(reference_servers.url(), tmp_path / "b", extras=0)
    for name, h in res["helpers"].items():
        assert h["avg_kl_div"] == res0["helpers"][name]["avg_kl_div"], name
        assert h["per_sample"] == res0["helpers"][name]["per_sample"], name


async def test_extras_off_and_nothing_to_show_send_no_extra_request(
    reference_servers, tmp_path, captured
):
    await check(reference_servers.url(), tmp_path, helpers=["match"], top_k=0)
    assert not any(_is_extras(b) for b in captured)
    captured.clear()
    # deterministic kernels: every sample is bit-identical, so there is no divergence to look at
    (tmp_path / "d").mkdir()
    await check(reference_servers.url(deterministic=True), tmp_path / "d", helpers=["match"])
    assert not any(_is_extras(b) for b in captured)


async def test_live_view_streams_the_scored_decode_in_few_chunks(reference_servers, captured):
    cfg = RunConfig(
        servers=[reference_servers.url()], helpers=["decode_cache_hit"], extras=0, **SMALL
    )
    events = [ev async for ev in run_session(cfg, live_view=True)]
    streamed = [b for b in captured if b.get("stream")]
    # only the scored decode (turn 2) streams; turn 1 shows nothing live
    assert len(streamed) == 1
    assert streamed[0]["sampling_params"]["stream_interval"] == cfg.stream_interval_for() == 2
    assert events[0].config["stream"] is True
    captured.clear()
    events = [ev async for ev in run_session(cfg)]  # kltui check
    assert not any(b.get("stream") for b in captured)
    assert events[0].config["stream"] is False


async def test_helper_durations_come_from_event_times(reference_servers, tmp_path):
    rc, res, text = await check(reference_servers.url(), tmp_path, helpers=["match"], extras=0)
    rec = read_recording(str(tmp_path / "r.jsonl"))
    started = next(e for e in rec.events if isinstance(e, HelperStarted))
    finished = next(e for e in rec.events if isinstance(e, HelperFinished))
    secs = finished.at - started.at
    i0, i1 = rec.events.index(started), rec.events.index(finished)
    # a real decode and replay happened in between (how long they take is the machine's)
    assert secs > 0 and any(isinstance(e, SampleScored) for e in rec.events[i0:i1])
    assert secs == pytest.approx(rec.times[i1] - rec.times[i0], abs=0.05)
    # a replay applied in one go shows the same duration as the live run
    store = SessionStore()
    for ev in rec.events:
        store.apply(ev)
    assert store.helpers[f"match@{started.server}"].elapsed == secs
    row = next(ln for ln in text.splitlines() if ln.strip().startswith("│ match"))
    assert f"{secs:.1f}s" in row


async def test_recording_stores_float32_logprobs_exactly_in_four_bytes(reference_servers, tmp_path):
    await check(reference_servers.url(), tmp_path, helpers=["match"], extras=0)
    lines = (tmp_path / "r.jsonl").read_bytes().splitlines()[1:]
    scored = [orjson.loads(ln) for ln in lines if b'"SampleScored"' in ln]
    assert scored and all(s["lp_a"].startswith("f4:") for s in scored)
    assert all(s["token_ids"].startswith("i2:") for s in scored)  # vocabulary 1024
    rec = read_recording(str(tmp_path / "r.jsonl"))
    ev = next(e for e in rec.events if isinstance(e, SampleScored))
    assert ev.lp_a.dtype == np.float64
    assert np.array_equal(ev.lp_a.astype(np.float32).astype(np.float64), ev.lp_a)
