"""`kltui dumps analyze` on synthetic dumper folders with planted differences, and its refusals."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from kltui.cli import main  # noqa: E402
from kltui.dumps.analyze import (  # noqa: E402
    Found,
    MisalignedError,
    RankFinding,
    analyze,
    verdict_of,
)
from kltui.dumps.files import DumpError  # noqa: E402
from kltui.words.dumps import verdict_words  # noqa: E402
from tests.json_contract import read_dumps  # noqa: E402
from tests.unit.dumps.dumps_synth import make_pair  # noqa: E402

QKV1 = "model.layers.1.self_attn.qkv_proj"
LN0 = "model.layers.0.input_layernorm"
ATTN0 = "model.layers.0.self_attn.attn"
ATTN1 = "model.layers.1.self_attn.attn"


def run_cli(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_identical_paths_pass(tmp_path, capsys):
    a, b = make_pair(tmp_path)
    r = analyze(a, b, verdict_words)
    assert r["identical"] and r["prefill"]["identical"]
    assert r["first_divergent_module"] is None
    assert r["input_ids_identical"] and r["embedding_identical"]
    assert r["aligned_steps"] == 4 and r["prompt_tokens"] == 6 and r["fresh_prefill_tokens"] == 10
    # the last decode step's logits line up with the fresh prefill's last row
    root = [m for m in r["modules"] if m["module"] == "(root)"]
    assert root and root[0]["output_identical"] is True
    code, out, _ = run_cli(["dumps", "analyze", str(a), str(b)], capsys)
    assert code == 0 and "bit-identical" in out
    assert "\\x0a" not in out and out.splitlines()[1].startswith("B (fresh prefill): ")


def test_planted_layer_is_named_with_step_position_and_inherited(tmp_path, capsys):
    eps = 1e-3
    a, b = make_pair(tmp_path, plant_decode={"step": 3, "module": QKV1, "eps": eps})
    js = tmp_path / "r.json"
    code, out, _ = run_cli(["dumps", "analyze", str(a), str(b), "--json", str(js)], capsys)
    assert code == 1
    r = read_dumps(js)
    assert r["first_divergent_module"] == QKV1
    assert r["decode_step"] == 3 and r["position"] == 6 + 3 - 1
    assert r["inputs_identical"] is True and r["embedding_identical"] is True
    assert abs(r["max_abs_diff"] - eps) < 1e-6
    # what follows the planted module and differs is inherited; nothing before it differs
    names = [m["module"] for m in r["modules"]]
    after = names[names.index(QKV1) + 1 :]
    assert r["inherited"] and set(r["inherited"]) <= set(after)
    assert "model.layers.1.self_attn.attn" in r["inherited"]
    before = r["modules"][: names.index(QKV1)]
    assert all(m["status"] in ("identical", "not-aligned") for m in before)
    assert [s["identical"] for s in r["steps"]] == [True, True, False, False]
    assert r["prefill"]["identical"] is True
    assert QKV1 in out


def test_max_abs_diff_matches_the_files(tmp_path):
    a, b = make_pair(tmp_path, plant_decode={"step": 2, "module": QKV1, "eps": 0.25})
    r = analyze(a, b, verdict_words)
    fa = next(a.glob(f"step=12___*name=non_intrusive__{QKV1}.output*"))
    fb = next(b.glob(f"*name=non_intrusive__{QKV1}.output*"))
    va = torch.load(fa, weights_only=True)["value"]
    vb = torch.load(fb, weights_only=True)["value"]
    want = (va[0].double() - vb[r["position"]].double()).abs().max().item()
    assert r["max_abs_diff"] == want and want > 0


def test_prompt_prefill_m_variance_is_reported_and_decode_attention_is_not_named(tmp_path, capsys):
    """Issue 28: a planted prompt-prefill difference was read as "first divergent module:
    model.layers.0.self_attn.attn ... inputs bit-identical". Decode attention reads the KV the
    M=6 prefill wrote from its own inputs at the prompt rows, and those differ: its inputs are
    not identical, so no decode module is named; the prefill's own op is (its inputs agree)."""
    a, b = make_pair(tmp_path, plant_prompt={"module": LN0, "eps": 1e-5})
    js = tmp_path / "r.json"
    code, out, _ = run_cli(["dumps", "analyze", str(a), str(b), "--json", str(js)], capsys)
    assert code == 1
    r = read_dumps(js)
    pre = r["prefill"]
    assert pre["identical"] is False and pre["first_divergent_module"] == LN0
    assert pre["inputs_identical"] is True and pre["unnamed_reason"] is None
    assert pre["m_prompt"] == 6 and pre["m_fresh"] == 10
    assert r["context_identical"] is False
    assert r["identical"] is False and r["first_divergent_module"] is None
    assert r["inputs_identical"] is False and r["decode_step"] == 1
    row = next(m for m in r["modules"] if m["status"] == "first-differing")
    assert row["module"] == ATTN0 and row["inputs_identical"] is False
    assert not any(m["status"] == "first-divergent" for m in r["modules"])
    assert f"{ATTN0}.inputs.0[layer_id=0] (prompt prefill)" in r["differing_inputs"]
    reason = r["unnamed_reason"]
    assert "cannot be named" in reason and ATTN0 in reason and LN0 in reason
    assert "KV cache" in reason and "M-invariant" in reason  # why, and what decides it
    # decode: no module named, and why; prefill: not M-invariant, at LN0 (words: tests/unit/words)
    v = verdict_of(r)
    assert v.decode.found is Found.UNNAMED and v.decode.unnamed_reason == reason
    assert v.prefill.found is Found.NAMED and v.prefill.module == LN0
    assert r["verdict"] == verdict_words(v)  # the JSON says it in words
    assert r["steps"][0]["first_divergent_module"] is None
    assert "cannot be named" in out


def test_decode_module_whose_inputs_differ_is_not_named(tmp_path):
    """A difference that arises between hooks (attention receives something other than what
    qkv_proj returned): its inputs differ, so attention is not the op and is not named."""
    plant = {"step": 2, "module": ATTN1, "eps": 1e-3, "at": "input"}
    a, b = make_pair(tmp_path, plant_decode=plant)
    r = analyze(a, b, verdict_words)
    assert r["prefill"]["identical"] is True and r["decode_step"] == 2
    assert r["first_divergent_module"] is None and r["inputs_identical"] is False
    assert r["differing_inputs"] == [f"{ATTN1}.inputs.0[layer_id=1]"]
    reason = r["unnamed_reason"]
    assert ATTN1 in reason and "differ already" in reason and "between hooks" in reason
    assert "dumper.dump" in reason  # what would decide it


@pytest.mark.parametrize("how", ["not dumped", "between hooks"])
def test_prefill_module_is_named_only_when_its_inputs_are_compared_equal(how, tmp_path):
    """The prompt-prefill-vs-fresh-prefill table names its first divergent module only when
    that module's input tensors were compared bit-equal on both sides, never by assumption."""
    plant = {"module": LN0, "eps": 1e-5} | ({"at": "input"} if how == "between hooks" else {})
    a, b = make_pair(tmp_path, plant_prompt=plant)
    if how == "not dumped":
        gone = [f for d in (a, b) for f in d.glob(f"*name=non_intrusive__{LN0}.inputs.0___*")]
        assert gone
        for f in gone:
            f.unlink()
    pre = analyze(a, b, verdict_words)["prefill"]
    assert pre["identical"] is False and pre["first_divergent_module"] is None
    row = next(m for m in pre["modules"] if m["status"] == "first-differing")
    assert row["module"] == LN0
    reason = pre["unnamed_reason"]
    assert "cannot be named" in reason and LN0 in reason
    if how == "not dumped":
        assert pre["inputs_identical"] is None and "were not dumped" in reason
    else:
        assert pre["inputs_identical"] is False and "differ already" in reason


def test_signed_zeros_are_bit_equal(tmp_path, capsys):
    """Issue 28: -0.0 against +0.0 read as a divergence with max |diff| 0 (exit 1)."""
    plant = {"step": 2, "module": QKV1, "a": -0.0, "b": 0.0}
    a, b = make_pair(tmp_path, plant_both=plant)
    va = torch.load(next(a.glob(f"step=12___*{QKV1}.output*")), weights_only=True)["value"]
    vb = torch.load(next(b.glob(f"*{QKV1}.output*")), weights_only=True)["value"]
    assert va[0, 0] == 0 and vb[7, 0] == 0
    assert bool(torch.signbit(va[0, 0])) and not bool(torch.signbit(vb[7, 0]))
    r = analyze(a, b, verdict_words)
    assert r["identical"] is True and r["first_divergent_module"] is None
    assert verdict_of(r).decode.found is Found.IDENTICAL
    assert "+0.0 and -0.0 counted equal" in r["verdict"]
    code, out, _ = run_cli(["dumps", "analyze", str(a), str(b)], capsys)
    assert code == 0 and "+0.0 and -0.0 counted equal" in out


def test_nan_equals_only_the_same_nan_bits(tmp_path):
    """The choice for NaN: the same NaN (same payload) at the same place on both sides is equal
    bits; a NaN with another payload, or against a number, differs (max |diff| nan)."""
    nan = float("nan")
    other = torch.tensor([0x7FC00001], dtype=torch.int32).view(torch.float32)[0]
    same = make_pair(tmp_path / "same", plant_both={"step": 2, "module": QKV1, "a": nan, "b": nan})
    assert analyze(*same, verdict_words)["identical"] is True
    a, b = make_pair(
        tmp_path / "other", plant_both={"step": 2, "module": QKV1, "a": nan, "b": other}
    )
    vb = torch.load(next(b.glob(f"*{QKV1}.output*")), weights_only=True)["value"]
    assert bool(vb[7, 0].isnan()) and int(vb[7:8, 0].view(torch.int32)) == 0x7FC00001
    r = analyze(a, b, verdict_words)
    assert r["identical"] is False and r["first_divergent_module"] == QKV1
    assert math.isnan(r["max_abs_diff"])


def test_misaligned_rows_are_refused(tmp_path, capsys):
    a, b = make_pair(tmp_path, tamper_tokens=True)
    with pytest.raises(MisalignedError, match="rows are misaligned"):
        analyze(a, b, verdict_words)
    js = tmp_path / "r.json"
    code, out, err = run_cli(["dumps", "analyze", str(a), str(b), "--json", str(js)], capsys)
    assert code == 2 and "rows are misaligned" in err and not js.exists()
    assert len(err.strip().splitlines()) == 1


def test_overlap_scheduler_extra_passes_are_not_prefill_rows(tmp_path):
    # Seen on SGLang 0.5.17 on an H200 with the overlap scheduler: one more decode pass after
    # the last token, in both runs. B's is not part of the fresh prefill; A's has no B row.
    a, b = make_pair(
        tmp_path, overlap_extra=True, plant_decode={"step": 4, "module": QKV1, "eps": 1e-3}
    )
    r = analyze(a, b, verdict_words)
    assert r["fresh_prefill_tokens"] == 10 and r["aligned_steps"] == 4 and r["decode_steps"] == 5
    assert r["ignored_prefill_passes"] == [10 + 4 + 1 + 1]  # B starts at step 15
    assert [s["position"] for s in r["steps"]] == [6, 7, 8, 9]
    assert r["first_divergent_module"] == QKV1 and r["decode_step"] == 4


def test_swapped_folders_are_refused(tmp_path):
    a, b = make_pair(tmp_path)
    with pytest.raises(DumpError, match="no decode step"):
        analyze(b, a, verdict_words)


def test_interleaved_request_is_refused(tmp_path):
    a, b = make_pair(tmp_path, busy_step=2)
    with pytest.raises(DumpError, match="not idle"):
        analyze(a, b, verdict_words)


def _one(folder: Path, pattern: str) -> Path:
    return sorted(folder.glob(pattern))[0]


def test_missing_file_names_the_dump(tmp_path, capsys):
    a, b = make_pair(tmp_path)
    _one(a, f"step=12___*name=non_intrusive__{QKV1}.output*").unlink()
    code, _, err = run_cli(["dumps", "analyze", str(a), str(b)], capsys)
    assert code == 2 and "mismatched folders" in err and "step 12" in err


def test_missing_step_is_refused(tmp_path, capsys):
    a, b = make_pair(tmp_path)
    for f in a.glob("step=12___*"):
        f.unlink()
    code, _, err = run_cli(["dumps", "analyze", str(a), str(b)], capsys)
    assert code == 2 and "no files of step 12" in err


def test_truncated_file_is_named(tmp_path, capsys):
    a, b = make_pair(tmp_path)
    victim = _one(b, f"*name=non_intrusive__{QKV1}.output*")
    victim.write_bytes(victim.read_bytes()[:40])
    code, _, err = run_cli(["dumps", "analyze", str(a), str(b)], capsys)
    assert code == 2 and victim.name in err and "truncated or unreadable" in err


def test_empty_and_parent_folders(tmp_path, capsys):
    a, b = make_pair(tmp_path / "x")
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = run_cli(["dumps", "analyze", str(empty), str(b)], capsys)
    assert code == 2 and "no dump files" in err
    code, _, err = run_cli(["dumps", "analyze", str(tmp_path / "x"), str(b)], capsys)
    assert code == 2 and "exp_decode" in err and "pass those" in err
    code, _, err = run_cli(["dumps", "analyze", str(tmp_path / "nope"), str(b)], capsys)
    assert code == 2 and "not a folder" in err


def test_mismatched_ranks(tmp_path, capsys):
    a, b = make_pair(tmp_path, ranks=(0, 1), ranks_b=(0,))
    code, _, err = run_cli(["dumps", "analyze", str(a), str(b)], capsys)
    assert code == 2 and "ranks [0, 1]" in err


def test_two_ranks_analysed(tmp_path):
    a, b = make_pair(tmp_path, ranks=(0, 1))
    r = analyze(a, b, verdict_words)
    assert r["ranks"] == [0, 1] and set(r["per_rank"]) == {"0", "1"} and r["identical"]
    v = verdict_of(r)
    assert r["ranks_agree"] is True and v.ranks_agree is True and v.decode.found is Found.IDENTICAL
    assert [x.rank for x in v.ranks] == [0, 1]


def test_two_ranks_that_disagree_are_named_each(tmp_path):
    # a divergence on rank 1 only: TP's shard or collective on that rank, not the model
    plant = {"step": 2, "module": QKV1, "eps": 1e-3}
    a, b = make_pair(tmp_path, ranks=(0, 1), plant_decode=plant, plant_rank=1)
    r = analyze(a, b, verdict_words)
    assert r["ranks_agree"] is False and r["rank"] == 1 and not r["identical"]
    assert r["per_rank"]["0"]["identical"] and not r["per_rank"]["1"]["identical"]
    assert r["first_divergent_module"] == QKV1 and r["decode_step"] == 2
    v = verdict_of(r)  # words: tests/unit/words/test_golden_dumps_verdict.py
    assert v.ranks_agree is False and v.shown == 1
    assert v.ranks == (RankFinding(0, True, None, None), RankFinding(1, False, QKV1, 2))


def test_two_ranks_that_diverge_alike_agree(tmp_path):
    plant = {"step": 2, "module": QKV1, "eps": 1e-3}
    r = analyze(*make_pair(tmp_path, ranks=(0, 1), plant_decode=plant), verdict_words)
    assert r["ranks_agree"] is True and r["rank"] == 0
    v = verdict_of(r)
    assert v.ranks_agree is True and v.decode.found is Found.NAMED and v.decode.module == QKV1
    assert [(x.module, x.decode_step) for x in v.ranks] == [(QKV1, 2), (QKV1, 2)]


def test_foreign_pt_name_is_refused(tmp_path, capsys):
    a, b = make_pair(tmp_path)
    (a / "weights.pt").write_bytes(b"x")
    code, _, err = run_cli(["dumps", "analyze", str(a), str(b)], capsys)
    assert code == 2 and "weights.pt" in err


def test_live_mode_needs_server_and_dir(capsys):
    code, _, err = run_cli(["dumps", "--server", "127.0.0.1:9"], capsys)
    assert code == 2 and "--dump-dir" in err


def test_json_has_every_key_null_when_absent_and_tags_non_finite(tmp_path, capsys):
    """docs/JSON.md: `dumps analyze` has no live capture (its keys are null), one rank (per_rank
    null), nothing differing (differing_inputs []); a NaN difference is {"$float": "nan"}, read
    back as the float by `kltui --dumps`, and a file in the old encoding ("nan") still opens."""
    from kltui.dumps.run import load_result

    a, b = make_pair(tmp_path, plant_decode={"step": 2, "module": QKV1, "eps": float("nan")})
    js = tmp_path / "r.json"
    code, _, _ = run_cli(["dumps", "analyze", str(a), str(b), "--json", str(js)], capsys)
    assert code == 1
    r = read_dumps(js)  # strict JSON, validated against kltui/schemas/dumps.schema.json
    assert r["server"] is None and r["prompt_ids"] is None and r["new_tokens"] is None
    assert r["per_rank"] is None
    assert r["max_abs_diff"] == {"$float": "nan"}
    assert math.isnan(load_result(str(js))["max_abs_diff"])
    old = json.loads(js.read_text())
    old["max_abs_diff"] = "nan"  # written by kltui before the one encoding
    js.write_text(json.dumps(old))
    assert load_result(str(js))["max_abs_diff"] == "nan"

    a, b = make_pair(tmp_path / "same")
    code, _, _ = run_cli(["dumps", "analyze", str(a), str(b), "--json", str(js)], capsys)
    assert code == 0 and read_dumps(js)["differing_inputs"] == []


@pytest.mark.parametrize("k_a, k_b", [(6, 3), (3, 6)])
def test_different_step_counts_are_exit_2(k_a, k_b, tmp_path, capsys):
    """A's decode steps and B's decoded tokens come from different captures: only the common
    steps would be compared, and 'bit-identical' would claim more than was checked."""

    a, _ = make_pair(tmp_path / "a", k=k_a)
    _, b = make_pair(tmp_path / "b", k=k_b)
    rc = main(["dumps", "analyze", str(a), str(b)])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert len(err.strip().splitlines()) == 1 and "different step counts" in err
    assert f"A has {k_a} decode steps" in err and f"+ {k_b} decoded tokens" in err


def test_usage_shows_capture_and_analyze_as_two_ways(capsys):
    with pytest.raises(SystemExit):
        main(["dumps", "--help"])
    usage = capsys.readouterr().out.split("\n\n", 1)[0]
    # argparse's own line read `[--full] analyze ...`, as if analyze were always required
    assert "[--full] analyze" not in usage and "analyze ..." not in usage
    lines = usage.splitlines()
    assert lines[0].startswith("usage: kltui dumps --server HOST:PORT --dump-dir DIR")
    assert lines[-1].strip() == "kltui dumps analyze DIR_A DIR_B [--json FILE] [--full]"
