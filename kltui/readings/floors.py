"""cross_engine's floors in words, the same in every view: each engine against itself, and the
gap between the engines read against them. The decision is `metrics/floors.read_floors` (kept in
the helper's summary as `floors.reading`); only its wording is here."""

from __future__ import annotations

from typing import Any

from kltui import fmt
from kltui.metrics.floors import FloorKind, FloorReading

ENGINES = (("sglang", "SGLang"), ("vllm", "vLLM"))


def floors_of(figures: Any) -> dict | None:
    """The `floors` entry of a cross_engine summary's figures (None: not measured, or a
    recording from before floors)."""
    fl = figures.get("floors") if hasattr(figures, "get") else None
    return fl if isinstance(fl, dict) else None


def kind_of(floors: dict | None) -> FloorKind:
    """The reading's kind (UNMEASURED when there is none, or an unknown word)."""
    reading = (floors or {}).get("reading")
    word = reading.get("kind") if isinstance(reading, dict) else None
    known = {str(k): k for k in FloorKind}
    return known.get(str(word), FloorKind.UNMEASURED)


def _reading(floors: dict) -> FloorReading:
    got = floors.get("reading")
    r: dict = got if isinstance(got, dict) else {}
    return FloorReading(
        kind_of(floors), r.get("gap"), r.get("larger"), r.get("larger_engine"), r.get("ratio")
    )


def _scope(floors: dict) -> tuple[str, str | None, int | None]:
    """("N of M", the second scoring's composition, the first scoring's largest batch)."""
    n = len(floors.get("samples") or [])
    first = floors.get("first_batch")
    comp = floors.get("composition")
    return (
        f"{n} of {floors.get('of', '?')}",
        comp if isinstance(comp, str) and comp else None,
        first if isinstance(first, int) else None,
    )


def how(floors: dict) -> str:
    """Which samples were scored again, and in what batch."""
    count, comp, first = _scope(floors)
    text = f"{count} samples scored again {comp or 'another batch'}"
    if first is not None:
        text += f" (first in batches of up to {first})"
    if floors.get("same_composition"):
        text += ": the same composition as the first scoring, so run-to-run noise only"
    return text


def engine_line(floors: dict, key: str) -> str:
    """One engine against itself, in cross_engine's figures."""
    f = floors.get(key)
    if not isinstance(f, dict):
        return "not measured"
    if f.get("zero"):
        return (
            f"exactly 0: bit-identical at all {f.get('positions')} positions "
            "(alone and in the first scoring's batches alike)"
        )
    got = f.get("flip_margins")
    fm: dict = got if isinstance(got, dict) else {}
    flips = fm.get("flips") or 0
    wide = fm.get("across_line") or 0
    return (
        f"avg k3 {fmt.sci(f.get('avg_k3'))}, mean |Δ| {fmt.sci(f.get('mean_abs_delta'))}, "
        f"max |Δ| {fmt.sci(f.get('max_abs_delta'))}, top-1 {fmt.pct(f.get('top1_agreement'))}, "
        f"flips {flips} ({wide} across {fm.get('line', 0.7):g} nats), "
        f"{f.get('differing_positions')} of {f.get('positions')} positions differ"
    )


def verdict_line(floors: dict | None) -> str:
    """The gap against the floors, in one line."""
    if floors is None:
        return "floors not measured"
    if floors.get("error"):
        return f"floors not measured: {floors['error']}"
    r = _reading(floors)
    gap = fmt.sci(r.gap)
    if r.kind is FloorKind.IDENTICAL:
        return "the engines agree bit for bit on the floors' samples"
    if r.kind is FloorKind.FLOOR_ZERO:
        # A zero floor is one composition against another on a sample of the sequences, not a
        # proof of batch invariance: say what was compared, so the claim stays that wide.
        return (
            f"the engines differ by {gap} (avg k3) while each engine's floor is exactly 0 "
            f"({_zero_scope(floors)}): none of the gap is either engine's own noise between "
            "those batches"
        )
    if r.kind is FloorKind.WITHIN:
        return (
            f"within the engines' own noise: the engines differ by {gap} (avg k3), "
            f"{_times(r.ratio)} the larger floor ({r.larger_engine} against itself, "
            f"{fmt.sci(r.larger)})"
        )
    if r.kind is FloorKind.ABOVE:
        return (
            f"the engines differ by {gap} (avg k3), {_times(r.ratio)} the larger floor "
            f"({r.larger_engine} against itself, {fmt.sci(r.larger)})"
        )
    return "floors not measured"


def _zero_scope(floors: dict) -> str:
    """What a zero floor covers: how many sequences, scored in which two compositions."""
    count, comp, first = _scope(floors)
    within = "in the first scoring" if first is None else f"in batches of up to {first}"
    return f"{count} sequences bit-identical {comp or 'in another batch'} and {within}"


def _ratio(ratio: float | None) -> str:
    if ratio is None:
        return "?"
    return f"{ratio:.3g}" if ratio < 100 else f"{ratio:,.0f}"


def _times(ratio: float | None) -> str:
    return f"{_ratio(ratio)} times"


def floor_rows(floors: dict | None) -> list[tuple[str, str]]:
    """(label, plain-text value) rows for Markdown, HTML and the console."""
    if floors is None:
        return []
    rows = [("floors", how(floors))]
    if not floors.get("error"):
        rows += [(f"{name} vs itself", engine_line(floors, key)) for key, name in ENGINES]
    rows.append(("gap against the floors", verdict_line(floors)))
    return rows


def short_line(floors: dict | None) -> str:
    """The reading in at most 24 characters (the TUI's helper row)."""
    if floors is None or floors.get("error"):
        return "not measured"
    r = _reading(floors)
    ratio = f"{_ratio(r.ratio)}x"
    if r.kind is FloorKind.WITHIN:
        return f"own noise ({ratio} floor)"
    if r.kind is FloorKind.ABOVE:
        return f"{ratio} the larger floor"
    if r.kind is FloorKind.FLOOR_ZERO:
        return "floors 0: engines differ"
    if r.kind is FloorKind.IDENTICAL:
        return "engines bit-identical"
    return "not measured"


def floor_value(floors: dict, key: str) -> str:
    """One engine's floor as a number ("0 exactly" for a batch-invariant one)."""
    f = floors.get(key)
    if not isinstance(f, dict):
        return "–"
    return "0 exactly" if f.get("zero") else fmt.sci(f.get("avg_k3"))
