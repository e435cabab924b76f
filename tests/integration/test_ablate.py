"""`kltui ablate` end to end on real reference servers (issue 29): kltui launches each
configuration itself (`--launch`, the reference server under SGLang's flag names), measures it
over HTTP and stops it; or attaches to servers that already run.

Sweeps are small (12 samples x 8 tokens, prompts of ~48 tokens) so that a sweep of four
configurations stays within seconds on a 2-core machine. The bfloat16 base is what makes a
condition-1 divergence measurable here: float32 batch noise (~5e-13) is below the 1e-9 floor.
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kltui.cli.commands import main
from kltui.dumps.chain_result import ChainKind, StepKind
from kltui.outputs.ablation_rows import rows
from kltui.readings.ablation_kinds import Step, Trap, VerdictKind
from kltui.readings.ablation_outcome import reading
from kltui.readings.ablation_stress import SweepStressKind, read_stress
from kltui.readings.stress import StressVerdict
from kltui.run.sweep_manifest import load
from kltui.untrusted import html_text, md_text
from kltui.words.ablation_note import TRAP_NOTE, untested_note
from kltui.words.ablation_stress import stress_line
from kltui.words.ablation_sweep import INTERRUPTED_LINE, PAIRS_NONE_LINE, pairs_added, sweep_start
from kltui.words.dumps import verdict_words
from tests.json_contract import read_json
from tests.real.lifecycle import running

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")

REPO = Path(__file__).resolve().parents[2]
SIZES = ["--samples", "12", "--max-new-tokens", "8", "--max-prompt-tokens", "48"]
REFERENCE = f"{sys.executable} -m kltui.reference serve"


def ablate(tmp_path: Path, *args: str, folder: str = "sweep") -> tuple[int, Path]:
    """`kltui ablate` in this process; its exit code and sweep folder."""
    out = tmp_path / folder
    code = main(["ablate", *args, *SIZES, "--folder", str(out)])
    return code, out


def table_rows(text: str) -> dict[str, str]:
    """The console table's rows, by configuration name (the cells as one string)."""
    rows = {}
    for line in text.splitlines():
        if line.startswith("│"):
            cells = [c.strip() for c in line.strip("│").split("│")]
            rows[cells[0]] = " | ".join(cells[1:])
    return rows


def reading_rows(folder: Path) -> dict[str, str]:
    """The table's rows as the sweep's reading gives them (`outputs/ablation_rows.rows`): each
    helper's cell and the condition, joined as `table_rows` joins the console's."""
    sweep = load(folder)
    return {
        name: " | ".join([*cells, cond]) for name, cells, cond, _ in rows(sweep, reading(sweep))
    }


@pytest.fixture(scope="module")
def bf16_sweep(tmp_path_factory):
    """One sweep for several cases: a non-deterministic bfloat16 base; deterministic=on (the
    fix), cuda-graph=off (accepted and ignored by the reference server) and page-size=0 (a
    value the server rejects at start)."""
    tmp = tmp_path_factory.mktemp("ablate")
    cap = pytest.MonkeyPatch()
    buf = io.StringIO()
    cap.setattr(sys, "stdout", buf)  # capsys is per test; this sweep serves five
    try:
        code, folder = ablate(
            tmp,
            "--launch",
            f"{REFERENCE} --dtype bfloat16",
            "--vary",
            "deterministic=on",
            "--vary",
            "cuda-graph=off",
            "--vary",
            "page-size=0",
            "--json",
            str(tmp / "a.json"),
            "--md",
            str(tmp / "a.md"),
            "--junit",
            str(tmp / "a.xml"),
            "--html",
            str(tmp / "a.html"),
            "--chain",
        )
    finally:
        cap.undo()
    return {"code": code, "folder": folder, "text": buf.getvalue(), "tmp": tmp}


def test_a_nondeterministic_base_is_localized_by_deterministic_on(bf16_sweep):
    doc = read_json(bf16_sweep["tmp"] / "a.json", "ablation")
    v = doc["ablation"]["verdict"]
    assert v["kind"] == "localized", v["line"]
    assert {tuple(h["sufficient"]) for h in v["helpers"]} == {("deterministic=on",)}
    assert v["helpers"][0]["helper"] == "match"
    assert all(h["kind"] == "localized" and h["shape"] == "removed" for h in v["helpers"])
    assert v["step"] == Step.CHAIN and v["introduced"] == []
    assert v["chain"] is True  # condition 1 in the base: the dumper drill-down comes next
    det = next(c for c in doc["ablation"]["configs"] if c["name"] == "deterministic=on")
    assert det["condition"] == 0 and det["took_effect"] is True
    assert all(h["effect"] == "removed" for h in det["helpers"].values())
    assert all(h["exact_samples"] == h["scored"] == 12 for h in det["helpers"].values())
    base = doc["ablation"]["configs"][0]
    # match's divergence is the kernels' (condition 1); at 12 samples a state bug is not
    # excluded (readings/limit.py), so the base reads condition 1 with condition 2 left open
    assert base["conditions"] == [1] and base["condition"] in (1, None)
    assert base["helpers"]["match"]["avg_kl_div"] > 1e-6
    assert bf16_sweep["code"] == 0 and doc["exit_code"] == 0
    # the console's table row is the reading's: each helper's cell, then the condition
    shown = table_rows(bf16_sweep["text"])["deterministic=on"]
    assert shown.startswith(reading_rows(bf16_sweep["folder"])["deterministic=on"]), shown


def test_a_flag_the_server_ignores_is_named_as_not_taking_effect(bf16_sweep):
    doc = read_json(bf16_sweep["tmp"] / "a.json", "ablation")
    cg = next(c for c in doc["ablation"]["configs"] if c["name"] == "cuda-graph=off")
    assert cg["identical_to_base"] is True and cg["counted"] is False
    # the reference server has no CUDA graphs and says disable_cuda_graph=true for the base
    # too: its report cannot tell whether the flag did anything
    assert cg["trap_kind"] == Trap.CHANGED_NOTHING and cg["took_effect"] is True
    assert cg["settings"] == {
        "disable_cuda_graph": {"base": "off", "reported": "off", "asked": "off"}
    }
    assert cg["trap"] in doc["ablation"]["verdict"]["traps"]
    assert "cuda-graph=off" not in json.dumps(doc["ablation"]["verdict"]["helpers"])
    # the table's note is the trap's words (words/ablation_note.py, golden there)
    shown = table_rows(bf16_sweep["text"])["cuda-graph=off"]
    assert shown.endswith(TRAP_NOTE[Trap.CHANGED_NOTHING]), shown


def test_a_configuration_that_cannot_start_is_one_line_and_the_others_are_kept(bf16_sweep):
    text = bf16_sweep["text"]
    failed = [ln for ln in text.splitlines() if ln.startswith("failed: page-size=0: ")]
    # once as it happened, once under the table
    assert len(failed) == 2, text
    line = failed[0]
    assert "exited with code 2 before it was healthy; log " in line
    assert line.endswith("error: --page-size must be at least 1")
    doc = read_json(bf16_sweep["tmp"] / "a.json", "ablation")
    ps = next(c for c in doc["sweep"]["configs"] if c["name"] == "page-size=0")
    assert ps["status"] == "failed" and ps["error_kind"] == "exited"
    assert [c["status"] for c in doc["sweep"]["configs"]] == [
        "measured",
        "measured",
        "measured",
        "failed",
    ]
    folder = bf16_sweep["folder"]
    for name in ("base", "deterministic=on", "cuda-graph=off"):
        assert (folder / f"{name}.kltui.jsonl").stat().st_size > 0
        assert "kltui reference server ready at" in (folder / f"{name}.log").read_text()
    assert "page-size must be at least 1" in (folder / "page-size=0.log").read_text()


def test_the_json_follows_its_schema_and_a_replay_gives_the_same_json(bf16_sweep, tmp_path, capsys):
    live = read_json(bf16_sweep["tmp"] / "a.json", "ablation")
    assert live["sweep"]["folder"] == str(bf16_sweep["folder"])
    t = live["sweep"]["timing"]
    assert t["start_s"] > 0 and t["run_s"] > 0 and 0 <= t["kltui_share"] < 1
    code = main(
        ["ablate", "--replay", str(bf16_sweep["folder"]), "--json", str(tmp_path / "r.json")]
    )
    assert code == live["exit_code"] == 0
    assert read_json(tmp_path / "r.json", "ablation") == live
    replayed = capsys.readouterr().out
    assert table_rows(replayed) == table_rows(bf16_sweep["text"])
    # kltui report FOLDER reads a sweep folder the same way
    code = main(["report", str(bf16_sweep["folder"]), "--json", str(tmp_path / "p.json")])
    assert code == 0 and read_json(tmp_path / "p.json", "ablation") == live


def test_the_markdown_and_junit_reports_carry_the_table_and_one_case_per_configuration(
    bf16_sweep,
):
    import xml.etree.ElementTree as ET

    md = (bf16_sweep["tmp"] / "a.md").read_text()
    doc = read_json(bf16_sweep["tmp"] / "a.json", "ablation")
    row = reading_rows(bf16_sweep["folder"])["deterministic=on"]
    assert f"| deterministic=on | {row} |" in md
    assert f"**{md_text(doc['ablation']['verdict']['line'])}**" in md
    root = ET.parse(bf16_sweep["tmp"] / "a.xml").getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert list(cases) == ["base", "deterministic=on", "cuda-graph=off", "page-size=0"]
    assert cases["page-size=0"].find("error") is not None
    assert cases["base"].find("error") is None and root.get("errors") == "1"


def test_the_html_report_carries_the_table_the_verdict_and_the_failed_log_tail(
    bf16_sweep, tmp_path
):
    page = (bf16_sweep["tmp"] / "a.html").read_text()
    doc = read_json(bf16_sweep["tmp"] / "a.json", "ablation")
    cell = reading_rows(bf16_sweep["folder"])["deterministic=on"].split(" | ")[0]
    assert f'<td>deterministic=on</td><td class="n">{html_text(cell)}</td>' in page
    assert f"<strong>{html_text(doc['ablation']['verdict']['line'])}</strong>" in page
    failed = page.split("<h2>Failed configurations</h2>", 1)[1]
    assert "<code>page-size=0</code>" in failed
    assert "error: --page-size must be at least 1</pre>" in failed  # the log's last line
    refs = re.findall(r'\b(?:src|href|action)="([^"]*)"', page)
    assert all(r.startswith(("data:", "#")) for r in refs) and "<script" not in page
    # kltui report FOLDER --html writes the same page from the recordings (no longer refused)
    code = main(["report", str(bf16_sweep["folder"]), "--html", str(tmp_path / "r.html")])
    replayed = (tmp_path / "r.html").read_text()
    assert code == 0
    strip = re.compile(r"time [^<]*")  # the only part a replay cannot know the same way
    assert strip.sub("", replayed) == strip.sub("", page)


def test_the_chain_on_a_server_without_the_dumper_is_one_line_naming_its_step(bf16_sweep):
    # localized condition 1, so the chain runs; the reference server has no SGLang dumper
    doc = read_json(bf16_sweep["tmp"] / "a.json", "ablation")
    ch = doc["chain"]
    assert ch["kind"] == "failed" and ch["step"] in ("relaunch", "dumps"), ch
    assert ch["status"] == "failed" and ch["error"]
    assert ch["setting"] == "deterministic=on" and ch["step_kinds"][0] == "setting"
    # the chain's own time, beside the sweep's split (which leaves it out)
    t = ch["timing"]
    assert t["relaunch_s"] > 0 and t["total_s"] >= t["relaunch_s"]
    assert f"; then the chain {t['total_s']:.1f} s (relaunch " in bf16_sweep["text"]
    lines = [ln for ln in bf16_sweep["text"].splitlines() if ln.startswith("chain: ")]
    assert ch["line"] in lines and "Traceback" not in bf16_sweep["text"]
    # what was measured is kept: the verdict and its exit code
    assert doc["ablation"]["verdict"]["kind"] == "localized" and bf16_sweep["code"] == 0
    assert f"- {md_text(ch['line'])}" in (bf16_sweep["tmp"] / "a.md").read_text()


async def test_a_chain_whose_dumps_reproduce_nothing_at_batch_1_goes_on_to_the_batch_size(
    bf16_sweep, tmp_path
):
    """Issue 44: the forgotten-flag case, where dumps of one request find decode and the fresh
    prefill bit-identical. The chain relaunches the bfloat16 base (the reference server accepts
    the dumper's flags and ignores them), runs the batch probe beside match, and a stand-in
    for `kltui dumps` reproduces nothing at batch 1: the chain names the batch size where
    tokens change, says why the module there is not named, and what to run next."""
    from kltui.dumps import chain
    from kltui.run.ablate import SweepSpec
    from kltui.run.config import RunConfig
    from kltui.run.sweep_manifest import load
    from tests.integration.test_driver import Collect

    sweep = load(bf16_sweep["folder"])
    sweep.folder = tmp_path  # the chain's files go here, the fixture's folder stays as it was
    cfg = RunConfig(samples=16, max_new_tokens=8, max_prompt_tokens=48)
    spec = SweepSpec(cfg, tmp_path, launch=tuple(sweep.base.config.argv), start_timeout=60)
    asked = []

    async def nothing_at_batch_1(client, url, dump_dir, **kw):
        asked.append(kw)
        return {"verdict": "decode and the fresh prefill are bit-identical at every aligned "
                "module over 8 decode steps", "first_divergent_module": None,
                "first_differing_module": None}  # fmt: skip

    ch = await chain.run_chain(spec, sweep, reading(sweep), Collect(), drill=nothing_at_batch_1)
    assert ch.kind is ChainKind.NEEDS_BATCH, ch.to_json()
    # bit-identical at 32 tokens, so dumps ran once more with a longer prompt (a longer
    # prefill takes other GEMM shapes), and both lengths are said
    assert [kw["prompt_tokens"] for kw in asked] == [32, 128] == ch.dump_prompt_tokens
    assert ch.to_json()["dump_prompt_tokens"] == [32, 128]
    assert ch.reproduced and ch.batch_changed_at in (4, 16), ch.to_json()
    assert ch.steps == [
        StepKind.SETTING,
        StepKind.REPRODUCED,
        StepKind.BATCH_CHANGED,
        StepKind.DUMPS_IDENTICAL,
    ]
    assert ch.batch_sizes == [1, 4, 16] and ch.module is None
    assert ch.to_json()["batch_changed_at"] == ch.batch_changed_at


async def test_a_chain_whose_short_dump_is_bit_identical_names_the_module_a_longer_one_finds(
    bf16_sweep, tmp_path
):
    """Seen on the H200 (docs/FIELD_NOTES.md, section 14): on FA3 without deterministic
    inference, dumps of one 32-token request were bit-identical at every module while a
    64-token one named o_proj. The chain dumps again with a longer prompt before it gives up,
    and names the module that one finds (a stand-in for `kltui dumps`: the reference server
    has no dumper); a prompt that already differs is not dumped twice."""
    from kltui.dumps import chain
    from kltui.run.ablate import SweepSpec
    from kltui.run.config import RunConfig
    from kltui.run.sweep_manifest import load
    from tests.integration.test_driver import Collect

    sweep = load(bf16_sweep["folder"])
    sweep.folder = tmp_path
    cfg = RunConfig(samples=16, max_new_tokens=8, max_prompt_tokens=48)
    spec = SweepSpec(cfg, tmp_path, launch=tuple(sweep.base.config.argv), start_timeout=60)
    asked = []

    async def differs_when_long(client, url, dump_dir, **kw):
        asked.append(kw["prompt_tokens"])
        if kw["prompt_tokens"] < 64:
            return {"verdict": "decode and the fresh prefill are bit-identical at every "
                    "aligned module over 8 decode steps", "first_divergent_module": None,
                    "first_differing_module": None}  # fmt: skip
        return {"verdict": "first divergent module: model.layers.0.self_attn.o_proj",
                "first_divergent_module": "model.layers.0.self_attn.o_proj",
                "first_differing_module": "model.layers.0.self_attn.o_proj",
                "inputs_identical": True, "max_abs_diff": 3.9e-3, "decode_step": 1,
                "position": 128, "dir_b": str(tmp_path / "no-such-dump"),
                "fresh_prefill_tokens": 136}  # fmt: skip

    ch = await chain.run_chain(spec, sweep, reading(sweep), Collect(), drill=differs_when_long)
    assert asked == [32, 128] == ch.dump_prompt_tokens
    assert ch.module == "model.layers.0.self_attn.o_proj"
    assert ch.module_status == "first-divergent" and ch.op == "linear", ch.to_json()
    assert ch.steps[-2:] == [StepKind.DUMPS_IDENTICAL, StepKind.MODULE_DIVERGENT]
    # no dump folder at dir_b: the op probe cannot read the module's shapes
    assert (ch.kind, ch.step) == (ChainKind.PROBE_FAILED, "probe")
    assert ch.error is not None and ch.error.endswith("no-such-dump: not a folder")
    assert ch.dumps is not None and ch.dumps["position"] == 128


async def test_a_chain_cut_short_during_dumps_keeps_its_steps_and_says_where_it_stopped(
    bf16_sweep, tmp_path, monkeypatch
):
    """Seen on the H200 (docs/FIELD_NOTES.md, section 13): a SIGTERM while `kltui dumps` read
    the dumps lost the relaunch and match the chain had finished. Cut short, the chain is
    `interrupted` in the step it was in, with the steps before it, their times, and the
    relaunched server stopped."""
    import asyncio

    from kltui.dumps import chain
    from kltui.run.ablate import SweepSpec
    from kltui.run.config import RunConfig
    from kltui.run.sweep_manifest import load
    from tests.integration.test_driver import Collect

    sweep = load(bf16_sweep["folder"])
    sweep.folder = tmp_path
    cfg = RunConfig(samples=16, max_new_tokens=8, max_prompt_tokens=48)
    spec = SweepSpec(cfg, tmp_path, launch=tuple(sweep.base.config.argv), start_timeout=60)
    in_dumps = asyncio.Event()
    urls = []

    async def hangs(client, url, dump_dir, **kw):
        urls.append(url)
        in_dumps.set()
        await asyncio.Event().wait()

    real = chain._drill
    monkeypatch.setattr(
        chain, "_drill", lambda drill, url, spec, dump_dir, n: real(hangs, url, spec, dump_dir, n)
    )
    task = asyncio.create_task(
        chain.chain_into(spec, sweep, Collect(), say=lambda _l: None, words=verdict_words)
    )
    await asyncio.wait_for(in_dumps.wait(), 120)
    task.cancel()
    await task
    ch = sweep.chain
    assert sweep.interrupted and ch is not None
    assert ch["kind"] == "interrupted" and ch["step"] == "dumps", ch
    assert ch["status"] == "interrupted" and ch["reproduced"] is True
    assert ch["step_kinds"][:2] == ["setting", "reproduced"]
    t = ch["timing"]
    assert t["relaunch_s"] > 0 and t["match_s"] > 0 and "stop_s" in t and "dumps_s" in t
    assert json.loads((tmp_path / "ablation.json").read_text())["chain"] == ch
    host, port = urls[0].split("//")[-1].rsplit(":", 1)
    with pytest.raises(OSError):  # the relaunched base was stopped
        socket.create_connection((host, int(port)), timeout=5).close()


def test_chain_asked_for_a_verdict_that_is_not_localized_says_why_none_ran(tmp_path, capsys):
    code, folder = ablate(
        tmp_path, "--launch", REFERENCE, "--vary", "radix-cache=off", "--chain",
        "--json", str(tmp_path / "c.json"),
    )  # fmt: skip
    out = capsys.readouterr().out
    doc = read_json(tmp_path / "c.json", "ablation")
    assert doc["ablation"]["verdict"]["kind"] != "localized"
    ch = doc["chain"]
    assert ch["kind"] == "refused-verdict" and ch["step"] is None
    assert ch["verdict"] == doc["ablation"]["verdict"]["kind"] and ch["status"] == "refused"
    assert [ln for ln in out.splitlines() if ln.startswith("no chain: ")] == [ch["line"]]
    assert not (folder / "base+dumper.log").exists()  # nothing was relaunched


def test_a_planted_cache_fault_and_radix_cache_off_is_not_tested_never_fixed(tmp_path, capsys):
    code, folder = ablate(
        tmp_path,
        "--launch",
        f"{REFERENCE} --enable-deterministic-inference --fault stale-prefix",
        "--vary",
        "radix-cache=off",
        "--json",
        str(tmp_path / "f.json"),
    )
    text = capsys.readouterr().out
    doc = read_json(tmp_path / "f.json", "ablation")
    v = doc["ablation"]["verdict"]
    base = doc["ablation"]["configs"][0]
    assert base["condition"] == 2, base["diagnosis"]
    off = doc["ablation"]["configs"][1]
    cache = [h for h, r in off["helpers"].items() if r["effect"] == "not tested"]
    assert "prefill_cache_hit" in cache
    assert all(r["effect"] != "removed" for r in off["helpers"].values())
    assert v["kind"] != "localized" and "removes" not in v["line"]
    # each helper the base tested and the knob turned off is a trap, never a fix
    turned_off = [h for h in cache if base["helpers"][h]["untested"] is None]
    assert "prefill_cache_hit" in turned_off and len(v["traps"]) == len(turned_off), v["traps"]
    assert all(off["helpers"][h]["untested_kind"] == "unusable" for h in turned_off)
    assert off["trap_kind"] is None and off["took_effect"] is True
    shown = table_rows(text)["radix-cache=off"]
    assert shown.endswith(untested_note(turned_off)), shown
    assert code == doc["exit_code"] == 1


def test_an_unknown_knob_is_refused_before_anything_starts(tmp_path, capsys):
    code, folder = ablate(tmp_path, "--launch", REFERENCE, "--vary", "attention-backend=fa3,triton")
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err
    assert err.startswith(
        "kltui: error: --vary 'attention-backend=fa3,triton': the installed server has no "
        "attention-backend (--attention-backend) flag"
    )
    assert not folder.exists()  # nothing started, nothing written


def test_a_base_that_cannot_start_is_one_line_with_its_log_tail(tmp_path, capsys):
    code, folder = ablate(
        tmp_path, "--launch", f"{REFERENCE} --page-size 0", "--vary", "deterministic=on"
    )
    out = capsys.readouterr().out
    lines = [ln for ln in out.splitlines() if "the base did not start" in ln]
    assert code == 3 and len(lines) == 1
    assert lines[0].startswith("kltui ablate: the base did not start: base: exited with code 2")
    assert lines[0].endswith("error: --page-size must be at least 1")
    manifest = json.loads((folder / "ablation.json").read_text())
    assert [c["status"] for c in manifest["configs"]] == ["failed", "not run"]


def test_attach_mode_tells_running_servers_apart_by_their_settings(
    reference_servers, tmp_path, capsys
):
    base = reference_servers.url()
    det = reference_servers.url(deterministic=True)
    code, folder = ablate(
        tmp_path, "--server", base, "--server", det, "--json", str(tmp_path / "t.json")
    )
    doc = read_json(tmp_path / "t.json", "ablation")
    names = [c["name"] for c in doc["ablation"]["configs"]]
    assert names == ["base", "deterministic=on"]
    assert [c["server"] for c in doc["ablation"]["configs"]] == [base, det]
    assert doc["sweep"]["mode"] == "attach" and doc["sweep"]["configs"][0]["log"] is None
    # float32 batch noise is below the floor: nothing to localize, and said so
    assert doc["ablation"]["verdict"]["kind"] == VerdictKind.NOT_REPRODUCED
    assert code == 0
    assert "deterministic=on" in table_rows(capsys.readouterr().out)
    assert not list(folder.glob("*.log"))  # nothing was launched


def _with_marker(marker: str) -> list[int]:
    """Pids whose command line holds `marker` (the servers of the sweep below, and their
    watchdogs)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cmd = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker.encode() in cmd and running(int(d.name)):
            out.append(int(d.name))
    return out


def _spawned(folder: Path, marker: str, *args: str, out=subprocess.DEVNULL) -> subprocess.Popen:
    """`kltui ablate` as its own process: a reference-server base marked by `marker`."""
    return subprocess.Popen(
        [sys.executable, "-m", "kltui", "ablate", "--launch",
         f"{REFERENCE} --random-seed {marker}", *args, *SIZES, "--folder", str(folder)],
        stdout=out,
        stderr=subprocess.STDOUT if out is subprocess.PIPE else subprocess.DEVNULL,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip


def _until_ready(proc: subprocess.Popen, log: Path, seconds: float) -> None:
    """Wait until the server writing `log` says it is ready, while kltui still runs."""
    deadline = time.monotonic() + seconds
    while not (log.exists() and "ready at" in log.read_text()):
        assert proc.poll() is None, f"kltui ablate ended before {log.stem} was up"
        assert time.monotonic() < deadline, f"{log.stem} never came up"
        time.sleep(0.05)


def test_no_server_outlives_a_sigkilled_sweep(tmp_path):
    marker = str(900_000_000 + os.getpid())  # a --random-seed no other server uses
    folder = tmp_path / "sweep"
    proc = _spawned(folder, marker, "--vary", "deterministic=on")
    try:
        _until_ready(proc, folder / "base.log", 60)
        assert _with_marker(marker), "the running server was not found by its marker"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        t0 = time.monotonic()
        while left := _with_marker(marker):
            assert time.monotonic() - t0 < 10, f"still running after kltui was killed: {left}"
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()


def test_pairs_combine_the_knobs_that_moved_it_after_the_singles(tmp_path, capsys):
    code, folder = ablate(
        tmp_path,
        "--launch",
        f"{REFERENCE} --dtype bfloat16",
        "--vary",
        "deterministic=on",
        "--vary",
        "dtype=float32",
        "--pairs",
        "--helpers",
        "match",
        "--json",
        str(tmp_path / "p.json"),
    )
    doc = read_json(tmp_path / "p.json", "ablation")
    names = [c["name"] for c in doc["sweep"]["configs"]]
    assert names == ["base", "deterministic=on", "dtype=float32", "deterministic=on+dtype=float32"]
    out = capsys.readouterr().out
    # the first line counts 3; the pair is announced before "config 4/4" starts
    assert sweep_start(names[:3], str(folder)) in out.splitlines()
    added = out.index(pairs_added(names[3:]))
    assert added < out.index("config 4/4")
    assert doc["sweep"]["pairs_run"] is True
    assert all(c["status"] == "measured" for c in doc["sweep"]["configs"])
    pair = doc["ablation"]["configs"][3]
    assert pair["changes"] == {"deterministic": "on", "dtype": "float32"}
    assert "--enable-deterministic-inference" in pair["argv"]
    assert pair["argv"][pair["argv"].index("--dtype") + 1] == "float32"
    dt = doc["ablation"]["configs"][2]
    assert dt["took_effect"] is True
    assert dt["settings"]["dtype"] == {
        "base": "bfloat16",
        "reported": "float32",
        "asked": "float32",
    }
    # float32's batch noise (~5e-13) is under the floor too: both single knobs are named
    sufficient = doc["ablation"]["verdict"]["helpers"][0]["sufficient"]
    assert sufficient == ["deterministic=on", "dtype=float32"]
    assert code == 0


def test_pairs_with_fewer_than_two_knobs_that_count_say_so(tmp_path, capsys):
    code, folder = ablate(
        tmp_path,
        "--launch",
        f"{REFERENCE} --dtype bfloat16",
        "--vary",
        "deterministic=on",
        "--vary",
        "cuda-graph=off",
        "--pairs",
        "--helpers",
        "match",
    )
    out = capsys.readouterr().out
    assert PAIRS_NONE_LINE in out
    manifest = json.loads((folder / "ablation.json").read_text())
    assert len(manifest["configs"]) == 3 and manifest["pairs_run"] is False


def test_parallel_configurations_give_the_same_reading(tmp_path, capsys):
    code, folder = ablate(
        tmp_path,
        "--launch",
        f"{REFERENCE} --dtype bfloat16",
        "--vary",
        "deterministic=on",
        "--vary",
        "cuda-graph=off",
        "--parallel",
        "2",
        "--helpers",
        "match",
        "--json",
        str(tmp_path / "q.json"),
    )
    out = capsys.readouterr().out
    doc = read_json(tmp_path / "q.json", "ablation")
    assert doc["sweep"]["parallel"] == 2 and code == 0
    assert doc["ablation"]["verdict"]["kind"] == "localized"
    # not an SGLang command: no memory fraction added
    assert all("--mem-fraction-static" not in c["argv"] for c in doc["sweep"]["configs"])
    # no progress bars when several configurations share the console
    assert not [ln for ln in out.splitlines() if ln.startswith("match ") and "━" in ln]
    # the servers start one at a time (each sizes its cache from the memory free while it
    # loads): between two "starting" lines the first one is up or failed
    events = [ln for ln in out.splitlines() if ln.startswith(("config ", "failed: "))]
    starting = [i for i, ln in enumerate(events) if ln.endswith(": starting")]
    for a, b in zip(starting, starting[1:], strict=False):
        assert any(" up at " in ln or ln.startswith("failed") for ln in events[a:b]), events
    # issue 44: the base's helpers run while the next server loads (the base must be up first,
    # not measured first): configuration 2 starts before the base is measured
    base_measured = next(
        i for i, ln in enumerate(events) if ln.startswith("config 1/3 base: measured")
    )
    assert starting[1] < base_measured and " up at " in events[starting[1] - 1], events


def test_an_interrupted_sweep_keeps_what_it_measured_and_stops_its_servers(tmp_path):
    marker = str(800_000_000 + os.getpid())
    folder = tmp_path / "sweep"
    proc = _spawned(
        folder,
        marker,
        *("--vary", "deterministic=on", "--vary", "cuda-graph=off"),
        *("--json", str(tmp_path / "i.json")),
        out=subprocess.PIPE,
    )
    try:
        _until_ready(proc, folder / "deterministic=on.log", 90)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 130, out[-2000:]
        doc = read_json(tmp_path / "i.json", "ablation")
        assert doc["sweep"]["interrupted"] is True and doc["exit_code"] == 130
        status = {c["name"]: c["status"] for c in doc["sweep"]["configs"]}
        assert status["base"] == "measured" and status["cuda-graph=off"] == "not run"
        assert INTERRUPTED_LINE in out
        # stopped by kltui itself: its last processes are gone moments after it exits (the
        # launch tests' bound after stop() is 1 s)
        t0 = time.monotonic()
        while left := _with_marker(marker):
            assert time.monotonic() - t0 < 5, f"still running after kltui exited: {left}"
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()


def test_stress_in_a_sweep_reads_each_configuration_quiet_against_stressed(tmp_path, capsys):
    # `kltui ablate --stress LEVEL` (issue 32): each configuration's helpers run quiet, then
    # under the traffic; on a deterministic base whose kernel switches above 6 running
    # requests that is a state bug under load in every configuration (page-size changes
    # nothing of it), recorded beside each one's quiet result
    out = tmp_path / "sweep"
    launch = f"{REFERENCE} --enable-deterministic-inference --fault batch-switch:6 --enable-metrics"
    argv = ["ablate", "--launch", launch]
    argv += ["--vary", "page-size=4", "--stress", "light", "--helpers", "match"]
    argv += ["--samples", "4", "--max-new-tokens", "8", "--max-prompt-tokens", "48"]
    argv += ["--folder", str(out), "--json", str(tmp_path / "s.json")]
    code = main(argv)
    text = capsys.readouterr().out
    doc = read_json(tmp_path / "s.json", "ablation")
    configs = doc["sweep"]["configs"]  # how each ran, beside the ablation's reading
    assert [c["name"] for c in configs] == ["base", "page-size=4"]
    for c in configs:
        assert c["status"] == "measured", c
        assert c["stress"]["verdict"] == StressVerdict.STATE_BUG, c["stress"]
        (h,) = c["stress"]["helpers"]
        assert h["helper"] == "match" and h["first_difference"] is not None
    manifest = json.loads((out / "ablation.json").read_text())
    assert all(m["stress"]["verdict"] == StressVerdict.STATE_BUG for m in manifest["configs"])
    # the quiet verdict reads the quiet runs only; the sweep's --stress line says the rest,
    # and a state bug under load fails the sweep as it fails `kltui check --stress`
    assert doc["ablation"]["verdict"]["kind"] == VerdictKind.NOT_REPRODUCED
    sweep = load(out)
    found = read_stress(sweep)
    assert found is not None and found.kind is SweepStressKind.EVERYWHERE and found.level == "light"
    assert [c.name for c in found.bug] == ["base", "page-size=4"]
    assert found.bug[0].first is not None and found.bug[0].first[0] == "match"
    assert stress_line(found) in text.splitlines()
    # the table's note is the reading's, with the stressed verdict in it
    notes = {name: what for name, _c, _cond, what in rows(sweep, reading(sweep))}
    assert StressVerdict.STATE_BUG in notes["base"] and table_rows(text)["base"].endswith(
        notes["base"]
    )
    assert code == doc["exit_code"] == 1
    # read back: the same table (the quiet runs), the same --stress line, the same exit code
    md = main(["ablate", "--replay", str(out), "--headless", "--md", str(tmp_path / "s.md")])
    again = capsys.readouterr().out
    assert md == 1 and table_rows(again) == table_rows(text)
    assert f"- {md_text(stress_line(found))}" in (tmp_path / "s.md").read_text()
