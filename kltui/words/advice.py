"""The words of what a diagnosis suggests next (`readings/advice.py`): the settings line, each
suspect, each next step and the command it names."""

from __future__ import annotations

import shlex

from kltui.fmt import sci
from kltui.readings.diagnosis_parts import (
    Command,
    CommandKind,
    Settings,
    Step,
    StepKind,
    Suspect,
    SuspectKind,
)
from kltui.registry import path_of
from kltui.words.common import EVIDENCE_P, MIN_RATIO

_SETTING_NAMES = {
    "enable_deterministic_inference": "deterministic inference",
    "attention_backend": "attention backend",
    "disable_cuda_graph": "cuda graph",
    "page_size": "page size",
    "disable_radix_cache": "radix cache",
    "chunked_prefill_size": "chunked prefill",
    "tp_size": "tp",
}


def settings_line(s: Settings) -> str:
    """The settings the server reported that decide what a number means, as one line."""
    parts = []
    for key, v in s.pairs:
        if key in ("disable_radix_cache", "disable_cuda_graph"):
            v = "off" if v else "on"
        elif isinstance(v, bool):
            v = "on" if v else "off"
        parts.append(f"{_SETTING_NAMES.get(key, key)} {v}")
    return "server reports: " + ", ".join(parts)


def command(c: Command) -> str:
    """The command line of a next step."""
    host = c.server.split("://", 1)[-1].rstrip("/")
    if c.kind is CommandKind.DUMPS:
        return f"kltui dumps --server {host} --dump-dir {shlex.quote('DIR')}"
    if c.kind is CommandKind.CROSS_CHECK:
        names = ",".join(c.helpers)
        return f"kltui check --server {host} --server OTHER_HOST:PORT --helpers {names}"
    if c.kind is CommandKind.RERUN:
        return f"kltui check --server {host} --samples {c.samples}"
    return c.text or ""


def dumps_command(server: str, dump_dir: str = "DIR") -> str:
    """The `kltui dumps` command that finds the shape-variant kernel on `server`."""
    host = server.split("://", 1)[-1].rstrip("/")
    return f"kltui dumps --server {host} --dump-dir {shlex.quote(dump_dir)}"


def _suspect_kernel(s: Suspect) -> str | None:
    k = s.kind
    if k is SuspectKind.DETERMINISTIC_OFF:
        return (
            "deterministic inference is off: GEMMs and reductions choose tiles and split "
            "counts by batch shape, so prefill and decode round differently (expected noise)"
        )
    if k is SuspectKind.DECODE_VS_EXTEND:
        name = f"the {s.name} attention backend" if s.name else "the attention backend"
        return (
            f"decode vs extend attention in {name}: one query against many takes another kernel "
            "or code path; a reduction over the KV range whose blocking follows the query count "
            "or the sequence length (split-KV) reduces the same token in another order (fix the "
            "shape, e.g. a fixed split size, not only the order)"
        )
    if k is SuspectKind.TP_ALL_REDUCE:
        return (
            f"tp {s.figure}: all-reduce whose algorithm or tree follows the message size (a "
            "prefill of many tokens vs a decode step of one)"
        )
    if k is SuspectKind.CHUNKED_PREFILL:
        return (
            f"chunked prefill {s.figure}: the fresh prefill of prompt + output (up to "
            f"{s.longest} tokens) runs in chunks, so later chunks use extend attention over a "
            "cached prefix"
        )
    if k is SuspectKind.CUDA_GRAPH:
        return (
            "CUDA graph is on: decode replays graphs captured at padded batch sizes; dumper "
            "hooks do not run inside a replay, so confirm the divergence with "
            "--disable-cuda-graph --disable-prefill-cuda-graph before dumping"
        )
    if k is SuspectKind.OUTSIDE_BATCH_INVARIANT:
        return (
            "kernels outside batch_invariant_ops: deterministic inference swaps aten ops; custom "
            "kernels that never go through aten stay shape-dependent"
        )
    return None


def _suspect_state(s: Suspect) -> str:
    k = s.kind
    if k is SuspectKind.PATH:
        return path_of(s.name or "")
    if k is SuspectKind.PAGE_RESTORE:
        return f"page-granular restore (page size {s.figure}): hits end on page boundaries"
    if k is SuspectKind.TRACK_SAVE:
        return (
            f"the decode checkpoint save (every {s.figure} tokens, --mamba-track-interval): "
            "the state saved while decoding is what turn 2 restores"
        )
    if k is SuspectKind.SSM_CHECKPOINT:
        every = (
            f" (prefill checkpoints every {s.figure} tokens, the chunk size)" if s.figure else ""
        )
        return (
            f"the conv/SSM checkpoint restore{every}: a hit restores the recurrent state saved "
            "at the last checkpoint"
        )
    if k is SuspectKind.WINDOW_EVICTION:
        return (
            f"the sliding-window eviction ({s.figure}-token window): pages leave the window "
            "as decoding passes it, and a restore must bring back only the window's KV"
        )
    return str(k)


def suspect(s: Suspect) -> str:
    """One suspect as a line."""
    return _suspect_kernel(s) or _suspect_state(s)


CONDITION2 = (
    "isolate the trigger: run the same prompts on a second server that changes one setting "
    "(page size, radix cache) with `kltui check --server A --server B` and read cross_server "
    "(bit-identical values across configs mean a deterministic logic fault, not a race); then "
    "probe the reused state of the divergent requests (slot, claimed cached length) directly"
)

_FIXED = {
    StepKind.NOTHING_TESTED: (
        "read the evidence for why each helper compared nothing, fix that and re-run"
    ),
    StepKind.SAMPLING: "re-run with --temperature 0 for a verdict on conditions 1 and 2",
    StepKind.EXACT_MISSED: (
        "cover the samples that missed: read the evidence for why they did, fix that and re-run"
    ),
    StepKind.EXACT_WHERE_TESTED: (
        "cover those paths: run the helpers not tested, and read the evidence for why the "
        "others compared nothing or failed"
    ),
    StepKind.STATE_UNCLEAR: (
        "decide it with more samples (`--samples 128`), more like the differing ones (see "
        "evidence): noise shows on match too, a state bug keeps to its path"
    ),
    StepKind.CONDITION2: CONDITION2,
    StepKind.RELAUNCH_DETERMINISTIC: (
        "relaunch with --enable-deterministic-inference (off on this server) and re-run; "
        "what survives it is a shape-variant kernel to find with `kltui dumps`"
    ),
    StepKind.DETERMINISTIC_UNKNOWN: (
        "/server_info does not say whether deterministic inference is on: check the launch "
        "flags; with it on, what survives is a shape-variant kernel to find with `kltui dumps`"
    ),
}


def _nothing_to_fix(s: Step) -> str:
    gate = f" of {sci(s.gate)}" if s.gate is not None else ""
    if s.kind is StepKind.NOTHING_TO_FIX_UNCOVERED:
        many = len(s.helpers) > 1
        return (
            f"nothing to fix in this noise ({s.level:.3g}, far below its "
            f"threshold{gate}), but {' and '.join(s.helpers)} ran and tested nothing (see "
            f"{'their notes' if many else 'its note'}); make "
            f"{'those paths' if many else 'that path'} reachable and re-run"
        )
    fix = (
        f"run `{command(s.command)}` to find the shape-variant kernel"
        if s.command is not None
        else "relaunch with --enable-deterministic-inference"
    )
    return (
        f"nothing to fix for the gate: {s.level:.3g} is far below its threshold{gate}. "
        "This rounding noise matters only where bitwise equality is needed (e.g. RL "
        f"rollouts that must reproduce the trainer's logprobs); there, {fix}"
    )


def _more(s: Step) -> str:
    then = f"; then: {step(s.then)}" if s.then is not None else ""
    if s.kind is StepKind.NOT_EXCLUDED:
        return (
            f"decide it with more samples (`--samples {s.samples}`), `--repeat 3` (a state bug "
            "repeats on the same samples, noise moves) or `--stress light`"
        )
    if s.kind is StepKind.BROAD_EXCESS:
        return (
            f"decide it with more samples (`--samples {s.samples}`): a shift of x{s.ratio:.3g} "
            f"that is real passes the x{MIN_RATIO:g}-drift test as samples grow{then}"
        )
    if s.kind is StepKind.FEW_FAR_ABOVE:
        then = then or "; `--repeat 3` also tells: a state bug repeats on the same samples"
        return (
            f"decide it with more prompts like the affected ones (see evidence): at least "
            f"{s.samples} samples far above match and none below reach p<{EVIDENCE_P:g}{then}"
        )
    return f"re-run with more samples (`--samples {s.samples}`){then}"


def step(s: Step) -> str:
    """A next step as one line."""
    if (fixed := _FIXED.get(s.kind)) is not None:
        return fixed
    if s.kind is StepKind.BASELINE:
        return (
            f"run {s.helpers[0]} too, on a server that flushes (`--helpers {','.join(s.helpers)}`)"
        )
    if s.kind in (StepKind.NOTHING_TO_FIX, StepKind.NOTHING_TO_FIX_UNCOVERED):
        return _nothing_to_fix(s)
    if s.kind is StepKind.DUMPS:
        cmd = command(s.command) if s.command is not None else ""
        return (
            "find the kernel: relaunch this server with SGLang's dumper hooks and run "
            f"`{cmd}`; the first module whose inputs are bit-identical and whose output "
            "differs is the shape-variant kernel"
        )
    if s.kind is StepKind.RECORDED:
        return s.text or ""
    return _more(s)
