"""cross_engine's floors and vLLM's prefix cache checked before any number (issue 47), against
kltui's reference server as SGLang and the test-only vLLM stand-in of tests/stale_vllm.py (both
on 127.0.0.1, free ports)."""

from __future__ import annotations

import json
import time

import httpx
import numpy as np
import pytest

from kltui.cli import main
from kltui.metrics.floors import FloorKind
from kltui.session.events import FloorScored, SampleScored
from kltui.session.fold import fold
from kltui.session.recording import read_recording
from tests.stale_vllm import StaleVLLM

ARGS = ["--helpers", "cross_engine", "--samples", "4", "--max-new-tokens", "8", "--top-k", "5"]


@pytest.fixture
def sglang(reference_servers) -> tuple[str, str]:
    url = reference_servers.url()
    info = httpx.get(f"{url}/server_info", timeout=30).json()
    return url, info["model_path"]


def test_a_stale_prefix_cache_is_refused_in_one_line_before_any_number(sglang, tmp_path, capsys):
    url, model = sglang
    out, rec = tmp_path / "r.json", tmp_path / "r.kltui.jsonl"
    with StaleVLLM(model, stale=True, version="0.27.0") as vllm:
        rc = main(["check", "--server", url, "--baseline", vllm.url, *ARGS,
                   "--json", str(out), "--record", str(rec)])  # fmt: skip
    text = capsys.readouterr().out
    assert rc == 3, text
    entry = json.loads(out.read_text())["helpers"]["cross_engine"]
    assert entry["status"] == "invalid"
    cache = entry["contract"]["prefix_cache"]
    assert cache["status"] == "stale" and cache["block_size"] == 16
    message = cache["message"]
    assert "\n" not in message
    assert message.startswith("vLLM 0.27.0 returns stale prompt logprobs")
    assert "#42019" in message and "--no-enable-prefix-caching" in message
    assert entry["reason"] == message and entry["scored"] == 0
    # no number: nothing scored, no floor, and the console says it on one line
    events = read_recording(str(rec)).events
    assert not [e for e in events if isinstance(e, SampleScored | FloorScored)]
    said = [ln for ln in text.splitlines() if "#42019" in ln]
    assert said and all("0.27.0" in ln for ln in said), text


def test_floors_beside_the_gap_and_a_batch_invariant_floor_is_exactly_zero(sglang, tmp_path):
    url, model = sglang
    out, rec = tmp_path / "r.json", tmp_path / "r.kltui.jsonl"
    with StaleVLLM(model, stale=False) as vllm:
        rc = main(["check", "--server", url, "--baseline", vllm.url, *ARGS,
                   "--json", str(out), "--record", str(rec)])  # fmt: skip
    assert rc in (0, 1)
    entry = json.loads(out.read_text())["helpers"]["cross_engine"]
    assert entry["contract"]["prefix_cache"]["status"] == "same"
    floors = entry["floors"]
    assert floors["samples"] == [0, 1, 2, 3] and floors["of"] == 4
    assert floors["composition"] == "one at a time" and floors["first_batch"] == 4
    # the stand-in is a function of its ids: the same answer in any batch
    assert floors["vllm"]["zero"] is True and floors["vllm"]["avg_k3"] == 0.0
    assert floors["vllm"]["positions"] == 4 * 8
    # the stand-in's model is not the checkpoint: the engines differ far above either floor
    assert floors["reading"]["kind"] in (FloorKind.ABOVE, FloorKind.FLOOR_ZERO)
    assert floors["gap"]["avg_k3"] > 1.0
    # every second scoring is in the recording, and a replay folds the same floors
    recording = read_recording(str(rec))
    events = recording.events
    scored = {e.sample: e for e in events if isinstance(e, SampleScored)}
    again = [e for e in events if isinstance(e, FloorScored)]
    assert [e.sample for e in again] == [0, 1, 2, 3]
    for e in again:
        assert e.lp_b.tobytes() == scored[e.sample].lp_b.tobytes()  # vLLM: bit-identical
        assert e.lp_a.size == scored[e.sample].lp_a.size == 8
    (store,) = fold(recording)
    st = next(s for s in store.helpers.values() if s.helper == "cross_engine")
    assert sorted(st.floors) == [0, 1, 2, 3]
    assert np.array_equal(st.floors[2].lp_a, again[2].lp_a)
    assert st.summary is not None and st.summary.figures["floors"]["reading"] == floors["reading"]


def _timed_requests(monkeypatch) -> list[dict]:
    """Every POST this process sends: its server, path, how many sequences, max tokens, and
    when it was in flight (the real request still goes out)."""
    log: list[dict] = []
    send = httpx.AsyncClient.send

    async def spy(self, request, **kw):
        t0 = time.monotonic()
        try:
            return await send(self, request, **kw)
        finally:
            if request.method == "POST":
                body = json.loads(request.content)
                seqs = body.get("input_ids", body.get("prompt"))
                sp = body.get("sampling_params") or {}
                log.append({
                    "server": f"{request.url.host}:{request.url.port}",
                    "path": request.url.path,
                    "n": len(seqs) if isinstance(seqs, list) and isinstance(seqs[0], list) else 1,
                    "tokens": body.get("max_tokens", sp.get("max_new_tokens")),
                    "scoring": body.get("prompt_logprobs") is not None
                    or body.get("logprob_start_len") == 0,
                    "start": t0,
                    "end": time.monotonic(),
                })  # fmt: skip

    monkeypatch.setattr(httpx.AsyncClient, "send", spy)
    return log


def test_floor_requests_go_alone_on_their_engine_while_the_other_engine_works(
    sglang, tmp_path, monkeypatch
):
    """Each floor request is the only request in flight on its engine (the floors'
    composition), and SGLang's go while vLLM generates (the stand-in holds vLLM's greedy
    generation 3 s): the floors cost less than their requests one after another."""
    url, model = sglang
    out = tmp_path / "r.json"
    log = _timed_requests(monkeypatch)
    with StaleVLLM(model, stale=False, greedy_delay=3.0) as vllm:
        rc = main(["check", "--server", url, "--baseline", vllm.url, *ARGS, "--json", str(out)])
    assert rc in (0, 1)
    floors = json.loads(out.read_text())["helpers"]["cross_engine"]["floors"]
    assert floors["samples"] == [0, 1, 2, 3] and floors["error"] is None
    main_scoring = min(r["start"] for r in log if r["scoring"] and r["n"] == 4)
    later = [r for r in log if r["start"] >= main_scoring]
    floor = [r for r in later if r["scoring"] and r["n"] == 1]
    assert sorted(r["path"] for r in floor) == ["/generate"] * 4 + ["/v1/completions"] * 4
    for f in floor:
        others = [r for r in later if r is not f and r["server"] == f["server"]]
        alone = [r for r in others if r["start"] < f["end"] and f["start"] < r["end"]]
        assert not alone, (f, alone)
    (greedy,) = [r for r in later if r["path"] == "/v1/completions" and r["tokens"] == 8]
    on_sglang = [r for r in floor if r["path"] == "/generate"]
    assert all(greedy["start"] < r["start"] and r["end"] < greedy["end"] for r in on_sglang)


def test_a_floor_request_that_fails_is_one_warning_and_the_comparison_stands(
    sglang, tmp_path, capsys
):
    url, model = sglang
    out = tmp_path / "r.json"
    with StaleVLLM(model, stale=False, fail_floors=True) as vllm:
        rc = main(["check", "--server", url, "--baseline", vllm.url, *ARGS, "--json", str(out)])
    text = capsys.readouterr().out
    assert rc in (0, 1), text
    entry = json.loads(out.read_text())["helpers"]["cross_engine"]
    assert entry["scored"] == 4 and entry["floors"]["samples"] == []
    assert "floors refused" in entry["floors"]["error"]
    said = [ln for ln in text.splitlines() if "floors not measured" in ln]
    assert said and "the comparison's figures stand" in said[0], text
