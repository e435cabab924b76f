"""The HF reference against real engines: the shipped checkpoint in transformers (CPU, float32,
sdpa) beside real CPU SGLang 0.5.23 and real vLLM serving the same folder in float32. Three
implementations of one Llama: close, never bit-identical, every union id known between SGLang
and the reference (the exact union KL) and only vLLM's own top-k between vLLM and the reference
(a lower bound); the three-way table compares all three pairs on the same token ids."""

from __future__ import annotations

import asyncio

import pytest

from kltui.cli import main
from tests.integration.checkrun import check_run
from tests.json_contract import read_check

from .conftest import CHECKPOINT

pytest.importorskip("transformers", reason="the hf: reference needs the [hf] extra")

N = 16  # above the paired test's 12 common samples, so a verdict can be reached


def test_real_sglang_against_the_reference(sglang_url, tmp_path):
    rc, doc, out = asyncio.run(
        check_run(
            sglang_url,
            tmp_path,
            helpers=["hf_reference"],
            hf_baseline={"hf": str(CHECKPOINT)},
            samples=6,
            max_new_tokens=16,
            top_k=5,
        )
    )
    h = doc["helpers"]["hf_reference"]
    assert rc == 0 and h["status"] == "pass", (h["error"], out)
    # real SGLang's CPU kernels against transformers' sdpa, both float32: close, not equal
    assert 0 < h["avg_kl_div"] < 1e-6 and h["top1_agreement"] >= 0.95
    ref = h["reference"]
    assert ref["union_exact"] is True
    rows = {r["key"]: r for r in ref["config_diff"]}
    assert rows["weights"]["status"] == "match" and rows["dtype"]["status"] == "match"
    assert rows["attention"]["engine"] and rows["attention"]["reference"] == "sdpa"
    assert doc["three_way"]["verdict"] is None


@pytest.fixture(scope="module")
def three_way_run(sglang_url, vllm_url, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("three-way")
    rc, doc, out = asyncio.run(
        check_run(
            sglang_url,
            tmp,
            helpers=["hf_reference"],
            baseline=vllm_url,
            hf_baseline={"hf": str(CHECKPOINT)},
            samples=N,
            max_new_tokens=16,
            top_k=5,
        )
    )
    return rc, doc, out, tmp


def test_sglang_and_vllm_against_the_reference(three_way_run):
    rc, doc, out, _ = three_way_run
    helpers = doc["helpers"]
    sg = next(h for h in helpers.values() if (h["reference"] or {}).get("engine") == "SGLang")
    vl = next(h for h in helpers.values() if (h["reference"] or {}).get("engine") == "vLLM")
    for h in (sg, vl):
        assert h["status"] == "pass", (h["status"], h["error"], out)
        assert h["scored"] == N
        # one Llama, float32 on both sides, other kernels: close, not bit-identical
        assert 0 < h["avg_kl_div"] < 1e-6
        assert h["max_abs_delta"] < 1e-3 and h["top1_agreement"] >= 0.95
        rows = {r["key"]: r for r in h["reference"]["config_diff"]}
        assert rows["weights"]["status"] == "match", rows["weights"]
        assert rows["dtype"]["status"] == "match"
        assert h["reference"]["reference_flips"]["wide"] == 0
    # SGLang was asked for the reference's top-k, the reference for SGLang's: nothing folded
    assert sg["reference"]["union_exact"] is True
    # vLLM reports its own top-k only at prompt positions
    assert vl["reference"]["union_coverage"] <= 1.0
    assert rc == 0, out


def test_the_three_way_table_and_its_verdict(three_way_run):
    _, doc, out, tmp = three_way_run
    tw = doc["three_way"]
    assert [leg["name"] for leg in tw["legs"]] == ["SGLang vs HF", "vLLM vs HF", "SGLang vs vLLM"]
    assert all(leg["samples"] == N and leg["positions"] == N * 16 for leg in tw["legs"])
    assert tw["verdict"] in ("SGLang", "vLLM", "inconclusive")
    (k3, ukl) = tw["rankings"]
    assert k3["metric"] == "mean_k3" and k3["n"] == N and 0 < k3["p"] <= 1
    if tw["verdict"] == "inconclusive":
        assert tw["line"].startswith("inconclusive: ")
    else:
        assert tw["line"].startswith(f"{tw['verdict']} is closer to the reference")
        assert k3["closer"] == tw["verdict"] and k3["p"] < 2.5e-4
    assert tw["across_dtypes"] is False
    assert "three-way, on the same token ids" in out
    # the recording read back reads the same
    assert main(["report", str(tmp / "r.jsonl"), "--json", str(tmp / "again.json")]) == 0
    assert read_check(tmp / "again.json")["three_way"] == tw
