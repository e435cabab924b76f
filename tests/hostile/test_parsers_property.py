"""Property-based tests: the parsers of everything kltui reads from outside (SSE streams, SGLang
payloads, prompt files, recordings) either succeed or raise their documented error type.

Random JSON alone rarely gets past the first shape check, so most strategies start from the
captured real SGLang responses and damage one subtree at a time.
"""

from __future__ import annotations

import asyncio
import copy
import json
import math
from pathlib import Path

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kltui.codec import encode
from kltui.engines.sglang_parse import GenResult, ParseError, StreamAssembler, parse_result
from kltui.engines.sse import DONE, SSEError, iter_lines, loads_json, parse_data_line
from kltui.events import Problem, RunFinished, RunStarted, TokensDecoded
from kltui.prompts import PromptFileError, PromptSource, finalize, load_file
from kltui.recording import FORMAT, VERSION, Recording, RecordingError, read_recording

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "samples"
FAST = settings(
    max_examples=150,
    deadline=None,
    database=None,  # no example database in the checkout; failures print their inputs
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
)


def _containers(kids):
    return st.lists(kids, max_size=5) | st.dictionaries(st.text(max_size=8), kids, max_size=5)


json_values = st.recursive(json_scalars, _containers, max_leaves=20)
# orjson reads integers beyond 64 bits as floats (lossy but harmless: such ids are rejected
# later); the round-trip property is about everything else
json_values_64 = st.recursive(
    json_scalars.filter(lambda v: not isinstance(v, int) or -(2**63) <= v < 2**64),
    _containers,
    max_leaves=20,
)


def real_non_streamed() -> dict:
    return json.loads((SAMPLES / "sglang_generate_input_ids_top5.json").read_text())


def real_stream_events() -> list[dict]:
    out = []
    for line in (SAMPLES / "sglang_generate_stream_batch2.sse").read_text().splitlines():
        item = parse_data_line(line)
        if isinstance(item, dict):
            out.append(item)
    return out


def paths_of(obj, prefix=()):
    """Every (path) into a JSON value, so a mutation can hit any depth."""
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from paths_of(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:6]):
            yield from paths_of(v, (*prefix, i))


def replaced(obj, path, value):
    if not path:
        return value
    out = copy.deepcopy(obj)
    cur = out
    for key in path[:-1]:
        cur = cur[key]
    cur[path[-1]] = value
    return out


@st.composite
def damaged(draw, base):
    paths = list(paths_of(base))
    obj = base
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths))
        try:
            obj = replaced(obj, path, draw(json_values))
        except (KeyError, IndexError, TypeError):
            pass  # an earlier mutation removed the container this path went through
    return obj


# ---------------------------------------------------------------- SSE


@FAST
@given(st.text(max_size=200))
def test_sse_line_parser_returns_or_raises_sse_error(line):
    try:
        item = parse_data_line(line)
    except SSEError as e:
        assert e.message
        return
    assert item is None or item is DONE or isinstance(item, dict)


@FAST
@given(json_values_64)
def test_sse_data_line_round_trips_any_json_object(value):
    line = "data: " + json.dumps(value, allow_nan=True)
    if isinstance(value, dict):
        got = parse_data_line(line)
        assert orjson.dumps(got, option=orjson.OPT_SORT_KEYS) == orjson.dumps(
            json.loads(json.dumps(value, allow_nan=True)), option=orjson.OPT_SORT_KEYS
        )
    else:
        with pytest.raises(SSEError):
            parse_data_line(line)


@FAST
@given(st.lists(st.binary(max_size=40), max_size=12), st.integers(4, 64))
def test_line_splitter_agrees_with_bytes_split_or_raises_on_long_lines(chunks, max_line):
    async def collect():
        async def gen():
            for c in chunks:
                yield c

        return [line async for line in iter_lines(gen(), max_line=max_line)]

    data = b"".join(chunks)
    expected = data.split(b"\n")
    if expected and expected[-1] == b"":
        expected.pop()
    expected = [x.rstrip(b"\r").decode("utf-8", "replace") for x in expected]
    try:
        got = asyncio.run(collect())
    except SSEError:
        assert any(len(x) > max_line for x in data.split(b"\n"))
        return
    assert got == expected


def test_nan_literals_are_data_not_a_broken_stream():
    obj = loads_json(b'{"a": [NaN, Infinity, -Infinity, 1.5]}')
    a = obj["a"]
    assert math.isnan(a[0]) and a[1] == math.inf and a[2] == -math.inf and a[3] == 1.5
    with pytest.raises(ValueError):
        loads_json(b'{"a": NaN')  # still malformed


# ---------------------------------------------------------------- SGLang payloads


@FAST
@given(damaged(real_non_streamed()))
def test_parse_result_returns_or_raises_parse_error(obj):
    try:
        r = parse_result(obj, 0)
    except ParseError:
        return
    assert isinstance(r, GenResult)
    assert r.output_ids.dtype == np.int64 and r.output_logprobs.dtype == np.float64
    assert r.input_logprobs.size == r.input_logprob_ids.size
    assert isinstance(r.cached_tokens, int) and r.cached_tokens >= 0


@FAST
@given(json_values)
def test_parse_result_on_arbitrary_json(obj):
    """Any JSON value gives a GenResult or a ParseError (the documented one); any other
    exception (TypeError, KeyError, IndexError...) fails the test, as it would reach the user as
    a traceback."""
    try:
        r = parse_result(obj, 0)
    except ParseError as e:
        assert str(e)
        return
    assert isinstance(r, GenResult)


@FAST
@given(
    st.lists(st.integers(0, len(real_stream_events()) - 1), min_size=1, max_size=8),
    st.data(),
    st.booleans(),
)
def test_stream_assembler_returns_or_raises_parse_error(order, data, incremental):
    events = real_stream_events()
    asm = StreamAssembler(2, incremental, max_tokens=data.draw(st.sampled_from([None, 2, 50])))
    try:
        for k in order:
            ev = events[k]
            if data.draw(st.booleans()):
                ev = data.draw(damaged(ev))
            asm.feed(ev)
        results = asm.results()
    except ParseError:
        return
    for r in results:
        assert r.output_ids.dtype == np.int64
        assert r.output_logprobs.size in (0, r.output_ids.size)


def test_real_stream_still_assembles_after_hardening():
    asm = StreamAssembler(2, incremental=False, max_tokens=3)
    for ev in real_stream_events():
        asm.feed(ev)
    a, b = asm.results()
    assert a.output_ids.tolist() == [407, 859, 330] and b.output_ids.tolist() == [589, 135, 998]


# ---------------------------------------------------------------- prompt files


def _load(tmp_path: Path, suffix: str, raw: bytes):
    path = tmp_path / f"p{suffix}"
    path.write_bytes(raw)
    src = load_file(str(path))
    assert isinstance(src, PromptSource) and src.items
    # finalize is where ids become int64 arrays: it must not overflow either
    ids = [x for x in src.items if isinstance(x, list)]
    if ids:
        finalize(str(path), ids, max_prompt_tokens=None, seed=0)
    return src


@FAST
@given(st.sampled_from([".txt", ".jsonl", ".json"]), st.binary(max_size=300))
def test_prompt_files_of_random_bytes(tmp_path_factory, suffix, raw):
    tmp = tmp_path_factory.mktemp("p")
    try:
        _load(tmp, suffix, raw)
    except PromptFileError as e:
        assert str(tmp) in str(e)


@FAST
@given(st.sampled_from([".jsonl", ".json"]), st.lists(json_values, min_size=0, max_size=4))
def test_prompt_files_of_random_json(tmp_path_factory, suffix, values):
    tmp = tmp_path_factory.mktemp("p")
    if suffix == ".json":
        raw = json.dumps(values, allow_nan=True).encode()
    else:
        raw = "\n".join(json.dumps(v, allow_nan=True) for v in values).encode()
    # Any JSON gives prompts (checked in _load) or a PromptFileError naming the file; any other
    # exception fails the test.
    try:
        _load(tmp, suffix, raw)
    except PromptFileError as e:
        assert str(tmp) in str(e)


EDGE_FILES = {
    "deep.json": b"[" * 100_000,
    "deep.jsonl": b"[" * 100_000 + b"\n",
    "big.json": b"[[1, 2, 99999999999999999999999]]",
    "big.jsonl": b'{"input_ids": [18446744073709551616]}\n',
    "neg.json": b"[[1, -5]]",
    "floats.json": b"[[1.5, 2]]",
}


@pytest.mark.parametrize("name, raw", list(EDGE_FILES.items()), ids=list(EDGE_FILES))
def test_prompt_file_edge_cases_are_file_errors(tmp_path, name, raw):
    path = tmp_path / name
    path.write_bytes(raw)
    with pytest.raises(PromptFileError, match=name):
        src = load_file(str(path))
        finalize(str(path), list(src.items), max_prompt_tokens=None, seed=0)


# ---------------------------------------------------------------- recordings


def _good_recording() -> bytes:
    header = {"format": FORMAT, "version": VERSION, "kltui_version": "0", "created": 0.0}
    events = [
        RunStarted("r1", 0.0, {"samples": 1}, [{"url": "http://x"}], {}, "0"),
        TokensDecoded("match", "http://x", 0, 0, np.array([5, 6]), np.array([-1.0, np.nan])),
        Problem("http://x", "boom", True, "match", "decode"),
        RunFinished({"helpers": 1}, "error"),
    ]
    lines = [orjson.dumps(header)] + [orjson.dumps({**encode(e), "t": 0.1}) for e in events]
    return b"\n".join(lines) + b"\n"


def _read(tmp_path: Path, raw: bytes):
    path = tmp_path / "r.kltui.jsonl"
    path.write_bytes(raw)
    try:
        rec = read_recording(str(path))
    except RecordingError as e:
        assert str(path) in str(e)
        return None
    assert isinstance(rec, Recording)
    return rec


def test_good_recording_reads_back():
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        rec = _read(Path(d), _good_recording())
    assert rec is not None and len(rec.events) == 4 and not rec.truncated
    assert np.isnan(rec.events[1].output_logprobs[1])


@FAST
@given(st.binary(max_size=400))
def test_recording_of_random_bytes(tmp_path_factory, raw):
    """Random bytes read as a Recording or raise a RecordingError naming the file (_read
    asserts both); any other exception fails the test."""
    _read(tmp_path_factory.mktemp("r"), raw)


@FAST
@given(st.data())
def test_recording_with_a_damaged_event(tmp_path_factory, data):
    """One damaged event in a good recording: a Recording or a RecordingError naming the file
    (_read asserts both); any other exception fails the test."""
    lines = _good_recording().split(b"\n")
    k = data.draw(st.integers(1, len(lines) - 2))
    obj = orjson.loads(lines[k])
    lines[k] = json.dumps(data.draw(damaged(obj)), allow_nan=True).encode()
    _read(tmp_path_factory.mktemp("r"), b"\n".join(lines))


@FAST
@given(st.integers(0, len(_good_recording()) - 1))
def test_recording_cut_anywhere_reads_up_to_the_cut(tmp_path_factory, cut):
    raw = _good_recording()
    rec = _read(tmp_path_factory.mktemp("r"), raw[:cut])
    if rec is None:
        assume(False)  # cut inside the header line: not a recording, correctly refused
    complete = raw[:cut].count(b"\n") - 1
    assert len(rec.events) in (complete, complete + 1)


def test_recording_from_a_newer_version_names_file_line_and_fix(tmp_path):
    header = {"format": FORMAT, "version": VERSION + 1, "kltui_version": "9.9"}
    path = tmp_path / "new.kltui.jsonl"
    path.write_bytes(orjson.dumps(header) + b"\n")
    with pytest.raises(RecordingError) as e:
        read_recording(str(path))
    msg = str(e.value)
    assert msg.startswith(f"{path}:1:") and "newer" in msg and "upgrade kltui" in msg
    assert "\n" not in msg
