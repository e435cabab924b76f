"""What `kltui ablate --chain` found (`dumps/chain.py` runs it): how far it went, each step's
line and time, and the `chain` section of the ablation JSON it becomes."""

from __future__ import annotations

from dataclasses import dataclass, field

from kltui.untrusted import one_line


@dataclass
class Chain:
    """The chain's result: how far it went and what each step found."""

    # "refused", "failed", "interrupted", "needs cuda graphs", "module", "no module"
    status: str
    line: str  # the one line that says it (server text inside: escape it to show it)
    step: str | None = None  # the step that failed: relaunch, reproduce, dumps, probe
    setting: str | None = None  # the localized setting(s)
    log: str | None = None  # the relaunched server's log, in the sweep folder
    reproduced: bool | None = None
    match_avg_kl_div: float | None = None
    module: str | None = None
    module_status: str | None = None  # first-divergent | first-differing | identical
    dumps: dict | None = None  # the drill-down's summary
    op: str | None = None
    probe: dict | None = None  # the op probe at the module's shapes
    # the batch probe on the relaunched base: the smallest batch size whose tokens change
    # (None: none of BATCH_SIZES), and where
    batch_changed_at: int | None = None
    batch_first: dict | None = None
    # the prompt lengths kltui dumps ran at: a second, longer one when the first found decode
    # and the fresh prefill bit-identical (a longer prefill takes other GEMM shapes)
    dump_prompt_tokens: list[int] = field(default_factory=list)
    steps: list[str] = field(default_factory=list)  # what each finished step said
    # seconds per step (relaunch, match, dumps, stop, probe; to_json adds their total): the
    # sweep's time split leaves the chain out, so it is reported beside it
    timing: dict[str, float] = field(default_factory=dict)
    running: str | None = None  # the step in progress (what an interruption names)

    def failed(self, step: str, what: str) -> Chain:
        """The chain stopped by a failure in `step`: one line naming it."""
        self.step, self.status = step, "failed"
        self.line = f"chain: {step} failed: {one_line(what, 600)}"
        return self

    def interrupted(self) -> Chain:
        """The chain cut short (Ctrl-C, SIGTERM) in `running`: what the steps before it
        measured is kept, and the line says where it stopped and what is left to run."""
        step = self.running or "relaunch"
        self.status, self.step = "interrupted", step
        # the steps' times are in the sweep's time line ("then the chain ..."), not repeated
        self.line = (
            f"chain: interrupted during the {step} step; the steps above are kept: run the "
            "sweep again with --chain and more time, or relaunch the base with the dumper and "
            "run kltui dumps on it (docs/DUMPS.md)"
        )
        return self

    def lines(self) -> list[str]:
        """setting -> module -> op probe, one line each, then how it ended."""
        return [*self.steps, self.line]

    def to_json(self) -> dict:
        """The `chain` section of the ablation JSON (docs/JSON.md)."""
        return {
            "status": self.status,
            "line": self.line,
            "step": self.step,
            "setting": self.setting,
            "log": self.log,
            "reproduced": self.reproduced,
            "match_avg_kl_div": self.match_avg_kl_div,
            "module": self.module,
            "module_status": self.module_status,
            "dumps": self.dumps,
            "op": self.op,
            "probe": self.probe,
            "batch_changed_at": self.batch_changed_at,
            "batch_first": self.batch_first,
            "dump_prompt_tokens": list(self.dump_prompt_tokens),
            "steps": list(self.steps),
            "timing": {**self.timing, "total_s": round(sum(self.timing.values()), 3)}
            if self.timing
            else {},
        }
