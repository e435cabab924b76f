"""Each API key goes only to its own server: KLTUI_API_KEY (or --api-key) to SGLang,
KLTUI_BASELINE_API_KEY to the vLLM baseline, with no fallback from one to the other; the 401
hint names the variable of the server that refused; --watch polls with the run's key."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from kltui.run.config import RunConfig
from kltui.run.watch import ServerWatch
from tests.hostile.harness import check_inproc

SGLANG_KEY = "sk-sglang-only-7c1e"
BASELINE_KEY = "sk-vllm-only-42ab"


class KeyedBaseline:
    """A stand-in vLLM baseline that wants `key` and records every Authorization it gets."""

    def __init__(self, key: str) -> None:
        seen = self.seen = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):  # noqa: N802 - http.server's naming
                seen.append(self.headers.get("Authorization"))
                ok = self.headers.get("Authorization") == f"Bearer {key}"
                body = (
                    {"object": "list", "data": [{"id": "m", "root": "/models/m"}]}
                    if ok
                    else {"error": {"message": "Unauthorized"}}
                )
                raw = json.dumps(body).encode()
                self.send_response(200 if ok else 401)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            do_POST = do_GET  # noqa: N815

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def baseline():
    b = KeyedBaseline(BASELINE_KEY)
    yield b
    b.close()


async def test_sglang_key_never_reaches_the_baseline(hostile, baseline, tmp_path, monkeypatch):
    monkeypatch.setenv("KLTUI_API_KEY", SGLANG_KEY)
    monkeypatch.delenv("KLTUI_BASELINE_API_KEY", raising=False)
    srv = hostile()
    res = await check_inproc(
        srv.url, tmp_path, baseline=baseline.url, helpers=["match", "cross_engine"]
    )
    assert baseline.seen, "the baseline was never asked"
    assert all(h is None for h in baseline.seen), baseline.seen
    assert SGLANG_KEY not in res.out
    assert "KLTUI_BASELINE_API_KEY" in res.out, res.out


async def test_baseline_key_goes_to_the_baseline_only(hostile, baseline, tmp_path, monkeypatch):
    monkeypatch.setenv("KLTUI_API_KEY", SGLANG_KEY)
    monkeypatch.setenv("KLTUI_BASELINE_API_KEY", BASELINE_KEY)
    srv = hostile(api_key=SGLANG_KEY)
    res = await check_inproc(srv.url, tmp_path, baseline=baseline.url, helpers=["cross_engine"])
    assert baseline.seen and set(baseline.seen) == {f"Bearer {BASELINE_KEY}"}
    assert {r.headers.get("authorization") for r in srv.requests} == {f"Bearer {SGLANG_KEY}"}
    assert BASELINE_KEY not in res.out and "Unauthorized" not in res.out


async def test_watch_uses_the_key_from_the_environment(hostile, monkeypatch):
    """A server that wants the key is healthy for --watch when the key is in KLTUI_API_KEY."""
    monkeypatch.setenv("KLTUI_API_KEY", SGLANG_KEY)
    srv = hostile(api_key=SGLANG_KEY)
    watch = ServerWatch([srv.url], RunConfig().server_api_key())
    try:
        changed, down = await watch.poll()
    finally:
        await watch.aclose()
    assert down == [] and changed == [srv.url]
