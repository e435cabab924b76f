"""The monitor's metrics on hand-made probes, read back by prometheus_client's own parser:
under --router each replica is its own series (server: the router, replica: the worker), a
replica gone from a later probe leaves no stale series, and a probe that measured nothing
counts its error without moving the last good probe."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from kltui.outputs.prometheus import MonitorMetrics
from kltui.readings.findings import Finding, Kind
from kltui.readings.probe import HelperFigures, ProbeError, ProbeReading, ServerProbe
from kltui.readings.verdict import Diagnosis
from kltui.run.monitor import ProbeResult

ROUTER = "http://127.0.0.1:30000"
A, B = "http://127.0.0.1:30001", "http://127.0.0.1:30002"


def server(url: str, kind: Kind, avg: float) -> ServerProbe:
    h = HelperFigures("match", "pass", avg, 0.0, avg, None if avg == 0 else (0, 3), 8, 8, 256)
    return ServerProbe(
        url,
        "m",
        Finding.EXACT if avg == 0 else Finding.BATCH_VARIANCE,
        kind,
        Diagnosis(url, Finding.IMPORTED, None),
        (h,),
    )


def probe(n: int, *servers: ServerProbe, errors=(), verdict="pass") -> ProbeResult:
    return ProbeResult(n, 1000.0 * n, 2.0, 10, None, ProbeReading(verdict, servers, errors, 256))


def parsed(m: MonitorMetrics) -> dict:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(m.exposition().decode())
        for s in fam.samples
    }


def series(p: dict, name: str) -> dict:
    return {labels: v for (n, labels), v in p.items() if n == name}


def test_replicas_under_a_router_and_no_stale_series():
    m = MonitorMetrics(router=ROUTER, every=60)
    m.probe_ended(probe(1, server(A, Kind.EXACT, 0.0), server(B, Kind.ONE, 2e-3)))
    p = parsed(m)
    avg = series(p, "kltui_avg_kl_div")
    assert {dict(k)["replica"]: v for k, v in avg.items()} == {A: 0.0, B: 2e-3}
    assert {dict(k)["server"] for k in avg} == {ROUTER}
    first = series(p, "kltui_first_divergence_position")
    assert [(dict(k)["replica"], v) for k, v in first.items()] == [(B, 3.0)]
    cond = {(dict(k)["replica"], dict(k)["kltui_condition"]): v
            for k, v in series(p, "kltui_condition").items() if v == 1.0}  # fmt: skip
    assert cond == {(A, "exact"): 1.0, (B, "1"): 1.0}
    # replica B left the router: its series go, A's stay
    m.probe_ended(probe(2, server(A, Kind.EXACT, 0.0)))
    p = parsed(m)
    assert {dict(k)["replica"] for k in series(p, "kltui_avg_kl_div")} == {A}
    assert {dict(k)["replica"] for k in series(p, "kltui_condition")} == {A}
    assert series(p, "kltui_first_divergence_position") == {}
    assert series(p, "kltui_last_good_probe_timestamp_seconds") == {(): 2002.0}


def test_a_probe_that_measured_nothing_counts_its_error_and_keeps_the_last_good_time():
    m = MonitorMetrics(every=60)
    m.probe_ended(probe(1, server(A, Kind.EXACT, 0.0)))
    m.probe_ended(probe(2, errors=(ProbeError.UNREACHABLE,), verdict="error"))
    p = parsed(m)
    errors = {dict(k)["kind"]: v for k, v in series(p, "kltui_probe_errors_total").items()}
    assert errors == {"unreachable": 1.0, "server": 0.0, "helper": 0.0, "timeout": 0.0,
                      "internal": 0.0}  # fmt: skip
    assert series(p, "kltui_last_good_probe_timestamp_seconds") == {(): 1002.0}
    assert series(p, "kltui_probes_total") == {(): 2.0}
    assert series(p, "kltui_avg_kl_div") == {}  # nothing read: nothing looks current
    verdict = {dict(k)["kltui_verdict"]: v for k, v in series(p, "kltui_verdict").items()}
    assert verdict["error"] == 1.0 and verdict["pass"] == 0.0
