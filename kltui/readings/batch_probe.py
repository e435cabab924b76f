"""`--batch-sizes`' probe as it reads: each helper at each batch size, compared bit for bit
(the events come from run/batch_probe.py)."""

from __future__ import annotations

from typing import Any

from kltui.readings.stress import deterministic as reports_deterministic
from kltui.session.events import BatchProbed
from kltui.session.store import SessionStore

# the helper phase that computed each side of a comparison (compare.SIDES): side A is the
# fresh prefill, side B (and the generated ids) the decode
PHASE_OF_SIDE = {"ids": "decode", "decode": "decode", "prefill": "prefill", "both": "decode"}


def probe_line(ev: BatchProbed, deterministic: bool) -> str:
    """One helper's --batch-sizes result as words."""
    sizes = ",".join(str(b) for b in ev.sizes)
    note = f"{ev.samples} samples"
    if ev.not_reached:
        missed = ",".join(str(b) for b in ev.not_reached)
        note += (
            f"; {missed} not reached with {ev.prompts} prompts, --samples "
            f"{max(ev.not_reached)} reaches them"
        )
    head = f"{ev.helper} at batch sizes {sizes} ({note}): "
    if ev.error:
        return head + f"probe stopped: {ev.error}"
    if len(ev.sizes) < 2:
        return head + "inconclusive: one batch size run, nothing to compare it with"
    if ev.changed_at is None:
        return head + (
            "bit-identical at every batch size run"
            if ev.not_reached
            else "bit-identical at every batch size"
        )
    f = ev.first or {}
    below = [b for b in ev.sizes if b < ev.changed_at]
    where = f"sample {f.get('sample')} @ {f.get('position')} ({f.get('side')} side)"
    what = (
        "a batch-invariance gap on a deterministic server (what 'deterministic mode diverges "
        f"above batch {below[-1]}' reports)"
        if deterministic and below
        else "expected of batch-variant kernels"
        if not deterministic
        else "a batch-invariance gap"
    )
    return head + f"tokens change first at batch {ev.changed_at}, {where}: {what}"


def probe_json(ev: BatchProbed) -> dict[str, Any]:
    """One helper's --batch-sizes result as the JSON result's `batch_probe` entry."""
    return {
        "helper": ev.helper,
        "server": ev.server,
        "sizes": list(ev.sizes),
        "not_reached": list(ev.not_reached),
        "samples": ev.samples,
        "changed_at": ev.changed_at,
        "first": ev.first,
        "error": ev.error,
    }


def probe_lines(store: SessionStore) -> list[str]:
    """Every --batch-sizes result of a run, as words."""
    return [probe_line(ev, reports_deterministic(store, ev.server)) for ev in store.batch_probes]
