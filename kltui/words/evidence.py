"""The words of a diagnosis's evidence: one line per record of `readings/diagnosis_parts.py`
(`line` dispatches on the record's type)."""

from __future__ import annotations

from collections.abc import Callable

from kltui.fmt import sci
from kltui.readings.diagnosis_parts import (
    Affected,
    CachedDecode,
    Concentrated,
    Count,
    KernelsStep,
    LimitLine,
    Line,
    Noise,
    Nonfinite,
    OnePath,
    Onset,
    OnsetKind,
    PageResidues,
    PairedLine,
    Protocol,
    Recorded,
    SampleRow,
    Separator,
    Settings,
    Stray,
)
from kltui.readings.imported import ImportEvidence
from kltui.readings.limit import Limit
from kltui.readings.paired import Paired
from kltui.words import coverage, geometry_evidence, rl
from kltui.words.advice import settings_line, step
from kltui.words.common import (
    EVIDENCE_P,
    MIN_COMMON,
    MIN_RATIO,
    SPREAD_MIN,
    SPREAD_P,
    STRAY_ULP_FLOOR,
    shown_ids,
)


def count_line(c: Count) -> str:
    """One helper's samples that differ, avg_kl_div, max k3, first divergence."""
    where = f", first divergence sample {c.first[0]} @ {c.first[1]}" if c.first else ""
    return (
        f"{c.helper}: {c.differing}/{c.scored} samples differ, "
        f"avg_kl_div {sci(c.level)}, max k3 {sci(c.max_k3)}{where}"
    )


def nonfinite_line(n: Nonfinite) -> str:
    """The samples and positions where a helper saw non-finite logprobs."""
    total = sum(len(p) for _, p in n.where)
    listed = "; ".join(
        f"#{s} @ {', '.join(map(str, p[:6]))}{' …' if len(p) > 6 else ''}" for s, p in n.where[:6]
    )
    more = f" (and {len(n.where) - 6} more samples)" if len(n.where) > 6 else ""
    return (
        f"{n.helper}: {total} non-finite logprobs (NaN or inf) at the same positions in prefill "
        f"and decode: {listed}{more}: a numeric fault in the model's output on both paths, not a "
        "prefill/decode difference; these positions are left out of the diagnosis"
    )


def stray_line(s: Stray) -> str:
    """A cache path at or below the stray-ulp floor."""
    return (
        f"{s.helper} stays at or below the {STRAY_ULP_FLOOR:g} stray-ulp floor "
        "(avg_kl_div), where no state bug sits: rounding on that path's shapes"
    )


def one_path_line(o: OnePath) -> str:
    """With match exact: how unlikely shared noise is to miss every other path."""
    others = f"match's {o.match_samples}" + "".join(f" nor {h}'s {n}" for h, n in o.clean)
    return (
        f"{o.helper}: {o.differing_samples} of {o.samples} samples differ "
        f"({o.differing} of {o.tokens} tokens), {others} samples none: were they "
        "noise shared by every path (a sample at a time: a difference carries forward to "
        f"its later tokens), all of them would miss those with chance p={o.p:.2g} (a state "
        f"bug needs p<{EVIDENCE_P:g})"
    )


def paired_line(e: Paired) -> str:
    """The paired comparison as one line of evidence."""
    return (
        f"{e.helper} vs match on {e.n} common samples: higher in {e.higher}, "
        f"lower in {e.lower}, equal in {e.equal} (signed-rank p={e.p:.2g}); "
        f"typical per-sample ratio x{e.ratio:.3g} (beyond a x{MIN_RATIO:g} drift: "
        f"p={e.shift_p:.2g}); far above the typical ratio in {e.up}, far below in "
        f"{e.down} (sign test p={e.tail_p:.2g}); spread wider than match's by "
        f"{e.excess:.2g} (log means' variance; sign-flip p={e.spread_p:.2g}); a state "
        f"bug needs p<{EVIDENCE_P:g} in the shift or the sign test, or p<{SPREAD_P:g} in the "
        f"spread test with a spread beyond {SPREAD_MIN:.2g} (what a drift within "
        f"x{MIN_RATIO:g} can add, twice)"
        + (f", and at least {MIN_COMMON} common samples" if e.too_few else "")
    )


def noise_line(e: Paired) -> str:
    """A cache path above match beyond chance, but by no more than kernel noise."""
    why = (
        f"its avg_kl_div {sci(e.level)} is below the {STRAY_ULP_FLOOR:g} stray-ulp floor "
        "where no state bug sits"
        if e.level <= STRAY_ULP_FLOOR
        else f"by x{e.ratio:.3g} per sample, within the x{MIN_RATIO:g} drift that longer "
        "or different contexts give kernel noise"
    )
    return f"{e.helper} is above match beyond chance but {why}: kernel noise"


def _row(r: SampleRow) -> str:
    return f"#{r.index} (prompt {r.prompt_len}, cached {r.cached_tokens})"


def _separator(s: Separator) -> str:
    if s.above:
        return f"every one has {s.figure} >= {s.mine:g} (the others <= {s.theirs:g})"
    return f"every one has {s.figure} <= {s.mine:g} (the others >= {s.theirs:g})"


def affected_line(a: Affected) -> str:
    """The samples far above match (the first 8 with their prompt and cache figures), and what
    they share that the others do not."""
    listed = ", ".join(_row(r) if r.recorded else f"#{r.index}" for r in a.rows[:8])
    more = f" and {len(a.rows) - 8} more" if len(a.rows) > 8 else ""
    shared = "; ".join(_separator(s) for s in a.shared)
    line = f"{a.helper}: far above match on {listed}{more}"
    return line + (
        f"; {shared}" if shared else "; no prompt length, context or cache figure sets them apart"
    )


def concentrated_line(c: Concentrated) -> str:
    """Divergence concentrated in a quarter of the requests or fewer."""
    bad = ", ".join(_row(r) for r in c.rows)
    return (
        f"{c.helper}: divergence is concentrated in {c.n} of {c.scored} requests: {bad}; "
        "compare their prompt length and cached_tokens with the passing ones"
    )


def _residues(vals: tuple[int, ...]) -> str:
    return ", ".join(map(str, vals[:8])) + (" …" if len(vals) > 8 else "")


def page_residues_line(r: PageResidues) -> str:
    """prompt_len % page size of the divergent and the passing samples."""
    return (
        f"{r.helper}: prompt tokens past the last full page (prompt_len % page size "
        f"{r.page}): divergent {{{_residues(r.divergent)}}}, passing {{{_residues(r.passing)}}}"
    )


def onset_line(o: Onset) -> str:
    """Where in generation the divergent samples start to differ."""
    restored = "prompt and decode-written KV" if o.decode_state else "restored prefix"
    if o.onset is OnsetKind.RESTORED_WRONG:
        return (
            f"{o.helper}: every divergent sample differs from the first generated token, above "
            f"the tail threshold there in {o.jumps} of {o.n}: the state the decode started "
            f"from ({restored}, or attention over it) was already wrong when generation began"
        )
    if o.onset is OnsetKind.FIRST_ROUNDING:
        return (
            f"{o.helper}: every divergent sample differs from the first generated token, but at "
            "rounding level there (below the tail threshold in every one), as kernel noise "
            "does: where it starts says nothing about the state"
        )
    if o.onset is OnsetKind.FIRST_MIXED:
        return (
            f"{o.helper}: every divergent sample differs from the first generated token, above "
            f"the tail threshold there in {o.jumps} of {o.n} and below it in the rest: "
            "a large first-token difference in some, rounding in others"
        )
    if o.onset is OnsetKind.SOME_LATER:
        return (
            f"{o.helper}: divergence starts at the first generated token in {o.at_start} of "
            f"{o.n} divergent samples and later in {o.later} (median position "
            f"{o.median}, earliest {o.earliest}): something during decode "
            "in those (window hand-off, checkpoint rotation, batch composition)"
        )
    return (
        f"{o.helper}: divergence starts mid-generation (median position "
        f"{o.median}, earliest {o.earliest}): something during "
        "decode (window hand-off, checkpoint rotation, batch composition)"
    )


def cached_decode_line(c: CachedDecode) -> str:
    """match's divergence confined to the samples whose decode reused the most cached tokens."""
    k, n = len(c.differing), len(c.cached)
    which = "exactly those differ" if k == n else f"{k} of those differ"
    return (
        f"{c.helper}: its decode reused at least {c.least} cached tokens in {n} of "
        f"{n + c.cold} samples and {which} ({shown_ids(c.differing)}); the {c.cold} that "
        "reused fewer are bit-identical: noise shared by every path would put every "
        f"difference there with chance p={c.p:.2g} (a state bug needs p<{EVIDENCE_P:g})"
        + _confound(c)
    )


def _confound(c: CachedDecode) -> str:
    if not c.confounded:
        return ""
    return (
        f"; but they are also the longest prompts (p={c.p_length:.2g} by length alone): noise "
        "that grows with a sample's length would fall there too, so the cache is not told "
        "from the length; prompts of one length decide it"
    )


def limit_line(lim: Limit) -> str:
    """What a reading rules out on one cache path, or that it rules nothing out."""
    if not lim.factor:  # match exact: any state bug makes its samples differ
        if lim.k is None:
            return (
                f"{lim.helper}: bit-identical on {lim.n} samples, too few for the one-path test "
                f"to call even all {lim.n} differing beyond chance: a state bug there would show "
                "as a difference, never as condition 2"
            )
        return (
            f"{lim.helper}: a state bug making >= {lim.k} of {lim.n} samples differ would read "
            "condition 2; one on fewer would show as a difference, read inconclusive"
        )
    if lim.k is None:
        return (
            f"{lim.helper}: no state bug is ruled out: even one on all {lim.n} samples at "
            f"x{lim.factor:g} its noise would not be found in {lim.detect:.0%} of runs at this "
            "run's spread"
        )
    return (
        f"{lim.helper}: rules out a state bug in >= {lim.k} of {lim.n} samples at "
        f">= x{lim.factor:g} its noise (found in >= {lim.detect:.0%} of plants into this run's "
        "own per-sample values, each sample's two sides swapped at random); fewer samples are "
        "not excluded"
    )


_LINES: dict[type, Callable[..., str]] = {
    Count: count_line,
    Settings: settings_line,
    Protocol: lambda e: f"protocol fault, not numerics: {e.message}",
    Nonfinite: nonfinite_line,
    Stray: stray_line,
    OnePath: one_path_line,
    PairedLine: lambda e: paired_line(e.paired),
    Noise: lambda e: noise_line(e.paired),
    Affected: affected_line,
    Concentrated: concentrated_line,
    PageResidues: page_residues_line,
    Onset: onset_line,
    LimitLine: lambda e: limit_line(e.limit),
    KernelsStep: lambda e: f"for match's divergence: {step(e.step)}",
    Recorded: lambda e: e.text,
    ImportEvidence: lambda e: rl.evidence_line(e.line, e.finding),
    CachedDecode: cached_decode_line,
}


def line(e: Line) -> str:
    """One evidence record as its line."""
    if (say := _LINES.get(type(e))) is not None:
        return say(e)
    return coverage.line(e) or geometry_evidence.line(e) or str(e.kind)
