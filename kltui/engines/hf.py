"""The Hugging Face transformers reference as an engine client: a model folder on this machine,
loaded and run in a worker process (`hf_worker.py`, the only importer of torch and
transformers), teacher-forced on the token ids the helpers send.

`reference_identity` is what is known before the worker starts (the folder, its config.json,
the SHA-256 of config.json and *.safetensors from `weights.py`, the dtype and device asked):
the runner records it and checks the weights with it before anything is flushed. `HFReference`
starts the worker, reports its load and forward progress through a callback, and turns every
way the worker can fail (out of memory, an exception, a crash, a kill) into one EngineError
line naming it, with the last lines of its log.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from kltui.engines.errors import EngineError
from kltui.engines.hf_worker import pack, unpack
from kltui.engines.identity import EngineName, ServerIdentity
from kltui.engines.weights import folder_sha256
from kltui.errors import UsageError
from kltui.untrusted import one_line

WORKER = Path(__file__).with_name("hf_worker.py")
SCHEME = "hf:"
# an answer holds P x (1 + 2K) or P x N numbers per sequence; far below this
LINE_LIMIT = 2**31 - 1
LOG_TAIL = 6
DTYPES = ("auto", "float32", "bfloat16", "float16")
ATTN = ("sdpa", "eager", "flash_attention_2", "flash_attention_3", "flex_attention")

Progress = Callable[[str, dict], None]


@dataclass(frozen=True)
class HFSettings:
    """How the reference is run: `--baseline hf:PATH` and its --hf-* options (or the config
    file's `baseline: {hf: PATH, ...}`); None means the default."""

    path: str
    dtype: str | None = None  # None: the server's reported dtype, else the checkpoint's
    device: str | None = None  # None: cuda when available, else cpu
    attn_implementation: str | None = None  # None: transformers' default (sdpa)
    batch_size: int = 1  # sequences per forward; 1: no padding, no batch effects

    @property
    def url(self) -> str:
        """The key of the reference among a run's servers."""
        return SCHEME + str(Path(self.path).resolve())

    def to_dict(self) -> dict[str, Any]:
        """As RunConfig records it."""
        return {
            "hf": self.path,
            "dtype": self.dtype,
            "device": self.device,
            "attn_implementation": self.attn_implementation,
            "batch_size": self.batch_size,
        }

    @classmethod
    def of(cls, d: object) -> HFSettings | None:
        """Read a recorded `to_dict()` (None when there is none)."""
        if not isinstance(d, dict) or not isinstance(d.get("hf"), str):
            return None
        bs = d.get("batch_size")
        return cls(
            d["hf"],
            d.get("dtype") if isinstance(d.get("dtype"), str) else None,
            d.get("device") if isinstance(d.get("device"), str) else None,
            d.get("attn_implementation") if isinstance(d.get("attn_implementation"), str) else None,
            bs if isinstance(bs, int) and not isinstance(bs, bool) and bs > 0 else 1,
        )


def check_folder(path: str, where: str) -> dict:
    """The folder's config.json, or a UsageError naming `where` and what is missing."""
    folder = Path(path)
    if not folder.is_dir():
        raise UsageError(f"{where} {path}: no such folder")
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{where} {path}: no config.json (a transformers model folder)") from None
    except (OSError, ValueError) as e:
        raise UsageError(f"{where} {path}/config.json: cannot read it ({e})") from None
    if not isinstance(config, dict):
        raise UsageError(f"{where} {path}/config.json: not a JSON object")
    if not any(folder.glob("*.safetensors")):
        raise UsageError(f"{where} {path}: no *.safetensors weights")
    return config


def config_dtype(config: dict) -> str | None:
    """The checkpoint's own dtype (config.json's torch_dtype, or dtype in transformers 5)."""
    v = config.get("torch_dtype") or config.get("dtype")
    return str(v) if isinstance(v, str) else None


def reference_identity(s: HFSettings, dtype: str | None = None) -> ServerIdentity:
    """What the run records about the reference before its worker starts: the folder, the
    weights hash, the config's facts, and the settings asked (`dtype`: the resolved one)."""
    config = check_folder(s.path, "--baseline hf:")
    weights = folder_sha256(Path(s.path).resolve())
    arch = config.get("architectures")
    return ServerIdentity.of(
        {
            "url": s.url,
            "engine": "hf",
            "model_path": str(Path(s.path).resolve()),
            "served_model_name": Path(s.path).resolve().name,
            "architectures": [one_line(a, 80) for a in arch] if isinstance(arch, list) else None,
            "model_type": one_line(config["model_type"], 40)
            if isinstance(config.get("model_type"), str)
            else None,
            "vocab_size": config.get("vocab_size"),
            "max_model_len": config.get("max_position_embeddings"),
            "config_dtype": config_dtype(config),
            "dtype": dtype or s.dtype,
            "device": s.device,
            "attn_implementation": s.attn_implementation,
            "batch_size": s.batch_size,
            "tp_size": 1,
            **weights.record(),
        }
    )


@dataclass
class RefScore:
    """The reference's answer for one sequence: logprob of each scored token [P], and its
    top-k [P, K] (ids, logprobs) sorted by rank."""

    lp: np.ndarray
    top_ids: np.ndarray
    top_lp: np.ndarray


class HFReference:
    """A transformers model in a worker process, as an engine: health, identity, scoring."""

    engine = EngineName.HF

    def __init__(
        self,
        settings: HFSettings,
        *,
        dtype: str | None = None,
        timeout: float = 600.0,
        python: str | None = None,
        on_progress: Progress | None = None,
    ) -> None:
        self.settings = settings
        self.url = settings.url
        self.dtype = dtype or settings.dtype or "auto"
        self.timeout = timeout
        self.python = python or os.environ.get("KLTUI_HF_PYTHON") or sys.executable
        self.on_progress = on_progress
        self.info: dict[str, Any] = {}
        self._proc: asyncio.subprocess.Process | None = None
        self._log: Any = None

    # ------------------------------------------------------------ the worker

    def fail(self, message: str, kind: str = "worker") -> EngineError:
        """An EngineError naming the reference (its log's last lines added for a crash)."""
        return EngineError.of(self.url, message, kind)

    def _log_tail(self) -> str:
        if self._log is None:
            return ""
        try:
            self._log.flush()
            with open(self._log.name, "rb") as f:
                f.seek(0, 2)
                f.seek(max(0, f.tell() - 16384))
                lines = [ln for ln in f.read().decode("utf-8", "replace").splitlines() if ln]
        except OSError:
            return ""
        tail = " | ".join(one_line(ln, 200) for ln in lines[-LOG_TAIL:])
        return f"; its log: {tail}" if tail else ""

    async def start(self) -> None:
        """Start the worker and load the model (progress: stage "weights")."""
        if self._proc is not None:
            return
        self._log = tempfile.NamedTemporaryFile(  # noqa: SIM115 - lives as long as the worker
            "w+b", prefix="kltui-hf-", suffix=".log", delete=False
        )
        env = dict(os.environ, PYTHONUNBUFFERED="1", TOKENIZERS_PARALLELISM="false")
        try:
            self._proc = await asyncio.create_subprocess_exec(
                self.python,
                str(WORKER),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=self._log,
                env=env,
                limit=LINE_LIMIT,
            )
        except OSError as e:
            raise self.fail(f"cannot start the reference worker with {self.python} ({e})") from None
        s = self.settings
        self.info = await self._ask(
            {
                "op": "load",
                "path": str(Path(s.path).resolve()),
                "dtype": self.dtype,
                "device": s.device,
                "attn_implementation": s.attn_implementation,
                "batch_size": s.batch_size,
            },
            "loaded",
        )

    async def _ask(self, req: dict, done: str = "result") -> Any:
        proc = self._proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            raise self.fail("the reference worker is not running")
        try:
            proc.stdin.write(orjson.dumps(req) + b"\n")
            await proc.stdin.drain()
        except (BrokenPipeError, ConnectionResetError):
            raise await self._died() from None
        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            try:
                line = await asyncio.wait_for(proc.stdout.readline(), max(left, 0.001))
            except TimeoutError:
                raise self.fail(
                    f"the reference worker did not answer {req.get('op')} within "
                    f"{self.timeout:g} s{self._log_tail()}",
                    "timeout",
                ) from None
            if not line:
                raise await self._died()
            try:
                msg = orjson.loads(line)
            except orjson.JSONDecodeError:
                raise self.fail(
                    f"the reference worker wrote something that is not JSON: {line[:80]!r}",
                    "malformed-answer",
                ) from None
            ev = msg.get("event") if isinstance(msg, dict) else None
            if ev == "progress":
                if self.on_progress is not None:
                    self.on_progress(str(msg.get("stage")), msg)
            elif ev == "error":
                kind = str(msg.get("kind"))
                what = {"oom": "ran out of memory", "load": "could not load the model"}.get(
                    kind, "failed"
                )
                raise self.fail(
                    f"the reference worker {what} ({req.get('op')}): {msg.get('message')}",
                    "oom" if kind == "oom" else f"worker-{kind}",
                )
            elif ev == done:
                return msg.get("info") if done == "loaded" else msg.get("results")
            else:
                raise self.fail(f"the reference worker answered {ev!r}", "malformed-answer")

    async def _died(self) -> EngineError:
        proc = self._proc
        code = None
        if proc is not None:
            with contextlib.suppress(TimeoutError):
                code = await asyncio.wait_for(proc.wait(), 5)
        self._proc = None
        if code is not None and code < 0:
            how = f"was killed by signal {-code}"
            if -code == 9:
                how += " (the kernel's out-of-memory killer does this)"
        else:
            how = f"exited with code {code}"
        return self.fail(f"the reference worker {how}{self._log_tail()}", "worker-died")

    # --------------------------------------------------------- Engine protocol

    async def health(self) -> None:
        """Raise unless the worker is running."""
        if self._proc is None or self._proc.returncode is not None:
            raise self.fail("the reference worker is not running", "worker-died")

    async def wait_healthy(self) -> None:
        """Start the worker and load the model when that has not happened yet."""
        await self.start()

    async def identify(self) -> ServerIdentity:
        """The recorded identity, with what the loaded worker reports (dtype, device,
        attention implementation, versions)."""
        await self.start()
        base = reference_identity(self.settings, self.dtype).record()
        for key in ("dtype", "device", "attn_implementation"):
            if self.info.get(key) is not None:
                base[key] = one_line(self.info[key], 120)
        for key in (
            "batch_size",
            "transformers_version",
            "torch_version",
            "model_class",
            "parameters",
            "load_seconds",
        ):
            if self.info.get(key) is not None:
                base[key] = self.info[key]
        base["version"] = f"transformers {self.info.get('transformers_version')}"
        return ServerIdentity.of(base)

    async def aclose(self) -> None:
        """Ask the worker to quit, then make sure it is gone."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.returncode is None:
            try:
                if proc.stdin is not None:
                    proc.stdin.write(b'{"op":"quit"}\n')
                    await proc.stdin.drain()
                    proc.stdin.close()
                await asyncio.wait_for(proc.wait(), 10)
            except (BrokenPipeError, ConnectionResetError, TimeoutError):
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(proc.wait(), 10)
        if self._log is not None:
            self._log.close()
            with contextlib.suppress(OSError):
                os.unlink(self._log.name)
            self._log = None

    # ------------------------------------------------------------- numbers

    async def score(
        self, seqs: Sequence[np.ndarray], starts: Sequence[int], k: int
    ) -> list[RefScore]:
        """Teacher-forced logprobs of positions start.. of each sequence, and the top-k there
        (progress: stage "forward"). The logits stay in the worker for `gather`."""
        results = await self._ask(
            {
                "op": "score",
                "seqs": [pack(np.asarray(q, dtype=np.int64)) for q in seqs],
                "starts": [int(s) for s in starts],
                "k": int(k),
            }
        )
        out = []
        try:
            if not isinstance(results, list) or len(results) != len(seqs):
                raise ValueError("a result per sequence")
            for q, st, r in zip(seqs, starts, results, strict=True):
                lp = unpack(r["lp"]).astype(np.float64)
                ids, tlp = unpack(r["top_ids"]).astype(np.int64), unpack(r["top_lp"])
                if lp.shape != (len(q) - st,) or ids.shape != tlp.shape or len(ids) != lp.size:
                    raise ValueError("arrays of the wrong shape")
                out.append(RefScore(lp, ids, tlp.astype(np.float64)))
        except (KeyError, TypeError, ValueError) as e:
            raise self.fail(f"the reference worker's answer: {e}", "malformed-answer") from None
        return out

    async def gather(self, ids: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The logprob of each id [P, N] (-1: none, NaN back) at each scored position of the
        last `score`, one table per sequence."""
        results = await self._ask(
            {"op": "gather", "ids": [pack(np.asarray(t, dtype=np.int64)) for t in ids]}
        )
        try:
            if not isinstance(results, list) or len(results) != len(ids):
                raise ValueError("a result per sequence")
            out = [unpack(r["lp"]).astype(np.float64) for r in results]
            if any(o.shape != np.shape(t) for o, t in zip(out, ids, strict=True)):
                raise ValueError("arrays of the wrong shape")
        except (KeyError, TypeError, ValueError) as e:
            raise self.fail(f"the reference worker's answer: {e}", "malformed-answer") from None
        return out
