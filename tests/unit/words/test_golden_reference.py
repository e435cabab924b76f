"""An engine against the HF reference in one line (`outputs/reference_rows.reference_line`):
the exact union KL without flips, and a lower bound with flips by margin, dtypes and settings
that differ. The HF reference's integration test asserts that the reports show this line."""

from __future__ import annotations

from kltui.outputs.hf_judge_rows import reference_line

EXACT = {
    "engine": "SGLang",
    "loaded": {"transformers_version": "4.57.1", "attn_implementation": "sdpa",
               "dtype": "float32", "device": "cpu"},
    "top1_agreement": 1.0,
    "max_abs_delta": 2.5e-6,
    "mean_abs_delta": 3e-7,
    "union_kl_mean": 1.2e-9,
    "union_exact": True,
    "reference_flips": {"flips": 0},
}  # fmt: skip
HEAD = (
    "SGLang vs the HF reference (transformers 4.57.1, sdpa, float32, cpu): top-1 agreement "
    "100.00%, max |Δlogprob| 2.500e-06, mean 3.000e-07, union top-k KL 1.200e-09"
)


def test_the_exact_union_without_flips():
    assert reference_line(EXACT) == (
        HEAD + " (exact: every union id known on both sides); no top-1 flips"
    )


def test_a_lower_bound_with_flips_dtypes_and_settings():
    flips = {"flips": 3, "near_tie": 2, "wide": 1, "line": 0.7, "near_tie_share": 2 / 3}
    f = EXACT | {
        "union_exact": False,
        "reference_flips": flips,
        "across_dtypes": {"engine": "bfloat16", "reference": "float32"},
        "config_mismatches": ["dtype", "attention"],
    }
    assert reference_line(f) == (
        HEAD + " (a lower bound); top-1 flips 3: 2 where the reference's top-1/top-2 margin is "
        "under 0.7 nats (expected near a tie), 1 where it is not (not rounding), 67% near a tie; "
        "across dtypes: the engine runs bfloat16, the reference float32; config differs: dtype, "
        "attention"
    )
