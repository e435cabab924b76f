"""`--batch-sizes`' probe in words (`readings/batch_sizes.py` decides): one line per helper."""

from __future__ import annotations

from kltui.readings.batch_sizes import BatchFinding, BatchKind, findings
from kltui.session.store import SessionStore


def probe_line(f: BatchFinding) -> str:
    """One helper's --batch-sizes result as words."""
    ev = f.ev
    sizes = ",".join(str(b) for b in ev.sizes)
    note = f"{ev.samples} samples"
    if ev.not_reached:
        missed = ",".join(str(b) for b in ev.not_reached)
        note += (
            f"; {missed} not reached with {ev.prompts} prompts, --samples "
            f"{max(ev.not_reached)} reaches them"
        )
    head = f"{ev.helper} at batch sizes {sizes} ({note}): "
    match f.kind:
        case BatchKind.STOPPED:
            return head + f"probe stopped: {ev.error}"
        case BatchKind.ONE_SIZE:
            return head + "inconclusive: one batch size run, nothing to compare it with"
        case BatchKind.IDENTICAL:
            return head + (
                "bit-identical at every batch size run"
                if ev.not_reached
                else "bit-identical at every batch size"
            )
    first = ev.first or {}
    where = f"sample {first.get('sample')} @ {first.get('position')} ({first.get('side')} side)"
    if f.kind is BatchKind.VARIANT:
        what = "expected of batch-variant kernels"
    elif f.below is not None:
        what = (
            "a batch-invariance gap on a deterministic server (what 'deterministic mode "
            f"diverges above batch {f.below}' reports)"
        )
    else:
        what = "a batch-invariance gap"
    return head + f"tokens change first at batch {ev.changed_at}, {where}: {what}"


def probe_lines(store: SessionStore) -> list[str]:
    """Every --batch-sizes result of a run, as words."""
    return [probe_line(f) for f in findings(store)]
