"""kltui ablate --chain's decisions (issue 29): when a chain runs, whether the relaunched base
still diverges, which module the drill-down names, and which probe-ops op and shapes follow;
with a synthetic Ablation and a fake `kltui dumps` result (the reference server has no dumper)."""

from __future__ import annotations

import asyncio

from kltui.ablate.sweep import MEASURED, Sweep
from kltui.dumps import chain
from kltui.dumps.chain_result import ChainKind, StepKind
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


async def _never(*_a, **_k) -> dict:
    raise AssertionError("a refused chain drills nothing")


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
    assert chain.refusal(sw2, ab2) is ChainKind.REFUSED_VERDICT
    sw3, ab3 = measured(tmp_path / "c", 5e-3, 0.0, mode="attach")
    assert chain.refusal(sw3, ab3) is ChainKind.REFUSED_ATTACH
    sw4, ab4 = measured(tmp_path / "d", 5e-3, 0.0)
    sw4.base.status = "failed"
    assert chain.refusal(sw4, ab4) is ChainKind.REFUSED_UNMEASURED
    # run_chain refuses before anything is launched, with the verdict and condition it read
    got = asyncio.run(chain.run_chain(None, sw2, ab2, None, drill=_never))  # type: ignore[arg-type]
    assert got.kind is ChainKind.REFUSED_VERDICT and got.status == "refused"
    assert (got.verdict, got.condition) == (str(ab2.verdict.kind), 1)
    assert got.to_json()["step"] is None and got.to_json()["kind"] == "refused-verdict"


def test_the_relaunched_base_must_still_diverge_without_cuda_graphs():
    p = sweep("deterministic=on")
    base = p.configs[0]
    still = read([base], {"base": store(url(0), INFO, noisy(0, 5e-3))})
    assert chain.reproduces(still)[0] is True and chain.reproduces(still)[1] > 1e-3
    gone = read([base], {"base": store(url(0), INFO, noisy(0, 0.0))})
    assert chain.reproduces(gone) == (False, 0.0)


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
    ch = chain.Chain(ChainKind.FAILED, setting="deterministic=on")
    ch.steps.append(StepKind.SETTING)
    monkeypatch.setattr(chain, "input_shapes", lambda folder, module: [(40, 256)])
    seen = {}

    def fake_probe(size):
        seen.update(size)
        return {"op": "linear", "shape": "F.linear [N,256]x[256,256]", "identical": False,
                "results": [], "dtype": "float32", "device": "CPU (x86_64)"}  # fmt: skip

    got = asyncio.run(chain._module_and_op(ch, DUMPS, fake_probe))
    assert seen["op"] == "linear" and seen["hidden"] == 256 and seen["sizes"] == [2, 40]
    assert got.status == "module" and got.op == "linear" and got.step is None
    assert got.kind is ChainKind.OP_SHAPE_VARIANT and got.probe["identical"] is False
    assert got.steps == [StepKind.SETTING, StepKind.MODULE_DIVERGENT]
    assert got.module == "model.layers.0.self_attn.qkv_proj" and got.backend is None
    # a module probe-ops does not cover: named, no probe
    ch2 = chain.Chain(ChainKind.FAILED, setting="s")
    act = {**DUMPS, "first_divergent_module": "model.layers.0.mlp.act_fn"}
    got2 = asyncio.run(chain._module_and_op(ch2, act, fake_probe))
    assert got2.op is None and got2.kind is ChainKind.MODULE_NO_OP and got2.probe is None
    # a first differing module (inputs not proven identical): not named, no op probed
    unproven = {**DUMPS, "first_divergent_module": None, "unnamed_reason": "inputs differ"}
    got3 = asyncio.run(chain._module_and_op(chain.Chain(ChainKind.FAILED), unproven, fake_probe))
    assert got3.kind is ChainKind.MODULE_UNPROVEN and got3.op is None
    assert got3.steps == [StepKind.MODULE_DIFFERING]
    # the dump holds no input shapes of the module; the probe raises
    monkeypatch.setattr(chain, "input_shapes", lambda folder, module: [])
    got4 = asyncio.run(chain._module_and_op(chain.Chain(ChainKind.FAILED), DUMPS, fake_probe))
    assert (got4.kind, got4.step) == (ChainKind.PROBE_NO_SHAPES, "probe")
    monkeypatch.setattr(chain, "input_shapes", lambda folder, module: 1 / 0)
    got5 = asyncio.run(chain._module_and_op(chain.Chain(ChainKind.FAILED), DUMPS, fake_probe))
    assert (got5.kind, got5.step, got5.error) == (
        ChainKind.PROBE_FAILED,
        "probe",
        "division by zero",
    )


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
        chain._module_and_op(chain.Chain(ChainKind.FAILED, setting="a=b"), attn, same, argv)
    )
    assert got.kind is ChainKind.SERVER_KERNEL and got.op == "sdpa_decode"
    assert got.backend == "triton"
    # no backend in the launch command: not guessed
    got2 = asyncio.run(
        chain._module_and_op(chain.Chain(ChainKind.FAILED, setting="a=b"), attn, same)
    )
    assert got2.kind is ChainKind.SERVER_KERNEL and got2.backend is None
    # the backend as argparse reads it (knobs.current): `--flag=V`, the last one wins, a
    # trailing flag without a value names none
    assert chain.backend_of(("--attention-backend", "triton", "--attention-backend=fa3")) == "fa3"
    assert chain.backend_of(("--attention-backend",)) is None
    # a GEMM module: the backend is attention's, not asked
    lin = asyncio.run(
        chain._module_and_op(
            chain.Chain(ChainKind.FAILED, setting="a=b"),
            DUMPS,
            lambda size: {**same(size), "op": "linear"},
            argv,
        )  # fmt: skip
    )
    assert lin.kind is ChainKind.SERVER_KERNEL and lin.op == "linear" and lin.backend is None


def test_the_chain_reads_back_from_its_json():
    ch = chain.Chain(
        ChainKind.NEEDS_BATCH, setting="s", verdict="localized", batch_sizes=[1, 4],
        batch_changed_at=4, dump_prompt_tokens=[32, 128], timing={"relaunch_s": 1.5},
        steps=[StepKind.SETTING, StepKind.BATCH_CHANGED, StepKind.DUMPS_IDENTICAL],
    )  # fmt: skip
    doc = ch.to_json()
    assert doc["timing"] == {"relaunch_s": 1.5, "total_s": 1.5}
    assert doc["step_kinds"] == ["setting", "batch-changed", "dumps-identical"]
    assert chain.Chain.from_json(doc) == ch
    # a chain recorded before the kinds: no typed chain, its words kept (words/chain.py)
    assert chain.Chain.from_json({"status": "module", "line": "x", "steps": []}) is None
