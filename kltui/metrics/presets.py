"""Threshold presets: the values SGLang's own CI gates on, and the bit-exact deterministic floor.

Sources: sglang test/registered/*: KLDivergenceMixin users (0.5.23); see docs/THRESHOLDS.md.
"""

from __future__ import annotations

DETERMINISTIC_KL_DIV = 1e-9  # the Inkling deterministic tests gate at 1e-9: any nonzero is a bug
DEFAULT_KL_DIV = 0.002  # the value most KLDivergenceMixin users in SGLang CI choose

# (model, tp, kl_div, kl_div_prefill, kl_div_decode)
_SGLANG_CI = [
    ("Qwen/Qwen3-Next-80B-A3B-Instruct", 4, 0.002, None, None),
    ("moonshotai/Kimi-Linear-48B-A3B-Instruct", 2, 0.002, None, None),
    ("openai/gpt-oss-20b", None, 0.02, None, None),
    ("nvidia/NVIDIA-Nemotron-Nano-9B-v2", None, 0.005, 0.012, None),
    ("ibm-granite/granite-4.0-h-micro", None, 0.002, 0.02, None),
]

PRESETS: dict[str, list[dict]] = {
    "sglang-ci": [
        {"model": m, "tp": tp, "kl_div": kl, "kl_div_prefill": kp, "kl_div_decode": kd}
        for m, tp, kl, kp, kd in _SGLANG_CI
    ],
    "deterministic": [{"model": "*", "tp": None, "kl_div": DETERMINISTIC_KL_DIV}],
}
