"""docs/monitoring's alert rules and Grafana dashboard name only metrics `kltui monitor`
exports (the registry of outputs/prometheus.MonitorMetrics, read back by prometheus_client's
parser), and docs/MONITORING.md's table lists every one of them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml
from prometheus_client.parser import text_string_to_metric_families

from kltui.outputs.prometheus import MonitorMetrics

DOCS = Path(__file__).resolve().parents[3] / "docs"
NAME = re.compile(r"\bkltui_[a-z0-9_]+")


def exported() -> set[str]:
    text = MonitorMetrics(every=60).exposition().decode()
    names = set()
    for fam in text_string_to_metric_families(text):
        names.add(fam.name)
        names.update(s.name for s in fam.samples)
    return names


def test_alert_rules_and_dashboard_name_only_exported_metrics():
    names = exported()
    rules = yaml.safe_load((DOCS / "monitoring" / "kltui-alerts.yml").read_text())
    exprs = [r["expr"] for g in rules["groups"] for r in g["rules"]]
    dash = json.loads((DOCS / "monitoring" / "kltui-dashboard.json").read_text())
    exprs += [t["expr"] for p in dash["panels"] for t in p["targets"]]
    used = {m for e in exprs for m in NAME.findall(e)}
    assert used and used <= names, sorted(used - names)
    assert {"kltui_condition", "kltui_last_good_probe_timestamp_seconds"} <= used


def test_the_metrics_table_lists_every_family():
    text = MonitorMetrics(every=60).exposition().decode()
    families = {f.name for f in text_string_to_metric_families(text)}
    table = (DOCS / "MONITORING.md").read_text()
    listed = set(NAME.findall(table))
    counters = {f + "_total" for f in families} | families
    assert families and all(f in listed or f + "_total" in listed for f in families), sorted(
        f for f in families if f not in listed and f + "_total" not in listed
    )
    assert listed <= counters | {"kltui_condition"}, sorted(listed - counters)
