"""The same samples written as kltui-rl JSONL, kltui-rl Parquet, verl batch rows (JSONL and
Parquet, padded as DataProto holds them) and a slime train dump (.pt) import to the same
figures; and each adapter's own refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest

from kltui.cli import main
from tests.rl.files import (
    header,
    record,
    slime_train_dump,
    verl_row,
    write_jsonl,
    write_parquet,
)

rng = np.random.default_rng(3)
SAMPLES = []
for i in range(12):
    n = int(rng.integers(3, 40))
    roll = -rng.exponential(1.0, n)
    train = np.minimum(roll + rng.normal(0, 0.02, n), 0.0)
    mask = np.ones(n, dtype=int)
    if i % 4 == 1:
        mask[n // 2 : n // 2 + 2] = 0  # a tool-output span
    SAMPLES.append(
        (rng.integers(1, 50, int(rng.integers(1, 9))), rng.integers(0, 99, n), roll, train, mask)
    )


def figures(tmp_path, capsys, path, *extra) -> dict:
    out = tmp_path / f"{path.name}.json"
    code = main(["import", str(path), "--json", str(out), *extra])
    capsys.readouterr()
    assert code == 0
    return json.loads(out.read_text())


def same(a: dict, b: dict) -> None:
    assert a["usable"] == b["usable"] == len(SAMPLES)
    assert a["k3"]["tokens"] == b["k3"]["tokens"]
    for part in ("verl", "slime"):
        for k, v in a[part].items():
            assert b[part][k] == pytest.approx(v, rel=1e-6), (part, k)


@pytest.fixture
def reference(tmp_path, capsys):
    recs = [
        record(p, ids, r, t, m, id=i, step=i // 6) for i, (p, ids, r, t, m) in enumerate(SAMPLES)
    ]
    return figures(tmp_path, capsys, write_jsonl(tmp_path / "k.jsonl", recs, first=header()))


def test_kltui_rl_parquet(tmp_path, capsys, reference):
    recs = [
        record(p, ids, r, t, m, id=str(i), step=i // 6)
        for i, (p, ids, r, t, m) in enumerate(SAMPLES)
    ]
    doc = figures(tmp_path, capsys, write_parquet(tmp_path / "k.parquet", recs))
    same(reference, doc)
    assert doc["source"]["adapter"] == "kltui-rl" and doc["source"]["schema_version"] == 1
    assert [s["step"] for s in doc["by_step"]] == [0, 1]


def test_verl_rows_jsonl_and_parquet(tmp_path, capsys, reference):
    width = max(len(s[1]) for s in SAMPLES) + 5
    plen = max(len(s[0]) for s in SAMPLES) + 2
    rows = [
        verl_row(p, ids, r, t, width, plen, m, uid=f"u{i}", step=i // 6)
        for i, (p, ids, r, t, m) in enumerate(SAMPLES)
    ]
    doc = figures(tmp_path, capsys, write_jsonl(tmp_path / "verl.jsonl", rows))
    same(reference, doc)
    assert doc["source"]["adapter"] == "verl" and doc["source"]["checked_against"] == "verl 0.9.1"
    doc = figures(tmp_path, capsys, write_parquet(tmp_path / "verl.parquet", rows, meta={}))
    same(reference, doc)


def test_slime_train_dump(tmp_path, capsys, reference):
    path = slime_train_dump(tmp_path / "3.pt", [(p, ids, r, t, m) for p, ids, r, t, m in SAMPLES])
    doc = figures(tmp_path, capsys, path)
    # slime stores logprobs as float32 tensors: the figures agree to float32 rounding
    assert doc["usable"] == len(SAMPLES)
    for part in ("verl", "slime"):
        for k, v in reference[part].items():
            assert doc[part][k] == pytest.approx(v, rel=2e-3, abs=1e-6), (part, k)
    assert doc["source"]["adapter"] == "slime"


def test_a_slime_rollout_dump_is_named_for_what_it_lacks(tmp_path, capsys):
    import torch

    path = tmp_path / "rollout_3.pt"
    torch.save(
        {
            "rollout_id": 3,
            "samples": [
                {
                    "tokens": [1, 2, 3],
                    "response_length": 2,
                    "rollout_log_probs": [-0.1, -0.2],
                    "loss_mask": [1, 1],
                }
            ],
        },
        path,
    )
    code = main(["import", str(path)])
    _, err = capsys.readouterr()
    assert code == 2 and err.count("\n") == 1
    assert "format_version 'rollout dump' is not a slime train dump" in err


def test_verl_rows_with_a_short_logprob_tensor(tmp_path, capsys):
    p, ids, r, t, m = SAMPLES[0]
    row = verl_row(p, ids, r, t, len(ids) + 3, len(p), m)
    row["old_log_probs"] = row["old_log_probs"][:-1]
    path = write_jsonl(tmp_path / "v.jsonl", [row])
    code = main(["import", str(path)])
    out, _ = capsys.readouterr()
    assert code == 2
    assert (
        f"{path}: record 1: old_log_probs: has {len(ids) + 2} entries for {len(ids) + 3} responses"
        in out
    )


def test_kltui_file_opens_an_import_and_a_recording_is_left_to_replay(tmp_path, monkeypatch):
    import kltui.cli.commands as commands

    seen = {}
    monkeypatch.setattr(
        commands, "_guarded", lambda func, args, prog: seen.setdefault("args", args) and 0
    )
    path = write_jsonl(tmp_path / "f.jsonl", [record([1], [2], [-0.1], [-0.1])], first=header())
    commands.main([str(path), "--theme", "kltui-light"])
    args = seen.pop("args")
    assert (args.command, args.file, args.tui, args.theme) == (
        "import",
        str(path),
        True,
        "kltui-light",
    )
    assert not commands._is_import_file(str(tmp_path / "run.kltui.jsonl"))
    assert not commands._is_import_file(str(tmp_path / "missing.jsonl"))
