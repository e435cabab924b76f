"""`kltui ablate --chain`: from the setting to the module and the op, in one report.

When a sweep localized a condition-1 divergence (`Ablation.verdict.chain`), in launch mode:
1. relaunch the BASE with the dumper's environment (docs/DUMPS.md: `DUMPER_ENABLE=0
   DUMPER_SERVER_PORT=reuse DUMPER_NON_INTRUSIVE_MODE=all DUMPER_DIR=...`) and
   `--disable-cuda-graph --disable-prefill-cuda-graph` (the step "relaunch");
2. run match on it (the sweep's own run options): if it no longer diverges, the divergence
   needs CUDA graphs and the dumper cannot see it: stop there ("reproduce");
3. the drill-down `kltui dumps` runs (`dumps/run.drill_down`) and the first divergent module
   ("dumps");
4. where `kltui probe-ops` covers that module's op, the op probed at the module's shapes, read
   from its input tensors in the dump files ("probe").
How it ended is a `ChainKind` (a failure names its step and why, with the server log's last
lines where a server was involved), each finished step a `StepKind` (`chain_result.py`);
`words/chain.py` says them. What was measured before a failure is kept. The decisions
(`refusal`, `reproduces`, `module_of`, `op_of`, `probe_shape`, `probe_kind`) are pure and
unit-tested; the reference server has no dumper, so the steps after "relaunch" run only on
SGLang.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

from kltui.ablate.knobs import KNOBS, current
from kltui.ablate.sweep import MEASURED, TAIL_LINES, Sweep
from kltui.dumps.chain_result import (
    LONG_PROMPT_TOKENS,
    NO_GRAPH_FLAGS,
    Chain,
    ChainKind,
    Progress,
    StepKind,
)
from kltui.launch.server import LaunchedServer, LaunchError, read_tail
from kltui.readings.ablation import Ablation, read
from kltui.readings.ablation_outcome import reading
from kltui.readings.paired import STRAY_ULP_FLOOR
from kltui.run.ablate import SweepSpec
from kltui.run.driver import RunDriver, RunView
from kltui.run.sweep_manifest import write_manifest
from kltui.untrusted import one_line

if TYPE_CHECKING:
    from kltui.dumps.analyze import VerdictWords

DUMPER_ENV = {
    "DUMPER_ENABLE": "0",
    "DUMPER_SERVER_PORT": "reuse",
    "DUMPER_NON_INTRUSIVE_MODE": "all",
}
NAME = "base+dumper"
# the relaunched base's match also runs at these batch sizes (`--batch-sizes`): a divergence
# that needs a batch (what a deterministic=on setting removes) shows where dumps at batch 1,
# one request at a time, reproduce nothing
BATCH_SIZES = [1, 4, 16]
PROMPT_TOKENS, NEW_TOKENS = 32, 8
# dumps again at this prompt length when the first found decode and prefill bit-identical: on
# the H200 (FA3 without deterministic inference, docs/FIELD_NOTES.md section 14) one request
# of 32 tokens was bit-identical at every module while one of 64 named o_proj (M=1 vs M=72)

# a module's name (its last part) -> the probe-ops op that computes it
_OPS = (
    (re.compile(r"(^|\.)(qkv_proj|q_proj|k_proj|v_proj|o_proj|gate_up_proj|gate_proj|up_proj|"
                r"down_proj|lm_head|dense|fc\d*)$"), "linear"),
    (re.compile(r"(^|\.)[a-z_]*norm[a-z_]*$"), "rms_norm"),
    (re.compile(r"(^|\.)(attn|attention)$"), "sdpa_decode"),
    (re.compile(r"(^|\.)logits_processor$"), "log_softmax"),
)  # fmt: skip


# --------------------------------------------------------------------------- decisions
def setting_of(ab: Ablation) -> str:
    """The localized setting(s): every configuration sufficient on its own."""
    names: list[str] = []
    for hv in ab.verdict.helpers:
        names += [n for n in hv.sufficient if n not in names]
    return ", ".join(names) or "?"


def refusal(sweep: Sweep, ab: Ablation) -> ChainKind | None:
    """Why no chain runs, or None when it does."""
    if sweep.mode != "launch":
        return ChainKind.REFUSED_ATTACH
    if sweep.base.status != MEASURED:
        return ChainKind.REFUSED_UNMEASURED
    if not ab.verdict.chain:
        return ChainKind.REFUSED_VERDICT
    return None


def reproduces(ab: Ablation) -> tuple[bool, float | None]:
    """Whether the relaunched base still diverges on match (a base-only reading), and its
    avg_kl_div."""
    h = ab.base.helper("match")
    level = None if h is None else h.level
    return (level or 0.0) > STRAY_ULP_FLOOR, level


def module_of(result: dict) -> tuple[str | None, str]:
    """The module the drill-down found and its status: the first divergent one (named), else
    the first differing one (not named: its inputs are not proven identical), else none."""
    if result.get("first_divergent_module"):
        return str(result["first_divergent_module"]), "first-divergent"
    if result.get("first_differing_module"):
        return str(result["first_differing_module"]), "first-differing"
    return None, "identical"


def op_of(module: str) -> str | None:
    """The probe-ops op that computes a module (None: probe-ops does not cover it)."""
    for pattern, op in _OPS:
        if pattern.search(module):
            return op
    return None


def backend_of(argv: tuple[str, ...] | list[str]) -> str | None:
    """The attention backend the launch command sets, as argparse reads it (None: unset):
    what a bit-identical attention probe leaves as the suspect."""
    return current(list(argv), KNOBS["attention-backend"])


def probe_kind(identical: bool) -> ChainKind:
    """probe-ops runs torch's op, not the server's kernel: a bit-identical probe clears the
    op's math at these shapes and leaves the server's own kernel as the suspect; a differing
    one reproduces the shape variance outside the server."""
    return ChainKind.SERVER_KERNEL if identical else ChainKind.OP_SHAPE_VARIANT


def probe_shape(op: str, input_shapes: list[tuple[int, ...]], tokens: int) -> dict | None:
    """probe-ops' size arguments at a module's shapes: its first input's last dimension as
    the width (hidden, or vocab for log_softmax); attention's heads and head size from q
    ([T, H, D], or [T, H*D] with D 128, else 64). N: 2 and the tokens the drill-down's fresh
    prefill held. None when the shapes do not say."""
    shapes = [s for s in input_shapes if s]
    if not shapes:
        return None
    first = shapes[0]
    sizes = sorted({2, max(2, tokens)})
    out: dict = {"sizes": sizes, "hidden": 1024, "vocab": 32000, "heads": 8, "head_dim": 128}
    if op == "sdpa_decode":
        if len(first) >= 3:
            out["heads"], out["head_dim"] = int(first[-2]), int(first[-1])
        else:
            d = 128 if first[-1] % 128 == 0 else 64
            if first[-1] % d:
                return None
            out["heads"], out["head_dim"] = int(first[-1]) // d, d
    elif op == "log_softmax":
        out["vocab"] = int(first[-1])
    else:
        out["hidden"] = int(first[-1])
    return out


def input_shapes(folder: Path, module: str) -> list[tuple[int, ...]]:
    """The shapes of a module's input tensors in one dump folder (torch loaded here)."""
    from kltui.dumps.files import Loader, index_folder

    cache = Loader()
    prefix = f"non_intrusive__{module}."
    out = []
    for df in index_folder(folder):
        if df.name.startswith(prefix) and not df.name.endswith(".output"):
            value = cache.value(df)
            if hasattr(value, "shape"):
                out.append(tuple(int(x) for x in value.shape))
    return out


# --------------------------------------------------------------------------- the steps
def _tail(path: Path) -> str:
    tail = read_tail(path, TAIL_LINES)
    return (": " + " | ".join(one_line(t, 200) for t in tail)) if tail else ""


def _with_flags(argv: tuple[str, ...]) -> list[str]:
    out = list(argv)
    out += [f for f in NO_GRAPH_FLAGS if f not in out]
    return out


DrillDown = Callable[..., Awaitable[dict]]


async def run_chain(
    spec: SweepSpec,
    sweep: Sweep,
    ab: Ablation,
    view: RunView,
    say: Callable[[Progress], None] = lambda _p: None,
    *,
    drill: DrillDown,
    probe: Callable[[dict], dict] | None = None,
    started: Callable[[Chain], None] = lambda _ch: None,
) -> Chain:
    """The chain on a finished sweep (`refusal` first). `view` shows match's run on the
    relaunched base; `say` gets each step as it begins (`Progress`); `drill` is
    `dumps/run.drill_down` with its words (`chain_into`), `probe` defaults to `probe_ops.probe`; `started` gets the chain as soon as it
    exists, so that an interruption keeps what it measured (`chain_into`)."""
    why = refusal(sweep, ab)
    if why is not None:
        return Chain(why, verdict=str(ab.verdict.kind), condition=ab.base.condition)
    ch = Chain(
        ChainKind.FAILED, setting=setting_of(ab), verdict=str(ab.verdict.kind), log=f"{NAME}.log"
    )
    started(ch)
    ch.steps.append(StepKind.SETTING)
    srv, dump_dir, log_path = _relaunched(spec, sweep)

    clock = time.perf_counter()

    def lap(key: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        ch.timing[key] = round(now - clock, 3)
        clock = now

    say(Progress.RELAUNCH)
    ch.running = "relaunch"
    try:
        url = await srv.start()
    except LaunchError as e:
        return ch.failed("relaunch", str(e))
    finally:
        lap("relaunch_s")
    try:
        say(Progress.REPRODUCE)
        ch.running = "reproduce"
        try:
            driver = RunDriver(
                _match_cfg(spec, url), record=str(sweep.folder / f"{NAME}.kltui.jsonl")
            )
            outcome = await driver.run(view)
            srv.check_alive()
        except LaunchError as e:
            return ch.failed("reproduce", str(e))
        finally:
            lap("match_s")
        if outcome.error is not None or outcome.store is None:
            return ch.failed("reproduce", f"match could not run: {outcome.error}{_tail(log_path)}")
        again = read([sweep.base.config], {sweep.base.name: outcome.store})
        ch.reproduced, ch.match_avg_kl_div = reproduces(again)
        if not ch.reproduced:
            ch.kind = ChainKind.NEEDS_GRAPHS
            return ch
        ch.steps.append(StepKind.REPRODUCED)
        _batch_step(ch, outcome.store)
        say(Progress.DUMPS)
        ch.running = "dumps"
        try:
            result = await _dumps(ch, drill, url, spec, dump_dir, srv, say)
        except LaunchError as e:
            return ch.failed("dumps", str(e))
        except Exception as e:  # DumpError, EngineError, UsageError: one line each
            return ch.failed("dumps", f"{e}{_tail(log_path)}")
        finally:
            lap("dumps_s")
    finally:
        await srv.stop()
        lap("stop_s")
    ch.running = "probe"
    await _module_and_op(ch, result, probe, sweep.base.config.argv)
    if ch.probe is not None or ch.step == "probe":
        lap("probe_s")
    return ch


def _relaunched(spec: SweepSpec, sweep: Sweep) -> tuple[LaunchedServer, Path, Path]:
    """The base's server as the chain relaunches it (dumper environment, no graphs), its dump
    folder and its log."""
    dump_dir = (sweep.folder / "dumps").resolve()
    log_path = sweep.folder / f"{NAME}.log"
    srv = LaunchedServer(
        _with_flags(sweep.base.config.argv),
        name=NAME,
        log_path=log_path,
        env={**DUMPER_ENV, "DUMPER_DIR": str(dump_dir)},
        start_timeout=spec.start_timeout,
    )
    return srv, dump_dir, log_path


async def chain_into(
    spec: SweepSpec,
    sweep: Sweep,
    view: RunView,
    say: Callable[[Progress], None],
    words: VerdictWords,
) -> None:
    """`--chain` after a finished sweep, its result kept in the sweep's manifest (`words`: the
    drill-down's verdict in words, `words/dumps.verdict_words`, given by the caller); cut short
    (Ctrl-C, SIGTERM), the sweep reads as interrupted and the chain keeps the steps it
    finished, their times and the step it stopped in (`Chain.interrupted`)."""
    began: list[Chain] = []
    try:
        from kltui.dumps.run import drill_down

        drill = partial(drill_down, words=words)
        ch = await run_chain(
            spec, sweep, reading(sweep), view, say=say, drill=drill, started=began.append
        )
    except asyncio.CancelledError:
        sweep.interrupted = True
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        if not began:
            return
        ch = began[0].interrupted()
    sweep.chain = ch.to_json()
    write_manifest(sweep)


async def _drill(
    drill: DrillDown, url: str, spec: SweepSpec, dump_dir: Path, prompt_tokens: int
) -> dict:
    from kltui.dumps.run import client_for

    dump_dir.mkdir(parents=True, exist_ok=True)
    async with client_for(url, spec.cfg.server_api_key(), spec.cfg.request_timeout) as client:
        return await drill(
            client, url, dump_dir, prompt_tokens=prompt_tokens, new_tokens=NEW_TOKENS
        )


async def _dumps(
    ch: Chain,
    drill: DrillDown,
    url: str,
    spec: SweepSpec,
    dump_dir: Path,
    srv: LaunchedServer,
    say: Callable[[Progress], None],
) -> dict:
    """kltui dumps on the relaunched base: a 32-token prompt, and a 128-token one when that
    found decode and the fresh prefill bit-identical (a longer prefill takes other GEMM
    shapes); the last one's result."""
    result = await _drill(drill, url, spec, dump_dir, PROMPT_TOKENS)
    ch.dump_prompt_tokens.append(PROMPT_TOKENS)
    srv.check_alive()
    if _nothing_differs(result):
        ch.steps.append(StepKind.DUMPS_IDENTICAL)
        say(Progress.DUMPS_LONG)
        result = await _drill(drill, url, spec, dump_dir, LONG_PROMPT_TOKENS)
        ch.dump_prompt_tokens.append(LONG_PROMPT_TOKENS)
        srv.check_alive()
    return result


def _nothing_differs(result: dict) -> bool:
    """The drill-down found decode and the fresh prefill bit-identical (no module differs)."""
    return not (result.get("first_divergent_module") or result.get("first_differing_module"))


_DUMPS_KEYS = (
    "verdict",
    "first_divergent_module",
    "first_differing_module",
    "unnamed_reason",
    "max_abs_diff",
    "decode_step",
    "position",
    "inputs_identical",
    "dir_a",
    "dir_b",
    "fresh_prefill_tokens",
)


async def _module_and_op(
    ch: Chain,
    result: dict,
    probe: Callable[[dict], dict] | None,
    argv: tuple[str, ...] | list[str] = (),
) -> Chain:
    """Steps 3 and 4 once the drill-down's result is in."""
    ch.dumps = {k: result.get(k) for k in _DUMPS_KEYS}
    ch.module, ch.module_status = module_of(result)
    if ch.module is None:
        ch.kind = ChainKind.NOTHING_FOUND if ch.batch_changed_at is None else ChainKind.NEEDS_BATCH
        return ch
    divergent = ch.module_status == "first-divergent"
    ch.steps.append(StepKind.MODULE_DIVERGENT if divergent else StepKind.MODULE_DIFFERING)
    ch.op = op_of(ch.module) if divergent else None
    if ch.op is None:
        ch.kind = ChainKind.MODULE_NO_OP if divergent else ChainKind.MODULE_UNPROVEN
        return ch
    ch.backend = backend_of(argv) if ch.op == "sdpa_decode" else None
    try:
        shapes = await asyncio.to_thread(input_shapes, Path(str(result.get("dir_b"))), ch.module)
        tokens = int(result.get("fresh_prefill_tokens") or 2)
        size = probe_shape(ch.op, shapes, tokens)
        if size is None:
            ch.step, ch.kind = "probe", ChainKind.PROBE_NO_SHAPES
            return ch
        res = await asyncio.to_thread(probe or _probe, {"op": ch.op, **size})
    except Exception as e:  # torch, a file: one line
        ch.step, ch.kind, ch.error = "probe", ChainKind.PROBE_FAILED, one_line(str(e), 300)
        return ch
    ch.probe = res
    ch.kind = probe_kind(bool(res.get("identical")))
    return ch


def _match_cfg(spec: SweepSpec, url: str):
    """The relaunched base's match run: the sweep's run options, match alone, and the batch
    probe at the batch sizes its samples reach."""
    sizes = [b for b in BATCH_SIZES if b <= max(spec.cfg.samples, 1)]
    return replace(spec.cfg, servers=[url], helpers=["match"], ablate=None, batch_sizes=sizes)


def _batch_step(ch: Chain, store) -> None:
    """The batch probe's finding on the relaunched base, into the chain."""
    probes = [ev for ev in getattr(store, "batch_probes", []) if ev.helper == "match"]
    if not probes or probes[0].error:
        return
    ev = probes[0]
    ch.batch_changed_at, ch.batch_first = ev.changed_at, ev.first
    ch.batch_sizes = list(ev.sizes)
    ch.steps.append(StepKind.BATCH_IDENTICAL if ev.changed_at is None else StepKind.BATCH_CHANGED)


def _probe(size: dict) -> dict:
    """probe-ops' one op at the module's shapes, on the default device and dtype."""
    import torch

    from kltui.dumps import probe_ops

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = "bfloat16" if dev == "cuda" else "float32"
    a = SimpleNamespace(device=dev, dtypes=[dtype], seed=0, **size)
    one = probe_ops.probe_dtype(a, dtype)
    op = next(o for o in one["ops"] if o["op"] == size["op"])
    with contextlib.suppress(Exception):
        op["device"] = probe_ops.device_name(torch, torch.device(dev))
    return {**op, "dtype": dtype, "sizes": size["sizes"]}
