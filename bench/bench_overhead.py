"""End-to-end overhead of kltui's match helper over the same HTTP calls made bare.

    python bench/bench_overhead.py [--samples 32] [--max-new-tokens 128] [--repeats 3]

Both sides run against one reference server (deterministic kernels, so both do identical
server work): bare = flush, one non-streamed batched /generate with logprobs, flush, one replay
/generate, with plain httpx + json; kltui = the `match` helper (streamed, with parsing, checks,
scoring, events and the store). The budget (DESIGN section 8) is <= 3 % overhead.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from kltui.reference.launcher import ReferenceServer
from kltui.run.config import RunConfig
from kltui.run.runner import run_session
from kltui.session.consume import pump
from kltui.session.store import SessionStore


async def bare(url: str, prompts: list[list[int]], n: int) -> tuple[float, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    async with httpx.AsyncClient(base_url=url, timeout=600) as c:
        await c.post("/flush_cache?timeout=30")
        sp = {"temperature": 0.0, "max_new_tokens": n, "ignore_eos": True}
        r = await c.post(
            "/generate",
            json={
                "input_ids": prompts,
                "sampling_params": sp,
                "return_logprob": True,
                "logprob_start_len": -1,
            },
        )
        outs = r.json()
        await c.post("/flush_cache?timeout=30")
        full = [p + o["output_ids"] for p, o in zip(prompts, outs, strict=True)]
        sp0 = {"temperature": 0.0, "max_new_tokens": 0, "ignore_eos": True}
        r = await c.post(
            "/generate",
            json={
                "input_ids": full,
                "sampling_params": sp0,
                "return_logprob": True,
                "logprob_start_len": 0,
            },
        )
        replay = r.json()
        for o, rep in zip(outs, replay, strict=True):
            a = np.array([x[0] for x in rep["meta_info"]["input_token_logprobs"][-n:]])
            b = np.array([x[0] for x in o["meta_info"]["output_token_logprobs"]])
            np.mean(np.exp(a - b) - 1 - (a - b))
    return time.perf_counter() - t0, time.process_time() - c0


async def kltui_run(cfg: RunConfig) -> tuple[float, float]:
    store = SessionStore()
    t0, c0 = time.perf_counter(), time.process_time()
    await pump(run_session(cfg), store, None)
    return time.perf_counter() - t0, time.process_time() - c0


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=32)
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--stream", action="store_true", help="kltui streams (the bare side does not)")
    args = ap.parse_args()
    with ReferenceServer(deterministic=True) as srv:
        cfg = RunConfig(
            servers=[srv.url],
            helpers=["match"],
            samples=args.samples,
            max_new_tokens=args.max_new_tokens,
            max_prompt_tokens=256,
            top_k=0,
            stream=args.stream,
        )
        # the prompt ids kltui sends (tokenized by the server), reused by the bare client
        from kltui.engines.sglang import SGLangClient
        from kltui.run.prompt_ids import build_prompt_set

        async with SGLangClient(srv.url) as c:
            pset = await build_prompt_set(cfg, c, await c.server_info())
        prompts = [p.tolist() for p in pset.ids]
        # kltui gets the same ids as a .json prompt file (SGLang's input-id cache format), so
        # both sides send identical requests and server-side tokenization is not counted
        ids_file = Path(tempfile.mkdtemp()) / "ids.json"
        ids_file.write_text(json.dumps(prompts))
        cfg.prompts, cfg.max_prompt_tokens = str(ids_file), None
        await bare(srv.url, prompts, args.max_new_tokens)  # warm-up
        k, b = [], []
        for _ in range(args.repeats):
            k.append(await kltui_run(cfg))
            b.append(await bare(srv.url, prompts, args.max_new_tokens))
    km, bm = (statistics.median(x[0] for x in v) for v in (k, b))
    kc, bc = (statistics.median(x[1] for x in v) for v in (k, b))
    # The server runs in its own process; client CPU time is what kltui itself adds, free of the
    # server's run-to-run variance, which is larger than the budget.
    mode = "streamed" if args.stream else "not streamed"
    print(
        f"match helper, {args.samples} samples x {args.max_new_tokens} tokens, kltui {mode} "
        f"(medians of {args.repeats}):\n"
        f"  wall: kltui {km:.2f} s, bare HTTP {bm:.2f} s -> {(km / bm - 1) * 100:+.1f} %\n"
        f"  client CPU: kltui {kc:.3f} s, bare {bc:.3f} s -> kltui's own work is "
        f"{(kc - bc) / bm * 100:+.1f} % of the bare wall time (budget <= 3 %)"
    )


if __name__ == "__main__":
    asyncio.run(main())
