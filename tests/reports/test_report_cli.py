"""`kltui report FILE ...`: every output from one recording, and clear errors for bad files."""

from __future__ import annotations

import argparse
import json
import xml.etree.ElementTree as ET

import pytest

from kltui.cli.report import (
    add_arguments,
    add_report_options,
    cmd_report,
    load_store,
    report_writer,
    write_reports,
)
from kltui.errors import UsageError
from kltui.outputs.reports.junit import junit_report
from kltui.outputs.reports.md import ICON
from kltui.words.report_headline import headline
from tests.json_contract import read_check
from tests.reports.synth import HelperSpec, demo_run, error_run, record, run_events


def report(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    add_arguments(p)
    return cmd_report(p.parse_args(argv))


@pytest.fixture
def demo_file(tmp_path):
    return record(tmp_path / "run.kltui.jsonl", demo_run())


def test_every_format_in_one_call(demo_file, tmp_path):
    outs = {k: tmp_path / f"r.{k}" for k in ("html", "md", "json", "junit")}
    argv = [demo_file] + [x for k, p in outs.items() for x in (f"--{k}", str(p))]
    assert report(argv) == 0
    html = outs["html"].read_text()
    assert html.startswith("<!doctype html>") and 'class="heatmap"' in html
    assert "decode\\_cache\\_hit | ❌ fail" in outs["md"].read_text()
    doc = read_check(outs["json"])
    assert doc["verdict"] == "fail" and set(doc["helpers"]) == {
        "match",
        "prefill_cache_hit",
        "decode_cache_hit",
    }
    (diag,) = doc["diagnosis"]
    # 8 samples: too few for a cache-hit verdict (issue 18), whatever decode_cache_hit's level
    assert (diag["condition"], diag["conditions"]) == (None, [1])
    assert diag["label"].startswith("inconclusive (n too small)")
    assert diag["finding"] == "too few common samples"
    assert set(diag) == {
        "server",
        "condition",
        "conditions",
        "finding",
        "rests_on",
        "label",
        "evidence",
        "suspects",
        "next_step",
        "next_command",
        "action",
        "limits",
    }
    assert doc["cross_server"] == []  # one server
    assert ET.parse(outs["junit"]).getroot().get("tests") == "3"


def test_json_keeps_the_check_keys(demo_file, tmp_path):
    report([demo_file, "--json", str(tmp_path / "r.json")])
    doc = read_check(tmp_path / "r.json")
    for key in ("kltui_version", "run_id", "started_at", "servers", "prompt_set", "config"):
        assert key in doc
    match = doc["helpers"]["match"]
    assert match["status"] == "pass" and len(match["per_sample"]) == 8
    # JSON has no NaN: the one encoding of recordings and --json
    assert doc["helpers"]["prefill_cache_hit"]["avg_kl_div"] == {"$float": "nan"}


def test_no_output_option_prints_markdown(demo_file, capsys):
    assert report([demo_file]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"### {headline(ICON['fail'], 1, 3)}\n")


def test_durations_come_from_recorded_times(tmp_path):
    path = record(tmp_path / "r.jsonl", run_events([HelperSpec("match")], verdict="pass"))
    lines = [json.loads(ln) for ln in open(path)]
    for obj in lines[1:]:  # a replay folds instantly: only the recorded t can time a helper
        obj["t"] = {"HelperStarted": 1.0, "HelperFinished": 3.5}.get(obj["type"], 2.0)
        obj.pop("at", None)  # as written before events carried their own time
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(o) + "\n" for o in lines))
    store, origin = load_store(path)
    assert origin.recording == path and not origin.truncated
    assert store.helpers["match@http://127.0.0.1:30000"].elapsed == 2.5
    xml = ET.fromstring(junit_report(store, origin).encode())
    assert xml.find("testsuite/testcase").get("time") == "2.500"


def test_durations_come_from_event_times_when_events_carry_them(tmp_path):
    path = record(tmp_path / "r.jsonl", run_events([HelperSpec("match")], verdict="pass"))
    lines = [json.loads(ln) for ln in open(path)]
    for obj in lines[1:]:
        if obj["type"] in ("HelperStarted", "HelperFinished"):
            obj["at"] = {"HelperStarted": 1000.0, "HelperFinished": 1004.25}[obj["type"]]
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(o) + "\n" for o in lines))
    store, origin = load_store(path)
    assert store.helpers["match@http://127.0.0.1:30000"].elapsed == 4.25
    xml = ET.fromstring(junit_report(store, origin).encode())
    assert xml.find("testsuite/testcase").get("time") == "4.250"


def test_truncated_recording_reports_what_it_holds(tmp_path):
    path = tmp_path / "cut.jsonl"
    record(path, error_run())
    with open(path, "ab") as f:
        f.write(b'{"type":"SampleScored","helper":"decode_cache_hit","tok')
    store, origin = load_store(str(path))
    assert origin.truncated
    assert (
        report([str(path), "--html", str(tmp_path / "r.html"), "--md", str(tmp_path / "r.md")]) == 0
    )
    assert "was cut short" in (tmp_path / "r.html").read_text()
    assert "cut short" in (tmp_path / "r.md").read_text()


def test_header_only_recording(tmp_path):
    path = record(tmp_path / "empty.jsonl", [])
    outs = [tmp_path / "r.html", tmp_path / "r.xml"]
    assert report([path, "--html", str(outs[0]), "--junit", str(outs[1])]) == 0
    assert "holds no run" in outs[0].read_text()
    root = ET.parse(outs[1]).getroot()
    assert root.get("errors") == "1"  # an empty recording never reads as a green suite
    assert "the recording holds no run" in outs[1].read_text()


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "recording not found"),
        (b"", "empty file"),
        (b'{"hello": 1}\n', "not a kltui recording"),
        (b'{"format":"kltui-recording","version":7}\n', "version 7 is newer than this kltui"),
    ],
)
def test_bad_files_are_one_line_usage_errors(tmp_path, content, expected):
    path = tmp_path / "bad.jsonl"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(UsageError) as err:
        report([str(path), "--html", str(tmp_path / "r.html")])
    msg = str(err.value)
    assert str(path) in msg and expected in msg and "\n" not in msg
    assert not (tmp_path / "r.html").exists()


def test_unwritable_output_is_a_usage_error(demo_file, tmp_path):
    target = tmp_path / "no" / "such" / "dir" / "r.html"
    with pytest.raises(UsageError, match="cannot write report"):
        report([demo_file, "--html", str(target)])


def test_write_reports_for_check(demo_file, tmp_path):
    store, _ = load_store(demo_file)
    paths = {k: str(tmp_path / f"c.{k}") for k in ("html", "md", "junit")}
    assert write_reports(store, **paths) == list(paths.values())
    assert all((tmp_path / f"c.{k}").stat().st_size > 100 for k in paths)
    assert write_reports(store) == []


def test_report_writer_for_check(demo_file, tmp_path):
    p = argparse.ArgumentParser()
    add_report_options(p)
    assert report_writer(p.parse_args([])) is None
    with pytest.raises(UsageError, match="no such directory"):
        report_writer(p.parse_args(["--html", str(tmp_path / "missing" / "r.html")]))
    args = p.parse_args(["--md", str(tmp_path / "c.md"), "--junit", str(tmp_path / "c.xml")])
    write = report_writer(args, recording="live.kltui.jsonl")
    store, _ = load_store(demo_file)
    write(store)
    assert (tmp_path / "c.md").read_text().startswith("### kltui alignment: ❌ fail")
    props = {p.get("name"): p.get("value") for p in ET.parse(tmp_path / "c.xml").iter("property")}
    assert props["recording"] == "live.kltui.jsonl"
