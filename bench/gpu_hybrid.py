"""Issue 57 on a GPU: kltui beside SGLang's own helpers on hybrid-model servers (docs/FIELD_NOTES.md).

For each server given (`KIND=URL`, the model path read from /server_info), on the same ids
(16 seeded prompts of 200-900 tokens, 128 new tokens, temperature 0):
- `kltui check --json` (its default hit rule: the engine's own), and again with
  `--hit-rule kl_test_utils` when this kltui has that flag (the dense rule, for parity);
- SGLang's `kl_test_utils` three helpers with `get_input_ids` replaced by these ids and
  SGLANG_TEST_SKIP_CACHE_HIT_ASSERT set (their per-sample `kl_divs`, their hit counts);
- SGLang's `kl_multiturn_utils` prefill and decode helpers on the same ids with the Mamba
  assert callbacks (`make_mamba_prefill_assert(chunk)`, `make_mamba_decode_assert(interval)`)
  wrapped to record every request's `cached_tokens` and verdict instead of raising.
Writes one JSON per kind to OUT and prints a table. Runs in the GPU image's SGLang environment
(bench/gpu_hybrid.sh starts the servers); kltui is imported from this checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent

WORKER = r"""
import contextlib, io, json, math, re, sys
from sglang.test import kl_test_utils as k
url, model, ids_path, max_new, chunk, interval = sys.argv[1:7]
max_new, chunk, interval = int(max_new), int(chunk), int(interval)
ids = json.load(open(ids_path))
k.get_input_ids = lambda *a, **kw: ids
captured = {}
real_compare = k.compare_kl_divergence
def capture(inp, out, acc, model_name, test_name):
    kls = []
    for a, b in zip(inp, out):
        a, b = [float(x) for x in a], [float(x) for x in b]
        import numpy as np
        r = np.array(a) - np.array(b)
        kls.append(float(np.mean(np.exp(r) - 1 - r)))
    captured[test_name] = kls
k.compare_kl_divergence = capture
res = {"kl_test_utils": {}, "kl_multiturn_utils": {}}
names = {"match": "test_input_output_logprobs_match_helper",
         "prefill_cache_hit": "test_input_output_logprobs_match_prefill_cache_hit_helper",
         "decode_cache_hit": "test_input_output_logprobs_match_decode_cache_hit_helper"}
for key, name in names.items():
    captured.clear()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        getattr(k, name)(url, {model: {"kl_div": math.inf}}, model, max_samples=len(ids),
                         max_new_tokens=max_new)
    res["kl_test_utils"][key] = {"kl_divs": next(iter(captured.values()), None),
                                 "log": buf.getvalue()[-2000:]}
try:
    from sglang.test import kl_multiturn_utils as m
except ImportError as e:
    res["kl_multiturn_utils"] = {"error": str(e)}
    print(json.dumps(res)); sys.exit(0)
m.compare_kl_divergence = capture
def recorder(make, arg, seen):
    check = make(arg)
    def wrapped(result, *a):
        ok = True
        try:
            check(result, *a)
        except AssertionError:
            ok = False
        seen.append({"cached_tokens": result["meta_info"]["cached_tokens"], "args": list(a[:-1]),
                     "accepted": ok})
    return wrapped
seen_p, seen_d = [], []
captured.clear()
with contextlib.redirect_stdout(io.StringIO()):
    m.test_input_output_logprobs_match_prefill_cache_hit_helper(
        url, model, math.inf, ids, max_new_tokens=max_new, sampling_temperature=0.0,
        assert_prefill_cached_tokens=recorder(m.make_mamba_prefill_assert, chunk, seen_p))
res["kl_multiturn_utils"]["prefill"] = {"requests": seen_p,
                                        "kl_divs": next(iter(captured.values()), None)}
from transformers import AutoTokenizer
sep = [AutoTokenizer.from_pretrained(model).encode(",")] * len(ids)  # as kl_test_utils' turn 2
captured.clear()
with contextlib.redirect_stdout(io.StringIO()):
    m.test_input_output_logprobs_match_decode_cache_hit_helper(
        url, model, math.inf, ids, turn_suffixes=[sep], max_new_tokens=max_new,
        sampling_temperature=0.0,
        assert_decode_cached_tokens=recorder(m.make_mamba_decode_assert, interval, seen_d))
res["kl_multiturn_utils"]["decode"] = {"requests": seen_d,
                                       "kl_divs": next(iter(captured.values()), None)}
print(json.dumps(res))
"""


def make_ids(n: int, lo: int, hi: int, vocab: int, seed: int) -> list[list[int]]:
    """Ids 3 .. vocab-2 (no special tokens, not the last id: see shared/gpu_sglang/README.md)."""
    rng = np.random.default_rng(seed)
    return [
        rng.integers(3, vocab - 1, size=int(rng.integers(lo, hi + 1))).tolist() for _ in range(n)
    ]


def server_info(url: str) -> dict:
    with httpx.Client(base_url=url, timeout=30) as c:
        return c.get("/server_info").json()


def kltui_check(url: str, prompts: Path, out: Path, extra: list[str], args) -> dict:
    argv = [
        sys.executable,
        "-m",
        "kltui",
        "check",
        "--server",
        url,
        "--prompts",
        str(prompts),
        "--samples",
        str(args.samples),
        "--max-new-tokens",
        str(args.max_new_tokens),
        "--temperature",
        "0",
        # the recording keeps every request's figures and the drill-down's top-k windows, so a
        # later kltui replays the same run (readings added after the lease read it offline)
        "--record",
        str(out.with_suffix(".kltui.jsonl")),
        "--json",
        str(out),
        *extra,
    ]
    p = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=args.timeout)
    (out.with_suffix(".txt")).write_text(p.stdout + p.stderr)
    doc = json.loads(out.read_text()) if out.exists() else {}
    return {"rc": p.returncode, "doc": doc, "console": (p.stdout + p.stderr)[-3000:]}


def has_flag(flag: str) -> bool:
    p = subprocess.run(
        [sys.executable, "-m", "kltui", "check", "--help"], capture_output=True, text=True, cwd=ROOT
    )
    return flag in p.stdout


def one(kind: str, url: str, args, work: Path) -> dict:
    info = server_info(url)
    model = info.get("model_path") or info.get("tokenizer_path")
    vocab = json.loads((Path(model) / "config.json").read_text()).get("vocab_size", 1024)
    ids = make_ids(args.samples, 200, 900, vocab, args.seed)
    ids_path = work / f"ids_{kind}.json"
    ids_path.write_text(json.dumps(ids))
    prompts = work / f"prompts_{kind}.jsonl"
    prompts.write_text("".join(json.dumps({"input_ids": x}) + "\n" for x in ids))
    page = int(info.get("page_size") or 1)
    cfg = json.loads((Path(model) / "config.json").read_text())
    model_chunk = int(cfg.get("mamba_chunk_size") or cfg.get("chunk_size") or 64)
    chunk, interval = max(model_chunk, page), int(info.get("mamba_track_interval") or 256)
    res = {"kind": kind, "server_info": info, "chunk": chunk, "interval": interval}
    res["kltui"] = kltui_check(url, prompts, work / f"kltui_{kind}.json", [], args)
    if has_flag("--hit-rule"):
        res["kltui_dense_rule"] = kltui_check(
            url, prompts, work / f"kltui_{kind}_dense.json", ["--hit-rule", "kl_test_utils"], args
        )
    env = dict(os.environ, SGLANG_TEST_SKIP_CACHE_HIT_ASSERT="1")
    p = subprocess.run(
        [
            *shlex.split(args.sglang_python),
            "-c",
            WORKER,
            url,
            model,
            str(ids_path),
            str(args.max_new_tokens),
            str(chunk),
            str(interval),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=args.timeout,
    )
    try:
        res["sglang"] = json.loads(p.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        res["sglang"] = {"error": (p.stdout + p.stderr)[-3000:]}
    return res


def _per_sample(doc: dict, helper: str) -> list[float]:
    v = (doc.get("helpers") or {}).get(helper) or {}
    return [s["mean_k3"] for s in sorted(v.get("per_sample", []), key=lambda s: s["index"])]


def table(res: dict) -> str:
    """kltui (engine rule) beside kl_multiturn_utils' Mamba helpers, and kltui with
    kl_test_utils' rule beside kl_test_utils: scored counts and per-sample k3, in order."""
    lines = [f"== {res['kind']}  chunk {res['chunk']}  interval {res['interval']}"]
    doc = res["kltui"]["doc"]
    geo = ((doc.get("servers") or [{}])[0]).get("geometry")
    lines.append(f"  kltui geometry: {json.dumps(geo)}")
    sg = res.get("sglang") or {}
    dense = (res.get("kltui_dense_rule") or {}).get("doc") or {}
    mt = sg.get("kl_multiturn_utils") or {}
    for h, v in (doc.get("helpers") or {}).items():
        ks = _per_sample(doc, h)
        line = f"  kltui {h}: scored {len(ks)} avg {v.get('avg_kl_div')} rule {v.get('hit_rule')}"
        side = {"prefill_cache_hit": "prefill", "decode_cache_hit": "decode"}.get(h)
        kit = (mt.get(side) or {}).get("kl_divs") if side else None
        if kit is not None:  # the kit scores every request; kltui the ones its rule counted
            by = {x["index"]: x["mean_k3"] for x in v.get("per_sample", [])}
            same = all(kit[i] == k for i, k in by.items() if i < len(kit))
            line += f" | kl_multiturn_utils {len(kit)}, same on kltui's {len(by)}: {same}"
        old = ((sg.get("kl_test_utils") or {}).get(h) or {}).get("kl_divs")
        if old is not None:
            ref = _per_sample(dense, h) if dense else ks
            line += (
                f" | kl_test_utils {len(old)}, kltui --hit-rule kl_test_utils same: {ref == old}"
            )
        lines.append(line)
    for side in ("prefill", "decode"):
        reqs = (mt.get(side) or {}).get("requests") or []
        ok = sum(r["accepted"] for r in reqs)
        lines.append(
            f"  kl_multiturn_utils mamba {side} assert: {ok}/{len(reqs)} accepted; "
            f"cached {[r['cached_tokens'] for r in reqs]}"
        )
    diag = doc.get("diagnosis") or [{}]
    lines.append(f"  kltui reading: {json.dumps(diag[0].get('label') or diag[0])[:900]}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=textwrap.dedent(__doc__ or ""))
    ap.add_argument("servers", nargs="+", help="KIND=URL")
    ap.add_argument("--samples", type=int, default=16)
    ap.add_argument("--max-new-tokens", type=int, default=128)
    ap.add_argument("--seed", type=int, default=57)
    ap.add_argument("--timeout", type=int, default=200)
    ap.add_argument("--sglang-python", default=sys.executable, help="a python with sglang")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/gpu-hybrid"))
    args = ap.parse_args()
    # $OUT brings back at most 8 files: the per-kind JSON goes there, the rest to a work folder
    out, work = Path(args.out), Path(args.out + "-work")
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    for spec in args.servers:
        kind, url = spec.split("=", 1)
        res = one(kind, url, args, work)
        (out / f"hybrid_{kind}.json").write_text(json.dumps(res, indent=1, default=str))
        print(table(res), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
