"""What `kltui ablate --chain` found (`dumps/chain.py` runs it): how it ended (a `ChainKind`),
what each finished step found (a `StepKind` each), the figures they rest on, each step's time,
and the `chain` section of the ablation JSON it becomes. No words: `words/chain.py` says it."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from kltui.untrusted import one_line


class ChainKind(StrEnum):
    """How the chain ended."""

    REFUSED_ATTACH = "refused-attach"  # attach mode launches nothing
    REFUSED_UNMEASURED = "refused-unmeasured"  # the base was not measured
    REFUSED_VERDICT = "refused-verdict"  # not a localized condition-1 verdict
    FAILED = "failed"  # a step failed (`step`, `error`)
    INTERRUPTED = "interrupted"  # cut short during `step`
    NEEDS_GRAPHS = "needs-graphs"  # match no longer diverges without CUDA graphs
    NEEDS_BATCH = "needs-batch"  # dumps of one request identical; tokens change at a batch
    NOTHING_FOUND = "nothing-found"  # dumps identical and the batch probe found nothing
    MODULE_UNPROVEN = "module-unproven"  # a first differing module (inputs not identical)
    MODULE_NO_OP = "module-no-op"  # a first divergent module probe-ops does not cover
    PROBE_NO_SHAPES = "probe-no-shapes"  # the dump holds no input shapes of the module
    PROBE_FAILED = "probe-failed"  # the op probe raised (`error`)
    OP_SHAPE_VARIANT = "op-shape-variant"  # torch's op differs at the module's shapes
    SERVER_KERNEL = "server-kernel"  # torch's op bit-identical: the server's kernel is suspect


# the chain relaunches the base without CUDA graphs (the dumper cannot see into them), and
# dumps again at LONG_PROMPT_TOKENS when the first dump found decode and prefill identical
NO_GRAPH_FLAGS = ("--disable-cuda-graph", "--disable-prefill-cuda-graph")
LONG_PROMPT_TOKENS = 128


class Progress(StrEnum):
    """A step as it begins (what `run_chain`'s `say` gets, `words/chain.progress_line`)."""

    RELAUNCH = "relaunch"  # the base, with the dumper and NO_GRAPH_FLAGS
    REPRODUCE = "reproduce"  # match on it: does it still diverge without graphs?
    DUMPS = "dumps"  # kltui dumps on it
    DUMPS_LONG = "dumps-long"  # again, with a LONG_PROMPT_TOKENS-token prompt


class StepKind(StrEnum):
    """What one finished step found."""

    SETTING = "setting"  # the localized setting(s)
    REPRODUCED = "reproduced"  # match still diverges without CUDA graphs
    BATCH_IDENTICAL = "batch-identical"  # the batch probe: identical at every size
    BATCH_CHANGED = "batch-changed"  # the batch probe: tokens change at `batch_changed_at`
    DUMPS_IDENTICAL = "dumps-identical"  # the first dump: no module differs
    MODULE_DIVERGENT = "module-divergent"  # the first divergent module (inputs identical)
    MODULE_DIFFERING = "module-differing"  # the first differing module (not named)


# the JSON's older `status`, kept: one per kind
STATUS = {
    ChainKind.REFUSED_ATTACH: "refused",
    ChainKind.REFUSED_UNMEASURED: "refused",
    ChainKind.REFUSED_VERDICT: "refused",
    ChainKind.FAILED: "failed",
    ChainKind.INTERRUPTED: "interrupted",
    ChainKind.NEEDS_GRAPHS: "needs cuda graphs",
    ChainKind.NEEDS_BATCH: "no module",
    ChainKind.NOTHING_FOUND: "no module",
    ChainKind.MODULE_UNPROVEN: "module",
    ChainKind.MODULE_NO_OP: "module",
    ChainKind.PROBE_NO_SHAPES: "module",
    ChainKind.PROBE_FAILED: "module",
    ChainKind.OP_SHAPE_VARIANT: "module",
    ChainKind.SERVER_KERNEL: "module",
}


@dataclass
class Chain:
    """The chain's result: how it ended, what each step found and the figures of both."""

    kind: ChainKind
    step: str | None = None  # the step that failed or was cut short: relaunch, reproduce, ...
    error: str | None = None  # why it failed (one line; server text: escape it to show it)
    setting: str | None = None  # the localized setting(s)
    verdict: str | None = None  # the sweep's verdict kind
    condition: int | None = None  # the base's condition (None: inconclusive)
    log: str | None = None  # the relaunched server's log, in the sweep folder
    reproduced: bool | None = None
    match_avg_kl_div: float | None = None
    module: str | None = None
    module_status: str | None = None  # first-divergent | first-differing | identical
    dumps: dict | None = None  # the drill-down's summary
    op: str | None = None
    backend: str | None = None  # the base's attention backend, as its launch command sets it
    probe: dict | None = None  # the op probe at the module's shapes
    # the batch probe on the relaunched base: the sizes run, the smallest whose tokens change
    # (None: none of them), and where
    batch_sizes: list[int] = field(default_factory=list)
    batch_changed_at: int | None = None
    batch_first: dict | None = None
    # the prompt lengths kltui dumps ran at: a second, longer one when the first found decode
    # and the fresh prefill bit-identical (a longer prefill takes other GEMM shapes)
    dump_prompt_tokens: list[int] = field(default_factory=list)
    steps: list[StepKind] = field(default_factory=list)  # what each finished step found
    # seconds per step (relaunch, match, dumps, stop, probe; to_json adds their total): the
    # sweep's time split leaves the chain out, so it is reported beside it
    timing: dict[str, float] = field(default_factory=dict)
    running: str | None = None  # the step in progress (what an interruption names)

    @property
    def status(self) -> str:
        """The coarse outcome the JSON kept before the kinds: refused, failed, module, ..."""
        return STATUS[self.kind]

    def failed(self, step: str, what: str) -> Chain:
        """The chain stopped by a failure in `step`, and why."""
        self.kind, self.step, self.error = ChainKind.FAILED, step, one_line(what, 600)
        return self

    def interrupted(self) -> Chain:
        """The chain cut short (Ctrl-C, SIGTERM) in `running`: what the steps before it
        measured is kept."""
        self.kind, self.step = ChainKind.INTERRUPTED, self.running or "relaunch"
        return self

    def to_json(self) -> dict:
        """The typed part of the `chain` section of the ablation JSON (docs/JSON.md); its
        `line` and `steps` are the words' (`words/chain.chain_json`)."""
        return {
            "kind": str(self.kind),
            "status": self.status,
            "step": self.step,
            "error": self.error,
            "setting": self.setting,
            "verdict": self.verdict,
            "condition": self.condition,
            "log": self.log,
            "reproduced": self.reproduced,
            "match_avg_kl_div": self.match_avg_kl_div,
            "module": self.module,
            "module_status": self.module_status,
            "dumps": self.dumps,
            "op": self.op,
            "backend": self.backend,
            "probe": self.probe,
            "batch_sizes": list(self.batch_sizes),
            "batch_changed_at": self.batch_changed_at,
            "batch_first": self.batch_first,
            "dump_prompt_tokens": list(self.dump_prompt_tokens),
            "step_kinds": [str(s) for s in self.steps],
            "timing": {**self.timing, "total_s": round(sum(self.timing.values()), 3)}
            if self.timing
            else {},
        }

    @classmethod
    def from_json(cls, doc: dict) -> Chain | None:
        """A chain read back from its JSON (None: written before the kinds, words only)."""
        kind = doc.get("kind")
        if not isinstance(kind, str) or kind not in ChainKind.__members__.values():
            return None
        timing = {k: v for k, v in (doc.get("timing") or {}).items() if k != "total_s"}
        names = [
            "step", "error", "setting", "verdict", "condition", "log", "reproduced",
            "match_avg_kl_div", "module", "module_status", "dumps", "op", "backend", "probe",
            "batch_changed_at", "batch_first",
        ]  # fmt: skip
        return cls(
            ChainKind(kind),
            **{k: doc.get(k) for k in names},
            batch_sizes=list(doc.get("batch_sizes") or []),
            dump_prompt_tokens=list(doc.get("dump_prompt_tokens") or []),
            steps=[StepKind(s) for s in doc.get("step_kinds") or []],
            timing=timing,
        )
