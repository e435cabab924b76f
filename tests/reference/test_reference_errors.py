"""Rejections with SGLang's status codes and bodies; the server keeps serving after each."""

from __future__ import annotations

import threading

import httpx
import pytest

from tests.reference.kit import GREEDY, RefClient


def _post(c: RefClient, body) -> httpx.Response:
    return c.http.post("/generate", json=body)


def _still_serving(c: RefClient) -> None:
    r = c.generate({"input_ids": [0, 5, 6], "sampling_params": {**GREEDY, "max_new_tokens": 2}})
    assert len(r["output_ids"]) == 2


def test_unknown_sampling_key_is_refused_by_the_schema_gate(client: RefClient):
    r = _post(client, {"text": "hi", "sampling_params": {"max_new_tokens": 2, "seed": 1}})
    assert r.status_code == 400
    message = r.json()["error"]
    assert message.startswith("unknown field `seed`, expected one of `max_new_tokens`")
    assert "`sampling_seed`" in message
    _still_serving(client)


def test_wrongly_typed_field(client: RefClient):
    r = _post(client, {"text": "hi", "sampling_params": {"temperature": "hot"}})
    assert r.status_code == 400
    assert r.json() == {"error": 'invalid type: string "hot", expected f64'}


def test_unknown_top_level_key_is_ignored(client: RefClient):
    r = _post(client, {"input_ids": [0, 5], "sampling_params": {"max_new_tokens": 1}, "foo": 1})
    assert r.status_code == 200


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        (
            {"input_ids": [5] * 2048, "sampling_params": {"max_new_tokens": 1}},
            "The input (2048 tokens) is longer than the model's context length (2048 tokens).",
        ),
        (
            {"input_ids": [5] * 100, "sampling_params": {"max_new_tokens": 1990}},
            "Requested token count exceeds the model's maximum context length of 2048 tokens.",
        ),
        (
            {"input_ids": [0, 5, 6], "return_logprob": True, "logprob_start_len": 4},
            "req.logprob_start_len=4 is higher than the number of input tokens",
        ),
        ({"input_ids": [0, 5000]}, "out of vocabulary"),
        (
            {"sampling_params": {"max_new_tokens": 1}},
            "Either text, input_ids or input_embeds should be provided.",
        ),
        (
            {"input_ids": [0, 5], "sampling_params": {"temperature": -1.0}},
            "temperature must be non-negative, got -1.0.",
        ),
        ({"input_ids": [0, 5], "sampling_params": {"regex": "a+"}}, "Grammar-based generation"),
    ],
)
def test_request_errors_answer_400_with_a_message(client: RefClient, body, fragment):
    r = _post(client, body)
    assert r.status_code == 400
    assert fragment in r.json()["error"]["message"]
    _still_serving(client)


def test_malformed_json_body(client: RefClient):
    r = client.http.post(
        "/generate", content=b'{"text": "hi", ', headers={"content-type": "application/json"}
    )
    assert r.status_code == 400
    body = r.json()
    assert body["object"] == "error" and body["code"] == 400 and "JSON" in body["message"]
    _still_serving(client)


def test_streamed_request_errors_come_as_an_error_event(client: RefClient):
    body = {"input_ids": [5] * 2048, "stream": True}
    with client.http.stream("POST", "/generate", json=body) as r:
        assert r.status_code == 200
        lines = [line for line in r.iter_lines() if line]
    assert lines[-1] == "data: [DONE]"
    assert "longer than the model's context length" in lines[0]
    assert lines[0].startswith('data: {"error":{"message":')


def test_unknown_route_answers_json_404(client: RefClient):
    r = client.http.get("/no_such_route")
    assert r.status_code == 404 and r.json() == {"detail": "Not Found"}


def test_flush_is_refused_while_busy_and_waits_with_a_timeout(client: RefClient, prompts):
    body = {
        "input_ids": prompts[0],
        "sampling_params": {**GREEDY, "max_new_tokens": 400},
        "stream": True,
    }
    started = threading.Event()
    chunks: list[str] = []

    def run() -> None:
        with client.http.stream("POST", "/generate", json=body) as r:
            for line in r.iter_lines():
                if line.startswith("data: {"):
                    chunks.append(line)
                    started.set()

    t = threading.Thread(target=run)
    t.start()
    assert started.wait(30)
    busy = client.http.post("/flush_cache")
    assert busy.status_code == 400 and busy.text.startswith("Cache flushed.")
    waited = client.http.post("/flush_cache", params={"timeout": 60})
    assert waited.status_code == 200
    t.join()
    # The flush waited for the request instead of cutting it short.
    assert '"finish_reason":{"type":"length","length":400}' in chunks[-1]
