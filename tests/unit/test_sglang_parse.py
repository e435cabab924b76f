import json
from pathlib import Path

import numpy as np
import pytest

from kltui.engines.sglang_parse import ParseError, StreamAssembler, parse_result, triples
from kltui.engines.sse import DONE, SSEError, parse_data_line

SAMPLES = Path(__file__).parent.parent / "data" / "samples"


def load_sse(name: str) -> list:
    items = []
    for line in (SAMPLES / name).read_text().splitlines():
        item = parse_data_line(line)
        if item is not None:
            items.append(item)
    return items


def test_non_streamed_real_response_shapes():
    obj = json.loads((SAMPLES / "sglang_generate_input_ids_top5.json").read_text())
    r = parse_result(obj, 0)
    assert r.output_ids.tolist() == [581, 422, 780, 363, 612, 829, 422, 780]
    assert r.output_logprobs.size == 8
    assert r.output_logprobs[0] == pytest.approx(-6.23196268081665)
    # entry 0 of input_token_logprobs is null: it scores nothing
    assert np.isnan(r.input_logprobs[0])
    assert r.input_logprob_ids.tolist()[:3] == [319, 284, 82]
    assert r.input_logprobs[1] == pytest.approx(-6.981605529785156)
    assert r.input_top is not None and r.input_top[0] is None
    assert len(r.input_top[1]) == 5
    assert r.finish_reason == {"type": "length", "length": 8}


def test_streamed_batch_real_capture_cumulative():
    items = load_sse("sglang_generate_stream_batch2.sse")
    assert items[-1] is DONE
    asm = StreamAssembler(2, incremental=False)
    deltas = [d for it in items[:-1] if (d := asm.feed(it)) is not None]
    assert {d.index for d in deltas} == {0, 1}
    # every delta carries only new tokens, contiguous per index
    for idx in (0, 1):
        starts = [d.start for d in deltas if d.index == idx]
        assert starts == sorted(starts) and starts[0] == 0
    results = asm.results()
    assert results[0].output_ids.tolist()[:2] == [407, 859]
    assert results[1].output_ids.tolist()[:2] == [589, 135]
    for r in results:
        assert r.output_ids.size == r.output_logprobs.size


def test_incremental_mode_appends_deltas():
    asm = StreamAssembler(1, incremental=True)
    base = {
        "meta_info": {"finish_reason": None, "output_token_logprobs": [[-1.0, 5, None]]},
        "output_ids": [5],
        "index": 0,
    }
    asm.feed(base)
    nxt = {
        "meta_info": {
            "finish_reason": {"type": "length", "length": 2},
            "output_token_logprobs": [[-2.0, 6, None]],
        },
        "output_ids": [6],
        "index": 0,
    }
    d = asm.feed(nxt)
    assert d.start == 1 and d.token_ids.tolist() == [6]
    (r,) = asm.results()
    assert r.output_ids.tolist() == [5, 6] and r.output_logprobs.tolist() == [-1.0, -2.0]


def test_cumulative_stream_that_shrinks_is_an_error():
    asm = StreamAssembler(1, incremental=False)
    asm.feed(
        {
            "meta_info": {"output_token_logprobs": [[-1.0, 5, None], [-1.0, 6, None]]},
            "output_ids": [5, 6],
        }
    )
    with pytest.raises(ParseError, match="shrank"):
        asm.feed({"meta_info": {"output_token_logprobs": [[-1.0, 7, None]]}, "output_ids": [7]})


def test_missing_index_in_a_batch_is_an_error():
    asm = StreamAssembler(2, incremental=False)
    with pytest.raises(ParseError, match="index"):
        asm.feed({"meta_info": {}, "output_ids": []})


def test_stream_without_finish_is_an_error():
    asm = StreamAssembler(1, incremental=False)
    asm.feed(
        {
            "meta_info": {"finish_reason": None, "output_token_logprobs": [[-1.0, 5, None]]},
            "output_ids": [5],
        }
    )
    with pytest.raises(ParseError, match="finish_reason"):
        asm.results()


def test_logprob_count_mismatch_is_an_error():
    asm = StreamAssembler(1, incremental=False)
    with pytest.raises(ParseError, match="output_ids"):
        asm.feed({"meta_info": {"output_token_logprobs": [[-1.0, 5, None]]}, "output_ids": [5, 6]})


@pytest.mark.parametrize("line", ["garbage", "data: {not json", "data: [1, 2]"])
def test_malformed_sse_lines(line):
    with pytest.raises(SSEError):
        parse_data_line(line)


def test_sse_ignores_comments_and_blank_lines():
    assert parse_data_line("") is None
    assert parse_data_line(": keepalive") is None
    assert parse_data_line("data: [DONE]") is DONE


def test_triples_maps_null_to_nan_and_rejects_garbage():
    lps, ids = triples([[None, 3, None], [-0.5, 4, "x"]], "t")
    assert np.isnan(lps[0]) and lps[1] == -0.5 and ids.tolist() == [3, 4]
    with pytest.raises(ParseError):
        triples([[-0.5], [-1.0]], "t")
    with pytest.raises(ParseError):
        triples([["a", "b", None]], "t")


def test_response_without_meta_info_is_not_sglang():
    with pytest.raises(ParseError, match="meta_info"):
        parse_result({"choices": []}, 0)
