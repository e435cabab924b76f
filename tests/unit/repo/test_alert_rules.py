"""docs/monitoring/kltui-alerts.yml checked by the real `promtool` (Debian's prometheus
package): the rules load, and promtool's unit tests in tests/monitoring/kltui-alerts.test.yml
pass: every alert fires on its fault with a `$value` that means what its summary says, and none
fires on a healthy server without deterministic inference."""

from __future__ import annotations

import subprocess

import yaml

from tests.prometheus import PROMTOOL, RULE_TESTS, RULES, needs_promtool


@needs_promtool
def test_promtool_checks_the_rules():
    got = subprocess.run([PROMTOOL, "check", "rules", str(RULES)], capture_output=True, text=True)
    assert got.returncode == 0, got.stdout + got.stderr
    assert "SUCCESS: 5 rules found" in got.stdout


@needs_promtool
def test_promtool_unit_tests_of_every_alert_pass():
    got = subprocess.run([PROMTOOL, "test", "rules", str(RULE_TESTS)], capture_output=True,
                         text=True)  # fmt: skip
    assert got.returncode == 0, got.stdout + got.stderr


def test_every_alert_has_a_test_that_fires_it_and_the_healthy_server_silences_all():
    rules = yaml.safe_load(RULES.read_text())
    alerts = {r["alert"] for g in rules["groups"] for r in g["rules"]}
    tests = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    fired = {t["alertname"] for c in tests for t in c["alert_rule_test"] if t["exp_alerts"]}
    healthy = {t["alertname"] for t in tests[0]["alert_rule_test"] if not t["exp_alerts"]}
    assert fired == alerts and healthy == alerts
