"""The HF reference's cost (issue 31): its teacher-forced forward of N x (prompt + new tokens)
against the time SGLang's own match helper takes on the same server and ids (budget: at most 1x).

    # GPU (H200, real SGLang FA3, the 8B-shaped checkpoint): bash bench/gpu_hf.sh
    # CPU (the embedded reference server on the shipped checkpoint, SGLang's own helper from the
    # real-engine environment; without --sglang-python kltui's match helper, which sends the
    # same requests, stands in for it):
    python bench/bench_hf_reference.py --reference --samples 16 --max-new-tokens 128 \\
        [--sglang-python "bash scripts/real_engines.sh exec sglang python"]

Steps, each timed on its own:
1. SGLang decodes the greedy continuation of every prompt (not counted: the helper's decode is
   the engine's, and SGLang's match helper decodes too);
2. the reference loads (`load`, reported, not in the budget: once per run, like a server start);
3. the reference scores every prompt + continuation and answers the top-k lookup, in the
   helper's own chunks (`forward`: what the budget is about);
4. SGLang's match helper on the same server and ids (`match`), --repeats times (median).

Writes a JSON file (--out) and prints one table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # measure the checkout, not an installed kltui

import httpx  # noqa: E402
import numpy as np  # noqa: E402
from bench_gate import SGLANG_NAMES, WORKER, make_ids, vocab_of  # noqa: E402

from kltui.engines.hf import HFReference, HFSettings  # noqa: E402
from kltui.helpers.cross_batches import Sample, chunks  # noqa: E402
from kltui.run.config import RunConfig  # noqa: E402
from kltui.run.runner import run_session  # noqa: E402
from kltui.session.events import HelperFinished, HelperStarted  # noqa: E402


async def continuations(url: str, ids: list[list[int]], n: int) -> list[Sample]:
    async with httpx.AsyncClient(base_url=url, timeout=3600) as c:
        r = await c.post(
            "/generate",
            json={
                "input_ids": ids,
                "sampling_params": {"temperature": 0.0, "max_new_tokens": n, "ignore_eos": True},
            },
        )
        r.raise_for_status()
        outs = r.json()
    return [
        Sample(i, np.asarray(p, np.int64), np.asarray(o["output_ids"], np.int64))
        for i, (p, o) in enumerate(zip(ids, outs, strict=True))
    ]


async def reference_cost(model: str, samples: list[Sample], k: int, args) -> dict:
    ref = HFReference(
        HFSettings(model, args.dtype, args.device, args.attn), dtype=args.dtype, timeout=3600
    )
    try:
        t0 = time.perf_counter()
        await ref.start()
        load = time.perf_counter() - t0
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            for chunk in chunks(samples, 2 * k):
                got = await ref.score([s.seq for s in chunk], [s.start for s in chunk], k)
                # the lookup of the engines' top-k (two engines' worth of ids a position)
                await ref.gather([np.concatenate([g.top_ids, g.top_ids], axis=1) for g in got])
            times.append(time.perf_counter() - t0)
        return {"load_s": load, "forward_s": statistics.median(times), "forward_all": times,
                "info": ref.info}  # fmt: skip
    finally:
        await ref.aclose()


def sglang_match(cmd: str, url: str, model: str, ids: list[list[int]], n: int, reps: int) -> list:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(ids, f)
    names = json.dumps({"match": SGLANG_NAMES["match"]})
    args = [*shlex.split(cmd), "-c", WORKER, url, model, f.name, str(n), names]
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdin and proc.stdout
    out = []
    try:
        for _ in range(reps):
            proc.stdin.write("go\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            if not line:
                raise SystemExit(f"the SGLang worker died (exit {proc.wait()})")
            out.append(json.loads(line)["match"]["seconds"])
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    return out


async def kltui_match(url: str, ids_file: str, n: int, samples: int) -> float:
    cfg = RunConfig(servers=[url], helpers=["match"], prompts=ids_file, samples=samples,
                    max_new_tokens=n, extras=0, top_k=0, stream=False)  # fmt: skip
    t0 = t1 = None
    async for ev in run_session(cfg):
        if isinstance(ev, HelperStarted):
            t0 = time.perf_counter()
        elif isinstance(ev, HelperFinished):
            t1 = time.perf_counter()
    assert t0 is not None and t1 is not None
    return t1 - t0


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", help="SGLang URL (else --reference starts the embedded one)")
    ap.add_argument("--reference", action="store_true", help="start the embedded reference server")
    ap.add_argument("--model", help="the model folder the server serves (and the reference loads)")
    ap.add_argument("--prompts", help="a .json of token-id lists (else random ids)")
    ap.add_argument("--samples", type=int, default=32)
    ap.add_argument("--max-new-tokens", type=int, default=512)
    ap.add_argument("--prompt-tokens", default="100-300", help="LO-HI of random prompts")
    ap.add_argument("--top-k", type=int, default=5)
    ap.add_argument("--dtype", default=None, help="the reference's dtype (default: checkpoint's)")
    ap.add_argument("--device", default=None)
    ap.add_argument("--attn", default="sdpa")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sglang-python", help="a python of the SGLang environment: its own helper")
    ap.add_argument("--out", default="bench_hf_reference.json")
    args = ap.parse_args()

    server = None
    if args.reference:
        from kltui.reference import CHECKPOINT_DIR
        from kltui.reference.launcher import ReferenceServer

        server = ReferenceServer(checkpoint=CHECKPOINT_DIR).start()
        args.server, args.model = server.url, args.model or str(CHECKPOINT_DIR)
    if not args.server or not args.model:
        raise SystemExit("give --server URL and --model PATH, or --reference")
    try:
        if args.prompts:
            ids = json.loads(Path(args.prompts).read_text())[: args.samples]
        else:
            lo, hi = (int(x) for x in args.prompt_tokens.split("-"))
            ids = make_ids(args.samples, lo, hi, vocab_of(args.model, 1024), seed=0)
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(ids, f)
        samples = await continuations(args.server, ids, args.max_new_tokens)
        tokens = int(sum(s.seq.size for s in samples))
        ref = await reference_cost(args.model, samples, args.top_k, args)
        if args.sglang_python:
            match = sglang_match(args.sglang_python, args.server, args.model, ids,
                                 args.max_new_tokens, args.repeats)  # fmt: skip
            source = "SGLang's test_input_output_logprobs_match_helper"
        else:
            match = [
                await kltui_match(args.server, f.name, args.max_new_tokens, len(ids))
                for _ in range(args.repeats)
            ]
            source = "kltui's match helper (the same requests as SGLang's)"
    finally:
        if server is not None:
            server.stop()
    m = statistics.median(match)
    doc = {
        "server": args.server,
        "model": args.model,
        "samples": len(ids),
        "max_new_tokens": args.max_new_tokens,
        "tokens": tokens,
        "reference": ref,
        "match_s": m,
        "match_all": match,
        "match_source": source,
        "ratio": ref["forward_s"] / m if m else None,
        "budget": 1.0,
    }
    doc["within_budget"] = doc["ratio"] is not None and doc["ratio"] <= doc["budget"]
    Path(args.out).write_text(json.dumps(doc, indent=2))
    info = ref["info"]
    print(
        f"reference ({info.get('model_class')}, {info.get('dtype')}, "
        f"{info.get('attn_implementation')}, {info.get('device')}): load {ref['load_s']:.2f} s, "
        f"forward of {len(ids)} x (prompt + {args.max_new_tokens}) = {tokens} tokens "
        f"{ref['forward_s']:.2f} s (median of {args.repeats})"
    )
    print(f"match: {m:.2f} s ({source}, median of {args.repeats})")
    verdict = "within" if doc["within_budget"] else "OVER"
    print(f"forward / match = {doc['ratio']:.2f}x ({verdict} the 1x budget); wrote {args.out}")


if __name__ == "__main__":
    asyncio.run(main())
