"""`kltui ablate --chain` in words: one golden line per `ChainKind` (how it ended) and per
`StepKind` (what a finished step found); the chain's tests assert the kinds and figures
(tests/unit/ablate/test_ablate_chain.py, tests/integration/test_ablate.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kltui.dumps.chain_result import Chain, ChainKind, Progress, StepKind
from kltui.words.chain import chain_json, doc_lines, end_line, lines, progress_line, step_line

MODULE = "model.layers.0.self_attn.qkv_proj"
DUMPS = {
    "verdict": "decode and the fresh prefill are bit-identical at every aligned module",
    "max_abs_diff": 8.9e-07,
    "unnamed_reason": "its inputs differ",
}
PROBE = {"shape": "32x128", "dtype": "bfloat16", "device": "GPU"}
CH = Chain(
    ChainKind.FAILED,
    setting="deterministic=on",
    verdict="localized",
    match_avg_kl_div=5.123e-3,
    module=MODULE,
    dumps=DUMPS,
    op="linear",
    probe=PROBE,
    batch_sizes=[1, 4, 16],
    batch_changed_at=4,
    batch_first={"sample": 3, "position": 7, "side": "output"},
    dump_prompt_tokens=[32, 128],
)

STEPS = {
    StepKind.SETTING: "setting: deterministic=on (localized, condition 1 in the base)",
    StepKind.REPRODUCED: "reproduced without CUDA graphs: match 0.00512 on the base",
    StepKind.BATCH_IDENTICAL: "batch probe: match bit-identical at batch sizes 1,4,16",
    StepKind.BATCH_CHANGED: (
        "batch probe: match's tokens change first at batch 4 (sizes 1,4,16; sample 3 @ 7, "
        "output side)"
    ),
    StepKind.DUMPS_IDENTICAL: (
        "dumps, 32-token prompt: decode and the fresh prefill bit-identical at every aligned module"
    ),
    StepKind.MODULE_DIVERGENT: f"module: {MODULE} (first divergent, inputs identical, max |diff| 8.9e-07)",
    StepKind.MODULE_DIFFERING: f"module: none named; first differing {MODULE}: its inputs differ",
}

SEEN = (
    "chain: kltui dumps found decode and the fresh prefill bit-identical without CUDA graphs, "
    "with prompts of 32 and 128 tokens (decode and the fresh prefill are bit-identical at every "
    "aligned module)"
)
ENDS = {
    ChainKind.REFUSED_ATTACH: (
        {},
        "no chain: attach mode launches nothing; relaunch the base with the dumper "
        "(docs/DUMPS.md) and run kltui dumps on it",
    ),
    ChainKind.REFUSED_UNMEASURED: ({}, "no chain: the base was not measured"),
    ChainKind.REFUSED_VERDICT: (
        {"verdict": "no single knob", "condition": 1},
        "no chain: the verdict is no single knob with condition 1 in the base; the dumper "
        "drill-down follows only a localized condition-1 divergence",
    ),
    ChainKind.FAILED: (
        {"step": "relaunch", "error": "base+dumper: exited with code 2"},
        "chain: relaunch failed: base+dumper: exited with code 2",
    ),
    ChainKind.INTERRUPTED: (
        {"step": "dumps"},
        "chain: interrupted during the dumps step; the steps above are kept: run the sweep "
        "again with --chain and more time, or relaunch the base with the dumper and run kltui "
        "dumps on it (docs/DUMPS.md)",
    ),
    ChainKind.NEEDS_GRAPHS: (
        {},
        "chain: the divergence needs CUDA graphs; the dumper cannot see it",
    ),
    ChainKind.NEEDS_BATCH: (
        {},
        f"{SEEN}, one request at a time; the divergence needs a batch: tokens change first at "
        "batch 4. kltui dumps compares one request's decode with its fresh prefill and cannot "
        "capture a batch, so the module at batch 4 is not named; next: kltui probe-ops --sizes "
        "4 on the server's GPU (the usual ops at M=1 vs M=4), or SGLang's dumper over a batch "
        "of 4 requests (docs/DUMPS.md)",
    ),
    ChainKind.NOTHING_FOUND: (
        {"batch_changed_at": None},
        f"{SEEN}; match diverges over the whole run but neither one request nor the batch "
        "probe reproduced it: run kltui dumps under the run's own load (kltui check --stress "
        "light beside it) to find where it appears",
    ),
    ChainKind.MODULE_UNPROVEN: ({}, f"chain: deterministic=on -> {MODULE} (not proven)"),
    ChainKind.MODULE_NO_OP: (
        {},
        f"chain: deterministic=on -> {MODULE}; probe-ops does not cover its op",
    ),
    ChainKind.PROBE_NO_SHAPES: ({}, f"chain: probe failed: no input shapes of {MODULE}"),
    ChainKind.PROBE_FAILED: (
        {"error": "division by zero"},
        "chain: probe failed: division by zero",
    ),
    ChainKind.OP_SHAPE_VARIANT: (
        {},
        f"chain: deterministic=on -> {MODULE} -> linear differs at M=1 vs M=N (32x128, "
        "bfloat16, GPU): torch's linear is shape-variant at the module's shapes outside the "
        "server too",
    ),
    ChainKind.SERVER_KERNEL: (
        {"op": "sdpa_decode", "backend": "triton"},
        f"chain: deterministic=on -> {MODULE} -> sdpa_decode bit-identical at M=1 vs M=N "
        "(32x128, bfloat16, GPU): torch's sdpa_decode does not reproduce it at the module's "
        "shapes: the suspect is the server's own attention kernel (its triton attention "
        "backend), which probe-ops does not run",
    ),
}


@pytest.mark.parametrize("kind", list(StepKind))
def test_each_step(kind):
    assert step_line(CH, kind) == STEPS[kind]


@pytest.mark.parametrize("kind", list(ChainKind))
def test_each_ending(kind):
    figures, text = ENDS[kind]
    assert end_line(replace(CH, kind=kind, **figures)) == text


def test_the_server_kernel_without_a_backend_and_a_gemm():
    ch = replace(CH, kind=ChainKind.SERVER_KERNEL, op="sdpa_decode")
    assert end_line(ch).endswith("(its attention backend), which probe-ops does not run")
    assert end_line(replace(ch, op="linear")).endswith(
        "the suspect is the server's own GEMM kernel, which probe-ops does not run"
    )


def test_the_json_carries_the_words_beside_the_kinds_and_an_older_chain_keeps_its_own():
    ch = replace(CH, kind=ChainKind.MODULE_NO_OP, steps=[StepKind.SETTING, StepKind.REPRODUCED])
    doc = chain_json(ch.to_json())
    assert doc is not None and doc["kind"] == "module-no-op"
    assert [*doc["steps"], doc["line"]] == lines(ch) == doc_lines(ch.to_json())
    assert doc["steps"] == [STEPS[StepKind.SETTING], STEPS[StepKind.REPRODUCED]]
    older = {"status": "module", "line": "chain: a -> b", "steps": ["setting: a"]}
    assert doc_lines(older) == ["setting: a", "chain: a -> b"]
    assert chain_json(None) is None


PROGRESS = {
    Progress.RELAUNCH: (
        "chain: relaunching the base with the dumper and --disable-cuda-graph "
        "--disable-prefill-cuda-graph"
    ),
    Progress.REPRODUCE: (
        "chain: match on the relaunched base (does it still diverge without graphs?)"
    ),
    Progress.DUMPS: "chain: kltui dumps on the relaunched base",
    Progress.DUMPS_LONG: "chain: kltui dumps again with a 128-token prompt",
}


@pytest.mark.parametrize("p", list(Progress))
def test_each_step_as_it_begins(p):
    assert progress_line(p) == PROGRESS[p]
