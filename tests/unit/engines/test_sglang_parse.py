import json
from pathlib import Path

import numpy as np
import pytest

from kltui.engines.sglang_parse import ParseError, StreamAssembler, parse_result, triples
from kltui.engines.sse import DONE, SSEError, parse_data_line

SAMPLES = Path(__file__).parents[2] / "data" / "samples"


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


# ---------------------------------------------------------------- whose answer is it


def _rotated(objs: list[dict]) -> list[dict]:
    """A proxy that swaps whole answers between concurrent requests (and strips the count)."""
    out = [json.loads(json.dumps(o)) for o in objs[1:] + objs[:1]]
    for o in out:
        o["meta_info"].pop("prompt_tokens", None)
    return out


def test_real_answer_echoes_its_request_id():
    # SGLang puts the request's rid into meta_info.id (the captured answer: a generated one)
    obj = json.loads((SAMPLES / "sglang_generate_input_ids_top5.json").read_text())
    r = parse_result(obj, 0)
    assert r.meta["id"] == "2ef15251c2cd4f3e8b8c55bd234373c1" and r.prompt_tokens == 9
    assert not r.echoed_rid and r.prompt_verified  # no rid sent: prompt_tokens ties it
    r.rid = "2ef15251c2cd4f3e8b8c55bd234373c1"
    assert r.echoed_rid
    del obj["meta_info"]["prompt_tokens"]
    bare = parse_result(obj, 0)
    assert not bare.prompt_verified
    bare.rid = "another-request"
    assert not bare.prompt_verified


def _answers(rids: list[str]) -> list[dict]:
    obj = json.loads((SAMPLES / "sglang_generate_input_ids_top5.json").read_text())
    out = []
    for rid in rids:
        o = json.loads(json.dumps(obj))
        o["meta_info"]["id"] = rid
        out.append(o)
    return out


def test_client_refuses_answers_rotated_between_prompts():
    from kltui.engines.errors import EngineError
    from kltui.engines.sglang import SGLangClient, request_ids

    rids = request_ids(3)
    assert len(set(rids)) == 3 and request_ids(3) != rids
    batch = [[1] * 9, [2] * 9, [3] * 9]  # one length: prompt_tokens could not tell them apart
    c = SGLangClient("127.0.0.1:1")
    sp = {"max_new_tokens": 8}
    good = [parse_result(o, i) for i, o in enumerate(_answers(rids))]
    c.check_results(good, batch, sp, "/generate", rids)
    assert all(r.rid == rid and r.echoed_rid for r, rid in zip(good, rids, strict=True))
    bad = [parse_result(o, i) for i, o in enumerate(_rotated(_answers(rids)))]
    with pytest.raises(EngineError) as e:
        c.check_results(bad, batch, sp, "/generate", rids)
    assert e.value.kind == "wrong-order"
    assert "answer 0 is the answer to prompt 1" in e.value.message
    # a proxy's own ids are none of ours: unverified, not an error
    own = [parse_result(o, i) for i, o in enumerate(_rotated(_answers(["x", "y", "z"])))]
    c.check_results(own, batch, sp, "/generate", rids)
    assert not any(r.prompt_verified for r in own)
