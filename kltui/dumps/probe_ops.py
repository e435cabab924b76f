"""`kltui probe-ops`: is each usual suspect batch-invariant on this device and dtype?

For each op and each N, row 0 computed in a launch of M=N rows is compared bit for bit with the
same row computed alone (M=1), from the same seeded data: the guide's ten-line repro at M=1 vs
M=N, for the ops on a prefill/decode path. Attention is probed in both of its shapes: the prefill
shape (row 0 of a causal launch of N queries vs that query alone) and the single-query decode
shape (the last query of a causal prefill of N vs one query over the same N keys).

The GPU is probed when torch sees one (bfloat16 and float32, the dtypes a server runs in and
the one deterministic kernels are often checked in), else the CPU (float32); the device is named
in the table and the JSON, so a CPU result is never read as the GPU's.

Exit codes: 0 every op bit-identical at every N; 1 some op differs (listed); 2 usage (no torch,
no such device or dtype, no N >= 2 to compare against M=1)."""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

from kltui.errors import EXIT_USAGE, UsageError, passed_exit

DEFAULT_SIZES = (2, 8, 16, 64, 256, 1024)


def add_parser(sub) -> None:
    """Add the `probe-ops` subcommand to the argument parser."""
    p = sub.add_parser(
        "probe-ops",
        help="M=1 vs M=N bit-identity of matmul, norms, softmax, attention on this device",
        epilog="exit codes: 0 all ops bit-identical; 1 some op differs; 2 usage error.",
    )
    p.add_argument("--device", help="cuda[:i] or cpu (default: cuda when torch sees a GPU)")
    p.add_argument(
        "--dtype",
        help="float32, bfloat16 or float16 (default: bfloat16 and float32 on cuda, float32 on cpu)",
    )
    p.add_argument(
        "--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="N values, at least one >= 2"
    )
    p.add_argument("--hidden", type=int, default=1024, help="K and H of the matmuls (1024)")
    p.add_argument("--vocab", type=int, default=32000, help="width of softmax/log_softmax")
    p.add_argument("--heads", type=int, default=8, help="attention heads (8)")
    p.add_argument("--head-dim", type=int, default=128, help="attention head size (128)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs (0)")
    p.add_argument("--json", metavar="FILE", help="write the results as JSON")
    p.set_defaults(func=cmd_probe_ops)


def _ops(torch, F, dtype, dev, a):
    """(name, shape text, fn(N) -> (row in M=N launch, same row at M=1)) for each suspect."""
    g = torch.Generator(device="cpu").manual_seed(a.seed)
    nmax, k, v, h, d = max(a.sizes), a.hidden, a.vocab, a.heads, a.head_dim

    def rnd(*shape, scale=1.0):
        return (torch.randn(*shape, generator=g) * scale).to(dev, dtype)

    x = rnd(nmax, k)
    w = rnd(k, k, scale=k**-0.5)
    bias = rnd(k)
    nw = rnd(k, scale=0.1) + 1
    logits = rnd(nmax, v, scale=3.0)
    bx = rnd(4, nmax, k)
    bw = rnd(4, k, k, scale=k**-0.5)
    q, kk, vv = (rnd(1, h, nmax, d) for _ in range(3))

    def rms(t):
        if hasattr(F, "rms_norm"):
            return F.rms_norm(t, (k,), nw, 1e-6)
        return t * torch.rsqrt(t.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(t.dtype) * nw

    def rows(fn, src):
        return lambda n: (fn(src[:n])[0], fn(src[:1].clone())[0])

    def bmm(n):
        return torch.bmm(bx[:, :n], bw)[:, 0], torch.bmm(bx[:, :1].clone(), bw)[:, 0]

    sdpa = F.scaled_dot_product_attention

    def sdpa_prefill(n):
        full = sdpa(q[:, :, :n], kk[:, :, :n], vv[:, :, :n], is_causal=True)[:, :, 0]
        one = sdpa(q[:, :, :1].clone(), kk[:, :, :1].clone(), vv[:, :, :1].clone(), is_causal=True)
        return full, one[:, :, 0]

    def sdpa_decode(n):
        full = sdpa(q[:, :, :n], kk[:, :, :n], vv[:, :, :n], is_causal=True)[:, :, n - 1]
        one = sdpa(q[:, :, n - 1 : n].clone(), kk[:, :, :n], vv[:, :, :n])
        return full, one[:, :, 0]

    return [
        ("matmul", f"[N,{k}]@[{k},{k}]", rows(lambda t: t @ w, x)),
        ("addmm", f"bias+[N,{k}]@[{k},{k}]", rows(lambda t: torch.addmm(bias, t, w), x)),
        ("linear", f"F.linear [N,{k}]x[{k},{k}]", rows(lambda t: F.linear(t, w.t()), x)),
        ("bmm", f"[4,N,{k}]@[4,{k},{k}]", bmm),
        ("rms_norm", f"[N,{k}]", rows(rms, x)),
        ("log_softmax", f"[N,{v}]", rows(lambda t: torch.log_softmax(t.float(), -1), logits)),
        ("softmax", f"[N,{v}]", rows(lambda t: torch.softmax(t, -1), logits)),
        ("mean", f"[N,{k}].mean(-1)", rows(lambda t: t.mean(-1), x)),
        ("sdpa_prefill", f"causal q,k,v [1,{h},N,{d}] row 0", sdpa_prefill),
        ("sdpa_decode", f"last of causal N vs 1 query over N keys, {h}x{d}", sdpa_decode),
    ]


def device_name(torch, dev) -> str:
    """What the device is, in words: the GPU's name, or the CPU's."""
    if dev.type == "cuda":
        return torch.cuda.get_device_name(dev)
    return f"CPU ({platform.processor() or platform.machine() or 'unknown'})"


def probe(a) -> dict:
    """Every op at every N, for each of `a.dtypes` on `a.device`."""
    import torch

    dev = torch.device(a.device)
    runs = [probe_dtype(a, dt) for dt in a.dtypes]
    return {
        "device": str(dev),
        "device_name": device_name(torch, dev),
        "torch": torch.__version__,
        "sizes": a.sizes,
        "dtypes": list(a.dtypes),
        "identical": all(r["identical"] for r in runs),
        "probes": runs,
    }


def probe_dtype(a, dtype_name: str) -> dict:
    """M=1 vs M=N bit-identity of each op at one dtype."""
    import torch
    import torch.nn.functional as F

    from kltui.dumps.compare import diff_rows

    dev = torch.device(a.device)
    dtype = getattr(torch, dtype_name)
    out: dict = {"dtype": dtype_name, "ops": []}
    with torch.inference_mode():
        for name, shape, fn in _ops(torch, F, dtype, dev, a):
            results = []
            for n in a.sizes:
                big, one = fn(n)
                rd = diff_rows(torch, big.reshape(1, -1).cpu(), one.reshape(1, -1).cpu(), [0], name)
                results.append({"n": n, "identical": rd.identical, "max_abs_diff": rd.max_abs_diff})
            out["ops"].append(
                {
                    "op": name,
                    "shape": shape,
                    "identical": all(r["identical"] for r in results),
                    "results": results,
                }
            )
    out["identical"] = all(o["identical"] for o in out["ops"])
    return out


def _table(res: dict, run: dict):
    from rich.table import Table
    from rich.text import Text

    t = Table(
        title=f"row 0 at M=N vs M=1 on {res['device']}: {res['device_name']} ({run['dtype']}, "
        f"torch {res['torch']})",
        header_style="bold",
        box=None,
    )
    t.add_column("op")
    t.add_column("shape")
    for n in res["sizes"]:
        t.add_column(f"N={n}", justify="right")
    t.add_column("invariant")
    for o in run["ops"]:
        cells = [
            Text("=", style="green")
            if r["identical"]
            else Text(
                f"{r['max_abs_diff']:.2e}",
                style="red",
            )
            for r in o["results"]
        ]
        verdict = Text("yes", style="green") if o["identical"] else Text("NO", style="bold red")
        t.add_row(o["op"], o["shape"], *cells, verdict)
    return t


def _check_shapes(args) -> None:
    """--sizes parsed into `args.sizes` (sorted, at least one N >= 2) and every shape option
    checked (UsageError, one line)."""
    try:
        args.sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    except ValueError:
        raise UsageError(f"--sizes {args.sizes!r}: expected comma-separated integers") from None
    if not args.sizes or min(args.sizes) < 1:
        raise UsageError("--sizes: give N values >= 1")
    if max(args.sizes) < 2:
        raise UsageError(
            f"--sizes {','.join(map(str, args.sizes))}: M=1 against M=1 compares a launch with "
            "itself; give at least one N >= 2"
        )
    for flag in ("hidden", "vocab", "heads", "head_dim"):
        if getattr(args, flag) < 1:
            raise UsageError(f"--{flag.replace('_', '-')} must be >= 1")


def _pick_device(args, torch) -> None:
    """`args.device` (cuda when there is one) and `args.dtypes` (bf16 and fp32 on a GPU) set
    and checked against this torch (UsageError, one line)."""
    if args.device is None:
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        dev = torch.device(args.device)
    except RuntimeError:
        raise UsageError(f"--device {args.device!r}: not a torch device") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise UsageError("--device cuda: no CUDA device is available to this torch")
    if dev.type not in ("cpu", "cuda"):
        raise UsageError(f"--device {args.device!r}: use cpu or cuda")
    if args.dtype is None:
        args.dtypes = ["float32"] if dev.type == "cpu" else ["bfloat16", "float32"]
    elif args.dtype in ("float32", "bfloat16", "float16", "float64"):
        args.dtypes = [args.dtype]
    else:
        raise UsageError(f"--dtype {args.dtype!r}: use float32, bfloat16 or float16")


def _write_json(path: str, res: dict) -> bool:
    """The probe's result written to `path`; False (the error printed) when it cannot be."""
    try:
        from kltui.session.codec import tag_floats  # NaN/inf as in every --json

        Path(path).write_text(json.dumps(tag_floats(res), indent=1, allow_nan=False) + "\n")
    except OSError as e:
        print(f"kltui: error: {path}: {e.strerror or e}", file=sys.stderr)
        return False
    return True


def cmd_probe_ops(args) -> int:
    """`kltui probe-ops`: each op at M=1 and M=N, compared bit for bit; 0 all identical, 1 not."""
    try:
        import torch
    except ImportError:
        raise UsageError("probe-ops needs torch: pip install 'kltui[reference]'") from None
    _check_shapes(args)
    _pick_device(args, torch)
    res = probe(args)
    if args.json and not _write_json(args.json, res):
        return EXIT_USAGE
    from kltui.console import make_console

    console = make_console()
    for run in res["probes"]:
        console.print(_table(res, run))
    differ = [
        f"{o['op']} ({run['dtype']})"
        for run in res["probes"]
        for o in run["ops"]
        if not o["identical"]
    ]
    where = f"on {res['device']} ({res['device_name']})"
    console.print(
        f"{where}: every op is bit-identical at M=1 and M=N"
        if not differ
        else f"{where}, not batch-invariant: {', '.join(differ)}"
    )
    return passed_exit(not differ)
