"""SIGINT and SIGTERM to a real `python -m kltui check` process during each phase: the run
ends cleanly (exit 130, no traceback) and the JSON and the recording hold what was done.

Each phase is held open by the hostile server (a request that never gets its answer, or a
slow stream), the signal is sent once the server has seen the phase's request, and all
(phase, signal) runs go in parallel to keep the suite fast.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kltui.session.events import PhaseChanged, RunFinished, TokensDecoded
from kltui.session.recording import RecordingError, read_recording
from tests.hostile.catalogue import EXIT_INTERRUPTED, INTERRUPT_PHASES, INTERRUPT_SIGNALS
from tests.hostile.harness import assert_clean_output, finish_cli, start_cli
from tests.hostile.server import HostileServer, wait_until

CASES = [(p, s) for p in INTERRUPT_PHASES for s in INTERRUPT_SIGNALS]


def inside(phase: str, recording: Path) -> bool:
    """Whether the run's recording so far shows it inside `phase`: its last phase entered is
    that one, and in decode a decoded token is recorded. Connect and tokenize come before the
    run's first event, so the server having seen their request is all there is to wait for."""
    if phase in ("connect", "tokenize"):
        return True
    try:
        events = read_recording(str(recording)).events
    except (RecordingError, OSError):  # not written yet, or only its header so far
        return False
    phases = [e.phase for e in events if isinstance(e, PhaseChanged)]
    if phase == "decode" and not any(isinstance(e, TokensDecoded) for e in events):
        return False
    return bool(phases) and phases[-1] == phase


def _interrupt(phase: str, sig: str, tmp):
    server_kw, helper, server_phase = INTERRUPT_PHASES[phase]
    with HostileServer(**server_kw) as srv:
        proc = start_cli(
            srv.address,
            tmp,
            helpers=[helper],
            max_new_tokens=8,
            request_timeout=30.0,
            flush_timeout=30.0,
        )
        try:
            reached = srv.wait_for(server_phase, timeout=30)
            if reached and server_phase == "decode":
                # some tokens are decoded (and recorded) before the signal
                reached = wait_until(lambda: sum(srv.streamed.get(server_phase, {}).values()) >= 2)
            if reached:  # kltui is now awaiting inside the phase, and has recorded so
                reached = wait_until(lambda: inside(phase, tmp / "r.kltui.jsonl"), timeout=30)
            res = finish_cli(proc, tmp, sig if reached else "SIGKILL")
        finally:
            if proc.poll() is None:
                proc.kill()
        return reached, res, dict(srv.counts), sum(srv.streamed.get(server_phase, {}).values())


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
    dirs = {c: tmp_path_factory.mktemp(f"{c[0]}-{c[1]}") for c in CASES}
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {c: pool.submit(_interrupt, *c, dirs[c]) for c in CASES}
        return {c: f.result() for c, f in futures.items()}


@pytest.mark.parametrize("phase, sig", CASES, ids=[f"{p}-{s}" for p, s in CASES])
def test_interrupt_during_phase(phase, sig, interrupted):
    reached, res, counts, streamed = interrupted[(phase, sig)]
    assert reached, f"the run never reached {phase}: {counts}\n{res.out}"
    assert res.rc == EXIT_INTERRUPTED, res.out
    assert_clean_output(res)
    assert "verdict: interrupted" in res.out
    # what was done is on disk: the JSON and a recording that ends with the interruption
    assert res.report is not None and res.report["verdict"] == "interrupted"
    rec = res.recording
    assert rec is not None and not rec.truncated
    assert isinstance(rec.events[-1], RunFinished) and rec.events[-1].verdict == "interrupted"
    kinds = [type(e).__name__ for e in rec.events]
    if phase in ("connect", "tokenize"):
        # nothing was measured yet: the run's only event is its end
        assert kinds == ["RunFinished"]
    else:
        assert kinds[0] == "RunStarted" and "HelperStarted" in kinds
        phases = [e.phase for e in rec.events if type(e).__name__ == "PhaseChanged"]
        assert phases[-1] == phase, phases
    if phase in ("decode", "turn1"):
        decoded = sum(len(e.token_ids) for e in rec.events if isinstance(e, TokensDecoded))
        # live tokens are shown (and recorded) only for the scored decode, not for turn 1
        assert (decoded >= 1 if phase == "decode" else decoded == 0) and decoded <= streamed
