"""The headlines of a diagnosis whose match diverges (`readings/diagnosis_paths.match_noisy`):
condition 1, a state bug beyond it, or the open questions between them."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kltui.fmt import sci
from kltui.readings.diagnosis_parts import Headline
from kltui.readings.findings import Basis, Finding
from kltui.readings.paired import Paired
from kltui.registry import path_of
from kltui.words.common import (
    EVIDENCE_P,
    MIN_RATIO,
    STRAY_ULP_FLOOR,
    joined,
    plural,
    shown_ids,
    tail,
)


def _state_bug_first(h: Headline, b: Basis) -> str:
    return (
        f"condition 2 first (state bug): {joined(h.helpers)} "
        f"{'are' if len(h.helpers) > 1 else 'is'} orders of magnitude above match "
        f"({sci(h.level)} vs {sci(h.match_level)}) while match is within its gate: a state bug "
        f"on {path_of(h.helpers[0])}; match's own kernel noise (condition 1) is small "
        "beside it" + tail(b)
    )


def _both(h: Headline, b: Basis) -> str:
    return (
        f"conditions 1 and 2: kernel noise in every helper (match {sci(h.match_level)}) and "
        f"{joined(h.helpers)} beyond it on the same prompts: a state bug on "
        f"{path_of(h.helpers[0])}; fix condition 1 first, its noise hides the rest" + tail(b)
    )


def _failing_gate(fails: Sequence[str]) -> str:
    """Suspect paths that fail their gate, before the open question."""
    if not fails:
        return ""
    one = len(fails) == 1
    return (
        f"{joined(fails)} fail{'s' if one else ''} {'its' if one else 'their'} gate; cause "
        "undetermined: "
    )


def _suspect(h: Headline, b: Basis, what: str) -> str:
    return (
        f"inconclusive: {_failing_gate(h.failing)}match diverges ({sci(h.match_level)}) and "
        f"{what}" + tail(b)
    )


def _broad_excess(h: Headline, b: Basis) -> str:
    e = h.paired
    assert e is not None  # the finding is built with its paired test
    return _suspect(
        h,
        b,
        f"{e.helper} is above match in {e.higher} of {e.n} samples (signed-rank "
        f"p={e.p:.2g}), typically x{e.ratio:.3g}, but not beyond a x{MIN_RATIO:g} drift "
        f"at p<{EVIDENCE_P:g} (p={e.shift_p:.2g}): a broad excess that is neither "
        "shown to be a state bug nor the drift that longer contexts give kernel noise",
    )


def _few_far_above(h: Headline, b: Basis) -> str:
    e = h.paired
    assert e is not None  # the finding is built with its paired test
    return _suspect(
        h,
        b,
        f"{e.helper} is far above it on {e.up} sample{'s' if e.up != 1 else ''} and far "
        f"below on {e.down} (sign test p={e.tail_p:.2g}): what a state bug in a few "
        "samples looks like, too few to tell from chance",
    )


def _far_above(h: Headline, b: Basis) -> str:
    return (
        f"inconclusive: match diverges ({sci(h.match_level)}) and {h.helpers[0]} is orders of "
        f"magnitude above it on {len(h.samples)} of {h.n} samples ({shown_ids(h.samples)}) and "
        "on none the other way: too few to tell from chance, and not kernel noise until told"
        + tail(b)
    )


def _gate_failures(failing: Sequence[str]) -> str:
    """Helpers that fail the gate, appended to a condition-1 label."""
    return f"; {joined(failing)} fail{plural(len(failing))} the gate" if failing else ""


def _match_path_only(h: Headline, b: Basis) -> str:
    return (
        f"condition 1 on match's path only: match diverges ({sci(h.match_level)}) while "
        f"{joined(h.others)} {'are' if len(h.others) > 1 else 'is'} bit-identical, so the "
        "restored-prefix paths agree and a kernel is shape-variant only on the cold "
        "prefill-then-decode path" + _gate_failures(h.failing) + tail(b)
    )


def _cache_not_tested(h: Headline, b: Basis) -> str:
    ran = h.others
    return (
        f"condition 1: match diverges ({sci(h.match_level)}); condition 2 not tested: "
        + (
            f"{joined(ran)} ran but compared nothing, so whether a state bug hides "
            "under this noise is unknown"
            if ran
            else "run the cache-hit helpers to see whether a state bug hides under this noise"
        )
        + _gate_failures(h.failing)
        + tail(b)
    )


def _deterministic_shape(h: Headline, b: Basis) -> str:
    which = (
        "every helper still diverges"
        if not h.others
        else f"match and {joined(h.helpers)} still diverge ({joined(h.others)} exact)"
    )
    return (
        f"condition 1 with deterministic inference on: {which} (match {sci(h.match_level)}): a "
        "kernel on the decode path is still shape-variant; deterministic inference fixes the "
        "reduction order, not the shape" + _gate_failures(h.failing) + tail(b)
    )


def _no_more(excess: Sequence[Paired]) -> str:
    """What the cache-hit helpers showed against match, claiming no more than was tested."""
    verb = "stays" if len(excess) == 1 else "stay"
    if not excess or any(e.too_few for e in excess):  # too few to test: only the floor speaks
        return f"{verb} at or below the {STRAY_ULP_FLOOR:g} stray-ulp floor"
    if all(e.equal == e.n for e in excess):
        return (
            f"{verb} at rounding level with match on every sample (both below the "
            f"{STRAY_ULP_FLOOR:g} floor)"
        )
    return (
        f"{'is' if len(excess) == 1 else 'are'} not above it on the same prompts beyond chance "
        f"(p<{EVIDENCE_P:g}) nor beyond a x{MIN_RATIO:g} drift, nor spread wider than it"
    )


def _batch_variance(h: Headline, b: Basis) -> str:
    return (
        f"condition 1 (batch variance): match diverges ({sci(h.match_level)}) and "
        f"{joined(h.helpers)} {_no_more(h.excess)}: kernels give different results for "
        "prefill and decode shapes" + _gate_failures(h.failing) + tail(b)
    )


def _not_excluded(h: Headline, b: Basis) -> str:
    """No state bug found, and none would have been found reliably. What match measured on
    its own still stands: its divergence is the kernels' (condition 1)."""
    cause = (
        "a kernel on the decode path is still shape-variant with deterministic inference on"
        if h.deterministic
        else "kernels give different results for prefill and decode shapes"
    )
    return (
        f"inconclusive: match diverges ({sci(h.match_level)}): {cause} (condition 1); no state "
        f"bug is found on {joined(h.helpers)}, but none would have been found reliably at this "
        "spread: a state bug is not excluded" + _gate_failures(h.failing) + tail(b)
    )


NOISY: dict[Finding, Callable[[Headline, Basis], str]] = {
    Finding.STATE_BUG_FIRST: _state_bug_first,
    Finding.BOTH: _both,
    Finding.BROAD_EXCESS: _broad_excess,
    Finding.FEW_FAR_ABOVE: _few_far_above,
    Finding.FAR_ABOVE: _far_above,
    Finding.MATCH_PATH_ONLY: _match_path_only,
    Finding.CACHE_NOT_TESTED: _cache_not_tested,
    Finding.DETERMINISTIC_SHAPE: _deterministic_shape,
    Finding.BATCH_VARIANCE: _batch_variance,
    Finding.NOT_EXCLUDED: _not_excluded,
}
