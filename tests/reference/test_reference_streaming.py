"""SSE streaming (cumulative and incremental) and the API key."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.reference.kit import GREEDY, RefClient

AUTH = {"Authorization": "Bearer s3cret"}


def _events(http: httpx.Client, body: dict) -> list:
    with http.stream("POST", "/generate", json={**body, "stream": True}) as r:
        assert r.status_code == 200, r.read()
        assert r.headers["content-type"].startswith("text/event-stream")
        raw = [line for line in r.iter_lines() if line]
    assert all(line.startswith("data: ") for line in raw)
    assert raw[-1] == "data: [DONE]"
    return [json.loads(line[6:]) for line in raw[:-1]]


def _body(batch, n=6) -> dict:
    return {
        "input_ids": batch,
        "sampling_params": {**GREEDY, "max_new_tokens": n},
        "return_logprob": True,
        "logprob_start_len": -1,
    }


def test_cumulative_batch_stream(client: RefClient, prompts):
    events = _events(client.http, _body(prompts[:2]))
    assert len(events) == 2 * 6  # one chunk per request per step
    final = client.decode_batch(prompts[:2], 6)
    for index in (0, 1):
        mine = [e for e in events if e["index"] == index]
        lengths = [len(e["output_ids"]) for e in mine]
        assert lengths == list(range(1, 7))
        assert all(e["meta_info"]["finish_reason"] is None for e in mine[:-1])
        last = mine[-1]
        assert last["meta_info"]["finish_reason"] == {"type": "length", "length": 6}
        assert last["output_ids"] == final[index]["output_ids"]
        lps = last["meta_info"]["output_token_logprobs"]
        assert [e[1] for e in lps] == last["output_ids"]
        assert last["meta_info"]["input_token_logprobs"] == []
        assert "e2e_latency" in last["meta_info"] and "e2e_latency" not in mine[0]["meta_info"]
        assert last["text"] == final[index]["text"]


def test_single_prompt_stream_has_no_index(client: RefClient, prompts):
    events = _events(client.http, _body(prompts[0], 3))
    assert all("index" not in e for e in events) and len(events) == 3


def test_stream_interval(client: RefClient, prompts):
    body = _body(prompts[0], 7)
    body["sampling_params"]["stream_interval"] = 3
    events = _events(client.http, body)
    assert [len(e["output_ids"]) for e in events] == [1, 4, 7]


def test_incremental_stream_sends_deltas(incremental_server, prompts):
    c = RefClient(incremental_server, headers=AUTH)
    http = c.http
    body = _body(prompts[:2], 5)
    body["return_text_in_logprobs"] = True
    c.flush()
    events = _events(http, body)
    c.flush()  # same cold-cache shapes, so the default kernels give the same bits
    final = c.generate(_body(prompts[:2], 5))
    info = http.get("/server_info").json()
    assert info["incremental_streaming_output"] is True
    for index in (0, 1):
        mine = [e for e in events if e["index"] == index]
        assert all(len(e["output_ids"]) == 1 for e in mine)
        ids = [t for e in mine for t in e["output_ids"]]
        lps = [x for e in mine for x in e["meta_info"]["output_token_logprobs"]]
        assert ids == final[index]["output_ids"]
        assert [x[0] for x in lps] == [
            x[0] for x in final[index]["meta_info"]["output_token_logprobs"]
        ]
        assert "".join(e["text"] for e in mine) == final[index]["text"]
        assert mine[-1]["meta_info"]["completion_tokens"] == 5


@pytest.mark.parametrize("path", ["/generate", "/server_info", "/model_info", "/flush_cache"])
def test_api_key_is_required(incremental_server, path):
    method = "POST" if path == "/generate" else "GET"
    r = httpx.request(method, incremental_server.url + path, json={"input_ids": [0, 5]})
    assert r.status_code == 401 and r.json() == {"error": "Unauthorized"}
    wrong = httpx.request(
        method, incremental_server.url + path, headers={"Authorization": "Bearer x"}
    )
    assert wrong.status_code == 401
    ok = httpx.request(
        method,
        incremental_server.url + path,
        headers=AUTH,
        json={"input_ids": [0, 5], "sampling_params": {"max_new_tokens": 1}},
    )
    assert ok.status_code == 200


def test_health_needs_no_key_like_sglang(incremental_server):
    assert httpx.get(incremental_server.url + "/health").status_code == 200
    info = httpx.get(incremental_server.url + "/server_info", headers=AUTH).json()
    assert "s3cret" not in json.dumps(info)
