"""`kltui ablate --chain` in words (`dumps/chain.py` decides, `dumps/chain_result.py` holds
what it found): one line per finished step, one for how it ended, and the JSON's `line` and
`steps` beside its kinds."""

from __future__ import annotations

from kltui.dumps.chain_result import (
    LONG_PROMPT_TOKENS,
    NO_GRAPH_FLAGS,
    Chain,
    ChainKind,
    Progress,
    StepKind,
)
from kltui.untrusted import one_line

NEEDS_GRAPHS = "the divergence needs CUDA graphs; the dumper cannot see it"

_KERNELS = {
    "linear": "GEMM",
    "rms_norm": "RMSNorm",
    "sdpa_decode": "attention",
    "log_softmax": "logits/log-softmax",
}


def progress_line(p: Progress) -> str:
    """A step as it begins."""
    match p:
        case Progress.RELAUNCH:
            return f"chain: relaunching the base with the dumper and {' '.join(NO_GRAPH_FLAGS)}"
        case Progress.REPRODUCE:
            return "chain: match on the relaunched base (does it still diverge without graphs?)"
        case Progress.DUMPS:
            return "chain: kltui dumps on the relaunched base"
    return f"chain: kltui dumps again with a {LONG_PROMPT_TOKENS}-token prompt"


def step_line(ch: Chain, kind: StepKind) -> str:
    """What one finished step found."""
    dumps = ch.dumps or {}
    match kind:
        case StepKind.SETTING:
            return f"setting: {ch.setting} ({ch.verdict}, condition 1 in the base)"
        case StepKind.REPRODUCED:
            return f"reproduced without CUDA graphs: match {ch.match_avg_kl_div:.3g} on the base"
        case StepKind.BATCH_IDENTICAL:
            return f"batch probe: match bit-identical at batch sizes {_sizes(ch)}"
        case StepKind.BATCH_CHANGED:
            f = ch.batch_first or {}
            return (
                f"batch probe: match's tokens change first at batch {ch.batch_changed_at} "
                f"(sizes {_sizes(ch)}; sample {f.get('sample')} @ {f.get('position')}, "
                f"{f.get('side')} side)"
            )
        case StepKind.DUMPS_IDENTICAL:
            n = ch.dump_prompt_tokens[0] if ch.dump_prompt_tokens else None
            return (
                f"dumps, {n}-token prompt: decode and the fresh prefill bit-identical at every "
                "aligned module"
            )
        case StepKind.MODULE_DIVERGENT:
            diff = dumps.get("max_abs_diff")
            shown = f", max |diff| {diff:.3g}" if isinstance(diff, float) else ""
            return f"module: {ch.module} (first divergent, inputs identical{shown})"
    return (
        f"module: none named; first differing {ch.module}: "
        f"{one_line(str(dumps.get('unnamed_reason')), 300)}"
    )


def _sizes(ch: Chain) -> str:
    return ",".join(str(b) for b in ch.batch_sizes)


def end_line(ch: Chain) -> str:
    """How the chain ended, one line."""
    match ch.kind:
        case ChainKind.REFUSED_ATTACH:
            return (
                "no chain: attach mode launches nothing; relaunch the base with the dumper "
                "(docs/DUMPS.md) and run kltui dumps on it"
            )
        case ChainKind.REFUSED_UNMEASURED:
            return "no chain: the base was not measured"
        case ChainKind.REFUSED_VERDICT:
            what = "inconclusive" if ch.condition is None else f"condition {ch.condition}"
            return (
                f"no chain: the verdict is {ch.verdict} with {what} in the base; the dumper "
                "drill-down follows only a localized condition-1 divergence"
            )
        case ChainKind.FAILED:
            return f"chain: {ch.step} failed: {ch.error}"
        case ChainKind.INTERRUPTED:
            return (
                f"chain: interrupted during the {ch.step} step; the steps above are kept: run "
                "the sweep again with --chain and more time, or relaunch the base with the "
                "dumper and run kltui dumps on it (docs/DUMPS.md)"
            )
        case ChainKind.NEEDS_GRAPHS:
            return f"chain: {NEEDS_GRAPHS}"
        case ChainKind.NEEDS_BATCH | ChainKind.NOTHING_FOUND:
            return _no_module_line(ch)
        case ChainKind.MODULE_UNPROVEN:
            return f"chain: {ch.setting} -> {ch.module} (not proven)"
        case ChainKind.MODULE_NO_OP:
            return f"chain: {ch.setting} -> {ch.module}; probe-ops does not cover its op"
        case ChainKind.PROBE_NO_SHAPES:
            return f"chain: probe failed: no input shapes of {ch.module}"
        case ChainKind.PROBE_FAILED:
            return f"chain: probe failed: {ch.error}"
    res = ch.probe or {}
    same = "bit-identical" if ch.kind is ChainKind.SERVER_KERNEL else "differs"
    return (
        f"chain: {ch.setting} -> {ch.module} -> {ch.op} {same} at M=1 vs M=N "
        f"({res.get('shape')}, {res.get('dtype')}, {res.get('device')}): "
        + probe_reading(str(ch.op), ch.kind is ChainKind.SERVER_KERNEL, ch.backend)
    )


def probe_reading(op: str, identical: bool, backend: str | None) -> str:
    """What the op probe shows and what it does not: probe-ops runs torch's op, not the
    server's kernel, so a bit-identical probe clears the op's math at these shapes and
    leaves the server's own kernel (`backend`: its attention backend) as the suspect; a
    differing one reproduces the shape variance outside the server."""
    if not identical:
        return f"torch's {op} is shape-variant at the module's shapes outside the server too"
    which = ""
    if op == "sdpa_decode":
        which = f" (its {backend} attention backend)" if backend else " (its attention backend)"
    return (
        f"torch's {op} does not reproduce it at the module's shapes: the suspect is the "
        f"server's own {_KERNELS.get(op, op)} kernel{which}, which probe-ops does not run"
    )


def _no_module_line(ch: Chain) -> str:
    """A drill-down that names no module, with what the batch probe found: what was tried,
    why the module is not named, and what to run next."""
    lengths = " and ".join(str(n) for n in ch.dump_prompt_tokens)
    verdict = one_line(str((ch.dumps or {}).get("verdict")), 300)
    seen = (
        "kltui dumps found decode and the fresh prefill bit-identical without CUDA graphs, "
        f"with prompts of {lengths} tokens ({verdict})"
    )
    n = ch.batch_changed_at
    if ch.kind is ChainKind.NOTHING_FOUND:
        return (
            f"chain: {seen}; match diverges over the whole run but neither one request nor "
            "the batch probe reproduced it: run kltui dumps under the run's own load (kltui "
            "check --stress light beside it) to find where it appears"
        )
    return (
        f"chain: {seen}, one request at a time; the divergence needs a batch: tokens change "
        f"first at batch {n}. kltui dumps compares one request's decode with its fresh "
        f"prefill and cannot capture a batch, so the module at batch {n} is not named; next: "
        f"kltui probe-ops --sizes {n} on the server's GPU (the usual ops at M=1 vs M={n}), "
        f"or SGLang's dumper over a batch of {n} requests (docs/DUMPS.md)"
    )


def lines(ch: Chain) -> list[str]:
    """setting -> module -> op probe, one line each, then how it ended."""
    return [*(step_line(ch, s) for s in ch.steps), end_line(ch)]


def doc_lines(doc: dict | None) -> list[str]:
    """A chain's lines from its JSON; one written before the kinds kept its words."""
    if not doc:
        return []
    ch = Chain.from_json(doc)
    if ch is None:
        return [str(x) for x in doc.get("steps") or ()] + [str(doc.get("line"))]
    return lines(ch)


def chain_json(doc: dict | None) -> dict | None:
    """The `chain` section of `kltui ablate --json`: the kinds and figures, and their words."""
    if not doc:
        return doc
    *steps, line = doc_lines(doc)
    return {**doc, "line": line, "steps": steps}
