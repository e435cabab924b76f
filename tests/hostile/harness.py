"""Running `kltui check` against a HostileServer, in-process or as a real subprocess, and the
assertions every fault shares: one line naming server, phase and fault; the documented exit
code; no traceback; a recording that ends properly and agrees with the JSON."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from kltui.outputs.headless import run_check
from kltui.run.config import RunConfig
from kltui.session.events import HelperFinished, PhaseChanged, Problem, RunFinished, RunStarted
from kltui.session.recording import Recording, read_recording
from tests.json_contract import read_check

ROOT = Path(__file__).resolve().parents[2]
# Small enough to be fast, large enough for batches (3 prompts of distinct lengths, 21/20/14).
BASE = dict(
    samples=3,
    max_new_tokens=6,
    max_prompt_tokens=16,
    helpers=["match"],
    request_timeout=5.0,
    flush_timeout=0.2,
    # `check` streams only when asked; the faults of a stream are tested on one
    stream=True,
    # the faults are the gate's; the follow-up extras request has tests of its own
    extras=0,
)
VERDICT_OF_EXIT = {0: "pass", 1: "fail", 3: "error", 130: "interrupted"}


@dataclass
class Result:
    rc: int
    out: str  # everything printed (stdout + stderr for subprocesses)
    report: dict | None
    recording: Recording | None
    stderr: str = ""
    path: Path | None = None  # the folder holding r.json and r.kltui.jsonl

    def lines(self, prefix: str) -> list[str]:
        return [ln for ln in self.out.splitlines() if ln.startswith(prefix)]


def config(url: str, **kw) -> RunConfig:
    return RunConfig(servers=[url], **{**BASE, **kw})


async def check_inproc(url: str, tmp_path: Path, **kw) -> Result:
    out = io.StringIO()
    rc = await run_check(
        config(url, **kw),
        json_path=str(tmp_path / "r.json"),
        record_path=str(tmp_path / "r.kltui.jsonl"),
        console=Console(file=out, width=400, color_system=None),
    )
    return _result(rc, out.getvalue(), tmp_path)


def cli_args(address: str, tmp_path: Path, **kw) -> list[str]:
    opts = {**BASE, **kw}
    args = [
        sys.executable,
        "-m",
        "kltui",
        "check",
        "--server",
        address,
        "--samples",
        str(opts["samples"]),
        "--max-new-tokens",
        str(opts["max_new_tokens"]),
        "--max-prompt-tokens",
        str(opts["max_prompt_tokens"]),
        "--helpers",
        ",".join(opts["helpers"]),
        "--request-timeout",
        str(opts["request_timeout"]),
        "--flush-timeout",
        str(opts["flush_timeout"]),
        "--json",
        str(tmp_path / "r.json"),
        "--record",
        str(tmp_path / "r.kltui.jsonl"),
    ]
    args += ["--extras", str(opts["extras"])]
    if opts.get("stream") is not None:
        args.append("--stream" if opts["stream"] else "--no-stream")
    return args + list(opts.get("extra", []))


def cli_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "KLTUI_API_KEY"}
    env.update({"PYTHONPATH": str(ROOT), "COLUMNS": "400", "NO_COLOR": "1", **extra})
    return env


def check_cli(address: str, tmp_path: Path, timeout: float = 60, env=None, **kw) -> Result:
    proc = subprocess.run(
        cli_args(address, tmp_path, **kw),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=env or cli_env(),
    )
    return _result(proc.returncode, proc.stdout + proc.stderr, tmp_path, proc.stderr)


def start_cli(address: str, tmp_path: Path, **kw) -> subprocess.Popen:
    return subprocess.Popen(
        cli_args(address, tmp_path, **kw),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=cli_env(),
        # its own process group: a SIGINT for it must not reach pytest
        start_new_session=True,
    )


def finish_cli(proc: subprocess.Popen, tmp_path: Path, sig: str | None, timeout=30) -> Result:
    if sig is not None:
        proc.send_signal(getattr(signal, sig))
    out, err = proc.communicate(timeout=timeout)
    return _result(proc.returncode, out + err, tmp_path, err)


def _result(rc: int, out: str, tmp_path: Path, stderr: str = "") -> Result:
    rj = tmp_path / "r.json"
    rr = tmp_path / "r.kltui.jsonl"
    report = read_check(rj) if rj.exists() else None
    rec = read_recording(str(rr)) if rr.exists() else None
    return Result(rc, out, report, rec, stderr, tmp_path)


def assert_clean_output(res: Result) -> None:
    """No traceback and no bare exception line (`ValueError: ...`) anywhere in the output."""
    assert "Traceback" not in res.out, res.out
    assert not re.search(r"^\w+(Error|Exception|Interrupt): ", res.out, re.M), res.out


def fault_line(res: Result, url: str, phase: str, message: str, label: str = "error") -> str:
    """The one line that reports the fault: names the server, the phase and the fault."""
    lines = [ln for ln in res.lines(f"{label}: ") if re.search(message, ln)]
    assert len(lines) == 1, f"expected one {label} line matching {message!r}:\n{res.out}"
    line = lines[0]
    assert url in line, line
    assert re.search(rf"\b{re.escape(phase)}\b", line), f"phase {phase!r} not named: {line}"
    return line


def assert_recording(
    res: Result, exit_code: int, phase: str | None, message: str, fatal: bool | None = None
) -> Problem:
    """The recording holds every event up to the fault and ends with the verdict. `fatal`:
    whether the fault's Problem is fatal (None: when the exit code is 3)."""
    rec = res.recording
    assert rec is not None and not rec.truncated
    ev = rec.events
    assert isinstance(ev[0], RunStarted), ev[:2]
    assert isinstance(ev[-1], RunFinished) and ev[-1].verdict == VERDICT_OF_EXIT[exit_code]
    assert sum(isinstance(e, RunFinished) for e in ev) == 1
    label_fatal = exit_code == 3 if fatal is None else fatal
    probs = [e for e in ev if isinstance(e, Problem) and re.search(message, e.message)]
    assert len(probs) == 1, [e for e in ev if isinstance(e, Problem)]
    p = probs[0]
    assert p.fatal is label_fatal
    if p.helper is not None:
        assert p.phase == phase
        k = ev.index(p)
        # the phase was entered (and recorded) before its fault
        assert any(isinstance(e, PhaseChanged) and e.phase == phase for e in ev[:k])
        fins = [e for e in ev[k:] if isinstance(e, HelperFinished) and e.helper == p.helper]
        assert len(fins) == 1
        if label_fatal:
            assert fins[0].summary["status"] in ("error", "invalid")
            assert fins[0].summary["passed"] is False
    # the JSON says what the recording says
    assert res.report is not None
    assert res.report["verdict"] == ev[-1].verdict
    assert [q["message"] for q in res.report["problems"]] == [
        e.message for e in ev if isinstance(e, Problem)
    ]
    return p
