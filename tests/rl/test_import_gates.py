"""`kltui import --gate`: the user's gates replace the default avg_kl_div gate instead of adding
to it (issue 59); --threshold still gates avg_kl_div, alone or beside them."""

from __future__ import annotations

import json

import pytest

from kltui.cli import main
from tests.rl.files import header, record, write_jsonl

# every token off by 0.3: k3 = exp(0.3) - 1 - 0.3 = 0.0499 per token, far above 0.002
OFF = [record([1, 2], [5, 6, 7], [-0.5, -0.6, -1.0], [-0.8, -0.9, -1.3]) for _ in range(4)]


def imported(tmp_path, capsys, *flags):
    path = write_jsonl(tmp_path / "off.jsonl", OFF, first=header())
    out = tmp_path / "out.json"
    code = main(["import", str(path), "--json", str(out), *flags])
    printed, _ = capsys.readouterr()
    return code, printed, json.loads(out.read_text())


@pytest.mark.parametrize(
    ("flags", "gates", "code"),
    [
        # the user's gate alone decides: no avg_kl_div<0.002 added on top
        (["--gate", "k3_kl<=1"], ["k3_kl<=1"], 0),
        (["--gate", "k3_kl<=1e-3"], ["k3_kl<=0.001"], 1),
        # no gate given: the default gate
        ([], ["avg_kl_div<0.002"], 1),
        # --threshold gates avg_kl_div, with the user's gates beside it
        (["--threshold", "1", "--gate", "k3_kl<=1"], ["avg_kl_div<1", "k3_kl<=1"], 0),
        (["--threshold", "0.01", "--gate", "k3_kl<=1"], ["avg_kl_div<0.01", "k3_kl<=1"], 1),
    ],
)
def test_the_users_gates_replace_the_default(tmp_path, capsys, flags, gates, code):
    got, printed, doc = imported(tmp_path, capsys, *flags)
    assert got == code, printed
    assert [g["gate"] for g in doc["gates"]] == gates
    assert doc["k3"]["passed"] is (code == 0)
    kl_gate = next((g for g in gates if g.startswith("avg_kl_div<")), None)
    assert doc["k3"]["threshold"] == (float(kl_gate.split("<")[1]) if kl_gate else None)
    assert ("avg_kl_div<0.002" in printed) is ("avg_kl_div<0.002" in gates), printed
