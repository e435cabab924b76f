"""The HF reference's results as plain text that every medium escapes for itself: the three-way
table's rows (`readings/three_way.py`), one line per engine against the reference, and the rows
of its config diff. `kltui check`'s console, the Markdown and the HTML report all read these, so
the reference is labelled the same way everywhere."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kltui import fmt
from kltui.readings.three_way import Leg, ThreeWay
from kltui.session.helper_view import HelperView
from kltui.session.store import HelperState
from kltui.words.three_way import verdict_line

THREE_WAY_COLUMNS = (
    "pair",
    "samples",
    "avg_kl_div",
    "mean |Δ|",
    "max |Δ|",
    "top-1 agreement",
    "union top-k KL",
    "top-1 flips",
)
DIFF_COLUMNS = ("setting", "engine", "HF reference", "status", "why")
REFERENCE_LABEL = "HF reference"


def is_reference(st: HelperState) -> bool:
    """An engine against the HF reference (its figures are this module's, not the cross rows)."""
    return st.summary is not None and HelperView.of(st).summary.has("reference_flips")


def _flips(leg: Leg) -> str:
    if leg.flips is None:
        return "–"
    if not leg.flips:
        return "0"
    if leg.near_tie_flips is None:
        return str(leg.flips)
    return f"{leg.flips} ({leg.near_tie_flips} near a tie, {leg.wide_flips} wide)"


def _union(leg: Leg) -> str:
    kind = {True: "exact", False: "lower bound"}.get(leg.union_exact, "")  # type: ignore[arg-type]
    return fmt.sci(leg.union_kl_mean) + (f" ({kind})" if kind else "")


def three_way_rows(tw: ThreeWay) -> list[list[str]]:
    """One row per pair, in THREE_WAY_COLUMNS order."""
    return [
        [
            leg.name.replace("HF", REFERENCE_LABEL),
            str(leg.samples),
            fmt.sci(leg.avg_kl_div),
            fmt.sci(leg.mean_abs_delta),
            fmt.sci(leg.max_abs_delta),
            fmt.pct(leg.top1_agreement),
            _union(leg),
            _flips(leg),
        ]
        for leg in tw.legs
    ]


def verdict_text(tw: ThreeWay) -> str:
    """The verdict as one line ("closer to the reference: SGLang: ..." or "inconclusive: ...")."""
    return verdict_line(tw)


def reference_line(f: Mapping[str, Any]) -> str:
    """One engine against the reference, in one line: what the reference ran as, agreement,
    the union KL (exact or a lower bound), the flips by the reference's margin, dtypes."""
    loaded = f.get("loaded") if isinstance(f.get("loaded"), dict) else f.get("reference_loaded")
    loaded = loaded if isinstance(loaded, dict) else {}
    how = ", ".join(
        str(v)
        for v in (
            f"transformers {loaded.get('transformers_version')}"
            if loaded.get("transformers_version")
            else None,
            loaded.get("attn_implementation"),
            loaded.get("dtype"),
            loaded.get("device"),
        )
        if v
    )
    found = f.get("reference_flips")
    rf: dict = found if isinstance(found, dict) else {}
    exact = f.get("union_exact")
    union = fmt.sci(f.get("union_kl_mean"))
    union += " (exact: every union id known on both sides)" if exact else " (a lower bound)"
    line = (
        f"{f.get('engine', '?')} vs the {REFERENCE_LABEL}"
        + (f" ({how})" if how else "")
        + f": top-1 agreement {fmt.pct(f.get('top1_agreement'))}, max |Δlogprob| "
        f"{fmt.sci(f.get('max_abs_delta'))}, mean {fmt.sci(f.get('mean_abs_delta'))}, union "
        f"top-k KL {union}"
    )
    if rf.get("flips"):
        share = rf.get("near_tie_share")
        line += (
            f"; top-1 flips {rf['flips']}: {rf.get('near_tie')} where the reference's top-1/top-2 "
            f"margin is under {rf.get('line')} nats (expected near a tie), {rf.get('wide')} "
            "where it is not (not rounding)"
            + (f", {share * 100:.0f}% near a tie" if isinstance(share, int | float) else "")
        )
    else:
        line += "; no top-1 flips"
    dt = f.get("across_dtypes")
    if isinstance(dt, dict):
        line += (
            f"; across dtypes: the engine runs {dt.get('engine')}, the reference "
            f"{dt.get('reference')}"
        )
    mism = f.get("config_mismatches")
    if mism:
        line += f"; config differs: {', '.join(map(str, mism))}"
    return line


def diff_rows(f: Mapping[str, Any]) -> list[dict[str, str]]:
    """The config diff as rows of text (key, label, engine, reference, status, severity, why)."""
    rows = f.get("config_diff")
    if rows is None:
        rows = f.get("reference_alignment")
    out = []
    for r in rows if isinstance(rows, list) else []:
        if not isinstance(r, dict):
            continue
        note = f" ({r.get('note')})" if r.get("note") else ""
        out.append(
            {
                "key": str(r.get("key")),
                "label": str(r.get("label") or r.get("key")),
                "engine": "–" if r.get("engine") is None else str(r.get("engine")),
                "reference": "–" if r.get("reference") is None else str(r.get("reference")),
                "status": str(r.get("status")),
                "severity": str(r.get("severity")),
                "why": f"{r.get('why') or ''}{note}",
            }
        )
    return out
