"""What a diagnosis suggests next: the server settings that decide what a number means, the
kernels and state paths worth suspecting, and the dumper command that finds the module, as
typed parts (`diagnosis_parts`); their words are `kltui/words/advice.py`."""

from __future__ import annotations

import math

from kltui.engines.geometry import StateGeometry
from kltui.engines.identity import ServerIdentity
from kltui.metrics.presets import DETERMINISTIC_KL_DIV
from kltui.readings.diagnosis_parts import (
    Command,
    CommandKind,
    Settings,
    Step,
    StepKind,
    Suspect,
    SuspectKind,
)
from kltui.registry import HELPERS, baseline_path, cache_helpers
from kltui.session.helper_view import HelperView
from kltui.session.store import HelperState, SessionStore

# at or below the stray-ulp level the gate cannot care, whatever threshold it has
FAR_BELOW = DETERMINISTIC_KL_DIV


# the settings that decide what a number means, in the order the evidence names them
SETTING_KEYS = (
    "enable_deterministic_inference",
    "attention_backend",
    "disable_cuda_graph",
    "page_size",
    "disable_radix_cache",
    "chunked_prefill_size",
    "tp_size",
)


def settings_of(info: ServerIdentity) -> Settings | None:
    """The settings the server reported that decide what a number means (None: none)."""
    if not info:
        return None
    pairs = tuple((key, v) for key in SETTING_KEYS if (v := info.get(key)) is not None)
    return Settings(pairs) if pairs else None


def _longest(store: SessionStore) -> int | None:
    run = store.run
    if run is None:
        return None
    longest_prompt = run.prompt_set.get("max_len")
    new = store.config.max_new_tokens
    if isinstance(longest_prompt, int) and new is not None:
        return longest_prompt + new
    return None


def kernel_suspects(info: ServerIdentity, store: SessionStore) -> list[Suspect]:
    """The kernels worth suspecting of batch variance on this server, likeliest first."""
    out = []
    det = info.enable_deterministic_inference
    if det is False:
        out.append(Suspect(SuspectKind.DETERMINISTIC_OFF))
    out.append(Suspect(SuspectKind.DECODE_VS_EXTEND, name=info.attention_backend or None))
    tp = info.tp_size
    if tp is not None and tp > 1:
        out.append(Suspect(SuspectKind.TP_ALL_REDUCE, figure=tp))
    chunk = info.chunked_prefill_size
    longest = _longest(store)
    if chunk is not None and chunk > 0 and longest is not None and longest > chunk:
        out.append(Suspect(SuspectKind.CHUNKED_PREFILL, figure=chunk, longest=longest))
    if info.disable_cuda_graph is False:
        out.append(Suspect(SuspectKind.CUDA_GRAPH))
    if det:
        out.append(Suspect(SuspectKind.OUTSIDE_BATCH_INVARIANT))
    return out


def _geometry_suspects(path: str | None, geometry: StateGeometry) -> list[Suspect]:
    """What the server's state geometry puts on a cache path: the conv/SSM checkpoint a prefix
    hit restores, the decode checkpoint (track) save turn 2 restores, the window's eviction."""
    out = []
    mamba, window = geometry.mamba, geometry.window
    if mamba is not None and path == "decode" and mamba.track_interval is not None:
        out.append(Suspect(SuspectKind.TRACK_SAVE, figure=mamba.track_interval.value))
    if mamba is not None:
        chunk = mamba.chunk_size.value if mamba.chunk_size is not None else None
        out.append(Suspect(SuspectKind.SSM_CHECKPOINT, figure=chunk))
    if window is not None:
        out.append(Suspect(SuspectKind.WINDOW_EVICTION, figure=window.size.value))
    return out


def state_suspects(dirty: list[str], info: ServerIdentity) -> list[Suspect]:
    """The state path to suspect first among the diverging cache helpers (registry roles), and
    on a Mamba or sliding-window server what its state geometry puts on that path."""
    first = next((h for h in cache_helpers() if h in dirty), None)
    if first is None:
        return []
    path = HELPERS[first].cache_path
    out = [Suspect(SuspectKind.PATH, name=first)]
    out += _geometry_suspects(path, StateGeometry.of(info.get("geometry")))
    page = info.page_size
    if path == "prefill" and page is not None and page > 1:
        out.append(Suspect(SuspectKind.PAGE_RESTORE, figure=page))
    return out


def dumps_command(server: str) -> Command:
    """The `kltui dumps` command that finds the shape-variant kernel on `server`."""
    return Command(CommandKind.DUMPS, server)


def cross_check_command(server: str, helpers: list[str]) -> Command:
    """The A-vs-B run that isolates a state bug's trigger (OTHER is a second server)."""
    return Command(CommandKind.CROSS_CHECK, server, (baseline_path(), *helpers))


def rerun_command(server: str, samples: int) -> Command:
    """The `kltui check` command that re-runs `server` with more samples."""
    return Command(CommandKind.RERUN, server, samples=samples)


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
) -> tuple[Step, Command | None, str | None]:
    """(next step, exact command, TUI action) for kernel noise, from what the server runs and
    how large the noise is against the gate; "nothing to fix for the gate" only when no
    helper in `failing` fails it and none in `uncovered` (ran, tested nothing) fails the run."""
    det = info.enable_deterministic_inference
    if not failing and _far_below_gate(noisy):
        s = HelperView.of(noisy).summary
        if uncovered:
            kind, helpers = StepKind.NOTHING_TO_FIX_UNCOVERED, tuple(uncovered)
            return Step(kind, level=s.avg_kl_div, gate=s.threshold, helpers=helpers), None, None
        fix = dumps_command(server) if det else None
        step = Step(
            StepKind.NOTHING_TO_FIX,
            level=s.avg_kl_div,
            gate=s.threshold,
            deterministic=bool(det),
            command=fix,
        )
        return step, None, None
    if det:
        cmd = dumps_command(server)
        return Step(StepKind.DUMPS, command=cmd), cmd, "dumps"
    if det is False:
        return Step(StepKind.RELAUNCH_DETERMINISTIC), None, None
    return Step(StepKind.DETERMINISTIC_UNKNOWN), None, None


CONDITION2_STEP = Step(StepKind.CONDITION2)
