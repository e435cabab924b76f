"""Issue 57 end to end on the reference server's stateful archs: a default Mamba server's
decode_cache_hit tests its path under the engine's hit rule and the JSON carries the geometry;
each planted state fault reads condition 2 on the right helper with a geometry line in its
evidence; and `kltui ablate` on the audit's stale-prefix server reads condition 2.

Sizes: the builtin prompts are 16-96 tokens, so the default 64-token chunk and 256-token track
interval are checkpointed in 2 of 16 samples, too few for any test to decide (p=0.24). The
fault servers run a 16-token chunk and a 32-token track interval (`--mamba-chunk-size`,
`--mamba-track-interval`), where 40 new tokens put a decode checkpoint in every sample; the
window of 64 with 36 new tokens leaves 8 of 16 samples within it, what the window's split needs
(p=7.8e-05)."""

from __future__ import annotations

import sys

import pytest

from kltui.cli.commands import main
from kltui.readings.diagnosis_parts import EvidenceKind
from kltui.readings.geometry_parts import Crossed
from tests.integration.checkrun import check_run, recorded_diagnoses
from tests.json_contract import read_json

SMALL_GRID = ("--arch", "mamba", "--mamba-chunk-size", "16", "--mamba-track-interval", "32")
# the evidence read against the state geometry (readings/geometry_evidence.py)
GEOMETRY_KINDS = {
    EvidenceKind.RESIDUES,
    EvidenceKind.RESTORED,
    EvidenceKind.HANDOFF,
    EvidenceKind.WINDOW_SPLIT,
}


async def test_a_default_mamba_server_scores_decode_cache_hit_and_records_its_geometry(
    reference_servers, tmp_path
):
    url = reference_servers.url(extra_args=("--arch", "mamba"))
    _, res, text = await check_run(url, tmp_path, samples=16, max_new_tokens=8)
    decode = res["helpers"]["decode_cache_hit"]
    assert decode["scored"] >= 12 and decode["hit_rule"].endswith("make_mamba_decode_assert")
    (server,) = res["servers"]
    geometry = server["geometry"]
    assert geometry["kind"] == "mamba" and geometry["mamba"]["track_interval"]["value"] == 256
    # no sample's decode reached the 256-token track interval: the verdict says what would
    (diag,) = recorded_diagnoses(tmp_path)
    (c,) = [c for c in diag.basis.uncrossed if c.helper == "decode_cache_hit"]
    assert (c.boundary, c.step, c.crossed) == (Crossed.TRACK, 256, 0), diag.basis.uncrossed
    assert c.need is not None and c.need > 8  # the --max-new-tokens that would cross it


@pytest.mark.parametrize(
    ("args", "fault", "new", "finding", "state"),
    [
        (SMALL_GRID, "batch-state-offset", 40, "state bug", {"prefill_cache_hit"}),
        (SMALL_GRID, "graph-stale-tail", 40, "state bug", {"decode_cache_hit"}),
        (
            SMALL_GRID,
            "checkpoint-off-by-one",
            40,
            "state bug",
            {"prefill_cache_hit", "decode_cache_hit"},
        ),
        (
            ("--arch", "swa", "--sliding-window", "64"),
            "swa-early-evict",
            36,
            "state bug past the window",
            {"decode_cache_hit"},
        ),
    ],  # fmt: skip
    ids=["batch-state-offset", "graph-stale-tail", "checkpoint-off-by-one", "swa-early-evict"],
)
async def test_each_planted_state_fault_reads_condition_2_on_its_helper_with_its_geometry(
    reference_servers, tmp_path, args, fault, new, finding, state
):
    url = reference_servers.url(deterministic=True, fault=fault, extra_args=args)
    _, res, text = await check_run(url, tmp_path, samples=16, max_new_tokens=new)
    (d,) = res["diagnosis"]
    assert (d["finding"], d["condition"], d["conditions"]) == (finding, 2, [2]), text
    verdicts = {t["helper"]: t["verdict"] for t in d["rests_on"]["tested"]}
    assert {h for h, v in verdicts.items() if v == "state"} == state, d["rests_on"]
    (diag,) = recorded_diagnoses(tmp_path)
    assert {e.kind for e in diag.evidence} & GEOMETRY_KINDS, diag.evidence
    assert d["action"] is None and "kernel" not in " ".join(d["suspects"])


def test_ablate_reads_the_audit_stale_prefix_server_as_condition_2(tmp_path, capsys):
    """Issue 57's audit through `kltui ablate`: the base reads condition 2 (not "1 and 2") and
    the sweep's verdict gives no kernel advice."""
    launch = f"{sys.executable} -m kltui serve-reference --deterministic --fault stale-prefix "
    code = main(
        [
            "ablate", "--headless", "--launch", launch + "--max-running-requests 1",
            "--vary", "cuda-graph=off", "--helpers", "match,prefill_cache_hit",
            "--samples", "32", "--max-new-tokens", "8",
            "--json", str(tmp_path / "a.json"), "--folder", str(tmp_path / "sweep"),
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    doc = read_json(tmp_path / "a.json", "ablation")
    base = doc["ablation"]["configs"][0]
    assert (base["condition"], base["conditions"]) == (2, [2]), out[-3000:]
    verdict = doc["ablation"]["verdict"]
    assert "kernel" not in verdict["line"] and "dumps" not in verdict["line"], verdict
    assert code in (0, 1)


@pytest.mark.parametrize(
    ("fault", "knob", "helper"),
    [
        ("graph-stale-tail", "cuda-graph=off", "decode_cache_hit"),
        ("batch-state-offset", "--max-running-requests=1", "prefill_cache_hit"),
    ],
)
def test_ablate_finds_the_knob_that_removes_a_planted_state_fault(
    tmp_path, capsys, fault, knob, helper
):
    """`kltui ablate` on a Mamba reference server with a planted fault names the knob that
    removes it (issue 57). Two launches of one --arch mamba server name the same model path
    (a stateful arch's served folder is named by its content), so the configuration is
    compared, not refused as another model."""
    launch = " ".join([sys.executable, "-m", "kltui", "serve-reference", "--deterministic",
                       "--fault", fault, *SMALL_GRID])  # fmt: skip
    code = main(
        [
            "ablate", "--headless", "--launch", launch, "--vary", knob,
            "--helpers", f"match,{helper}", "--samples", "16", "--max-new-tokens", "40",
            "--json", str(tmp_path / "a.json"), "--folder", str(tmp_path / "sweep"),
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    doc = read_json(tmp_path / "a.json", "ablation")
    base, changed = doc["ablation"]["configs"]
    assert base["condition"] == 2 and changed["measured"], out[-3000:]
    assert changed["helpers"][helper]["effect"] == "removed", out[-3000:]
    assert doc["ablation"]["verdict"]["kind"] == "localized", out[-3000:]
    assert code == 0
