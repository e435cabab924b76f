"""`kltui check` against SGLang's own three `kl_test_utils` helpers: same server, same ids.

    # GPU (H200, real SGLang): bash bench/gpu_gate.sh          (starts the server, runs this)
    # CPU (embedded reference server, SGLang's helpers from the real-engine environment):
    python bench/bench_gate.py --reference --samples 16 --max-new-tokens 128 \\
        --prompt-tokens 100-300 --sglang-python "bash scripts/real_engines.sh exec sglang python"

SGLang's three helpers run in a worker process of the SGLang environment and are timed there,
in-process, around each helper call (its import and start excluded); `get_input_ids` is replaced
by the bench's ids (no LongBench download). kltui runs in this process (the checkout's code)
with the same ids as a prompt file; its time is from the first to the last recorded event (the
process start excluded), as in issue 12. Runs alternate (SGLang, then every kltui variant; the
order reversed on every other round) and the table shows medians. Every kltui variant's
avg_kl_div is compared, bit for bit, with the SGLang run of the same round. Before a
whole-process variant the checkout's kltui is byte-compiled, as installing it does
(`--source`: not; bench_check_start.compile_checkout).

Writes a JSON file (--out) and prints a table.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import platform
import resource
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
from bench_check_start import compile_checkout  # noqa: E402  (this folder: run as a script)
from rich.console import Console  # noqa: E402

import kltui  # noqa: E402
from kltui.outputs.headless import run_check  # noqa: E402
from kltui.run.config import RunConfig  # noqa: E402
from kltui.session.events import HelperFinished  # noqa: E402
from kltui.session.recording import read_recording  # noqa: E402

HELPERS = ("match", "prefill_cache_hit", "decode_cache_hit")
SGLANG_NAMES = {
    "match": "test_input_output_logprobs_match_helper",
    "prefill_cache_hit": "test_input_output_logprobs_match_prefill_cache_hit_helper",
    "decode_cache_hit": "test_input_output_logprobs_match_decode_cache_hit_helper",
}

# Runs in the SGLang environment: one line on stdin per round, one JSON line back per round.
WORKER = r"""
import contextlib, io, json, math, re, sys, time
from sglang.test import kl_test_utils as k
url, model, ids_path, max_new = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
names = json.loads(sys.argv[5])
ids = json.load(open(ids_path))
k.get_input_ids = lambda *a, **kw: ids  # the bench's ids instead of LongBench
thresholds = {model: {"kl_div": math.inf}}
out = sys.stdout
for _ in sys.stdin:
    res = {}
    t_all = time.perf_counter()
    for key, name in names.items():
        buf = io.StringIO()
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(buf):
            getattr(k, name)(url, thresholds, model, max_samples=len(ids), max_new_tokens=max_new)
        secs = time.perf_counter() - t0
        found = re.findall(r"avg_kl_div=(\S+)", buf.getvalue())
        divs = re.findall(r"kl_divs=(\[[^\]]*\])", buf.getvalue())
        # numpy 2 prints np.float64(x) inside the list
        vals = [v.strip().removeprefix("np.float64(").removesuffix(")")
                for v in divs[-1][1:-1].split(",")] if divs else None
        res[key] = {"seconds": secs, "avg_kl_div": float(found[-1]) if found else None,
                    "kl_divs": [float(v) for v in vals if v] if vals is not None else None}
    res["total"] = time.perf_counter() - t_all
    out.write(json.dumps(res) + "\n")
    out.flush()
"""

# name -> RunConfig overrides; "tui" runs the live dashboard headless
VARIANTS: dict[str, dict] = {
    "kltui check": {},
    "kltui check --extras 0": {"extras": 0},
    "kltui check --stream": {"stream": True},
    "kltui check --stream --stream-interval 1": {"stream": True, "stream_interval": 1},
    # yes_flush: the dashboard would otherwise ask before flushing a server it may share
    "kltui (live TUI)": {"tui": True, "yes_flush": True},
    # the whole `kltui check` process, start to exit, as a user times it (issue 19)
    "kltui check (whole process)": {"process": True},
}


class SGLangWorker:
    def __init__(self, cmd: str, url: str, model: str, ids_path: str, max_new: int) -> None:
        args = [*shlex.split(cmd), "-c", WORKER, url, model, ids_path, str(max_new)]
        args.append(json.dumps(SGLANG_NAMES))
        self.proc = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
        )

    def run(self) -> dict:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"the SGLang worker died (exit {self.proc.wait()}); see its stderr")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def make_ids(n: int, lo: int, hi: int, vocab: int, seed: int) -> list[list[int]]:
    # Ids 3 .. vocab-2: no special tokens, and not the last id (SGLang 0.5.17 reports id 0 for
    # it in input_token_logprobs, see shared/gpu_sglang/README.md).
    rng = np.random.default_rng(seed)
    return [
        rng.integers(3, vocab - 1, size=int(rng.integers(lo, hi + 1))).tolist() for _ in range(n)
    ]


def vocab_of(model_path: str, default: int) -> int:
    try:
        return int(json.loads((Path(model_path) / "config.json").read_text())["vocab_size"])
    except (OSError, KeyError, ValueError, TypeError):
        return default


def event_span(path: str) -> dict:
    rec = read_recording(path)
    t = rec.times
    gate_end = max(
        (tt for ev, tt in zip(rec.events, t, strict=True) if isinstance(ev, HelperFinished)),
        default=t[-1],
    )
    return {"span_s": t[-1] - t[0], "gate_s": gate_end - t[0], "bytes": os.path.getsize(path)}


async def run_kltui(cfg: RunConfig, work: Path, tag: str) -> dict:
    rec, js = work / f"{tag}.kltui.jsonl", work / f"{tag}.json"
    for p in (rec, js):
        p.unlink(missing_ok=True)
    c0, t0 = time.process_time(), time.perf_counter()
    await run_check(
        cfg,
        json_path=str(js),
        record_path=str(rec),
        console=Console(file=io.StringIO(), width=200),
    )
    out = {"call_s": time.perf_counter() - t0, "client_cpu_s": time.process_time() - c0}
    out.update(event_span(str(rec)))
    res = json.loads(js.read_text())
    out["avg_kl_div"] = {h: res["helpers"][h]["avg_kl_div"] for h in HELPERS}
    out["kl_divs"] = per_sample(res)
    return out


async def run_tui(cfg: RunConfig, work: Path, tag: str) -> dict:
    from kltui.tui.app import KltuiApp
    from kltui.tui.feeds import LiveFeed

    rec = work / f"{tag}.kltui.jsonl"
    rec.unlink(missing_ok=True)
    app = KltuiApp(LiveFeed(cfg, str(rec)))
    c0, t0 = time.process_time(), time.perf_counter()
    async with app.run_test(headless=True, size=(200, 50)):
        while app.store is None or app.store.finished is None or app.status.running:
            await asyncio.sleep(0.01)
    out = {"call_s": time.perf_counter() - t0, "client_cpu_s": time.process_time() - c0}
    out.update(event_span(str(rec)))
    out["avg_kl_div"] = {
        st.helper: st.summary.avg_kl_div if st.summary else None
        for st in app.store.helpers.values()
    }
    return out


def run_process(url: str, base: dict, work: Path, tag: str, extra: list[str]) -> dict:
    """`python -m kltui check` in a fresh process; the split of its wall time from event times."""
    rec, js = work / f"{tag}.kltui.jsonl", work / f"{tag}.json"
    for p in (rec, js):
        p.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "kltui", "check", "--server", url, "--prompts", base["prompts"]]
    argv += ["--samples", str(base["samples"]), "--max-new-tokens", str(base["max_new_tokens"])]
    argv += ["--helpers", ",".join(base["helpers"]), "--max-prompt-tokens", "0"]
    argv += ["--json", str(js), "--record", str(rec), *extra]
    if base.get("tokenizer"):
        argv += ["--tokenizer", base["tokenizer"]]
    # KLTUI_BENCH_SITE: a folder put first on PYTHONPATH, e.g. holding an empty sitecustomize.py
    # that shadows the GPU image's (it imports transformers at every Python start, 11.8 s)
    pre = os.environ.get("KLTUI_BENCH_SITE")
    path = f"{pre + ':' if pre else ''}{ROOT}:{os.environ.get('PYTHONPATH', '')}"
    env = dict(os.environ, PYTHONPATH=path)
    w0 = time.time()
    t0 = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, env=env)
    wall = time.perf_counter() - t0
    (work / f"{tag}.console.txt").write_text(proc.stdout + proc.stderr)
    w1 = time.time()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"kltui check exited {proc.returncode}: {proc.stderr[-2000:]}")
    rec_ = read_recording(str(rec))
    created = float(json.loads(rec.read_text().split("\n", 1)[0])["created"])
    starts = [
        t
        for ev, t in zip(rec_.events, rec_.times, strict=True)
        if type(ev).__name__ == "HelperStarted"
    ]
    gate_end = max(
        t for ev, t in zip(rec_.events, rec_.times, strict=True) if isinstance(ev, HelperFinished)
    )
    res = json.loads(js.read_text())
    return {
        "call_s": wall,
        "span_s": wall,  # the row's figure is the whole process
        "gate_s": gate_end - min(starts),
        "client_cpu_s": None,
        # the largest child so far: kltui's own peak RSS (the SGLang worker is not a child here)
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
        "bytes": os.path.getsize(rec),
        # where the seconds outside the gate go
        "split": {
            "start_to_recorder": created - w0,
            "recorder_to_first_helper": min(starts),  # recording times count from `created`
            "gate": gate_end - min(starts),
            "after_gate_to_last_event": rec_.times[-1] - gate_end,
            "last_event_to_exit": w1 - (created + rec_.times[-1]),
        },
        "avg_kl_div": {h: res["helpers"][h]["avg_kl_div"] for h in HELPERS},
        "kl_divs": per_sample(res),
    }


def per_sample(res: dict) -> dict:
    """Each helper's per-sample mean k3 in sample order: SGLang's `kl_divs`."""
    return {
        h: [s["mean_k3"] for s in sorted(res["helpers"][h]["per_sample"], key=lambda s: s["index"])]
        for h in HELPERS
    }


def same_as_sglang(kl: dict, sg: dict) -> bool:
    """avg_kl_div and, where both have them, every per-sample k3 mean equal bit for bit."""
    for h in HELPERS:
        if kl["avg_kl_div"].get(h) != sg[h]["avg_kl_div"]:
            return False
        if "kl_divs" in kl and sg[h].get("kl_divs") is not None:
            if kl["kl_divs"][h] != sg[h]["kl_divs"]:
                return False
    return True


def med(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


async def server_facts(url: str) -> dict:
    async with httpx.AsyncClient(base_url=url, timeout=30) as c:
        for route in ("/server_info", "/get_server_info"):
            r = await c.get(route)
            if r.status_code == 200:
                return r.json()
    return {}


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--server", help="SGLang server URL (http://127.0.0.1:30001)")
    ap.add_argument("--reference", action="store_true", help="start the embedded reference server")
    ap.add_argument("--sglang-python", required=True, help="command that runs SGLang's python")
    ap.add_argument("--model", help="tokenizer/model path for SGLang's helpers (/server_info)")
    ap.add_argument("--samples", type=int, default=32)
    ap.add_argument("--max-new-tokens", type=int, default=512)
    ap.add_argument("--prompt-tokens", default="1000-2500", help="LO-HI prompt lengths")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--budget-s", type=float, default=330, help="no new round after this")
    ap.add_argument("--variants", help="comma list of variant names (default: all)")
    ap.add_argument("--out", default="bench_gate.json")
    ap.add_argument(
        "--kltui-args",
        default="",
        help="extra `kltui check` arguments for the whole-process variant (e.g. --tokenizer DIR)",
    )
    ap.add_argument("--ids", help="a JSON file of token-id lists to use instead of random ids")
    ap.add_argument(
        "--tokenizer",
        help="kltui's local tokenizer (a --skip-tokenizer-init server): every kltui variant",
    )
    ap.add_argument("--no-warmup", action="store_true", help="no uncounted first round")
    ap.add_argument("--source", action="store_true", help="do not byte-compile kltui first")
    ap.add_argument("--work", help="folder for the runs' JSON and recordings (default: a temp dir)")
    args = ap.parse_args()
    if bool(args.server) == bool(args.reference):
        ap.error("give exactly one of --server URL or --reference")
    srv = None
    if args.reference:
        from kltui.reference.launcher import ReferenceServer

        srv = ReferenceServer()
        srv.__enter__()
        url = srv.url
    else:
        url = args.server if "://" in args.server else f"http://{args.server}"
    try:
        return await bench(args, url)
    finally:
        if srv is not None:
            srv.__exit__(None, None, None)


async def bench(args, url: str) -> int:
    t_start = time.perf_counter()
    info = await server_facts(url)
    model = args.model or info.get("model_path") or ""
    lo, hi = (int(x) for x in args.prompt_tokens.split("-"))
    if args.ids:
        ids = json.loads(Path(args.ids).read_text())[: args.samples]
    else:
        ids = make_ids(args.samples, lo, hi, vocab_of(model, 1000), args.seed)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="kltui-bench-gate-"))
    work.mkdir(parents=True, exist_ok=True)
    ids_path = work / "ids.json"
    ids_path.write_text(json.dumps(ids))
    names = [v.strip() for v in args.variants.split(",")] if args.variants else list(VARIANTS)
    built = None
    if any(VARIANTS[n].get("process") for n in names):
        built = compile_checkout(args.source)
        print(built, flush=True)
    base = dict(
        servers=[url],
        helpers=list(HELPERS),
        samples=args.samples,
        max_new_tokens=args.max_new_tokens,
        prompts=str(ids_path),
        max_prompt_tokens=None,
        tokenizer=args.tokenizer,
    )

    def cfg_of(name: str) -> RunConfig:
        over = {k: v for k, v in VARIANTS[name].items() if k not in ("tui", "process")}
        return RunConfig(**base, **over)

    async def run_variant(name: str, tag: str) -> dict:
        if VARIANTS[name].get("process"):
            return await asyncio.to_thread(
                run_process, url, base, work, tag, shlex.split(args.kltui_args)
            )
        if VARIANTS[name].get("tui"):
            return await run_tui(cfg_of(name), work, tag)
        return await run_kltui(cfg_of(name), work, tag)

    worker = SGLangWorker(args.sglang_python, url, model, str(ids_path), args.max_new_tokens)
    rounds: list[dict] = []
    try:
        # warm-up, not counted: first requests compile kernels and fill allocator pools
        if not args.no_warmup:
            worker.run()
            await run_variant(names[0], "warmup")
        for r in range(args.repeats):
            if r and time.perf_counter() - t_start > args.budget_s:
                break
            order = ["sglang", *names]
            if r % 2:
                order.reverse()
            rnd: dict = {"load": os.getloadavg()[0]}  # a shared machine moves the figures
            for name in order:
                tag = f"r{r}-{names.index(name) if name in names else 's'}"
                rnd[name] = worker.run() if name == "sglang" else await run_variant(name, tag)
            rounds.append(rnd)
            print(f"round {r + 1} (load {rnd['load']:.1f}): " + ", ".join(
                f"{n} {(x['total'] if n == 'sglang' else x['span_s']):.2f}s"
                for n, x in rnd.items() if n != "load"
            ), flush=True)  # fmt: skip
    finally:
        worker.close()
    result = summarize(args, url, info, model, names, rounds, time.perf_counter() - t_start)
    result["kltui_bytecode"] = built
    Path(args.out).write_text(json.dumps(result, indent=1))
    print_table(result)
    print(f"json: {args.out}")
    return 0


def summarize(args, url, info, model, names, rounds, wall) -> dict:
    sg = [r["sglang"]["total"] for r in rounds]
    base = med(sg)
    rows = [{"run": "SGLang's three helpers", "seconds": base, "ratio": 1.0 if base else None}]
    for name in names:
        spans = [r[name]["span_s"] for r in rounds]
        same = [same_as_sglang(r[name], r["sglang"]) for r in rounds]
        rows.append(
            {
                "run": name,
                "seconds": med(spans),
                "ratio": med(spans) / base if base else None,
                "gate_seconds": med([r[name]["gate_s"] for r in rounds]),
                "client_cpu_s": med(
                    [r[name]["client_cpu_s"] for r in rounds if r[name]["client_cpu_s"] is not None]
                ),
                "split": {
                    k: med([r[name]["split"][k] for r in rounds])
                    for k in (rounds[0][name].get("split") or {} if rounds else {})
                }
                or None,
                "recording_bytes": rounds[0][name]["bytes"] if rounds else None,
                "bit_identical_rounds": f"{sum(same)}/{len(same)}",
            }
        )
    return {
        "bench": "bench/bench_gate.py",
        "when": time.strftime("%Y-%m-%d %H:%M:%S"),
        "kltui": kltui.__version__,
        "kltui_file": kltui.__file__,
        "python": platform.python_version(),
        "machine": platform.machine(),
        "server": url,
        "sglang_version": info.get("version"),
        "server_flags": {
            k: info.get(k)
            for k in (
                "attention_backend",
                "enable_deterministic_inference",
                "disable_cuda_graph",
                "stream_interval",
                "page_size",
                "tp_size",
            )
        },
        "model": model,
        "workload": {
            "samples": args.samples,
            "prompt_tokens": args.prompt_tokens,
            "max_new_tokens": args.max_new_tokens,
            "seed": args.seed,
        },
        "rounds_done": len(rounds),
        "load_averages": [r.get("load") for r in rounds],
        "wall_s": wall,
        "table": rows,
        "rounds": rounds,
    }


def print_table(res: dict) -> None:
    w = res["workload"]
    print(
        f"\n{w['samples']} prompts of {w['prompt_tokens']} tokens x {w['max_new_tokens']} new "
        f"tokens, sglang {res['sglang_version']}, median of {res['rounds_done']} rounds"
        f" (load average at each round's start: "
        f"{', '.join(f'{x:.1f}' for x in res['load_averages'] if x is not None)})"
    )
    print(
        "| run | seconds | ratio to SGLang | gate only | client CPU | recording | "
        "avg_kl_div bit-identical |\n|---|---|---|---|---|---|---|"
    )
    splits = [r for r in res["table"] if r.get("split")]
    for row in res["table"]:

        def f(key, row=row):
            v = row.get(key)
            return f"{v:.2f}" if isinstance(v, int | float) else "–"

        size = row.get("recording_bytes")
        print(
            f"| {row['run']} | {f('seconds')} | {f('ratio')} | {f('gate_seconds')} | "
            f"{f('client_cpu_s')} | {'–' if size is None else f'{size / 1e6:.2f} MB'} | "
            f"{row.get('bit_identical_rounds', '–')} |"
        )
    for row in splits:
        parts = ", ".join(f"{k} {v:.2f}s" for k, v in row["split"].items())
        print(f"{row['run']}, median split: {parts}")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
