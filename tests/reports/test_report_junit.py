"""JUnit XML: one testcase per helper and server, failures vs errors vs skipped, and XML that
parses whatever text a server sent."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from kltui.cli.report import load_store
from kltui.outputs.reports.junit import junit_report
from kltui.words.report_notes import cut_short_in
from tests.reports.synth import (
    URL,
    XSS,
    HelperSpec,
    demo_run,
    error_run,
    hostile_run,
    multi_server_run,
    record,
    run_events,
)


def build(tmp_path, events) -> ET.Element:
    store, origin = load_store(record(tmp_path / "r.jsonl", events))
    return ET.fromstring(junit_report(store, origin).encode("utf-8"))


def cases(root: ET.Element) -> dict[str, ET.Element]:
    return {c.get("name"): c for c in root.iter("testcase")}


def outcome(case: ET.Element) -> str:
    kinds = [c.tag for c in case if c.tag in ("failure", "error", "skipped")]
    assert len(kinds) <= 1
    return kinds[0] if kinds else "passed"


def test_demo_run(tmp_path):
    root = build(tmp_path, demo_run())
    suites = root.findall("testsuite")
    assert root.tag == "testsuites" and len(suites) == 1
    suite = suites[0]
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "0")
    assert suite.get("skipped") == "1" and suite.get("timestamp") == "2025-10-09T08:53:20"
    got = {name: outcome(c) for name, c in cases(root).items()}
    assert got == {
        f"match[{URL}]": "passed",
        f"prefill_cache_hit[{URL}]": "skipped",
        f"decode_cache_hit[{URL}]": "failure",
    }
    fail = cases(root)[f"decode_cache_hit[{URL}]"].find("failure")
    assert fail.get("message") == "avg_kl_div=1.239e-01 >= threshold=2.000e-03"
    assert "max k3 1.293e+00 at sample 7 @ 19" in fail.text
    skipped = cases(root)[f"prefill_cache_hit[{URL}]"].find("skipped")
    assert "radix cache disabled" in skipped.get("message")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["prompt_set.sha256"] == "9f2c4e1a7b3d5c60" and props["verdict"] == "fail"
    assert props["server.0.model_path"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert props["server.0.disable_radix_cache"] == "false"
    assert "inconclusive (n too small)" in suite.find("system-out").text


def test_cache_hit_shortfall_is_the_failure_message(tmp_path):
    spec = HelperSpec("prefill_cache_hit", status="fail", extra={"hit_failure": "Too few 2/8"})
    root = build(tmp_path, run_events([spec]))
    assert cases(root)[f"prefill_cache_hit[{URL}]"].find("failure").get("message") == "Too few 2/8"


def test_errors_and_unfinished_helpers(tmp_path):
    root = build(tmp_path, error_run())
    match = cases(root)[f"match[{URL}]"].find("error")
    assert match.get("message") == "HTTP 500 from /generate" and match.get("type") == "error"
    cut = cases(root)[f"decode_cache_hit[{URL}]"].find("error")
    assert cut.get("type") == "incomplete" and cut.get("message") == cut_short_in("decode")


def test_one_case_per_server_and_connect_errors(tmp_path):
    root = build(tmp_path, multi_server_run())
    got = {name: outcome(c) for name, c in cases(root).items()}
    assert got == {
        "connect[http://10.0.0.9:30000]": "error",
        "match[http://127.0.0.1:30000]": "passed",
        "match[http://127.0.0.1:30001]": "passed",
    }
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["server.1.enable_deterministic_inference"] == "true"
    assert props["server.2.error"] == "connection refused"


def test_a_run_that_did_not_pass_is_never_all_green(tmp_path):
    evs = run_events([HelperSpec("match")], verdict="interrupted")
    root = build(tmp_path, evs)
    assert (
        root.get("errors") == "1" and cases(root)["run"].find("error").get("type") == "interrupted"
    )


def test_hostile_text_stays_text(tmp_path):
    root = build(tmp_path, hostile_run())
    names = list(cases(root))
    assert f"m{XSS}[{URL}]" in names and f"tokenize[src{XSS}]" in names
    props = {p.get("name"): p.get("value") for p in root.iter("property")}
    assert props["server.0.model_path"] == XSS
    out = root.find("testsuite/system-out").text
    assert "\\x00\\x1b[31m" in out  # control characters XML cannot hold, made visible
