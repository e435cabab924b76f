"""kltui ablate --chain's decisions (issue 29): when a chain runs, whether the relaunched base
still diverges, which module the drill-down names, and which probe-ops op and shapes follow;
with a synthetic Ablation and a fake `kltui dumps` result (the reference server has no dumper)."""

from __future__ import annotations

import asyncio

from kltui.ablate.sweep import MEASURED, Sweep
from kltui.dumps import chain
from kltui.readings.ablation import read
from kltui.readings.ablation_outcome import reading
from tests.unit.ablate.test_ablate_reading import INFO, LAUNCH, noisy, store, sweep, url

DUMPS = {
    "verdict": "first divergent module model.layers.0.self_attn.qkv_proj",
    "first_divergent_module": "model.layers.0.self_attn.qkv_proj",
    "first_differing_module": "model.layers.0.self_attn.qkv_proj",
    "unnamed_reason": None,
    "max_abs_diff": 8.9e-07,
    "decode_step": 1,
    "fresh_prefill_tokens": 40,
    "dir_b": "/nonexistent",
}


def measured(tmp_path, base_level: float, det_level: float, mode: str = "launch"):
    p = sweep("deterministic=on")
    sw = Sweep(tmp_path, mode, tuple(LAUNCH))
    sw.add(p.configs)
    base, det = sw.runs
    base.status, base.store = MEASURED, store(url(0), INFO, noisy(0, base_level))
    info = INFO | {"enable_deterministic_inference": True}
    det.status, det.store = MEASURED, store(url(1), info, noisy(1, det_level))
    return sw, reading(sw)


def test_a_localized_condition_1_verdict_runs_the_chain_and_others_say_why_not(tmp_path):
    sw, ab = measured(tmp_path, 5e-3, 0.0)
    assert ab.verdict.chain is True and chain.refusal(sw, ab) is None
    assert chain.setting_of(ab) == "deterministic=on"
    sw2, ab2 = measured(tmp_path / "b", 5e-3, 5e-3)  # nothing removes it
    why = chain.refusal(sw2, ab2)
    assert why is not None and why.startswith("no chain: the verdict is no single knob")
    assert "localized condition-1" in why
    sw3, ab3 = measured(tmp_path / "c", 5e-3, 0.0, mode="attach")
    assert chain.refusal(sw3, ab3).startswith("no chain: attach mode launches nothing")
    # run_chain refuses before anything is launched
    got = asyncio.run(chain.run_chain(None, sw2, ab2, None))  # type: ignore[arg-type]
    assert got.status == "refused" and got.line == why and got.to_json()["step"] is None


def test_the_relaunched_base_must_still_diverge_without_cuda_graphs():
    p = sweep("deterministic=on")
    base = p.configs[0]
    still = read([base], {"base": store(url(0), INFO, noisy(0, 5e-3))})
    assert chain.reproduces(still)[0] is True and chain.reproduces(still)[1] > 1e-3
    gone = read([base], {"base": store(url(0), INFO, noisy(0, 0.0))})
    assert chain.reproduces(gone) == (False, 0.0)
    assert chain.NEEDS_GRAPHS == "the divergence needs CUDA graphs; the dumper cannot see it"


def test_the_module_and_its_op_from_a_dumps_result():
    assert chain.module_of(DUMPS) == ("model.layers.0.self_attn.qkv_proj", "first-divergent")
    unnamed = {**DUMPS, "first_divergent_module": None, "unnamed_reason": "inputs differ"}
    assert chain.module_of(unnamed) == ("model.layers.0.self_attn.qkv_proj", "first-differing")
    assert chain.module_of({"first_divergent_module": None}) == (None, "identical")
    assert chain.op_of("model.layers.0.self_attn.qkv_proj") == "linear"
    assert chain.op_of("model.layers.3.mlp.down_proj") == "linear"
    assert chain.op_of("model.layers.0.input_layernorm") == "rms_norm"
    assert chain.op_of("model.norm") == "rms_norm"
    assert chain.op_of("model.layers.0.self_attn.attn") == "sdpa_decode"
    assert chain.op_of("model.layers.0.mlp.act_fn") is None
    assert chain.op_of("model.embed_tokens") is None


def test_the_probe_runs_at_the_modules_shapes():
    lin = chain.probe_shape("linear", [(40, 256)], 40)
    assert lin["hidden"] == 256 and lin["sizes"] == [2, 40]
    att = chain.probe_shape("sdpa_decode", [(40, 4, 64), (40, 2, 64), (40, 2, 64)], 40)
    assert (att["heads"], att["head_dim"]) == (4, 64)
    flat = chain.probe_shape("sdpa_decode", [(40, 1024)], 40)
    assert (flat["heads"], flat["head_dim"]) == (8, 128)
    assert chain.probe_shape("rms_norm", [], 40) is None


def test_one_report_carries_setting_module_and_op(tmp_path, monkeypatch):
    ch = chain.Chain("failed", "", setting="deterministic=on")
    ch.steps.append("setting: deterministic=on (localized, condition 1 in the base)")
    monkeypatch.setattr(chain, "input_shapes", lambda folder, module: [(40, 256)])
    seen = {}

    def fake_probe(size):
        seen.update(size)
        return {"op": "linear", "shape": "F.linear [N,256]x[256,256]", "identical": False,
                "results": [], "dtype": "float32", "device": "CPU (x86_64)"}  # fmt: skip

    got = asyncio.run(chain._module_and_op(ch, DUMPS, fake_probe))
    assert seen["op"] == "linear" and seen["hidden"] == 256 and seen["sizes"] == [2, 40]
    assert got.status == "module" and got.op == "linear" and got.step is None
    assert got.line == (
        "chain: deterministic=on -> model.layers.0.self_attn.qkv_proj -> linear differs at "
        "M=1 vs M=N (F.linear [N,256]x[256,256], float32, CPU (x86_64)): torch's linear is "
        "shape-variant at the module's shapes outside the server too"
    )
    assert got.lines()[1].startswith("module: model.layers.0.self_attn.qkv_proj (first divergent")
    # a module probe-ops does not cover: named, no probe
    ch2 = chain.Chain("failed", "", setting="s")
    act = {**DUMPS, "first_divergent_module": "model.layers.0.mlp.act_fn"}
    got2 = asyncio.run(chain._module_and_op(ch2, act, fake_probe))
    assert got2.op is None and got2.line.endswith("probe-ops does not cover its op")


def test_a_bit_identical_probe_clears_torchs_op_and_names_the_servers_own_kernel(monkeypatch):
    # as on the H200 (docs/FIELD_NOTES.md section 10): triton attention diverges, the dumper
    # names the attention module, torch's SDPA at its shapes is bit-identical
    attn = {**DUMPS, "first_divergent_module": "model.layers.0.self_attn.attn"}
    monkeypatch.setattr(chain, "input_shapes", lambda folder, module: [(40, 32, 128)])

    def same(size):
        return {"op": "sdpa_decode", "shape": "32x128", "identical": True, "results": [],
                "dtype": "bfloat16", "device": "GPU"}  # fmt: skip

    argv = ("python", "-m", "sglang.launch_server", "--attention-backend", "triton")
    got = asyncio.run(
        chain._module_and_op(chain.Chain("failed", "", setting="a=b"), attn, same, argv)
    )
    assert got.line.endswith(
        "sdpa_decode bit-identical at M=1 vs M=N (32x128, bfloat16, GPU): torch's sdpa_decode "
        "does not reproduce it at the module's shapes: the suspect is the server's own attention "
        "kernel (its triton attention backend), which probe-ops does not run"
    )
    # no backend in the launch command: not guessed
    got2 = asyncio.run(chain._module_and_op(chain.Chain("failed", "", setting="a=b"), attn, same))
    assert got2.line.endswith("(its attention backend), which probe-ops does not run")
    # the backend as argparse reads it (knobs.current): `--flag=V`, the last one wins, a
    # trailing flag without a value names none
    eq = ("--attention-backend", "triton", "--attention-backend=fa3")
    assert chain.probe_reading("sdpa_decode", True, eq).endswith(
        "(its fa3 attention backend), which probe-ops does not run"
    )
    assert chain.probe_reading("sdpa_decode", True, ("--attention-backend",)).endswith(
        "(its attention backend), which probe-ops does not run"
    )
    # a GEMM module
    lin = asyncio.run(
        chain._module_and_op(
            chain.Chain("failed", "", setting="a=b"),
            DUMPS,
            lambda size: {**same(size), "op": "linear"},
            argv,
        )  # fmt: skip
    )
    assert lin.line.endswith(
        "the suspect is the server's own GEMM kernel, which probe-ops does not run"
    )
