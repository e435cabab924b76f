"""`kltui monitor` against real reference servers (issue 48): a planted fault that wakes after
the first probe shows as a change of reading and in the metrics (parsed by prometheus_client's
own parser), a server killed mid-probe is a probe error and never the monitor's end, the CLI
serves /metrics while it runs, prunes its recordings by KLTUI_RUNS_KEEP and stops cleanly on
SIGTERM, between or during a probe."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kltui.outputs.prometheus import MonitorMetrics
from kltui.readings.findings import Kind
from kltui.readings.probe import ProbeError
from kltui.readings.probe_changes import ChangeKind
from kltui.run.config import RunConfig
from kltui.run.monitor import (
    KEEP_PROBES,
    Monitor,
    ProbeResult,
    probe_recordings,
    recording_estimate,
)
from kltui.session.recording import read_recording
from kltui.words.probe import keep_words

# match flushes twice and prefill_cache_hit twice per probe (each flushes before its decode and
# before its replay): a fault dormant until the 4th flush wakes as probe 1 ends
FLUSHES_PER_PROBE = 4
HELPERS = ["match", "prefill_cache_hit"]
SMALL = dict(samples=8, max_new_tokens=16, max_prompt_tokens=96, helpers=HELPERS)


class Probes:
    """A monitor view that keeps what it is shown (and feeds the metrics, as the console does)."""

    def __init__(self, metrics: MonitorMetrics | None = None) -> None:
        self.started: list[int] = []
        self.results: list[ProbeResult] = []
        self.metrics = metrics

    def probe_started(self, number: int, at: float) -> None:
        self.started.append(number)

    def probe_ended(self, result: ProbeResult) -> None:
        self.results.append(result)
        if self.metrics is not None:
            self.metrics.probe_ended(result)


def samples(metrics: MonitorMetrics) -> dict[tuple[str, tuple], float]:
    """Every sample of the exposition, parsed by prometheus_client: (name, sorted labels) ->
    value."""
    text = metrics.exposition().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
    }


def value(parsed: dict, name: str, **labels: str) -> float | None:
    """The one sample of `name` whose labels include `labels` (None: none)."""
    found = [v for (n, ls), v in parsed.items() if n == name and labels.items() <= dict(ls).items()]
    assert len(found) <= 1, (name, labels, found)
    return found[0] if found else None


async def test_a_fault_that_wakes_between_probes_is_a_change_and_a_metric(
    reference_servers, tmp_path
):
    srv = reference_servers.own(
        deterministic=True,
        fault="stale-prefix",
        extra_args=("--fault-after-flushes", str(FLUSHES_PER_PROBE)),
    )
    cfg = RunConfig(servers=[srv.url], **SMALL)
    metrics = MonitorMetrics(every=0)
    view = Probes(metrics)
    monitor = Monitor(cfg, every=0, probes=3, record=probe_recordings(tmp_path))
    rc = await monitor.run(view)

    assert view.started == [1, 2, 3] and len(view.results) == 3
    kinds = [r.reading.servers[0].kind for r in view.results]
    assert kinds == [Kind.EXACT, Kind.TWO, Kind.TWO]
    assert rc == 1  # the last probe's exit code, as kltui check's: a threshold exceeded
    first, second, third = view.results
    assert first.reading.measured and first.changes == ()
    appeared = [c for c in second.changes if c.kind == ChangeKind.APPEARED]
    assert len(appeared) == 1
    (c,) = appeared
    assert (c.server, c.before, c.after) == (srv.url, "exact", "2")
    assert c.paths == ("prefill_cache_hit",) and c.samples
    # the two recordings are named, and each is a full recording of its probe
    assert second.previous_recording == first.recording
    for r in view.results:
        assert r.recording is not None and read_recording(r.recording).events
    assert ChangeKind.APPEARED not in {c.kind for c in third.changes}
    # the load of a probe is measured
    assert all(r.requests > 0 and r.reading.tokens > 0 and r.seconds > 0 for r in view.results)

    parsed = samples(metrics)
    base = dict(server=srv.url, helper="prefill_cache_hit")
    assert value(parsed, "kltui_condition", server=srv.url, kltui_condition="2") == 1.0
    assert value(parsed, "kltui_condition", server=srv.url, kltui_condition="exact") == 0.0
    assert value(parsed, "kltui_avg_kl_div", **base) > 0
    assert value(parsed, "kltui_avg_kl_div", server=srv.url, helper="match") == 0.0
    # no token of match differs: no first-divergence series for it, one for the cache path
    assert value(parsed, "kltui_first_divergence_position", server=srv.url, helper="match") is None
    assert value(parsed, "kltui_first_divergence_position", **base) >= 0
    assert value(parsed, "kltui_samples_tested", **base) == 8
    assert value(parsed, "kltui_probes_total") == 3
    assert value(parsed, "kltui_reading_changes_total", change="appeared") == 1
    assert value(parsed, "kltui_verdict", kltui_verdict="fail") == 1.0
    assert value(parsed, "kltui_probe_errors_total", kind="unreachable") == 0
    assert value(parsed, "kltui_last_good_probe_timestamp_seconds") == pytest.approx(
        third.started + third.seconds
    )
    assert value(parsed, "kltui_probe_requests_total") == sum(r.requests for r in view.results)


async def test_a_server_killed_mid_probe_is_a_probe_error_and_the_monitor_goes_on(
    reference_servers, tmp_path
):
    srv = reference_servers.own(deterministic=True)
    cfg = RunConfig(servers=[srv.url], **{**SMALL, "max_new_tokens": 64}, request_timeout=30)
    metrics = MonitorMetrics()
    view = Probes(metrics)
    monitor = Monitor(cfg, every=0, probes=3, record=probe_recordings(tmp_path))
    task = asyncio.create_task(monitor.run(view))
    async with httpx.AsyncClient(base_url=srv.url) as client:

        async def generated() -> int:
            info = (await client.get("/server_info")).json()["internal_states"][0]
            return int(info["generated_tokens"])

        while not view.results:  # probe 1 measures with the server up
            await asyncio.sleep(0.05)
        after_1 = await generated()
        # probe 2 is decoding (tokens beyond probe 1's; the running-request count can lag a
        # step and still show probe 1's): kill the server under it
        while await generated() <= after_1:
            await asyncio.sleep(0.01)
    os.kill(srv.pid, signal.SIGKILL)
    rc = await asyncio.wait_for(task, 120)
    first, second, third = view.results
    said = [(r.reading.verdict, r.reading.errors, r.error) for r in view.results]
    assert rc == 3, said  # the last probe's, as kltui check's: a server error
    assert first.reading.measured, said
    # the probe the kill cut: an error of some kind (a reset request, a helper's error, or the
    # next helper's connection refused, by where the kill fell), never a result
    assert not second.reading.measured and second.reading.errors, said
    assert third.reading.errors == (ProbeError.UNREACHABLE,), said
    parsed = samples(metrics)
    unreachable = value(parsed, "kltui_probe_errors_total", kind="unreachable")
    assert unreachable == len(
        [r for r in view.results if ProbeError.UNREACHABLE in r.reading.errors]
    )
    assert value(parsed, "kltui_last_good_probe_timestamp_seconds") == pytest.approx(
        first.started + first.seconds
    )
    assert value(parsed, "kltui_verdict", kltui_verdict="error") == 1.0
    # a server not read in the last probe has no helper series left to look current
    assert value(parsed, "kltui_avg_kl_div", server=srv.url, helper="match") is None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _scrape(port: int) -> dict:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(text)
        for s in fam.samples
    }


def _monitor(url: str, runs: Path, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "KLTUI_RUNS_DIR": str(runs), "KLTUI_RUNS_KEEP": "2"}
    cmd = [sys.executable, "-m", "kltui", "monitor", "--server", url, "--headless",
           "--helpers", "match", "--samples", "3", "--max-prompt-tokens", "48", *extra]  # fmt: skip
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_the_cli_serves_metrics_prunes_its_recordings_and_stops_on_sigterm(
    reference_servers, tmp_path
):
    url = reference_servers.url(deterministic=True)
    port = _free_port()
    proc = _monitor(url, tmp_path, "--every", "0", "--max-new-tokens", "4",
                    "--prometheus", f"127.0.0.1:{port}")  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        probes = 0.0
        while probes < 4 and time.monotonic() < deadline:
            time.sleep(0.2)
            try:
                probes = value(_scrape(port), "kltui_probes_total") or 0.0
            except httpx.HTTPError:
                continue
        assert probes >= 4, proc.stderr.read() if proc.poll() is not None else "no 4 probes"
        parsed = _scrape(port)
        # match alone is bit-identical, and condition 2 is not tested without a cache path
        assert value(parsed, "kltui_condition", server=url, kltui_condition="unknown") == 1.0
        assert value(parsed, "kltui_verdict", kltui_verdict="pass") == 1.0
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    lines = [ln for ln in out.splitlines() if ln.startswith("probe ")]
    assert len(lines) >= 4 and all(" · pass · " in ln for ln in lines[:4])
    assert f"metrics on http://127.0.0.1:{port}/metrics" in err
    # said at start: the retention, for this monitor's probe size (words: tests/unit/words)
    sized = RunConfig(helpers=["match"], samples=3, max_new_tokens=4, max_prompt_tokens=48)
    assert f"kltui monitor: {keep_words(KEEP_PROBES, recording_estimate(sized))}" in err
    # KLTUI_RUNS_KEEP=2: the folder keeps the newest probes only (one more may be the one
    # SIGTERM cut short)
    kept = sorted(tmp_path.glob("monitor-*.kltui.jsonl"))
    assert len(lines) >= 4 and 1 <= len(kept) <= 3
    assert f"-p{len(lines):05d}.kltui.jsonl" in " ".join(k.name for k in kept)


def test_sigterm_during_a_probe_records_it_as_interrupted_and_exits_0(reference_servers, tmp_path):
    srv = reference_servers.own(deterministic=True)
    proc = _monitor(srv.url, tmp_path, "--every", "1h", "--max-new-tokens", "256")
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the probe is decoding
            info = httpx.get(f"{srv.url}/server_info", timeout=5).json()["internal_states"][0]
            if info["generated_tokens"] > 0:
                break
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    (line,) = [ln for ln in out.splitlines() if ln.startswith("probe 1 ")]
    assert " · interrupted · " in line
    (rec,) = tmp_path.glob("monitor-*-p00001.kltui.jsonl")
    assert rec.stat().st_size > 0 and str(rec) in line


async def test_a_state_bug_only_under_load_fails_the_probe_under_stress(
    reference_servers, tmp_path
):
    """--stress: a probe is a quiet run and a stressed one; a state bug only the stressed run
    shows (stale prompt logprobs shared between requests) fails the probe, as it fails check,
    though each run alone passes its gates."""
    from tests.integration.test_stress import SMALL as STRESS_SMALL

    url = reference_servers.url(
        deterministic=True,
        fault="stale-prompt-logprobs",
        random_seed=0,
        extra_args=("--enable-metrics",),
    )
    cfg = RunConfig(servers=[url], **STRESS_SMALL)
    view = Probes()
    rc = await Monitor(cfg, every=0, probes=1, record=probe_recordings(tmp_path)).run(view)
    (r,) = view.results
    assert r.reading.verdict == "fail" and rc == 1, r.reading
    assert len(list(tmp_path.glob("monitor-*.kltui.jsonl"))) == 2  # the quiet and stressed runs
