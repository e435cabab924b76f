"""Closed vocabularies read from recordings: a known word becomes its kind, an unknown one is
either read as an older recording's (a helper's status) or a malformed event (a run's verdict)."""

import pytest

from kltui.engines.identity import EngineName, ServerIdentity
from kltui.metrics.summary import Summary, SummaryStatus
from kltui.session.events import RunFinished, RunVerdict
from kltui.session.recording import Recorder, RecordingError, read_recording


def test_a_recorded_status_is_its_kind():
    s = Summary.of({"status": "invalid", "passed": False})
    assert s.status is SummaryStatus.INVALID and s.result is SummaryStatus.INVALID


def test_a_status_this_version_never_writes_reads_as_an_older_recording():
    assert Summary.of({"status": "<b>odd</b>", "passed": True}).result is SummaryStatus.PASS
    assert Summary.of({"status": 3, "passed": False}).result is SummaryStatus.FAIL


@pytest.mark.parametrize(
    ("statuses", "fatal", "verdict"),
    [
        (["pass", "invalid"], False, RunVerdict.ERROR),
        (["pass", "pass"], True, RunVerdict.ERROR),
        (["pass", "fail"], False, RunVerdict.FAIL),
        ([], False, RunVerdict.FAIL),  # nothing measured
        (["pass", "vacuous"], False, RunVerdict.FAIL),
        (["pass"], False, RunVerdict.PASS),
    ],
)
def test_the_run_verdict_of_its_helpers(statuses, fatal, verdict):
    summaries = [Summary.of({"status": s, "passed": s == "pass"}) for s in statuses]
    assert RunVerdict.of(summaries, fatal) is verdict


def _recorded(path, *events):
    rec = Recorder(path)
    for ev in events:
        rec.write(ev)
    rec.close()


def test_a_recorded_verdict_is_a_run_verdict(tmp_path):
    path = tmp_path / "r.kltui.jsonl"
    _recorded(path, RunFinished({}, RunVerdict.FAIL))
    assert '"verdict":"fail"' in path.read_text()
    (ev,) = read_recording(str(path)).events
    assert ev.verdict is RunVerdict.FAIL


def test_an_unknown_verdict_is_a_malformed_event_named_by_line(tmp_path):
    path = tmp_path / "r.kltui.jsonl"
    _recorded(path, RunFinished({}, RunVerdict.PASS), RunFinished({}, RunVerdict.PASS))
    header, first, last = path.read_text().splitlines()
    path.write_text("\n".join([header, first.replace('"pass"', '"maybe"'), last, ""]))
    with pytest.raises(RecordingError) as e:  # not the last line: not read as a torn one
        read_recording(str(path))
    assert str(e.value).startswith(f"{path}:2: malformed event")


def test_a_recorded_engine_name_is_its_kind_or_shown_as_recorded():
    assert ServerIdentity.of({"engine": "vllm"}).engine is EngineName.VLLM
    assert ServerIdentity.of({"url": "http://127.0.0.1:1"}).engine is EngineName.SGLANG  # older
    odd = ServerIdentity.of({"engine": "<b>tgi</b>"})
    assert odd.engine is None and odd.engine_label == "<b>tgi</b>"  # views escape it
    assert ServerIdentity.of({"engine": 3}).engine is None
