"""cross_engine's floors and vLLM's prefix cache checked before any number (issue 47), against
kltui's reference server as SGLang and the test-only vLLM stand-in of tests/stale_vllm.py (both
on 127.0.0.1, free ports)."""

from __future__ import annotations

import json

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
