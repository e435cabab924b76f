import json

import numpy as np
import pytest

from kltui.session.events import Problem, RunFinished, SampleScored, TokensDecoded
from kltui.session.recording import Recorder, RecordingError, read_recording


def test_round_trip_preserves_arrays_and_non_finite(tmp_path):
    path = tmp_path / "r.jsonl"
    rec = Recorder(path)
    ev = SampleScored(
        "match",
        "http://127.0.0.1:1",
        3,
        np.array([1, 2, 3]),
        np.array([-1.0, -np.inf, np.nan]),
        np.array([-1.0, -2.0, -0.5]),
        4,
        10,
    )
    rec.write(TokensDecoded("match", "s", 3, 0, np.array([1, 2]), np.array([-0.1, -0.2])))
    rec.write(ev)
    rec.write(RunFinished({"x": float("inf")}, "pass"))
    rec.close()
    r = read_recording(str(path))
    assert not r.truncated and len(r.events) == 3
    got = r.events[1]
    assert got.token_ids.tolist() == [1, 2, 3]
    assert got.lp_a[0] == -1.0 and got.lp_a[1] == -np.inf and np.isnan(got.lp_a[2])
    assert r.events[2].summary["x"] == float("inf")


def test_torn_last_line_replays_up_to_last_complete_event(tmp_path):
    path = tmp_path / "r.jsonl"
    rec = Recorder(path)
    rec.write(Problem("s", "one", False))
    rec.write(Problem("s", "two", False))
    rec.close()
    with open(path, "ab") as f:
        f.write(b'{"type": "Problem", "source": "s", "mess')
    r = read_recording(str(path))
    assert r.truncated and [e.message for e in r.events] == ["one", "two"]


def test_newer_version_is_refused_clearly(tmp_path):
    path = tmp_path / "new.jsonl"
    path.write_text(json.dumps({"format": "kltui-recording", "version": 99}) + "\n")
    with pytest.raises(RecordingError, match="version 99 is newer"):
        read_recording(str(path))


def test_not_a_recording(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"hello": 1}\n')
    with pytest.raises(RecordingError, match=r"x.jsonl:1: not a kltui recording"):
        read_recording(str(path))


def test_recorder_appends_never_truncates(tmp_path):
    path = tmp_path / "r.jsonl"
    Recorder(path).write(Problem("s", "one", False))
    Recorder(path).write(Problem("s", "two", False))
    r = read_recording(str(path))
    assert [e.message for e in r.events] == ["one", "two"]


def test_string_that_reads_nan_stays_a_string(tmp_path):
    path = tmp_path / "r.jsonl"
    rec = Recorder(path)
    rec.write(Problem("nan", "inf", False))
    rec.write(RunFinished({"avg": float("nan"), "status": "nan"}, "fail"))
    rec.close()
    p, fin = read_recording(str(path)).events
    assert p.source == "nan" and p.message == "inf"
    assert np.isnan(fin.summary["avg"]) and fin.summary["status"] == "nan"
