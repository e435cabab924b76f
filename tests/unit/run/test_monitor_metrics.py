"""The monitor's metrics on hand-made probes, read back by prometheus_client's own parser:
under --router each replica is its own series (server: the router, replica: the worker), a
replica gone from a later probe leaves no stale series, a probe that measured nothing counts
its error without moving the last good probe and sets the verdict of the server it did not
read to error; the server's facts are an info metric (the model a name, the geometry as
labels), the gate a series beside avg_kl_div, and every counter exists from the first scrape."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from kltui.engines.identity import ServerIdentity
from kltui.outputs.prometheus import MonitorMetrics
from kltui.readings.findings import Finding, Kind
from kltui.readings.probe import HelperFigures, ProbeError, ProbeReading, ServerProbe
from kltui.readings.probe_changes import Change, ChangeKind
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


GEOMETRY = {
    "kind": "mamba",
    "known": True,
    "page_size": {"value": 1, "source": "server_info"},
    "mamba": {
        "strategy": "extra_buffer",
        "strategy_source": "server_info",
        "track_interval": {"value": 256, "source": "server_info"},
        "chunk_size": {"value": 64, "source": "derived"},
    },
    "sliding_window": None,
    "experts": {"n_experts": 512, "top_k": 10, "source": "config.json"},
}


def test_server_facts_gate_and_per_server_verdicts_with_every_counter_from_the_start():
    m = MonitorMetrics(every=60, servers=[A, B])
    p = parsed(m)
    changes = {(dict(k)["server"], dict(k)["change"]): v
               for k, v in series(p, "kltui_reading_changes_total").items()}  # fmt: skip
    assert changes == {(u, str(c)): 0.0 for u in (A, B) for c in ChangeKind}
    assert series(p, "kltui_build_info") and all(
        v == 1.0 for v in series(p, "kltui_build_info").values()
    )
    ident = ServerIdentity.of({"url": A, "engine": "sglang", "version": "0.5.23",
                               "model_path": "/data/models/Qwen3-Next-80B",
                               "enable_deterministic_inference": False,
                               "attention_backend": "fa3", "geometry": GEOMETRY})  # fmt: skip
    h = HelperFigures("match", "fail", 3e-3, 0.1, 0.2, (0, 1), 8, 8, 256, gate=2e-3)
    s = ServerProbe(A, "Qwen3-Next-80B", Finding.BATCH_VARIANCE, Kind.ONE, "", (h,),
                    verdict="fail", identity=ident)  # fmt: skip
    change = Change(A, ChangeKind.VERDICT, "pass", "fail", since=1)
    m.probe_ended(ProbeResult(2, 10.0, 2.0, 10, None, ProbeReading("error", (s,),
                              (ProbeError.UNREACHABLE,), 256), changes=(change,)))  # fmt: skip
    p = parsed(m)
    (info,) = series(p, "kltui_server_info")
    assert dict(info) == {"server": A, "replica": "", "model": "Qwen3-Next-80B",
                          "engine": "sglang", "version": "0.5.23", "deterministic": "false",
                          "attention_backend": "fa3", "state": "mamba",
                          "track_interval": "256", "chunk": "64", "window": "",
                          "experts": "512"}  # fmt: skip
    gate = series(p, "kltui_gate")
    assert [(dict(k)["helper"], v) for k, v in gate.items()] == [("match", 2e-3)]
    assert set(gate) == set(series(p, "kltui_avg_kl_div"))  # the same labels: a plain join
    verdict = {(dict(k)["server"], dict(k)["kltui_verdict"]): v
               for k, v in series(p, "kltui_verdict").items() if v == 1.0}  # fmt: skip
    assert verdict == {(A, "fail"): 1.0, (B, "error"): 1.0}  # B was not read: error
    changed = {(dict(k)["server"], dict(k)["change"]): v
               for k, v in series(p, "kltui_reading_changes_total").items() if v}  # fmt: skip
    assert changed == {(A, "verdict"): 1.0}
    cond_help = next(f for f in text_string_to_metric_families(m.exposition().decode())
                     if f.name == "kltui_condition").documentation  # fmt: skip
    assert "condition 2 = state bug" in cond_help and "conditions 1 and 2 hold" not in cond_help
