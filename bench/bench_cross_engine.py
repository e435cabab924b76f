"""cross_engine's cost over the two engines' own scoring requests (issue 30: at most 1.1x), and
its floors' cost over cross_engine without them (issue 47: at most 1.25x).

    python bench/bench_cross_engine.py --server SGLANG_URL --baseline VLLM_URL --prompts ids.json
        [--samples 32] [--max-new-tokens 512] [--top-k 5] [--repeats 3]

Both sides run against the same two servers, in turn, `--repeats` times:
- bare: the requests cross_engine itself makes, sent with plain httpx + json in the same
  batches (SGLang's greedy /generate; per batch vLLM's teacher-forced /v1/completions with
  prompt_logprobs, vLLM's own greedy /v1/completions, SGLang's teacher-forced /generate with
  vLLM's top-k ids as token_ids_logprob), answers decoded and nothing else;
- kltui: `kltui check --helpers cross_engine` in-process (run_session): identification, the
  config table, the contract probe, parsing, scoring, events and the store.
- kltui without floors: the same with `metrics.floors.FLOOR_SAMPLES = 0` (cross_engine as it
  was before issue 47, but for the prefix-cache probe's three short requests, in both).
Wall time is the budget's measure: the servers do the same work on both sides, so what kltui
adds is its own requests (identify, probe) and its client-side work.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time

import httpx
import numpy as np

from kltui.helpers.cross_batches import Sample, chunks, wanted_ids
from kltui.metrics import floors
from kltui.run.config import RunConfig
from kltui.run.runner import run_session
from kltui.session.consume import pump
from kltui.session.store import SessionStore


async def bare(
    sglang: str, vllm: str, prompts: list[list[int]], n: int, k: int
) -> tuple[float, float]:
    t0, c0 = time.perf_counter(), time.process_time()
    async with (
        httpx.AsyncClient(base_url=sglang, timeout=3600) as a,
        httpx.AsyncClient(base_url=vllm, timeout=3600) as b,
    ):
        model = (await b.get("/v1/models")).json()["data"][0]["id"]
        sp = {"temperature": 0.0, "max_new_tokens": n, "ignore_eos": True}
        outs = (
            await a.post(
                "/generate",
                json={
                    "input_ids": prompts,
                    "sampling_params": sp,
                    "return_logprob": True,
                    "logprob_start_len": -1,
                    "top_logprobs_num": k,
                },
            )
        ).json()
        samples = [
            Sample(i, np.asarray(p, np.int64), np.asarray(o["output_ids"], np.int64))
            for i, (p, o) in enumerate(zip(prompts, outs, strict=True))
        ]
        common = {"model": model, "temperature": 0.0, "ignore_eos": True}
        common |= {"return_tokens_as_token_ids": True, "return_token_ids": True}
        # the batches, the id lists and the entry budget kltui's own requests use, so that both
        # sides ask the servers for the same work (the union's ids from the first scored
        # position on; a sample whose answer would pass ENTRY_BUDGET asks for none)
        for chunk in chunks(samples, k):
            seqs = [s.seq.tolist() for s in chunk]
            scored = await b.post(
                "/v1/completions",
                json=common | {"prompt": seqs, "max_tokens": 1, "prompt_logprobs": k},
            )
            body = scored.json()
            (
                await b.post(
                    "/v1/completions",
                    json=common
                    | {
                        "prompt": [s.prompt.tolist() for s in chunk],
                        "max_tokens": n,
                        "logprobs": k,
                    },
                )
            ).json()
            tops = []
            for s, ch in zip(chunk, body["choices"], strict=True):
                rows = ch["prompt_logprobs"][s.start :]
                tops.append([np.asarray([int(t) for pos in rows if pos for t in pos], np.int64)])
            wanted, _ = wanted_ids(chunk, tops, k)
            (
                await a.post(
                    "/generate",
                    json={
                        "input_ids": seqs,
                        "sampling_params": sp | {"max_new_tokens": 0},
                        "return_logprob": True,
                        "logprob_start_len": 0,
                        "top_logprobs_num": k,
                        "token_ids_logprob": [w.tolist() for w in wanted],
                    },
                )
            ).json()
    return time.perf_counter() - t0, time.process_time() - c0


async def kltui_run(cfg: RunConfig, floor_samples: int) -> tuple[float, float]:
    store = SessionStore()
    floors.FLOOR_SAMPLES = floor_samples
    t0, c0 = time.perf_counter(), time.process_time()
    await pump(run_session(cfg), store, None)
    took = time.perf_counter() - t0, time.process_time() - c0
    (st,) = store.helpers.values()
    fl = st.summary.figures.get("floors") if st.summary is not None else None
    if floor_samples and not (isinstance(fl, dict) and fl.get("samples")):
        raise SystemExit(f"the floors were not measured: {fl}")
    return took


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", required=True)
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--prompts", required=True, help="a JSON list of token-id lists")
    ap.add_argument("--samples", type=int, default=32)
    ap.add_argument("--max-new-tokens", type=int, default=512)
    ap.add_argument("--top-k", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    # the same HOST:PORT forms kltui takes
    args.server, args.baseline = (
        u if "://" in u else f"http://{u}" for u in (args.server, args.baseline)
    )
    with open(args.prompts) as f:
        prompts = [list(map(int, p)) for p in json.load(f)][: args.samples]
    cfg = RunConfig(
        servers=[args.server],
        baseline=args.baseline,
        helpers=["cross_engine"],
        prompts=args.prompts,
        samples=len(prompts),
        max_new_tokens=args.max_new_tokens,
        top_k=args.top_k,
        max_prompt_tokens=None,
        yes_flush=True,
    )
    n, k = args.max_new_tokens, args.top_k
    with_floors = floors.FLOOR_SAMPLES
    await bare(args.server, args.baseline, prompts[:2], 4, k)  # warm-up: connections, graphs
    kl, k0, br = [], [], []
    for _ in range(args.repeats):
        kl.append(await kltui_run(cfg, with_floors))
        k0.append(await kltui_run(cfg, 0))
        br.append(await bare(args.server, args.baseline, prompts, n, k))
        # each triple as it lands: a run cut short by its call's limit still leaves figures
        print(
            f"  repeat {len(kl)}: kltui {kl[-1][0]:.2f} s, without floors {k0[-1][0]:.2f} s, "
            f"bare {br[-1][0]:.2f} s",
            flush=True,
        )
    km, bm, km0 = (statistics.median(x[0] for x in v) for v in (kl, br, k0))
    kc, bc = (statistics.median(x[1] for x in v) for v in (kl, br))
    print(
        f"cross_engine, {len(prompts)} samples x {n} tokens, top-{k} (medians of "
        f"{args.repeats}; kltui {', '.join(f'{x[0]:.2f}' for x in kl)} s, bare "
        f"{', '.join(f'{x[0]:.2f}' for x in br)} s):\n"
        f"  wall: kltui {km:.2f} s / the engines' own requests {bm:.2f} s = {km / bm:.3f}x "
        "(budget <= 1.1x)\n"
        f"  floors ({with_floors} samples scored again on each engine): kltui {km:.2f} s / "
        f"without floors {km0:.2f} s = {km / km0:.3f}x (budget <= 1.25x)\n"
        f"  client CPU: kltui {kc:.2f} s, bare {bc:.2f} s (on a CPU-only machine the servers "
        "share these cores, so wall time there mixes both)"
    )


if __name__ == "__main__":
    asyncio.run(main())
