"""A logprob contract's verdict in words (`metrics/contract.judge`'s message): one golden per
status (same, normalised, difference naming the setting, unknown); the contract's tests assert
the status, what is comparable and the setting."""

from __future__ import annotations

from kltui.metrics.contract import LOGITS, judge, sglang_contract, vllm_contract, with_probe

SG = sglang_contract("prompt")
REFUSED = (
    "; their difference would measure the definition, not the engines: |delta|, k3 and KL are "
    "refused, top-1/top-k agreement and flip margins compare ranks"
)


def test_same():
    assert judge(SG, vllm_contract("prompt", "raw_logprobs")).message == "both logprobs"


def test_normalised():
    assert judge(SG, vllm_contract("prompt", "processed_logprobs")).message == (
        "both logprobs (vllm: prompt positions skip the sampling processors)"
    )


def test_difference_names_the_setting():
    assert judge(SG, vllm_contract("prompt", "raw_logits")).message == (
        "contract difference: sglang's prompt values are log-probabilities, vllm's are logits "
        "(--logprobs-mode raw_logits)" + REFUSED
    )


def test_difference_seen_by_the_probe_names_the_setting_that_returns_logits():
    probed = with_probe(vllm_contract("prompt", None), LOGITS, "probe")
    assert judge(SG, probed).message == (
        "contract difference: sglang's prompt values are log-probabilities, vllm's are logits "
        "(--logprobs-mode raw_logits or processed_logits (seen by the probe))" + REFUSED
    )


def test_unknown():
    assert judge(SG, vllm_contract("prompt", None)).message == (
        "vllm's prompt logprob definition is not known (not reported (no dev-mode /server_info)); "
        "the numbers are compared as logprobs"
    )
