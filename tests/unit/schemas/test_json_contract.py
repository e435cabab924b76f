"""The JSON contract (docs/JSON.md): schemas shipped in the package and strict enough to catch a
missing or misspelled key, one encoding of non-finite numbers, null instead of missing keys,
and one name per concept (with older recordings read into today's names)."""

from __future__ import annotations

import json
import math

import orjson
import pytest

from kltui.outputs.reports.common import json_report, write_json
from kltui.schemas import load
from kltui.session.codec import decode, encode, tag_floats
from kltui.session.events import RunStarted
from kltui.session.store import SessionStore
from tests.json_contract import read_check, schema_errors, validate
from tests.reports.synth import HelperSpec, demo_run, error_run, multi_server_run, run_events


def store_of(events) -> SessionStore:
    st = SessionStore()
    for ev in events:
        st.apply(ev)
    return st


def test_schemas_load_from_the_installed_package():
    for name in ("check", "dumps"):
        schema = load(name)
        assert schema["$schema"].endswith("2020-12/schema") and schema["type"] == "object"
        assert schema["additionalProperties"] is False
    with pytest.raises(ValueError, match="no schema 'report'"):
        load("report")


@pytest.mark.parametrize("events", [demo_run, error_run, multi_server_run])
def test_reports_of_every_kind_of_run_follow_the_schema(events):
    validate(json_report(store_of(events())), "check")


def test_a_missing_or_misspelled_key_is_caught():
    doc = json_report(store_of(demo_run()))
    match = doc["helpers"]["match"]
    gone = {k: v for k, v in match.items() if k != "hit_ratio"}
    bad = {**doc, "helpers": {**doc["helpers"], "match": gone}}
    assert any("'hit_ratio' is a required property" in e for e in schema_errors(bad, "check"))
    typo = {**gone, "hit_ration": None, "hit_ratio": None}
    bad = {**doc, "helpers": {**doc["helpers"], "match": typo}}
    assert any("'hit_ration' was unexpected" in e for e in schema_errors(bad, "check"))
    bad = {**doc, "verdcit": doc["verdict"]}
    assert schema_errors(bad, "check")
    server = {**doc["servers"][0], "cuda_graph": True}  # the retired derived name
    assert schema_errors({**doc, "servers": [server]}, "check")


def test_absent_values_are_null_not_missing_keys():
    doc = json_report(store_of(demo_run()))
    match = doc["helpers"]["match"]
    # a helper that is not a cache helper, not cross_engine, and had no id mismatch
    for key in ("hits", "hit_ratio", "hit_failure", "error", "top1_agreement", "id_mismatches"):
        assert key in match and match[key] is None, key
    assert all(s["id_mismatch"] is None for s in match["per_sample"])
    assert doc["repeat"] is None
    s = doc["servers"][0]
    assert s["served_model_name"] is None and s["kltui_fault"] is None  # not in the recording
    # a config recorded before a key existed: the key is there, null
    assert doc["config"]["stream_interval"] is None and doc["config"]["samples"] == 8


def test_a_helper_cut_short_has_every_key_and_says_incomplete():
    doc = json_report(store_of(error_run()))
    cut = doc["helpers"]["decode_cache_hit"]
    assert cut["status"] == "incomplete" and cut["avg_kl_div"] is None and cut["per_sample"] == []
    validate(doc, "check")


def test_non_finite_numbers_are_tagged_in_the_json_as_in_recordings(tmp_path):
    st = store_of(run_events([HelperSpec("match", noise=1e-4, nan_rows=(0,))]))
    path = tmp_path / "r.json"
    write_json(st, str(path))
    text = path.read_text()
    doc = read_check(path)  # strict: a bare NaN token fails here
    assert doc["helpers"]["match"]["avg_kl_div"] == {"$float": "nan"}
    assert '"nan"' not in text.replace('"$float": "nan"', "")
    # the recording's encoding is the same object
    assert encode(RunStarted("r", 0.0, {"x": math.inf}, [], {}, "v"))["config"] == {
        "x": {"$float": "inf"}
    }
    assert tag_floats([-math.inf, "nan"]) == [{"$float": "-inf"}, "nan"]


def test_config_and_servers_use_one_name_per_concept():
    st = store_of(run_events([HelperSpec("match")]))
    doc = json_report(st)
    assert "streamed" not in doc["config"] and "streamed_interval" not in doc["config"]
    assert "cuda_graph" not in doc["servers"][0] and "disable_cuda_graph" in doc["servers"][0]


def test_older_recordings_read_into_todays_names():
    old = {
        "type": "RunStarted",
        "run_id": "r",
        "started_at": 0.0,
        "config": {"stream": None, "streamed": False, "streamed_interval": None, "samples": 4},
        "servers": [
            {"url": "http://127.0.0.1:1", "engine": "sglang", "cuda_graph": False},
            {
                "url": "http://127.0.0.1:2",
                "engine": "sglang",
                "cuda_graph": True,
                "disable_cuda_graph": False,
            },
        ],
        "prompt_set": {},
        "kltui_version": "0.1.0",
    }
    ev = decode(orjson.loads(orjson.dumps(old)))
    assert ev.config == {"stream": False, "stream_interval": None, "samples": 4}
    assert ev.servers[0] == {
        "url": "http://127.0.0.1:1",
        "engine": "sglang",
        "disable_cuda_graph": True,
    }
    assert "cuda_graph" not in ev.servers[1] and ev.servers[1]["disable_cuda_graph"] is False
    # a current recording's RunStarted passes through unchanged
    new = RunStarted("r", 0.0, {"stream": True, "stream_interval": 8}, [], {}, "v")
    assert decode(json.loads(json.dumps(encode(new)))) == new


def test_plain_json_arrays_accept_the_tagged_non_finite_values():
    rec = encode(RunStarted("r", 0.0, {}, [], {}, "v"))
    assert rec["type"] == "RunStarted"
    from kltui.session.codec import array_in

    a = array_in([1.0, {"$float": "-inf"}, {"$float": "nan"}, "inf"], float)
    assert a[0] == 1.0 and a[1] == -math.inf and math.isnan(a[2]) and a[3] == math.inf


def test_every_json_written_in_tests_is_validated(tmp_path):
    """tests/conftest.py wraps the one writer of every --json: an invalid document never lands."""
    from kltui.session import jsonfile

    with pytest.raises(AssertionError, match="'verdict' is a required property"):
        jsonfile.write_json_document(str(tmp_path / "r.json"), {"kltui_version": "x"}, "check")
    assert not (tmp_path / "r.json").exists()
