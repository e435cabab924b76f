"""The TUI's question before the first flush, against real SGLang 0.5.23: its /v1/loads counts
another client's running batch (so a busy loopback server is asked about), and an idle one on
127.0.0.1 runs without a question."""

from __future__ import annotations

import asyncio
import time

import httpx

from kltui.engines.sglang import SGLangClient
from kltui.run.config import RunConfig
from kltui.run.flush_gate import AskKind, reasons_to_ask, server_load
from kltui.tui import app as app_module
from kltui.tui.app import KltuiApp
from kltui.tui.feeds import LiveFeed
from kltui.tui.screens.confirm_flush import ConfirmFlush
from tests.tui.kit import until


async def _idle(client: SGLangClient, within_s: float = 30.0) -> None:
    deadline = time.monotonic() + within_s
    while (load := await server_load(client)) is None or load.requests:
        assert time.monotonic() < deadline, f"server still busy: {load}"
        await asyncio.sleep(0.2)


async def test_running_batch_is_seen_through_v1_loads(sglang_url):
    client = SGLangClient(sglang_url, None, timeout=60)
    try:
        await _idle(client)
        assert (await server_load(client)).route == "/v1/loads"
        assert await reasons_to_ask(client) == ()  # 127.0.0.1, idle: no question
        batch = {
            "input_ids": [[5 + i, 6, 7] for i in range(4)],
            # as long as the model's 512-token context allows, to be seen running on a fast or a
            # busy machine; the stream is closed once seen (SGLang aborts a request whose client
            # went away)
            "sampling_params": {"max_new_tokens": 500, "ignore_eos": True},
            "stream": True,
        }
        async with httpx.AsyncClient(base_url=sglang_url, timeout=120) as other:
            async with other.stream("POST", "/generate", json=batch) as resp:
                lines = resp.aiter_lines()
                # SGLang refreshes the snapshot /v1/loads reads every few forward passes
                seen = None
                deadline = time.monotonic() + 30
                got: list[str] = []
                while time.monotonic() < deadline:
                    line = await anext(lines, None)
                    assert line is not None, f"the stream ended before /v1/loads saw it: {got[-3:]}"
                    got.append(line[:300])
                    seen = await server_load(client)
                    if seen is not None and seen.requests:
                        break
                assert seen is not None and seen.requests == 4, seen
                reasons = await reasons_to_ask(client)
                busy = [r for r in reasons if r.kind is AskKind.BUSY]
                assert [r.requests for r in busy] == [4], reasons  # words: tests/unit/words
        await _idle(client)
    finally:
        await client.aclose()


async def test_idle_loopback_server_runs_without_a_question(sglang_url, monkeypatch):
    asked: list[object] = []
    monkeypatch.setattr(app_module, "ConfirmFlush", lambda *a: asked.append(a) or ConfirmFlush(*a))
    client = SGLangClient(sglang_url, None, timeout=60)
    try:
        await _idle(client)
    finally:
        await client.aclose()
    cfg = RunConfig(
        servers=[sglang_url], helpers=["match"], samples=2, max_new_tokens=8, max_prompt_tokens=32
    )
    app = KltuiApp(LiveFeed(cfg, None))
    async with app.run_test(size=(140, 45)) as pilot:
        await until(
            pilot, lambda: app.store is not None and app.store.finished is not None, timeout=300
        )
        assert app.store.helpers[f"match@{sglang_url}"].summary is not None
        await pilot.press("q")
    assert asked == []
