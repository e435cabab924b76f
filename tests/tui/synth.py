"""Deterministic synthetic event streams shaped like a real run (for pilot and snapshot tests).

Summaries are computed by the metrics module (ScoreBook), as the helpers do, so the numbers on
screen are the same kind of numbers a live run shows.
"""

from __future__ import annotations

import numpy as np

from kltui.metrics.k3 import ScoreBook
from kltui.session.events import (
    Event,
    HelperFinished,
    HelperStarted,
    PhaseChanged,
    Problem,
    RunFinished,
    RunStarted,
    SampleScored,
    SampleSkipped,
    TokensDecoded,
)
from kltui.session.recording import Recording

URL = "http://127.0.0.1:30000"


def server(url: str = URL, **over) -> dict:
    s = {
        "url": url,
        "engine": "sglang",
        "version": "0.5.23",
        "model_path": "kltui/tiny-llama-4l",
        "served_model_name": "kltui/tiny-llama-4l",
        "dtype": "bfloat16",
        "tp_size": 1,
        "page_size": 1,
        "attention_backend": "triton",
        "disable_radix_cache": False,
        "enable_deterministic_inference": False,
        "incremental_streaming_output": True,
        "disable_cuda_graph": True,
        "startup_time": 1_700_000_000.0,
        "kltui_fault": "none",
    }
    s.update(over)
    return s


def helper_events(
    helper: str,
    *,
    url: str = URL,
    n: int = 8,
    length: int = 48,
    noise: float = 1e-6,
    seed: int = 0,
    skip: tuple[int, ...] = (),
    exact: tuple[int, ...] = (),
    spike: tuple[int, int, float] | None = None,
    threshold: float = 2e-3,
    finish: bool = True,
    top_k: bool = False,
) -> list[Event]:
    rng = np.random.default_rng(seed)
    tau = 1e-3
    ev: list[Event] = [
        HelperStarted(helper, url, n, threshold, tau, {"max_new_tokens": length}),
        PhaseChanged(helper, url, "flush"),
        PhaseChanged(helper, url, "decode"),
    ]
    book = ScoreBook(tau)
    data = {}
    for s in range(n):
        if s in skip:
            continue
        ids = rng.integers(3, 500, size=length)
        lp_b = -np.abs(rng.normal(0.8, 0.6, size=length))
        lp_a = lp_b.copy()
        if s not in exact:
            start = int(rng.integers(0, length // 2))
            lp_a[start:] += rng.normal(0, noise * (1 + s), size=length - start)
        if spike and spike[0] == s:
            lp_a[spike[1]] += spike[2]
        data[s] = (ids, lp_a, lp_b)
        for start in range(0, length, 16):
            ev.append(
                TokensDecoded(
                    helper, url, s, start, ids[start : start + 16], lp_b[start : start + 16]
                )
            )
    ev.append(PhaseChanged(helper, url, "flush"))
    ev.append(PhaseChanged(helper, url, "prefill"))
    ev.append(PhaseChanged(helper, url, "score"))
    for s in range(n):
        if s in skip:
            ev.append(SampleSkipped(helper, url, s, "cache miss (cached_tokens=0)"))
            continue
        ids, lp_a, lp_b = data[s]
        top = None
        if top_k:
            top = [
                [(int(ids[i]), float(lp_a[i])), (int(ids[i]) + 1, float(lp_a[i]) - 2.0)]
                for i in range(length)
            ]
        cached = 24 if helper != "match" else 0
        book.add(s, ids, lp_a, lp_b, cached, 40 + s)
        ev.append(SampleScored(helper, url, s, ids, lp_a, lp_b, cached, 40 + s, top, top))
    if finish:
        summary = book.summary(n_samples=n, n_skipped=len(skip), threshold=threshold)
        summary["status"] = "pass" if summary["passed"] else "fail"
        summary["threshold_source"] = "preset sglang-ci (*)"
        ev.append(HelperFinished(helper, url, summary))
    return ev


def session(
    *,
    n: int = 8,
    length: int = 48,
    servers: list[dict] | None = None,
    helpers: tuple[str, ...] = ("match", "prefill_cache_hit", "decode_cache_hit"),
    finish: bool = True,
    problems: list[Problem] | None = None,
    top_k: bool = False,
    fault: bool = False,
) -> list[Event]:
    servers = servers or [server()]
    config = {
        "helpers": list(helpers),
        "samples": n,
        "max_new_tokens": length,
        "temperature": 0.0,
        "seed": 0,
        "stream": True,
    }
    ev: list[Event] = [
        RunStarted(
            run_id="0123456789ab",
            started_at=1_700_000_100.0,
            config=config,
            servers=servers,
            prompt_set={
                "source": "builtin",
                "n": n,
                "tokens": 40 * n + n * (n - 1) // 2,
                "sha256": "9f2c1e7a5b3d4c6e8f00112233445566",
            },
            kltui_version="0.1.0",
        )
    ]
    ev.extend(problems or [])
    for i, h in enumerate(helpers):
        kw = {}
        if h == "prefill_cache_hit":
            kw = {"skip": (3,)}
        if h == "decode_cache_hit" and fault:
            kw = {"spike": (2, min(17, length - 1), 0.9), "noise": 1e-3}
        ev.extend(helper_events(h, n=n, length=length, seed=i, top_k=top_k, **kw))
    if finish:
        ev.append(RunFinished({"helpers": len(helpers)}, "pass"))
    return ev


def recording(events: list[Event], path: str = "synthetic.kltui.jsonl") -> Recording:
    times = [i * 0.01 for i in range(len(events))]
    return Recording(
        path,
        {"format": "kltui-recording", "version": 1, "created": 1_700_000_100.0},
        events,
        times,
        False,
    )
