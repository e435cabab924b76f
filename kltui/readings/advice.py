"""What a diagnosis suggests next: the server settings that decide what a number means, the
kernels and state paths worth suspecting, and the dumper command that finds the module."""

from __future__ import annotations

import math
import shlex

from kltui.engines.identity import ServerIdentity
from kltui.fmt import sci
from kltui.metrics.presets import DETERMINISTIC_KL_DIV
from kltui.registry import HELPERS, baseline_path, cache_helpers, path_of
from kltui.session.helper_view import HelperView
from kltui.session.store import HelperState, SessionStore

# at or below the stray-ulp level the gate cannot care, whatever threshold it has
FAR_BELOW = DETERMINISTIC_KL_DIV


def settings_line(info: ServerIdentity) -> str | None:
    """The settings the server reported that decide what a number means, as one line."""
    if not info:
        return None
    parts = []
    for label, key in (
        ("deterministic inference", "enable_deterministic_inference"),
        ("attention backend", "attention_backend"),
        ("cuda graph", "disable_cuda_graph"),
        ("page size", "page_size"),
        ("radix cache", "disable_radix_cache"),
        ("chunked prefill", "chunked_prefill_size"),
        ("tp", "tp_size"),
    ):
        v = info.get(key)
        if v is None:
            continue
        if key in ("disable_radix_cache", "disable_cuda_graph"):
            v = "off" if v else "on"
        elif isinstance(v, bool):
            v = "on" if v else "off"
        parts.append(f"{label} {v}")
    return "server reports: " + ", ".join(parts) if parts else None


def _longest(store: SessionStore) -> int | None:
    run = store.run
    if run is None:
        return None
    longest_prompt = run.prompt_set.get("max_len")
    new = store.config.max_new_tokens
    if isinstance(longest_prompt, int) and new is not None:
        return longest_prompt + new
    return None


def kernel_suspects(info: ServerIdentity, store: SessionStore) -> list[str]:
    """The kernels worth suspecting of batch variance on this server, likeliest first."""
    out = []
    det = info.enable_deterministic_inference
    backend = info.attention_backend
    name = f"the {backend} attention backend" if backend else "the attention backend"
    if det is False:
        out.append(
            "deterministic inference is off: GEMMs and reductions choose tiles and split "
            "counts by batch shape, so prefill and decode round differently (expected noise)"
        )
    out.append(
        f"decode vs extend attention in {name}: one query against many takes another kernel or "
        "code path; a reduction over the KV range whose blocking follows the query count or "
        "the sequence length (split-KV) reduces the same token in another order (fix the "
        "shape, e.g. a fixed split size, not only the order)"
    )
    tp = info.tp_size
    if tp is not None and tp > 1:
        out.append(
            f"tp {tp}: all-reduce whose algorithm or tree follows the message size (a prefill of "
            "many tokens vs a decode step of one)"
        )
    chunk = info.chunked_prefill_size
    longest = _longest(store)
    if chunk is not None and chunk > 0 and longest is not None and longest > chunk:
        out.append(
            f"chunked prefill {chunk}: the fresh prefill of prompt + output (up to {longest} "
            "tokens) runs in chunks, so later chunks use extend attention over a cached prefix"
        )
    if info.disable_cuda_graph is False:
        out.append(
            "CUDA graph is on: decode replays graphs captured at padded batch sizes; dumper "
            "hooks do not run inside a replay, so confirm the divergence with "
            "--disable-cuda-graph --disable-prefill-cuda-graph before dumping"
        )
    if det:
        out.append(
            "kernels outside batch_invariant_ops: deterministic inference swaps aten ops; custom "
            "kernels that never go through aten stay shape-dependent"
        )
    return out


def state_suspects(dirty: list[str], info: ServerIdentity) -> list[str]:
    """The state path to suspect first among the diverging cache helpers (registry roles)."""
    first = next((h for h in cache_helpers() if h in dirty), None)
    if first is None:
        return []
    out = [path_of(first)]
    page = info.page_size
    if HELPERS[first].cache_path == "prefill" and page is not None and page > 1:
        out.append(f"page-granular restore (page size {page}): hits end on page boundaries")
    return out


def dumps_command(server: str, dump_dir: str = "DIR") -> str:
    """The `kltui dumps` command that finds the shape-variant kernel on `server`."""
    host = server.split("://", 1)[-1].rstrip("/")
    return f"kltui dumps --server {host} --dump-dir {shlex.quote(dump_dir)}"


def cross_check_command(server: str, helpers: list[str]) -> str:
    """The A-vs-B run that isolates a state bug's trigger (OTHER is a second server)."""
    host = server.split("://", 1)[-1].rstrip("/")
    names = ",".join((baseline_path(), *helpers))
    return f"kltui check --server {host} --server OTHER_HOST:PORT --helpers {names}"


def rerun_command(server: str, samples: int) -> str:
    """The `kltui check` command that re-runs `server` with more samples."""
    host = server.split("://", 1)[-1].rstrip("/")
    return f"kltui check --server {host} --samples {samples}"


def _far_below_gate(st: HelperState) -> bool:
    s = HelperView.of(st).summary
    level, gate = s.avg_kl_div, s.threshold
    if s.result != "pass" or level is None or not math.isfinite(level):
        return False
    return level <= FAR_BELOW or (gate is not None and level * 1e3 <= gate)


def condition1_advice(
    server: str,
    info: ServerIdentity,
    noisy: HelperState,
    failing: list[str] | None = None,
    uncovered: list[str] | None = None,
) -> tuple[str, str | None, str | None]:
    """(next step, exact command, TUI action) for kernel noise, from what the server runs and
    how large the noise is against the gate; "nothing to fix for the gate" only when no
    helper in `failing` fails it and none in `uncovered` (ran, tested nothing) fails the run."""
    det = info.enable_deterministic_inference
    if not failing and _far_below_gate(noisy):
        s = HelperView.of(noisy).summary
        gate = f" of {sci(s.threshold)}" if s.threshold is not None else ""
        if uncovered:
            return (
                f"nothing to fix in this noise ({s.avg_kl_div:.3g}, far below its "
                f"threshold{gate}), but {' and '.join(uncovered)} ran and tested nothing (see "
                f"{'their notes' if len(uncovered) > 1 else 'its note'}); make "
                f"{'those paths' if len(uncovered) > 1 else 'that path'} reachable and re-run",
                None,
                None,
            )
        fix = (
            f"run `{dumps_command(server)}` to find the shape-variant kernel"
            if det
            else "relaunch with --enable-deterministic-inference"
        )
        return (
            f"nothing to fix for the gate: {s.avg_kl_div:.3g} is far below its threshold{gate}. "
            "This rounding noise matters only where bitwise equality is needed (e.g. RL "
            f"rollouts that must reproduce the trainer's logprobs); there, {fix}",
            None,
            None,
        )
    if det:
        cmd = dumps_command(server)
        return (
            "find the kernel: relaunch this server with SGLang's dumper hooks and run "
            f"`{cmd}`; the first module whose inputs are bit-identical and whose output "
            "differs is the shape-variant kernel",
            cmd,
            "dumps",
        )
    if det is False:
        return (
            "relaunch with --enable-deterministic-inference (off on this server) and re-run; "
            "what survives it is a shape-variant kernel to find with `kltui dumps`",
            None,
            None,
        )
    return (
        "/server_info does not say whether deterministic inference is on: check the launch "
        "flags; with it on, what survives is a shape-variant kernel to find with `kltui dumps`",
        None,
        None,
    )


CONDITION2_STEP = (
    "isolate the trigger: run the same prompts on a second server that changes one setting "
    "(page size, radix cache) with `kltui check --server A --server B` and read cross_server "
    "(bit-identical values across configs mean a deterministic logic fault, not a race); then "
    "probe the reused state of the divergent requests (slot, claimed cached length) directly"
)
