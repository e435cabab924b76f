"""cross_engine's floors in words, the same in every view (`readings/floors.py` reads them):
each engine against itself, and the gap between the engines read against them. The functions
take the summary's `floors` entry as recorded and say its finding."""

from __future__ import annotations

from kltui import fmt
from kltui.metrics.floors import FloorKind
from kltui.readings.floors import EngineFloor, Floors, read

ENGINES = (("sglang", "SGLang"), ("vllm", "vLLM"))


def how(floors: dict) -> str:
    """Which samples were scored again, and in what batch."""
    return _how(read(floors))


def _how(f: Floors) -> str:
    text = f"{f.count} of {f.of} samples scored again {f.composition or 'another batch'}"
    if f.first_batch is not None:
        text += f" (first in batches of up to {f.first_batch})"
    if f.same_composition:
        text += ": the same composition as the first scoring, so run-to-run noise only"
    return text


def engine_line(floors: dict, key: str) -> str:
    """One engine against itself, in cross_engine's figures."""
    return _engine_line(read(floors).engines.get(key))


def _engine_line(f: EngineFloor | None) -> str:
    if f is None:
        return "not measured"
    if f.zero:
        return (
            f"exactly 0: bit-identical at all {f.positions} positions "
            "(alone and in the first scoring's batches alike)"
        )
    return (
        f"avg k3 {fmt.sci(f.avg_k3)}, mean |Δ| {fmt.sci(f.mean_abs_delta)}, "
        f"max |Δ| {fmt.sci(f.max_abs_delta)}, top-1 {fmt.pct(f.top1_agreement)}, "
        f"flips {f.flips} ({f.across_line} across {f.line:g} nats), "
        f"{f.differing_positions} of {f.positions} positions differ"
    )


def verdict_line(floors: dict | None) -> str:
    """The gap against the floors, in one line."""
    if floors is None:
        return "floors not measured"
    f = read(floors)
    if f.error:
        return f"floors not measured: {f.error}"
    r = f.reading
    gap = fmt.sci(r.gap)
    if r.kind is FloorKind.IDENTICAL:
        return "the engines agree bit for bit on the floors' samples"
    if r.kind is FloorKind.FLOOR_ZERO:
        # A zero floor is one composition against another on a sample of the sequences, not a
        # proof of batch invariance: say what was compared, so the claim stays that wide.
        return (
            f"the engines differ by {gap} (avg k3) while each engine's floor is exactly 0 "
            f"({_zero_scope(f)}): none of the gap is either engine's own noise between "
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


def _zero_scope(f: Floors) -> str:
    """What a zero floor covers: how many sequences, scored in which two compositions."""
    within = (
        "in the first scoring" if f.first_batch is None else f"in batches of up to {f.first_batch}"
    )
    return (
        f"{f.count} of {f.of} sequences bit-identical {f.composition or 'in another batch'} "
        f"and {within}"
    )


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
    f = read(floors)
    rows = [("floors", _how(f))]
    if not f.error:
        rows += [(f"{name} vs itself", _engine_line(f.engines[key])) for key, name in ENGINES]
    rows.append(("gap against the floors", verdict_line(floors)))
    return rows


def short_line(floors: dict | None) -> str:
    """The reading in at most 24 characters (the TUI's helper row)."""
    if floors is None:
        return "not measured"
    f = read(floors)
    if f.error:
        return "not measured"
    r = f.reading
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
    f = read(floors).engines.get(key)
    if f is None:
        return "–"
    return "0 exactly" if f.zero else fmt.sci(f.avg_k3)
