"""Synthetic runs for report tests: the events a real run yields, built from seeded numpy data.

Summaries come from metrics.ScoreBook exactly as helpers build them (helpers/context.py), so a
report of a synthetic recording reads the same fields as one of a live run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from kltui.metrics.k3 import ScoreBook
from kltui.session.events import (
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
from kltui.session.recording import Recorder

XSS = "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"
URL = "http://127.0.0.1:30000"
URL2 = "http://127.0.0.1:30001"


def server(url: str = URL, **over) -> dict:
    s = {
        "url": url,
        "engine": "sglang",
        "version": "0.5.23",
        "model_path": "meta-llama/Llama-3.1-8B-Instruct",
        "tp_size": 1,
        "dtype": "bfloat16",
        "attention_backend": "fa3",
        "page_size": 1,
        "disable_radix_cache": False,
        "enable_deterministic_inference": False,
        "disable_cuda_graph": False,
        "startup_time": 1.0,
    }
    s.update(over)
    return s


@dataclass
class HelperSpec:
    name: str
    server: str = URL
    noise: float = 1e-4  # std of lp_a - lp_b on differing tokens
    diverge_at: int | None = None  # a state bug: large noise from this position on
    skip: tuple[int, ...] = ()
    # samples whose logprobs came back NaN on both sides (a numeric fault of the model; NaN on
    # one side only is a protocol finding, left out of the figures)
    nan_rows: tuple[int, ...] = ()
    status: str | None = None  # force vacuous / error like the helpers do
    extra: dict = field(default_factory=dict)
    threshold: float = 2e-3


def sample_arrays(rng: np.random.Generator, n: int, spec: HelperSpec):
    ids = rng.integers(3, 32000, size=n)
    lp_b = -rng.exponential(0.6, size=n)
    delta = np.where(rng.random(n) < 0.6, rng.normal(0, spec.noise, size=n), 0.0)
    if spec.diverge_at is not None:
        tail = np.arange(n) >= spec.diverge_at
        delta[tail] = rng.normal(0, 0.8, size=int(tail.sum()))
    return ids, np.minimum(lp_b + delta, 0.0), lp_b


def helper_events(spec: HelperSpec, n_samples: int, length: int, seed: int) -> list:
    rng = np.random.default_rng(seed)
    evs: list = [HelperStarted(spec.name, spec.server, n_samples, spec.threshold, 1e-3)]
    book = ScoreBook(1e-3)
    if spec.status == "vacuous":
        summary = book.summary(n_samples=n_samples, n_skipped=0, threshold=spec.threshold)
        summary.update(status="vacuous", passed=False, **spec.extra)
        return evs + [HelperFinished(spec.name, spec.server, summary)]
    evs.append(PhaseChanged(spec.name, spec.server, "decode"))
    for i in range(n_samples):
        n = length - (i * 7) % (length // 2)  # ragged rows, as ignore_eos=false runs give
        ids, lp_a, lp_b = sample_arrays(rng, n, spec)
        if i in spec.nan_rows:
            lp_a, lp_b = np.full(n, np.nan), np.full(n, np.nan)
        evs.append(TokensDecoded(spec.name, spec.server, i, 0, ids[: n // 2], lp_b[: n // 2]))
        if i in spec.skip:
            evs.append(SampleSkipped(spec.name, spec.server, i, "no radix hit (cached_tokens=0)"))
            continue
        book.add(i, ids, lp_a, lp_b, 17, 100 + i)
        evs.append(SampleScored(spec.name, spec.server, i, ids, lp_a, lp_b, 17, 100 + i))
    summary = book.summary(n_samples=n_samples, n_skipped=len(spec.skip), threshold=spec.threshold)
    summary.update(spec.extra)
    if spec.status:
        summary["status"] = spec.status
    summary.setdefault("status", "pass" if summary["passed"] else "fail")
    summary["passed"] = summary["status"] == "pass"
    return evs + [HelperFinished(spec.name, spec.server, summary)]


def run_events(
    specs: list[HelperSpec],
    *,
    servers: list[dict] | None = None,
    n_samples: int = 8,
    length: int = 48,
    problems: tuple[Problem, ...] = (),
    verdict: str | None = "fail",
    prompt_source: str = "builtin",
) -> list:
    evs: list = [
        RunStarted(
            run_id="0123456789ab",
            started_at=1_760_000_000.0,
            config={"samples": n_samples, "max_new_tokens": length, "temperature": 0.0},
            servers=servers or [server()],
            prompt_set={
                "source": prompt_source,
                "n": n_samples,
                "sha256": "9f2c4e1a7b3d5c60",
                "tokens": 1234,
                "min_len": 100,
                "max_len": 100 + n_samples,
                "max_prompt_tokens": 3000,
                "seed": 0,
            },
            kltui_version="0.1.0",
        ),
        *problems,
    ]
    for k, spec in enumerate(specs):
        evs += helper_events(spec, n_samples, length, seed=k)
    if verdict is not None:
        evs.append(RunFinished({"helpers": len(specs)}, verdict))
    return evs


def record(path, events: list) -> str:
    rec = Recorder(path)
    for ev in events:
        rec.write(ev)
    rec.close()
    return str(path)


def demo_run() -> list:
    """match with batch noise, a vacuous prefill_cache_hit, a decode_cache_hit state bug."""
    return run_events(
        [
            HelperSpec("match", noise=3e-4, skip=()),
            HelperSpec(
                "prefill_cache_hit",
                status="vacuous",
                extra={"reason": "prefill_cache_hit is vacuous: radix cache disabled"},
            ),
            HelperSpec("decode_cache_hit", noise=3e-4, diverge_at=12, skip=(2,)),
        ],
        problems=(Problem(URL, "temperature 0.7 is not 0 or 1", fatal=False),),
    )


def hostile_run() -> list:
    """Markup and control characters in every text a recording can carry."""
    evil_server = server(model_path=XSS, served_model_name=XSS, attention_backend="a|b*c_[x](y)")
    return run_events(
        [
            HelperSpec("match", noise=3e-4),
            HelperSpec(f"m{XSS}", noise=3e-4, skip=(1,)),
        ],
        servers=[evil_server],
        problems=(
            Problem(URL, f"bad payload {XSS} \x00\x1b[31m | @here $x$", fatal=False),
            Problem(f"src{XSS}", f"fatal {XSS}", fatal=True, phase="tokenize"),
        ),
        prompt_source=f"prompts/{XSS}.jsonl",
    )


def multi_server_run() -> list:
    """match on two live servers plus one that never answered."""
    return run_events(
        [HelperSpec("match", server=URL, noise=3e-4), HelperSpec("match", server=URL2, noise=0.0)],
        servers=[
            server(URL),
            server(URL2, enable_deterministic_inference=True, attention_backend="flashinfer"),
            {"url": "http://10.0.0.9:30000", "engine": "sglang", "error": "connection refused"},
        ],
        problems=(
            Problem(
                "http://10.0.0.9:30000",
                "connection refused (phase: connect)",
                True,
                None,
                "connect",
            ),
        ),
        verdict="error",
    )


def error_run() -> list:
    """A helper that died mid-run (server error), and one cut short with no summary."""
    evs = run_events(
        [
            HelperSpec("match", status="error", extra={"error": "HTTP 500 from /generate"}),
            HelperSpec("decode_cache_hit", noise=1e-3),
        ],
        problems=(Problem(URL, "HTTP 500 from /generate", True, "match", "prefill"),),
        verdict=None,
    )
    return [
        e for e in evs if not (isinstance(e, HelperFinished) and e.helper == "decode_cache_hit")
    ]
