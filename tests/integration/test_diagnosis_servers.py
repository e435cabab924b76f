"""The diagnosis, the cross-server comparison and --repeat against real reference servers:
each planted fault is named on its own path, with and without batch-variant kernels."""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kltui.cli.report import report_writer
from kltui.readings.compare import rerun_equality
from kltui.readings.cross_server import PairKind, cross_server
from kltui.readings.diagnosis_parts import CommandKind, StepKind
from kltui.readings.findings import Finding
from kltui.words.advice import command
from kltui.words.compare import rerun_line
from kltui.words.cross_server import reading_line
from kltui.words.diagnosis import label
from tests.integration.checkrun import check_run, recorded, recorded_diagnoses

# at least MIN_COMMON (11) samples: below that no cache-hit verdict is drawn
SMALL = dict(samples=12, max_new_tokens=48, max_prompt_tokens=64)


async def check(urls: list[str], tmp_path: Path, **kw) -> tuple[int, dict, str]:
    cfg = kw.pop("cfg", {})
    return await check_run(
        urls, tmp_path, width=240, record="r.kltui.jsonl", run_kw=kw, **{**SMALL, **cfg}
    )


async def test_a_divergence_that_follows_the_reused_cache_is_condition_2_in_match_too(
    reference_servers, tmp_path
):
    """Issue 57's audit: one request at a time, later prompts reuse what earlier ones left in
    the radix cache, so match's own decode runs on a hit in some samples, and exactly those
    differ. Read as condition 2 on the restore path, never as kernel noise."""
    url = reference_servers.url(
        deterministic=True, fault="stale-prefix", extra_args=("--max-running-requests", "1")
    )
    _, res, text = await check([url], tmp_path)
    (d,) = res["diagnosis"]
    assert res["helpers"]["match"]["avg_kl_div"] > 1e-9, text  # match itself diverges
    assert d["finding"] == Finding.RESTORE_STATE, text
    assert (d["condition"], d["conditions"], d["action"]) == (2, [2], None), text
    assert "kernel" not in " ".join(d["suspects"]) and "dumps" not in (d["next_command"] or "")
    tested = {t["helper"]: t for t in d["rests_on"]["tested"]}
    assert tested["prefill_cache_hit"]["verdict"] == "state", d["rests_on"]


@pytest.mark.parametrize(
    ("server", "condition", "conditions", "named"),
    [
        ({}, 1, [1], None),
        # batch-variant match noise (~1e-12) passes its gate; the state bug dwarfs it: fix first
        ({"fault": "stale-prefix"}, 2, [1, 2], "prefill_cache_hit"),  # prefix restore
        ({"fault": "window-evict"}, 2, [1, 2], "decode_cache_hit"),  # decode-written KV
        ({"deterministic": True, "fault": "window-evict"}, 2, [2], "decode_cache_hit"),
    ],
    ids=[
        "batch-variant",
        "batch-variant+stale-prefix",
        "batch-variant+window-evict",
        "deterministic+window-evict",
    ],
)
async def test_planted_faults_are_diagnosed(
    reference_servers, tmp_path, server, condition, conditions, named
):
    _, res, text = await check([reference_servers.url(**server)], tmp_path)
    (d,) = res["diagnosis"]
    assert d["conditions"] == conditions, text
    assert d["condition"] == condition, text
    (typed,) = recorded_diagnoses(tmp_path, "r.kltui.jsonl")
    assert d["label"] == label(typed)  # the JSON carries the typed diagnosis's words
    if named:  # the label names that path's state (its words: tests/unit/words)
        assert named in (typed.headline.primary, *typed.headline.helpers), typed.headline
    if condition == 2:  # isolate the trigger with an A-vs-B run, never relaunch for it
        assert typed.step.kind == StepKind.CONDITION2 and typed.step.then is None
        assert typed.command.kind == CommandKind.CROSS_CHECK and typed.command.server == d["server"]
        assert d["next_command"] == command(typed.command)  # its words: tests/unit/words
    if conditions == [1]:
        # match's rounding noise is far below the gate: nothing to relaunch for, unless
        # bitwise equality is needed
        assert typed.step is not None and typed.step.kind is StepKind.NOTHING_TO_FIX, text
        assert typed.finding is Finding.BATCH_VARIANCE, d["label"]  # never "similar"
    assert f"diagnosis: {d['label']}" in text and f"next: {d['next_step']}" in text


async def test_two_deterministic_servers_agree_bit_for_bit(reference_servers, tmp_path):
    a = reference_servers.url(deterministic=True)
    b = reference_servers.url(deterministic=True, page_size=4)
    rc, res, text = await check([a, b], tmp_path, cfg={"helpers": ["match", "prefill_cache_hit"]})
    assert rc == 0, text
    (pair,) = res["cross_server"]
    assert pair["servers"] == [a, b] and pair["identical"] is True
    assert pair["settings_differ"] == {"page_size": [1, 4]}
    for helper in ("match", "prefill_cache_hit"):
        assert pair["helpers"][helper]["identical_samples"] == 12
    assert "servers compared:" in text
    assert [d["server"] for d in res["diagnosis"]] == [a, b]


async def test_deterministic_and_batch_variant_servers_differ(reference_servers, tmp_path):
    a = reference_servers.url(deterministic=True)
    b = reference_servers.url()
    _, res, text = await check([a, b], tmp_path, cfg={"helpers": ["match"]})
    (pair,) = res["cross_server"]
    (typed,) = cross_server(recorded(tmp_path, "r.kltui.jsonl"))
    assert pair["identical"] is False and typed.reading.kind is PairKind.KERNELS
    assert pair["reading"] == reading_line(typed)  # its words: tests/unit/words
    m = pair["helpers"]["match"]
    assert m["first_difference"] is not None and m["comparable_samples"] == 12
    assert max(m["prefill_max_abs_delta"], m["decode_max_abs_delta"]) > 0
    assert pair["settings_differ"]["enable_deterministic_inference"] == [True, False]
    assert [d["conditions"] for d in res["diagnosis"]] == [[], [1]]


async def test_repeat_compares_each_rerun_with_the_one_before(reference_servers, tmp_path):
    url = reference_servers.url(deterministic=True)
    reports = {k: tmp_path / f"r.{k}" for k in ("html", "md", "junit")}
    writer = report_writer(argparse.Namespace(**{k: str(p) for k, p in reports.items()}))
    rc, res, text = await check(
        [url], tmp_path, repeat=2, cfg={"helpers": ["match"]}, extra_outputs=writer
    )
    assert rc == 0, text
    # the results table once (the last run's), then the re-run's comparison after it
    first, second = (recorded(tmp_path, name) for name in ("r.kltui.jsonl", "r-2.kltui.jsonl"))
    same = rerun_equality(first, second)
    assert same.identical is True, same  # its line says so (test_golden_ablate_rerun.py)
    line = rerun_line(same, 2)
    assert text.count("kltui results") == 1, text
    assert text.index("kltui results") < text.index(line), text
    assert text.count("run verdict: pass") == 2, text  # each run still says how it ended
    assert text.count("\nverdict: pass") == 1, text
    for kind, path in reports.items():
        assert line in path.read_text(), kind
    junit = ET.parse(reports["junit"]).getroot()
    props = {p.get("name"): p.get("value") for p in junit.iter("property")}
    assert props["re-run_2_vs_1"].startswith("bit-identical")
    assert props["repeat.all_identical"] == "true"
    rep = res["repeat"]
    assert rep["requested"] == 2 and [r["run"] for r in rep["runs"]] == [1, 2]
    (eq,) = rep["equality"]
    assert (eq["run"], eq["previous"], eq["identical"]) == (2, 1, True)
    assert rep["all_identical"] is True
    assert line in text
    assert (tmp_path / "r.kltui.jsonl").is_file() and (tmp_path / "r-2.kltui.jsonl").is_file()
