"""Both engine clients offer what kltui/engines/protocol.Engine promises, and SGLang's
identity is read the same way the runner records it (over a mock transport: no server)."""

from __future__ import annotations

import httpx

from kltui.engines.protocol import Engine
from kltui.engines.sglang import IDENTITY_KEYS, SGLangClient
from kltui.engines.vllm import VLLMClient

INFO = {
    "version": "0.5.23",
    "model_path": "/models/llama",
    "tp_size": 2,
    "dtype": "bfloat16",
    "disable_radix_cache": False,
    "disable_cuda_graph": True,
    "not_an_identity_key": 1,
}


def mock(model_info: dict | None) -> httpx.MockTransport:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/server_info":
            return httpx.Response(200, json=INFO)
        if request.url.path == "/model_info" and model_info is not None:
            return httpx.Response(200, json=model_info)
        return httpx.Response(404, json={"detail": "Not Found"})

    return httpx.MockTransport(answer)


async def test_both_clients_are_engines():
    clients = [SGLangClient("127.0.0.1:1"), VLLMClient("127.0.0.1:2")]
    try:
        assert all(isinstance(c, Engine) for c in clients)
        assert [c.engine for c in clients] == ["sglang", "vllm"]
        assert [c.url for c in clients] == ["http://127.0.0.1:1", "http://127.0.0.1:2"]
    finally:
        for c in clients:
            await c.aclose()


async def test_sglang_identity_is_the_recorded_subset():
    weights = {"served_model_name": "llama-8b", "weight_version": "v3"}
    async with SGLangClient("127.0.0.1:1", transport=mock(weights)) as c:
        ident = (await c.identify()).record()
    assert ident["url"] == "http://127.0.0.1:1" and ident["engine"] == "sglang"
    # SGLang's own name only: no derived `cuda_graph` beside `disable_cuda_graph`
    assert ident["tp_size"] == 2 and ident["disable_cuda_graph"] is True
    assert "cuda_graph" not in ident
    assert ident["served_model_name"] == "llama-8b" and ident["weight_version"] == "v3"
    assert "not_an_identity_key" not in ident
    # a setting this server did not report is null, not a missing key
    # (skip_tokenizer_init is recorded only when true; the JSON report has it as null)
    assert set(IDENTITY_KEYS) - {"skip_tokenizer_init"} <= set(ident)
    assert ident["kltui_fault"] is None


async def test_sglang_identity_without_model_info():
    async with SGLangClient("127.0.0.1:1", transport=mock(None)) as c:
        ident = (await c.identify()).record()
    assert ident["model_path"] == "/models/llama" and ident["weight_version"] is None
