"""Issue 44 on real reference servers: a raw flag's values reach the launch as typed
(`--max-running-requests=1` starts with `--max-running-requests 1`, not a bare flag that argparse
refuses), and a knob that breaks a bit-exact base is named. The base is deterministic (every
helper bit-exact); `--fault batch-switch:4` makes a step of more than 4 requests run the
ordinary batched kernels (the reference server's batch-invariance breaker), so match diverges
on it: verdict "introduced", exit 1."""

from __future__ import annotations

import sys

import pytest

from kltui.cli.commands import main
from kltui.readings.ablation_kinds import Effect, VerdictKind
from kltui.readings.ablation_outcome import reading
from kltui.run.sweep_manifest import load
from kltui.words.ablation import verdict_line
from kltui.words.ablation_legend import legend_line
from tests.integration.test_ablate import REFERENCE, ablate, table_rows
from tests.json_contract import read_json

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


def test_a_knob_that_breaks_a_deterministic_base_is_named_and_raw_values_are_kept(tmp_path, capsys):
    code, folder = ablate(
        tmp_path,
        "--headless",
        "--launch",
        f"{REFERENCE} --dtype bfloat16 --deterministic",
        "--vary",
        "--fault=batch-switch:4",
        "--vary",
        "--max-running-requests=1",
        "--helpers",
        "match",
        "--json",
        str(tmp_path / "i.json"),
    )
    out = capsys.readouterr().out
    doc = read_json(tmp_path / "i.json", "ablation")
    runs = {r["name"]: r for r in doc["sweep"]["configs"]}
    mrr = runs["--max-running-requests=1"]
    assert mrr["status"] == "measured", mrr["error"]
    assert mrr["argv"][-2:] == ["--max-running-requests", "1"]
    v = doc["ablation"]["verdict"]
    assert v["kind"] == "introduced", v["line"]
    assert [(i["config"], i["helper"]) for i in v["introduced"]] == [
        ("--fault=batch-switch:4", "match")
    ]
    ab = reading(load(folder))  # the typed verdict the JSON's line says
    assert ab.verdict.kind is VerdictKind.INTRODUCED and v["line"] == verdict_line(ab)
    (found,) = ab.verdict.introduced
    assert (found.config, found.helper, found.base_level) == ("--fault=batch-switch:4", "match", 0)
    switch = next(c for c in doc["ablation"]["configs"] if c["name"] == "--fault=batch-switch:4")
    assert switch["helpers"]["match"]["effect"] == "introduced"
    assert table_rows(out)["--fault=batch-switch:4"].split(" | ")[0].endswith("(introduced)")
    assert code == doc["exit_code"] == 1


def test_threshold_0_names_the_knob_that_makes_the_base_bit_exact(tmp_path, capsys):
    """Issue 59: `--threshold 0` asks for bit-exactness. The float32 base's batch noise (~1e-12,
    under the 1e-9 floor) is the divergence, and deterministic=on, which takes match to exactly
    0, is named (the same stores at the default gate read "not reproduced": the unit tests)."""
    folder = tmp_path / "exact"
    code = main(
        ["ablate", "--headless", "--launch", REFERENCE, "--vary", "deterministic=on"]
        + ["--threshold", "0", "--helpers", "match", "--samples", "16", "--max-new-tokens", "8"]
        + ["--max-prompt-tokens", "48", "--folder", str(folder), "--json", str(tmp_path / "e.json")]
    )
    out = capsys.readouterr().out
    doc = read_json(tmp_path / "e.json", "ablation")
    ab = doc["ablation"]
    assert ab["floor"] == 0
    base, det = ab["configs"]
    assert base["helpers"]["match"]["avg_kl_div"] > 0, out
    m = det["helpers"]["match"]
    assert (m["avg_kl_div"], m["effect"], m["paired"]["test"]) == (0, "removed", "sign test"), out
    v = ab["verdict"]
    assert v["kind"] == "localized" and v["helpers"][0]["sufficient"] == ["deterministic=on"]
    assert [(h["helper"], h["shape"], h["samples"]) for h in v["helpers"]] == [
        ("match", "removed", [])
    ]
    # the legend reads the removal at floor 0 as bit-exact (its words: test_golden_ablation_legend)
    assert legend_line(Effect.REMOVED, ab["floor"]) in " ".join(out.split())
    assert code == doc["exit_code"] == 0
