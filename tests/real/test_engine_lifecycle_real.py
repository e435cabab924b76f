"""Real SGLang and vLLM servers started for this tier die with the process that started them:
a child process starts one through the tier's launch path, is SIGKILLed, and the server's whole
process group (SGLang's scheduler and detokenizer, vLLM's engine core) is gone within BOUND_S."""

from __future__ import annotations

from pathlib import Path

import pytest

from .launch import START_TIMEOUT
from .lifecycle import BOUND_S, end_child, group, seconds_until_gone, start_in_child


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_real_server_dies_when_the_process_that_started_it_is_sigkilled(engines, engine):
    child, rec = start_in_child(engine, {}, timeout=START_TIMEOUT)
    pgid = rec["pgid"]
    members = group(pgid)
    names = sorted(comm(p) for p in members)
    print(f"[{engine}] process group {pgid}: {names}")
    # the HTTP server and at least one worker process (scheduler / engine core)
    assert len(members) >= 2, names
    end_child(child, "sigkill")
    took = seconds_until_gone(rec)
    print(f"[{engine}] process group {pgid} gone {took:.2f} s after its owner (bound {BOUND_S} s)")
