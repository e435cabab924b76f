"""`kltui dumps analyze` on synthetic dumper folders with planted differences, and its refusals."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).parent))
from dumps_synth import make_pair  # noqa: E402

from kltui.cli import main  # noqa: E402
from kltui.dumps.analyze import MisalignedError, analyze  # noqa: E402
from kltui.dumps.files import DumpError  # noqa: E402
from tests.json_contract import read_dumps  # noqa: E402

QKV1 = "model.layers.1.self_attn.qkv_proj"


def run_cli(args: list[str], capsys) -> tuple[int, str, str]:
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_identical_paths_pass(tmp_path, capsys):
    a, b = make_pair(tmp_path)
    r = analyze(a, b)
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
    r = analyze(a, b)
    fa = next(a.glob(f"step=12___*name=non_intrusive__{QKV1}.output*"))
    fb = next(b.glob(f"*name=non_intrusive__{QKV1}.output*"))
    va = torch.load(fa, weights_only=True)["value"]
    vb = torch.load(fb, weights_only=True)["value"]
    want = (va[0].double() - vb[r["position"]].double()).abs().max().item()
    assert r["max_abs_diff"] == want and want > 0


def test_prompt_prefill_m_variance_is_reported_and_taints_context(tmp_path):
    a, b = make_pair(
        tmp_path, plant_prompt={"module": "model.layers.0.input_layernorm", "eps": 1e-5}
    )
    r = analyze(a, b)
    pre = r["prefill"]
    assert pre["identical"] is False
    assert pre["first_divergent_module"] == "model.layers.0.input_layernorm"
    assert pre["inputs_identical"] is True and pre["m_prompt"] == 6 and pre["m_fresh"] == 10
    # decode reads the KV the M=6 prefill wrote: attention differs with identical inputs,
    # and the result says the context was not identical
    assert r["first_divergent_module"] == "model.layers.0.self_attn.attn"
    assert r["context_identical"] is False
    assert "not M-invariant" in r["verdict"]


def test_misaligned_rows_are_refused(tmp_path, capsys):
    a, b = make_pair(tmp_path, tamper_tokens=True)
    with pytest.raises(MisalignedError, match="rows are misaligned"):
        analyze(a, b)
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
    r = analyze(a, b)
    assert r["fresh_prefill_tokens"] == 10 and r["aligned_steps"] == 4 and r["decode_steps"] == 5
    assert r["ignored_prefill_passes"] == [10 + 4 + 1 + 1]  # B starts at step 15
    assert [s["position"] for s in r["steps"]] == [6, 7, 8, 9]
    assert r["first_divergent_module"] == QKV1 and r["decode_step"] == 4


def test_swapped_folders_are_refused(tmp_path):
    a, b = make_pair(tmp_path)
    with pytest.raises(DumpError, match="no decode step"):
        analyze(b, a)


def test_interleaved_request_is_refused(tmp_path):
    a, b = make_pair(tmp_path, busy_step=2)
    with pytest.raises(DumpError, match="not idle"):
        analyze(a, b)


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
    r = analyze(a, b)
    assert r["ranks"] == [0, 1] and set(r["per_rank"]) == {"0", "1"} and r["identical"]


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
