"""Logprob contracts (issue 30): what each engine returns as a logprob, and when two answers can
be compared. A definition gap is a named "contract difference", never drift."""

from __future__ import annotations

import numpy as np
import pytest

from kltui.metrics.contract import (
    DIFFERENCE,
    LOGITS,
    LOGPROBS,
    NORMALISED,
    RENORMALISED,
    SAME,
    SCALED,
    UNKNOWN,
    judge,
    probe_kind,
    sglang_contract,
    vllm_contract,
    with_probe,
)

SG_PROMPT = sglang_contract("prompt")


@pytest.mark.parametrize(
    ("mode", "kind", "status"),
    [
        ("raw_logprobs", LOGPROBS, SAME),
        # prompt positions skip vLLM's sampling processors: the same numbers as raw
        ("processed_logprobs", LOGPROBS, NORMALISED),
        ("raw_logits", LOGITS, DIFFERENCE),
        ("processed_logits", LOGITS, DIFFERENCE),
        (None, None, UNKNOWN),
    ],
)
def test_vllm_prompt_positions_in_each_logprobs_mode(mode, kind, status):
    v = vllm_contract("prompt", mode)
    assert v.kind == kind
    verdict = judge(SG_PROMPT, v)
    assert verdict.status == status
    assert verdict.values is (status != DIFFERENCE) and verdict.ranks is True
    if status == DIFFERENCE:
        assert verdict.message.startswith("contract difference:")
        assert f"--logprobs-mode {mode}" in verdict.message and verdict.setting.endswith(mode)


def test_vllm_sampled_positions_follow_temperature_and_filters():
    assert vllm_contract("sampled", "processed_logprobs", temperature=0.0).kind == LOGPROBS
    assert vllm_contract("sampled", "processed_logprobs", temperature=0.7).kind == SCALED
    tp = vllm_contract("sampled", "processed_logprobs", temperature=1.0, sampling_filters=True)
    assert tp.kind == RENORMALISED  # top-p renormalises over the kept tokens
    assert vllm_contract("sampled", "processed_logprobs", temperature=1.0).kind == LOGPROBS
    assert vllm_contract("sampled", "raw_logprobs", temperature=0.7).kind == LOGPROBS


def test_sglang_sampled_logprobs_are_scaled_by_temperature():
    assert sglang_contract("sampled", 0.0).kind == LOGPROBS
    assert sglang_contract("sampled", 1.0).kind == LOGPROBS
    half = sglang_contract("sampled", 0.5)
    assert half.kind == SCALED and half.temperature == 0.5
    # SGLang at T=0.5 against vLLM's raw_logprobs: the definition, not the kernels, differs
    v = judge(half, vllm_contract("sampled", "raw_logprobs", temperature=0.5))
    assert v.status == DIFFERENCE and "log_softmax(logits / 0.5)" in v.message
    # both scaled by the same T: the same definition
    both = judge(half, vllm_contract("sampled", "processed_logprobs", temperature=0.5))
    assert both.status == SAME and both.values


def test_probe_reads_logits_off_an_answer():
    lp = np.log(np.array([[0.5, 0.3, 0.1], [0.9, 0.05, 0.01]]))
    assert probe_kind(lp) == LOGPROBS
    assert probe_kind(lp + 3.0) == LOGITS  # values above 0
    # all below 0 but summing above 1: not a distribution either
    assert probe_kind(np.log(np.array([[0.7, 0.6, 0.2]]))) == LOGITS
    assert probe_kind(np.full((2, 3), -np.inf)) is None


def test_a_measured_kind_wins_over_the_declared_one():
    declared = vllm_contract("prompt", None)
    probed = with_probe(declared, LOGITS, "15 prompt positions at K=5")
    assert probed.kind == LOGITS and probed.source.startswith("probe: 15 prompt positions")
    assert judge(SG_PROMPT, probed).status == DIFFERENCE
    agrees = with_probe(vllm_contract("prompt", "raw_logprobs"), LOGPROBS, "probe")
    assert agrees.kind == LOGPROBS and agrees.source.endswith("probe: probe")


def test_a_probe_without_the_declared_mode_still_names_the_setting():
    probed = with_probe(vllm_contract("prompt", None), LOGITS, "probe")
    v = judge(SG_PROMPT, probed)
    assert v.status == DIFFERENCE and not v.values and v.ranks
    assert probed.setting.startswith("--logprobs-mode ")  # the vLLM flag that returns logits
    assert v.setting == probed.setting and f"({v.setting})" in v.message


def test_the_scored_token_listed_beside_its_own_top_k_entry_is_counted_once():
    from kltui.metrics.contract import probe_rows

    top_ids = np.array([[4, 5], [6, 7]])
    top_lp = np.log(np.array([[0.6, 0.35], [0.5, 0.3]]))
    # position 0 scores 4 (inside its top-2: listed twice), position 1 scores 9 (outside)
    rows = probe_rows(top_ids, top_lp, np.array([4, 9]), np.log(np.array([0.6, 0.1])))
    assert np.isneginf(rows[0, 2]) and rows[1, 2] == np.log(0.1)
    assert probe_kind(rows) == LOGPROBS
    naive = np.concatenate([top_lp, np.log([[0.6], [0.1]])], axis=1)
    assert probe_kind(naive) == LOGITS  # 0.6 counted twice sums to 1.55
