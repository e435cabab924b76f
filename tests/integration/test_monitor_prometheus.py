"""A real Prometheus (Debian's package) scrapes a live `kltui monitor` against a reference
server whose planted state bug wakes after the first probes, with the shipped alert rules (a
short `for:` in the test's copy): before the fault nothing fires, after it KltuiStateBugAppeared
fires on that server, and the server's facts (model name, deterministic) are there to join on.
The Prometheus is started here on 127.0.0.1 with a temporary config and storage, and stopped."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import yaml

from tests.prometheus import PROMETHEUS, RULES, needs_prometheus

pytestmark = needs_prometheus
# match and prefill_cache_hit flush twice each per probe: the fault wakes after probe 2
# about four probes read the server exact before the fault wakes (each flushes up to 4 times)
FLUSHES_BEFORE_FAULT = 16
STATE_BUG = "KltuiStateBugAppeared"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prometheus_config(tmp: Path, target: str) -> Path:
    """The test's Prometheus: one scrape a second of the monitor, the shipped rules with a
    two-second `for:` (the state-bug rule gains one, to show it pending, then firing)."""
    rules = yaml.safe_load(RULES.read_text())
    for rule in rules["groups"][0]["rules"]:
        rule["for"] = "2s"
    (tmp / "rules.yml").write_text(yaml.safe_dump(rules, sort_keys=False))
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(tmp / "rules.yml")],
        "scrape_configs": [{"job_name": "kltui", "static_configs": [{"targets": [target]}]}],
    }
    path = tmp / "prometheus.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _alerts(api: str) -> list[dict]:
    try:
        return httpx.get(f"{api}/api/v1/alerts", timeout=5).json()["data"]["alerts"]
    except (httpx.HTTPError, ValueError, KeyError):
        return []


def _query(api: str, expr: str) -> list[dict]:
    got = httpx.get(f"{api}/api/v1/query", params={"query": expr}, timeout=5).json()
    return got["data"]["result"]


def test_a_real_prometheus_fires_the_state_bug_alert_when_the_fault_appears(
    reference_servers, tmp_path
):
    srv = reference_servers.own(
        deterministic=True,
        fault="stale-prefix",
        extra_args=("--fault-after-flushes", str(FLUSHES_BEFORE_FAULT)),
    )
    metrics_port, api_port = _free_port(), _free_port()
    api = f"http://127.0.0.1:{api_port}"
    config = prometheus_config(tmp_path, f"127.0.0.1:{metrics_port}")
    prom = subprocess.Popen(
        [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{api_port}"],
        stdout=subprocess.DEVNULL, stderr=open(tmp_path / "prometheus.log", "w"),
    )  # fmt: skip
    _wait_ready(api)  # the monitor starts once Prometheus scrapes: no exact probe goes unseen
    cmd = [sys.executable, "-m", "kltui", "monitor", "--server", srv.url, "--headless",
           "--every", "2s", "--helpers", "match,prefill_cache_hit", "--samples", "8",
           "--max-new-tokens", "16", "--max-prompt-tokens", "96", "--no-record",
           "--prometheus", f"127.0.0.1:{metrics_port}"]  # fmt: skip
    env = {**os.environ, "KLTUI_RUNS_DIR": str(tmp_path / "runs")}
    mon = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 45
        firing: list[dict] = []
        before: list[dict] | None = None
        while time.monotonic() < deadline and not firing:
            time.sleep(0.5)
            alerts = _alerts(api)
            if before is None and _query_ok(api, 'kltui_condition{kltui_condition="exact"} == 1'):
                before = alerts  # a probe read the server exact: the fault is still asleep
            firing = [a for a in alerts if a["state"] == "firing" and _name(a) == STATE_BUG]
        assert firing, (tmp_path / "prometheus.log").read_text()[-2000:]
        assert before is not None and not [a for a in before if a["state"] == "firing"]
        (alert,) = firing
        assert alert["labels"]["server"] == srv.url and alert["labels"]["kltui_condition"] == "2"
        # its summary and description (the labels in words): promtool's golden in
        # tests/monitoring/kltui-alerts.test.yml (tests/unit/repo/test_alert_rules.py)
        assert alert["annotations"]["summary"].endswith(f" on {srv.url}")
        # match stays bit-identical under this fault, and the probes measure: neither fires
        names = {_name(a) for a in _alerts(api)}
        assert not names & {"KltuiDeterminismLost", "KltuiProbesFailing"}, names
        (info,) = _query(api, "kltui_server_info")
        assert info["metric"]["deterministic"] == "true" and "/" not in info["metric"]["model"]
        changes = _query(api, 'kltui_reading_changes_total{change="appeared"}')
        assert [c["metric"]["server"] for c in changes] == [srv.url]
    finally:
        mon.terminate()
        out, err = mon.communicate(timeout=60)
        prom.terminate()
        prom.wait(timeout=30)
    assert mon.returncode == 0, err
    assert "changed: condition 2 appeared" in out


def _wait_ready(api: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{api}/-/ready", timeout=2).status_code == 200:
                return
        time.sleep(0.2)
    raise AssertionError(f"Prometheus at {api} not ready after {seconds} s")


def _name(alert: dict) -> str:
    return alert["labels"]["alertname"]


def _query_ok(api: str, expr: str) -> bool:
    try:
        return bool(_query(api, expr))
    except (httpx.HTTPError, ValueError, KeyError):
        return False
