"""`kltui check --helpers multiturn` against the reference server (issue 58): exact with every
hit as SGLang asserts it on a deterministic server; on the decode-track-slot fault (SGLang
#29792's shape: docs/REFERENCE_SERVER.md) it fails and names the turns, while the three single-turn helpers pass on the
same server."""

from __future__ import annotations

import json
import random

import pytest

from tests.integration.checkrun import check_run

# small shapes for CI (the defaults stay the kit's): 2 groups x 4 branches, 3 turns
SMALL = dict(
    multiturn_groups=2,
    multiturn_branches=4,
    multiturn_prefix=64,
    multiturn_branch_suffix=17,
    multiturn_branch_step=1,
    multiturn_turn_suffixes=[32, 16],
    max_new_tokens=16,
)
# branch b's turn 0 is 64 + 17 + b ids long on a 64-token hit: off the 4-token page for branches
# 0 to 2, so (decode-track-slot, docs/REFERENCE_SERVER.md) their decode saves are wrong, and
# every later turn of theirs restores them; branch 3 (84 ids) stays clean
DIRTY = {(g, b, t) for g in (0, 1) for b in (0, 1, 2) for t in (1, 2)}


@pytest.fixture
def prompts(tmp_path):
    """24 prompts of 80 ids: the groups take their prefixes from the first two; the single-turn
    helpers score all 24, enough for the diagnosis to tell a state bug from noise."""
    rng = random.Random(7)
    path = tmp_path / "ids.json"
    path.write_text(json.dumps([[rng.randint(2, 1000) for _ in range(80)] for _ in range(24)]))
    return str(path)


def turns(h: dict) -> dict[tuple[int, int, int], dict]:
    return {(t["group"], t["branch"], t["turn"]): t for t in h["multiturn"]["turns"]}


async def test_multiturn_is_exact_with_every_hit_as_asserted(reference_servers, tmp_path, prompts):
    url = reference_servers.url(deterministic=True, page_size=4)
    rc, res, text = await check_run(
        url, tmp_path, helpers=["multiturn"], prompts=prompts, samples=24, **SMALL
    )
    assert rc == 0, text
    h = res["helpers"]["multiturn"]
    assert (h["status"], h["avg_kl_div"], h["scored"], h["hits"]) == ("pass", 0.0, 24, 24)
    rows = turns(h)
    assert len(rows) == 24
    assert all(r["hit_ok"] for r in rows.values())
    assert rows[(0, 0, 0)]["cached_tokens"] == 64  # turn 0: exactly the warmed prefix
    assert rows[(0, 0, 2)]["cached_tokens"] == 144 and 144 in rows[(0, 0, 2)]["expected"]
    assert h["multiturn"]["divergent"] == []
    assert "multiturn" in text


async def test_the_track_slot_fault_shows_only_in_multiturn(reference_servers, tmp_path, prompts):
    url = reference_servers.url(deterministic=True, page_size=4, fault="decode-track-slot")
    helpers = ["match", "prefill_cache_hit", "decode_cache_hit", "multiturn"]
    rc, res, text = await check_run(
        url, tmp_path, helpers=helpers, prompts=prompts, samples=24, **SMALL
    )
    assert rc == 1, text
    for name in helpers[:3]:
        assert res["helpers"][name]["status"] == "pass", (name, res["helpers"][name])
    h = res["helpers"]["multiturn"]
    assert h["status"] == "fail" and h["hits"] == 24  # every hit as asserted, the KL is not
    dirty = {(d["group"], d["branch"], d["turn"]) for d in h["multiturn"]["divergent"]}
    assert dirty == DIRTY
    # the restored prefix itself is wrong: the first generated token already reads it
    assert {d["first_divergence"] for d in h["multiturn"]["divergent"]} == {0}
    rem = h["multiturn"]["remainders"]
    assert rem["kind"] == "separates", rem
    # every hit is whole pages (cached_tokens mod 4 is 0 everywhere); what the divergent turns
    # share is an input that ended off the page
    found = {(f["quantity"], f["modulus"]): f for f in rem["found"]}
    assert found[("history", 4)]["divergent"] == [1, 2, 3], rem
    assert found[("history", 4)]["clean"] == [0], rem
    assert ("cached_tokens", 4) not in found
    (d,) = res["diagnosis"]
    assert d["condition"] == 2, d
    assert "g0b0 turn 1" in text and "g0b2 turn 2" in text and "and 6 more" in text


async def test_the_fault_in_the_recording_and_reports(reference_servers, tmp_path, prompts):
    """The recording replays into the same reading; Markdown, HTML and JUnit name the turns."""
    import xml.etree.ElementTree as ET

    from kltui.cli.report import load_store
    from kltui.outputs.reports.common import json_report
    from kltui.outputs.reports.html import html_report
    from kltui.outputs.reports.junit import junit_report
    from kltui.outputs.reports.md import md_report
    from kltui.readings.multiturn import Quantity, RemainderKind, read_multiturn
    from kltui.words.multiturn import remainder_line

    url = reference_servers.url(deterministic=True, page_size=4, fault="decode-track-slot")
    rc, res, _ = await check_run(
        url, tmp_path, helpers=["multiturn"], prompts=prompts, samples=24, **SMALL
    )
    store, origin = load_store(str(tmp_path / "r.jsonl"))
    replayed = json_report(store)["helpers"]["multiturn"]["multiturn"]
    assert replayed == res["helpers"]["multiturn"]["multiturn"]  # recorded, read back the same
    md = md_report(store, origin)
    assert "#### multiturn on" in md and "| g1b2 turn 2 | 144 |" in md
    assert "g0b0 turn 1 (from position 0)" in html_report(store, origin)
    root = ET.fromstring(junit_report(store, origin).encode("utf-8"))
    (case,) = [c for c in root.iter("testcase") if c.get("name", "").startswith("multiturn[")]
    (failure,) = case.findall("failure")
    assert "g0b0 turn 1" in failure.get("message", "")
    m = read_multiturn(store.helpers[next(k for k in store.helpers if k.startswith("multiturn"))])
    assert m.remainders.kind == RemainderKind.SEPARATES  # by where the turn's input ended
    assert m.remainders.found[0].quantity == Quantity.HISTORY
    assert remainder_line(m.remainders) in (failure.text or "")  # its words: tests/unit/words


async def test_on_a_mamba_server_turns_are_held_to_the_checkpoint_asserts(
    reference_servers, tmp_path, prompts
):
    """--arch mamba at track interval 16 with its 64-token chunk: decode saves land on SGLang's
    track grid lcm(64, 1, 16) = 64, so every later turn's hit is held to
    make_mamba_decode_assert at that grid (turn 1: 64, not the interval's 96), all as asserted."""
    args = ("--arch", "mamba", "--mamba-track-interval", "16")
    url = reference_servers.url(deterministic=True, extra_args=args)
    rc, res, text = await check_run(
        url, tmp_path, helpers=["multiturn"], prompts=prompts, samples=24, **SMALL
    )
    assert rc == 0, text
    h = res["helpers"]["multiturn"]
    assert (h["status"], h["avg_kl_div"], h["hits"]) == ("pass", 0.0, 24)
    rows = turns(h)
    assert {r["rule"] for r in rows.values()} == {"prefill_mamba", "decode_mamba"}
    assert (rows[(0, 0, 1)]["cached_tokens"], rows[(0, 0, 1)]["expected_low"]) == (64, 64)
    assert (rows[(0, 0, 2)]["cached_tokens"], rows[(0, 0, 2)]["expected_low"]) == (128, 128)


def test_a_monitor_probe_runs_multiturn_and_names_the_fault_when_it_appears(
    reference_servers, tmp_path, prompts
):
    """`kltui monitor --helpers match,multiturn` takes the multiturn shape as check does; a
    decode-track-slot fault that wakes after the first probe's flushes reads 'condition 2
    appeared' on the multiturn path."""
    import subprocess
    import sys

    srv = reference_servers.own(
        deterministic=True,
        page_size=4,
        fault="decode-track-slot",
        extra_args=("--fault-after-flushes", "6"),
    )
    shape = [f"--{k.replace('_', '-')}" if v is True else f"--{k.replace('_', '-')}={v}"
             for k, v in SMALL.items() if k.startswith("multiturn")]  # fmt: skip
    shape = [s.replace("=[32, 16]", "=32,16") for s in shape]
    cmd = [sys.executable, "-m", "kltui", "monitor", "--server", srv.url, "--headless",
           "--every", "1s", "--probes", "2", "--helpers", "match,multiturn", "--prompts", prompts,
           "--samples", "24", "--max-new-tokens", "16", "--no-record", *shape]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    out = done.stdout
    assert "exact (match 0, multiturn 0)" in out, out + done.stderr
    assert "changed: condition 2 appeared" in out and "(multiturn;" in out, out + done.stderr
