"""`--batch-sizes`' probe as it reads: each helper at each batch size, compared bit for bit
(the events come from run/batch_sizes.py). A finding is a `BatchKind` with the event it rests
on; words/batch_sizes.py says it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from kltui.readings.stress import deterministic as reports_deterministic
from kltui.session.events import BatchProbed
from kltui.session.store import SessionStore

# the helper phase that computed each side of a comparison (compare.SIDES): side A is the
# fresh prefill, side B (and the generated ids) the decode
PHASE_OF_SIDE = {"ids": "decode", "decode": "decode", "prefill": "prefill", "both": "decode"}


class BatchKind(StrEnum):
    """What one helper's --batch-sizes probe found."""

    STOPPED = "stopped"  # the probe stopped on an error
    ONE_SIZE = "one size"  # one batch size run: nothing to compare
    IDENTICAL = "identical"  # bit-identical at every size run
    VARIANT = "variant"  # tokens change, on a server without deterministic inference
    GAP = "gap"  # tokens change on a deterministic server (`below`: the last size that held)


@dataclass(frozen=True)
class BatchFinding:
    """One helper's probe: its kind, the event's figures, and the largest size run below the
    change (None when none is)."""

    kind: BatchKind
    ev: BatchProbed
    below: int | None = None


def finding(ev: BatchProbed, deterministic: bool) -> BatchFinding:
    """What one helper's --batch-sizes result says."""
    if ev.error:
        return BatchFinding(BatchKind.STOPPED, ev)
    if len(ev.sizes) < 2:
        return BatchFinding(BatchKind.ONE_SIZE, ev)
    if ev.changed_at is None:
        return BatchFinding(BatchKind.IDENTICAL, ev)
    if not deterministic:
        return BatchFinding(BatchKind.VARIANT, ev)
    below = [b for b in ev.sizes if b < ev.changed_at]
    return BatchFinding(BatchKind.GAP, ev, below[-1] if below else None)


def findings(store: SessionStore) -> list[BatchFinding]:
    """Every --batch-sizes result of a run."""
    return [finding(ev, reports_deterministic(store, ev.server)) for ev in store.batch_probes]


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
