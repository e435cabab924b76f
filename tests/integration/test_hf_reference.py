"""`--baseline hf:PATH`: the shipped checkpoint in Hugging Face transformers (CPU, a worker
process) against the embedded reference server, which loads the same folder. Both compute the
same Llama in float32 with different kernels, so the comparison must find them close but not
bit-identical, with every union id known on both sides (the exact union KL). A copy of the
folder with one tensor perturbed is refused as other weights (exit 2), and a server in another
dtype than the reference shows in the config diff and in the verdict's line."""

from __future__ import annotations

import json
import os
import shutil
import signal
from pathlib import Path

import numpy as np
import pytest

from kltui.cli import main
from kltui.outputs.hf_judge_rows import is_reference, reference_line, verdict_text
from kltui.readings.three_way import DtypePair, three_way
from kltui.reference import CHECKPOINT_DIR
from kltui.session.helper_view import HelperView
from kltui.untrusted import html_text, md_text
from kltui.words.three_way import verdict_line
from tests.integration.checkrun import check_run, recorded
from tests.json_contract import read_check

pytest.importorskip("transformers", reason="the hf: reference needs the [hf] extra")

CKPT = str(CHECKPOINT_DIR)
SMALL = {"samples": 4, "max_new_tokens": 12, "top_k": 5}


async def test_the_reference_scores_what_the_server_scores(reference_servers, tmp_path):
    url = reference_servers.url()
    rc, doc, out = await check_run(
        url, tmp_path, helpers=["hf_reference"], hf_baseline={"hf": CKPT}, **SMALL
    )
    assert rc == 0, out
    h = doc["helpers"]["hf_reference"]
    assert h["status"] == "pass" and h["scored"] == 4
    # the same function in the same dtype: far below any gate, and not bit-identical either
    # (the reference server's batched matmuls are not transformers' sdpa)
    assert 0 < h["avg_kl_div"] < 1e-8
    ref = h["reference"]
    assert ref["engine"] == "SGLang" and ref["reference"] == "hf:" + str(Path(CKPT).resolve())
    assert ref["union_exact"] is True and ref["union_coverage"] == 1.0
    assert ref["loaded"]["dtype"] == "float32" and ref["loaded"]["attn_implementation"] == "sdpa"
    assert ref["loaded"]["device"] == "cpu"
    assert h["top1_agreement"] == 1.0
    rows = {r["key"]: r for r in ref["config_diff"]}
    assert rows["weights"]["status"] == "match"  # the same folder, hashed on both sides
    assert rows["dtype"]["status"] == "match"
    assert rows["attention"]["engine"] == "torch_native"
    assert rows["attention"]["reference"] == "sdpa"
    # the reference is recorded among the run's servers, labelled as such
    (hf,) = [s for s in doc["servers"] if s["engine"] == "hf"]
    assert hf["local_weights_sha256"] == rows["weights"]["reference"]
    tw = doc["three_way"]
    assert tw["verdict"] is None and "no second engine" in tw["line"]
    assert [leg["name"] for leg in tw["legs"]] == ["SGLang vs HF"]
    assert "reference" in out and "hf_reference" in out

    # the recording read back gives the same reading
    assert main(["report", str(tmp_path / "r.jsonl"), "--json", str(tmp_path / "again.json")]) == 0
    again = read_check(tmp_path / "again.json")
    assert again["three_way"] == tw
    assert again["helpers"]["hf_reference"]["reference"] == ref
    # and so do the Markdown and HTML reports and the TUI's replay, the reference labelled
    md, html = tmp_path / "r.md", tmp_path / "r.html"
    assert main(["report", str(tmp_path / "r.jsonl"), "--md", str(md), "--html", str(html)]) == 0
    # the engine's line against the reference and the three-way verdict, as their words say
    # them (goldens: tests/unit/words/test_golden_reference.py, test_three_way_words.py)
    store = recorded(tmp_path)
    (st,) = [s for s in store.helpers.values() if is_reference(s)]
    said = (reference_line(HelperView.of(st).figures), verdict_text(three_way(store)))
    for text, escape in ((md.read_text(), md_text), (html.read_text(), html_text)):
        assert all(escape(line) in text for line in said)
        assert "no second engine to rank" in text
    await _replayed_in_the_tui(tmp_path / "r.jsonl")


async def _replayed_in_the_tui(path: Path) -> None:
    from kltui.session.recording import read_recording
    from kltui.tui.app import KltuiApp
    from kltui.tui.feeds import ReplayFeed
    from kltui.tui.widgets.header import ServersPanel
    from kltui.tui.widgets.progress import HelperProgress
    from tests.tui.kit import drawn, replayed

    app = KltuiApp(ReplayFeed(read_recording(str(path)), speed=None, instant=True))
    async with app.run_test(size=(200, 50)) as pilot:
        await replayed(pilot, app)
        assert "HF reference" in drawn(app.query_one(ServersPanel))
        assert "hf_reference" in drawn(app.query_one(HelperProgress))


def _perturbed_copy(tmp_path: Path) -> Path:
    """The checkpoint copied under the same folder name, one tensor nudged by 1%."""
    from safetensors.numpy import load_file, save_file

    dst = tmp_path / "copy" / Path(CKPT).name
    shutil.copytree(CKPT, dst)
    tensors = load_file(str(dst / "model.safetensors"))
    name = sorted(tensors)[0]
    tensors[name] = (tensors[name] * np.float32(1.01)).astype(tensors[name].dtype)
    save_file(tensors, str(dst / "model.safetensors"), metadata={"format": "pt"})
    return dst


def test_a_planted_wrong_weight_is_refused(reference_servers, tmp_path, capsys):
    url = reference_servers.url()
    bad = _perturbed_copy(tmp_path)
    argv = ["check", "--server", url, "--baseline", f"hf:{bad}", "--no-record", *_small()]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0]
    assert f"--baseline hf:{bad}" in err[0] and "differ" in err[0]
    assert "--allow-different-models" in err[0]


def test_other_weights_run_when_allowed_and_the_diff_says_so(reference_servers, tmp_path):
    url = reference_servers.url()
    bad = _perturbed_copy(tmp_path)
    out = tmp_path / "r.json"
    argv = ["check", "--server", url, "--baseline", f"hf:{bad}", "--allow-different-models",
            "--no-record", "--json", str(out), *_small()]  # fmt: skip
    main(argv)
    doc = read_check(out)
    rows = {r["key"]: r for r in doc["helpers"]["hf_reference"]["reference"]["config_diff"]}
    assert rows["weights"]["status"] == "mismatch"
    assert "differ" in rows["weights"]["note"]
    # a 1% nudge of one tensor moves the numbers far beyond the same-weights run's
    assert doc["helpers"]["hf_reference"]["avg_kl_div"] > 1e-6


def test_a_server_in_another_dtype_is_compared_across_dtypes(reference_servers, tmp_path):
    url = reference_servers.url(extra_args=("--dtype", "bfloat16"))
    out = tmp_path / "r.json"
    argv = ["check", "--server", url, "--baseline", f"hf:{CKPT}", "--hf-dtype", "float32",
            "--record", str(tmp_path / "r.jsonl"), "--json", str(out), *_small()]  # fmt: skip
    main(argv)
    doc = read_check(out)
    ref = doc["helpers"]["hf_reference"]["reference"]
    rows = {r["key"]: r for r in ref["config_diff"]}
    assert rows["dtype"]["status"] == "mismatch"
    assert (rows["dtype"]["engine"], rows["dtype"]["reference"]) == ("bfloat16", "float32")
    assert ref["across_dtypes"] == {"engine": "bfloat16", "reference": "float32"}
    tw = doc["three_way"]
    assert tw["across_dtypes"] is True
    reading = three_way(recorded(tmp_path))
    assert reading.dtypes == (DtypePair("SGLang", "bfloat16", "float32"),)
    assert tw["line"] == verdict_line(reading)  # its words: tests/unit/words
    # bf16 rounding against fp32: far above the same-dtype run
    assert doc["helpers"]["hf_reference"]["avg_kl_div"] > 1e-6
    assert any("dtype differs" in p["message"] for p in doc["problems"])


def test_the_reference_takes_the_servers_dtype_unless_told(reference_servers, tmp_path):
    url = reference_servers.url(extra_args=("--dtype", "bfloat16"))
    out = tmp_path / "r.json"
    argv = ["check", "--server", url, "--baseline", f"hf:{CKPT}", "--no-record",
            "--json", str(out), *_small()]  # fmt: skip
    main(argv)
    doc = read_check(out)
    (hf,) = [s for s in doc["servers"] if s["engine"] == "hf"]
    assert hf["dtype"] == "bfloat16"
    ref = doc["helpers"]["hf_reference"]["reference"]
    assert ref["loaded"]["dtype"] == "bfloat16" and ref["across_dtypes"] is None


@pytest.mark.parametrize(
    "argv, must",
    [
        (["--baseline", "hf:/nonexistent/model"], "--baseline hf: /nonexistent/model: no such"),
        (["--hf-dtype", "float32"], "--hf-dtype: there is no hf: reference"),
        (["--helpers", "hf_reference"], "needs --baseline hf:PATH"),
        (["--baseline", f"hf:{CKPT}", "--baseline", "hf:/x"], "one hf: reference at a time"),
    ],
)
def test_bad_reference_options_are_one_line(argv, must, tmp_path, capsys):
    assert main(["check", "--server", "127.0.0.1:9", "--no-record", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and must in err[0], err


def test_a_config_file_names_the_reference(tmp_path):
    from kltui.run.config import load_config_file

    path = tmp_path / "c.yaml"
    path.write_text(
        json.dumps(
            {
                "baseline": [
                    {"hf": CKPT, "dtype": "bfloat16", "batch_size": 2},
                    "vllm:127.0.0.1:8000",
                ]
            }
        )
    )
    cfg = load_config_file(str(path))
    assert cfg.baseline == "127.0.0.1:8000"
    assert cfg.hf_baseline == {"hf": CKPT, "dtype": "bfloat16", "batch_size": 2}
    path.write_text(json.dumps({"baseline": {"hf": CKPT, "dtype": "int8"}}))
    with pytest.raises(Exception, match="'baseline.dtype' must be"):
        load_config_file(str(path))


def _small() -> list[str]:
    return ["--samples", "4", "--max-new-tokens", "12"]


def _worker_pids() -> list[int]:
    """The hf_worker.py processes this test process started."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == os.getpid() and any(c.endswith(b"hf_worker.py") for c in cmd):
            out.append(int(d.name))
    return out


async def test_a_worker_that_dies_is_one_line_and_what_was_measured_is_kept(reference_servers):
    from kltui.run.config import RunConfig
    from kltui.run.runner import run_session
    from kltui.session.events import HelperFinished, Problem, SampleScored

    cfg = RunConfig(servers=[reference_servers.url()], helpers=["hf_reference"],
                    hf_baseline={"hf": CKPT}, samples=24, max_new_tokens=4, top_k=5)  # fmt: skip
    scored, killed, events = 0, [], []
    async for ev in run_session(cfg):
        events.append(ev)
        if isinstance(ev, SampleScored):
            scored += 1
            if not killed:  # the first chunk is in: the next one needs the worker again
                killed = _worker_pids()
                for pid in killed:
                    os.kill(pid, signal.SIGKILL)
    assert killed, "no worker process found"
    (fatal,) = [e for e in events if isinstance(e, Problem) and e.fatal]
    assert "the reference worker was killed by signal 9" in fatal.message
    assert fatal.helper == "hf_reference" and "\n" not in fatal.message
    assert "sample(s) compared before are kept" in fatal.message
    (fin,) = [e for e in events if isinstance(e, HelperFinished)]
    assert fin.summary["status"] == "error" and 0 < fin.summary["scored"] == scored < 24
    assert not _worker_pids()


async def test_batched_forwards_pad_and_stay_close_to_one_a_forward():
    from kltui.engines.hf import HFReference, HFSettings

    rng = np.random.default_rng(0)
    seqs = [rng.integers(3, 1000, size=n) for n in (40, 25, 33)]
    starts = [20, 1, 30]
    got = {}
    for bs in (1, 3):
        ref = HFReference(HFSettings(CKPT, "float32", "cpu", "sdpa", batch_size=bs))
        try:
            ident = await ref.identify()
            assert ident.get("batch_size") == bs
            got[bs] = await ref.score(seqs, starts, 4)
            asked = [np.stack([s.top_ids[:, 0], np.full(len(s.lp), -1)], axis=1) for s in got[bs]]
            back = await ref.gather(asked)
        finally:
            await ref.aclose()
        for s, b in zip(got[bs], back, strict=True):
            assert np.array_equal(b[:, 0], s.top_lp[:, 0]) and np.isnan(b[:, 1]).all()
    for one, many, q, st in zip(got[1], got[3], seqs, starts, strict=True):
        assert one.lp.shape == many.lp.shape == (q.size - st,)
        # padding changes the kernels' shapes, not the function: rounding-level differences
        assert np.allclose(one.lp, many.lp, atol=1e-4)
        assert (one.top_ids[:, 0] == many.top_ids[:, 0]).mean() > 0.9
