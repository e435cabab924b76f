"""docs/monitoring's alert rules and Grafana dashboard name only metrics `kltui monitor`
exports (the registry of outputs/prometheus.MonitorMetrics, read back by prometheus_client's
parser), docs/MONITORING.md's table lists every one of them, and the dashboard's variables
(server, model, helper) filter its panels, each query valid PromQL to the real promtool."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import yaml
from prometheus_client.parser import text_string_to_metric_families

from kltui.outputs.prometheus import MonitorMetrics
from tests.prometheus import PROMTOOL, needs_promtool

DOCS = Path(__file__).resolve().parents[3] / "docs"
NAME = re.compile(r"\bkltui_[a-z0-9_]+")


def exported() -> set[str]:
    text = MonitorMetrics(every=60, servers=["http://127.0.0.1:30000"]).exposition().decode()
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
    exprs += [v["query"]["query"] for v in dash["templating"]["list"]]
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
    # kltui_fault: the reference server's /server_info key, in a change line the docs quote
    assert listed <= counters | {"kltui_condition", "kltui_fault"}, sorted(listed - counters)


def _dashboard() -> dict:
    return json.loads((DOCS / "monitoring" / "kltui-dashboard.json").read_text())


def test_the_dashboard_has_server_model_and_helper_variables_that_filter_its_panels():
    dash = _dashboard()
    names = [v["name"] for v in dash["templating"]["list"]]
    assert names == ["server", "model", "helper"]
    for panel in dash["panels"]:
        for t in panel["targets"]:
            labels = set(re.findall(r'(\w+)=~"\$(\w+)"', t["expr"]))
            if re.search(r"kltui_(avg_kl_div|gate|tail_fraction|max_k3|first_div)", t["expr"]):
                assert {("server", "server"), ("model", "model"), ("helper", "helper")} <= labels
            if "kltui_condition" in t["expr"] or "kltui_server_info" in t["expr"]:
                assert {("server", "server"), ("model", "model")} <= labels


@needs_promtool
def test_every_dashboard_query_is_promql_the_real_promtool_accepts(tmp_path):
    dash = _dashboard()
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    rules = [
        {"record": f"kltui_dashboard_query_{i}", "expr": e.replace("$server", ".*")
         .replace("$model", ".*").replace("$helper", ".*")}
        for i, e in enumerate(exprs)
    ]  # fmt: skip
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    got = subprocess.run([PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True)
    assert got.returncode == 0, got.stdout + got.stderr
