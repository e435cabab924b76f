"""The Hugging Face transformers reference, in a process of its own: run as a bare script
(`python hf_worker.py`) by `kltui.engines.hf.HFReference`, it is the only code of kltui that
imports torch and transformers, so neither the TUI nor `kltui check` pays for them, and a
reference that runs out of memory or crashes takes only this process down.

Protocol: one JSON object a line. The client writes requests on stdin; the worker answers on
the stdout it was started with (fd 1 is pointed at stderr first, so that a library's stray
print cannot corrupt an answer). Arrays travel as {"dtype", "shape", "b64"} (`pack`/`unpack`,
which the client imports from here without importing torch).

  {"op": "load", "path", "dtype", "device", "attn_implementation", "batch_size"}
      -> {"event": "progress", "stage": "weights", ...}... then {"event": "loaded", "info": {...}}
  {"op": "score", "seqs": [ids...], "starts": [int...], "k": K}
      -> {"event": "progress", "stage": "forward", "done", "total"}... then
         {"event": "result", "results": [{"lp": [P], "top_ids": [P, K], "top_lp": [P, K]}]}
      Position j >= start of a sequence is scored from the logits at j - 1 (teacher forcing:
      the logprob the model gives token j after tokens 0..j-1), log-softmax taken in float32.
      The scored rows' logits stay here (in the model's dtype, with their float32 logsumexp)
      until the next score, for:
  {"op": "gather", "ids": [[P, N] int64 per sequence]} -> {"event": "result", "results":
      [{"lp": [P, N]}]}: the logprob of any id at any scored position (-1: padding, NaN back).
  {"op": "quit"}: exit 0. End of stdin ends the worker too.
Every failure is {"event": "error", "kind": "oom" | "load" | "bad-request" | "error",
"message"}; after an "oom" the retained logits are dropped and the worker keeps serving.

KLTUI_HF_THREADS=N sets torch's CPU threads (on a CPU shared with the engine under test, one
thread can be ten times faster than spinning threads that wait for cores).

With batch_size 1 (the default) every sequence is its own forward: no padding, no batch
effects. A larger batch right-pads sequences to the longest of each batch under an attention
mask, which changes the kernels' shapes and so the reference's own rounding.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    # run as a script, its folder (kltui/engines, whose http.py would shadow the standard
    # library's http) must not be on the import path
    _here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]

import base64  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

PR_SET_PDEATHSIG = 1
SIGTERM = 15


def pack(a: np.ndarray) -> dict[str, Any]:
    """An array as a JSON object (little-endian bytes, base64)."""
    a = np.ascontiguousarray(a)
    dt = a.dtype.newbyteorder("<")
    return {
        "dtype": dt.str,
        "shape": list(a.shape),
        "b64": base64.b64encode(a.astype(dt).tobytes()).decode("ascii"),
    }


ALLOWED_DTYPES = ("<f4", "<f8", "<i4", "<i8")


def unpack(d: object) -> np.ndarray:
    """The array of a `pack` object; ValueError for anything else."""
    if not isinstance(d, dict) or d.get("dtype") not in ALLOWED_DTYPES:
        raise ValueError("not a packed array")
    shape = d.get("shape")
    if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise ValueError("packed array without a valid shape")
    raw = base64.b64decode(str(d.get("b64", "")), validate=True)
    a = np.frombuffer(raw, dtype=np.dtype(d["dtype"]))
    if a.size != int(np.prod(shape)):
        raise ValueError("packed array of the wrong size")
    return a.reshape(shape)


class Worker:
    """The loaded model and the logits of the last score, kept for `gather`."""

    def __init__(self, out) -> None:
        self.out = out
        self.model: Any = None
        self.device: Any = None
        self.batch_size = 1
        self.kept: list[tuple[Any, Any]] = []  # per sequence: logits rows [P, V], lse [P]

    def send(self, obj: dict) -> None:
        self.out.write(json.dumps(obj, separators=(",", ":")) + "\n")
        self.out.flush()

    def progress(self, stage: str, **kw: Any) -> None:
        self.send({"event": "progress", "stage": stage, **kw})

    # ------------------------------------------------------------------ load

    def load(self, req: dict) -> None:
        t0 = time.monotonic()
        self.progress("weights", note="importing torch and transformers")
        import torch
        import transformers

        threads = os.environ.get("KLTUI_HF_THREADS", "").strip()
        if threads.isdigit() and int(threads) > 0:
            torch.set_num_threads(int(threads))
        path = str(req.get("path"))
        with open(os.path.join(path, "config.json"), encoding="utf-8") as f:
            config = json.load(f)
        want = req.get("device") or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype_name = str(req.get("dtype") or "auto")
        if dtype_name == "auto":
            dtype_name = str(config.get("torch_dtype") or config.get("dtype") or "float32")
        dtype = getattr(torch, dtype_name, None)
        if not isinstance(dtype, torch.dtype):
            raise LoadError(f"unknown dtype {dtype_name!r}")
        kw: dict[str, Any] = {"dtype": dtype}
        if req.get("attn_implementation"):
            kw["attn_implementation"] = str(req["attn_implementation"])
        files = sorted(n for n in os.listdir(path) if n.endswith(".safetensors"))
        size = sum(os.path.getsize(os.path.join(path, n)) for n in files)
        self.progress(
            "weights",
            note=f"loading {len(files)} safetensors file(s), {size / 2**20:.1f} MiB, as {dtype_name}",
        )
        model = transformers.AutoModelForCausalLM.from_pretrained(path, **kw)
        self.progress("weights", note=f"moving to {want}")
        self.device = torch.device(want)
        self.model = model.to(self.device).eval()
        self.batch_size = max(1, int(req.get("batch_size") or 1))
        name = self.device.type
        if self.device.type == "cuda":
            name = f"{self.device} ({torch.cuda.get_device_name(self.device)})"
        self.send(
            {
                "event": "loaded",
                "info": {
                    "transformers_version": transformers.__version__,
                    "torch_version": torch.__version__,
                    "device": name,
                    "dtype": str(next(self.model.parameters()).dtype).removeprefix("torch."),
                    "attn_implementation": getattr(self.model.config, "_attn_implementation", None),
                    "model_class": type(self.model).__name__,
                    "parameters": int(sum(p.numel() for p in self.model.parameters())),
                    "vocab_size": int(self.model.config.vocab_size),
                    "batch_size": self.batch_size,
                    "load_seconds": round(time.monotonic() - t0, 3),
                },
            }
        )

    # ----------------------------------------------------------------- score

    def score(self, req: dict) -> None:
        import torch

        seqs = [unpack(s).astype(np.int64) for s in req.get("seqs") or []]
        starts = [int(s) for s in req.get("starts") or []]
        k = int(req.get("k") or 0)
        if len(starts) != len(seqs) or any(
            not 1 <= s <= q.size for s, q in zip(starts, seqs, strict=True)
        ):
            raise BadRequest("each sequence needs a start in [1, len]")
        vocab = int(self.model.config.vocab_size)
        for q in seqs:
            if q.size and (q.min() < 0 or q.max() >= vocab):
                raise BadRequest(f"token id outside the vocabulary of {vocab}")
        self.kept = []
        if self.device is not None and self.device.type == "cuda":
            torch.cuda.empty_cache()
        results = []
        total = len(seqs)
        for lo in range(0, total, self.batch_size):
            batch = list(range(lo, min(total, lo + self.batch_size)))
            with torch.inference_mode():
                rows = self._forward([seqs[i] for i in batch], [starts[i] for i in batch])
                for (logits, lse), i in zip(rows, batch, strict=True):
                    tok = torch.as_tensor(seqs[i][starts[i] :], device=self.device)
                    lp = logits.gather(1, tok[:, None]).float()[:, 0] - lse
                    kk = min(k, logits.shape[1])
                    res = {"lp": pack(lp.cpu().numpy().astype(np.float32))}
                    if kk:
                        top_v, top_i = torch.topk(logits, kk, dim=1)
                        res["top_ids"] = pack(top_i.cpu().numpy().astype(np.int64))
                        res["top_lp"] = pack(
                            (top_v.float() - lse[:, None]).cpu().numpy().astype(np.float32)
                        )
                    else:
                        res["top_ids"] = pack(np.zeros((tok.shape[0], 0), np.int64))
                        res["top_lp"] = pack(np.zeros((tok.shape[0], 0), np.float32))
                    results.append(res)
                    self.kept.append((logits, lse))
            self.progress("forward", done=len(results), total=total)
        self.send({"event": "result", "results": results})

    def _forward(self, seqs: list[np.ndarray], starts: list[int]) -> list[tuple[Any, Any]]:
        """Per sequence: the logits that score positions start.. (model dtype) and their
        float32 logsumexp."""
        import torch

        out = []
        if len(seqs) == 1:
            ids = torch.as_tensor(seqs[0][None, :], device=self.device)
            keep = int(seqs[0].size - starts[0] + 1)
            try:
                logits = self.model(input_ids=ids, logits_to_keep=keep).logits[0]
            except TypeError:  # an older transformers without logits_to_keep
                logits = self.model(input_ids=ids).logits[0][-keep:]
            rows = [logits[:-1]]
        else:
            n = max(s.size for s in seqs)
            ids = torch.zeros((len(seqs), n), dtype=torch.long, device=self.device)
            mask = torch.zeros((len(seqs), n), dtype=torch.long, device=self.device)
            for j, s in enumerate(seqs):
                ids[j, : s.size] = torch.as_tensor(s, device=self.device)
                mask[j, : s.size] = 1
            logits = self.model(input_ids=ids, attention_mask=mask).logits
            rows = [
                logits[j, st - 1 : s.size - 1]
                for j, (s, st) in enumerate(zip(seqs, starts, strict=True))
            ]
        for r in rows:
            out.append((r, torch.logsumexp(r.float(), dim=1)))
        return out

    def gather(self, req: dict) -> None:
        import torch

        asked = [unpack(a).astype(np.int64) for a in req.get("ids") or []]
        if len(asked) != len(self.kept):
            raise BadRequest(f"{len(asked)} id tables for {len(self.kept)} scored sequences")
        results = []
        for ids, (logits, lse) in zip(asked, self.kept, strict=True):
            if ids.ndim != 2 or ids.shape[0] != logits.shape[0]:
                raise BadRequest("an id table must be [positions, N]")
            if ids.size and ids.max() >= logits.shape[1]:
                raise BadRequest("token id outside the vocabulary")
            t = torch.as_tensor(np.maximum(ids, 0), device=self.device)
            with torch.inference_mode():
                lp = (logits.gather(1, t).float() - lse[:, None]).cpu().numpy()
            lp = np.where(ids >= 0, lp, np.nan).astype(np.float32)
            results.append({"lp": pack(lp)})
        self.send({"event": "result", "results": results})


class LoadError(Exception):
    """The model cannot be loaded as asked."""


class BadRequest(Exception):
    """A request the worker cannot serve."""


def _is_oom(e: BaseException) -> bool:
    name = type(e).__name__
    text = str(e).lower()
    return (
        name == "OutOfMemoryError"
        or isinstance(e, MemoryError)
        or "out of memory" in text
        or "can't allocate memory" in text
    )


def _die_with_parent() -> None:
    """The worker must not outlive kltui: SIGTERM when the parent dies (Linux; elsewhere the
    end of stdin does it)."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, SIGTERM)
    except (OSError, AttributeError):
        pass


def main() -> int:
    _die_with_parent()
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # a library's print goes to the log, never into the protocol
    sys.stdout = sys.stderr
    w = Worker(out)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            op = req.get("op") if isinstance(req, dict) else None
            if op == "quit":
                return 0
            if op == "load":
                w.load(req)
            elif w.model is None:
                raise BadRequest(f"{op!r} before load")
            elif op == "score":
                w.score(req)
            elif op == "gather":
                w.gather(req)
            else:
                raise BadRequest(f"unknown op {op!r}")
        except BaseException as e:  # every failure is one answer; the client decides
            if isinstance(e, KeyboardInterrupt | SystemExit):
                raise
            kind = "oom" if _is_oom(e) else "error"
            if kind != "oom" and (isinstance(e, LoadError) or w.model is None):
                kind = "load"
            elif isinstance(e, BadRequest):
                kind = "bad-request"
            if kind == "oom":
                w.kept = []
                try:
                    import torch

                    if torch.cuda.is_available():
                        torch.cuda.empty_cache()
                except ImportError:
                    pass
            w.send({"event": "error", "kind": kind, "message": f"{type(e).__name__}: {e}"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
