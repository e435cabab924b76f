"""The words of a server's diagnosis, apart from the decision (`diagnosis.py`,
`diagnosis_paths.py`): one function per label, evidence line or next step, from the facts the
decision found. The console, the reports and the TUI all show these words; tests that check a
reading assert on `Diagnosis.finding` and `Diagnosis.basis`, and match words only where the
wording is what they test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kltui.fmt import sci
from kltui.readings.coverage import PoolShort
from kltui.readings.evidence import EVIDENCE_P, MIN_COMMON, MIN_RATIO, STRAY_ULP_FLOOR, Paired
from kltui.readings.findings import Basis
from kltui.readings.limit import Limit
from kltui.readings.path_test import PathSide
from kltui.registry import path_of


def _s(n: int) -> str:
    return "s" if n == 1 else ""


def _and(names: Sequence[str]) -> str:
    return " and ".join(names)


# --------------------------------------------------------------------------- what it rests on
def coverage_note(helper: str, reason: str) -> str:
    """A helper that ran and did not test its path."""
    return f"{helper}: not tested: {reason} (says nothing about its path)"


def pool_note(p: PoolShort) -> str:
    """A cache helper's misses beside a KV pool smaller than what its hits needed at once."""
    return (
        f"{p.helper}: {p.missed} of {p.samples} samples missed their hit, and the {p.samples} "
        f"hit requests' inputs hold {p.input_tokens:,} tokens where the server's KV pool holds "
        f"{p.pool_tokens:,} (max_total_num_tokens): every sample is warmed before the first "
        "hit, so the radix cache can evict the earliest before their turn; --samples "
        f"{p.fit} or fewer, shorter prompts (--max-prompt-tokens), or a larger pool "
        "(--mem-fraction-static, or the server alone on its GPU) test this path"
    )


def protocol_line(message: str) -> str:
    """A protocol finding of a helper: never read as numerics."""
    return f"protocol fault, not numerics: {message}"


def rests_on(basis: Basis) -> str:
    """Which helpers and how many samples a verdict rests on, appended to its label."""
    parts = [f"{t.helper} {t.scored}/{t.samples}" for t in basis.tested]
    return f" [rests on {', '.join(parts)} samples scored]" if parts else ""


def untested_tail(why: Mapping[str, str]) -> str:
    """The helpers not tested, and why."""
    return "; ".join(f"{h} not tested ({w})" for h, w in why.items())


def tail(basis: Basis) -> str:
    """What was not tested, then what the verdict rests on: the end of a label."""
    t = untested_tail(basis.untested)
    return (f"; {t}" if t else "") + rests_on(basis)


# --------------------------------------------------------------------------- before any path test
PENDING = "no helper finished yet"
NOTHING_TESTED_STEP = "read the evidence for why each helper compared nothing, fix that and re-run"
SAMPLING_STEP = "re-run with --temperature 0 for a verdict on conditions 1 and 2"
EXACT_MISSED_STEP = (
    "cover the samples that missed: read the evidence for why they did, fix that and re-run"
)
EXACT_WHERE_TESTED_STEP = (
    "cover those paths: run the helpers not tested, and read the evidence for why the others "
    "compared nothing or failed"
)


def nothing_tested(why: Mapping[str, str]) -> str:
    """No helper tested its path."""
    return f"inconclusive: no helper tested its path ({untested_tail(why)})"


def sampling(temperature: float) -> str:
    """Temperature > 0: no kernel verdict."""
    return (
        f"no kernel verdict: temperature {temperature:g} > 0, so k3 measures sampling, not "
        "kernels (prefill and decode may score different draws)"
    )


def nonfinite_prefix(helpers: Sequence[str]) -> str:
    """Non-finite logprobs at the same positions on both sides, before an exact label."""
    if not helpers:
        return ""
    return (
        f"non-finite logprobs at the same positions on both sides in {', '.join(helpers)} "
        "(a numeric fault, see evidence); otherwise "
    )


def exact(
    prefix: str, unasked: Sequence[str], partial: bool, fails: Sequence[tuple[str, str]], b: Basis
) -> str:
    """Bit-identical in every helper that tested its path."""
    more = f" on the paths tested; not run (not asked for): {', '.join(unasked)}" if unasked else ""
    gate = "".join(f"; but {h} fails its gate ({w})" for h, w in fails)
    scope = " on the samples compared" if partial else ""
    return (
        prefix + "bit-identical: prefill and decode agree exactly in every helper "
        f"(conditions 1 and 2 hold{more}{scope}){gate}" + rests_on(b)
    )


def exact_where_tested(prefix: str, usable: Sequence[str], match_tested: bool, b: Basis) -> str:
    """Bit-identical where tested, with a path not tested."""
    held = (
        "condition 1 holds on match's shapes; condition 2 is not established: "
        if match_tested
        else "neither condition is established (match not tested): "
    )
    return (
        prefix
        + f"inconclusive: bit-identical where tested ({', '.join(usable)}); "
        + held
        + untested_tail(b.untested)
        + rests_on(b)
    )


def baseline_not_tested(dirty: Sequence[str], base: str, why: str, b: Basis) -> str:
    """A cache path diverges and match was not tested."""
    return (
        f"inconclusive: {_and(dirty)} diverge{_s(len(dirty))} but {base} was not tested "
        f"({why}): kernel noise and a state bug cannot be told apart" + rests_on(b)
    )


def baseline_step(base: str, cache_names: Sequence[str]) -> str:
    """Run match too."""
    return (
        f"run {base} too, on a server that flushes (`--helpers {','.join((base, *cache_names))}`)"
    )


# --------------------------------------------------------------------------- match exact
STATE_UNCLEAR_STEP = (
    "decide it with more samples (`--samples 128`), more like the differing ones (see "
    "evidence): noise shows on match too, a state bug keeps to its path"
)


def stray_line(helper: str) -> str:
    """A cache path at or below the stray-ulp floor."""
    return (
        f"{helper} stays at or below the {STRAY_ULP_FLOOR:g} stray-ulp floor "
        "(avg_kl_div), where no state bug sits: rounding on that path's shapes"
    )


def one_path_line(helper: str, side: PathSide, others: str, p: float | None) -> str:
    """With match exact: how unlikely shared noise is to miss every other path."""
    return (
        f"{helper}: {side.differing_samples} of {side.samples} samples differ "
        f"({side.differing} of {side.tokens} tokens), {others} samples none: were they "
        "noise shared by every path (a sample at a time: a difference carries forward to "
        f"its later tokens), all of them would miss those with chance p={p:.2g} (a state "
        f"bug needs p<{EVIDENCE_P:g})"
    )


def exact_others(match_samples: int, clean: Sequence[tuple[str, int]]) -> str:
    """ "match's 32 nor prefill_cache_hit's 32": the exact paths' samples."""
    return f"match's {match_samples}" + "".join(f" nor {h}'s {n}" for h, n in clean)


def state_bug(names: Sequence[str], primary: str, b: Basis) -> str:
    """Condition 2: match exact, a cache path beyond chance."""
    verb = "diverge" if len(names) > 1 else "diverges"
    return (
        f"condition 2 (state bug): match is bit-identical but {_and(names)} {verb} "
        f"beyond chance, so the kernels agree and the fault is in {path_of(primary)}" + tail(b)
    )


def state_unclear(names: Sequence[str], p: float, b: Basis) -> str:
    """Match exact, a cache path differs in too few samples to tell."""
    return (
        f"inconclusive: match is bit-identical and {_and(names)} differ"
        f"{_s(len(names))} in too few samples to tell a state bug from noise "
        f"that every path shares and match missed by chance (p={p:.2g})" + tail(b)
    )


def stray_ulps(below: Sequence[str], level: float, b: Basis) -> str:
    """Match exact, the cache paths at rounding level only."""
    return (
        f"stray ulps only: match is bit-identical and {_and(below)} differs at "
        f"rounding level ({sci(level)}), below the "
        f"{STRAY_ULP_FLOOR:g} floor where no state bug sits: not condition 2" + tail(b)
    )


# --------------------------------------------------------------------------- match noisy
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


def state_bug_first(names: Sequence[str], top: float, match: float, b: Basis) -> str:
    """Orders of magnitude above a match within its gate."""
    return (
        f"condition 2 first (state bug): {_and(names)} "
        f"{'are' if len(names) > 1 else 'is'} orders of magnitude above match "
        f"({sci(top)} vs {sci(match)}) while match is within its gate: a state bug "
        f"on {path_of(names[0])}; match's own kernel noise (condition 1) is small "
        "beside it" + tail(b)
    )


def both(names: Sequence[str], match: float, b: Basis) -> str:
    """Kernel noise and a state bug beyond it."""
    return (
        f"conditions 1 and 2: kernel noise in every helper (match {sci(match)}) and "
        f"{_and(names)} beyond it on the same prompts: a state bug on "
        f"{path_of(names[0])}; fix condition 1 first, its noise hides the rest" + tail(b)
    )


def failing_gate(fails: Sequence[str]) -> str:
    """Suspect paths that fail their gate, before the open question."""
    if not fails:
        return ""
    one = len(fails) == 1
    return (
        f"{_and(fails)} fail{'s' if one else ''} {'its' if one else 'their'} gate; cause "
        "undetermined: "
    )


def broad_excess(e: Paired) -> str:
    """Above match in most samples, short of the drift bar."""
    return (
        f"{e.helper} is above match in {e.higher} of {e.n} samples (signed-rank "
        f"p={e.p:.2g}), typically x{e.ratio:.3g}, but not beyond a x{MIN_RATIO:g} drift "
        f"at p<{EVIDENCE_P:g} (p={e.shift_p:.2g}): a broad excess that is neither "
        "shown to be a state bug nor the drift that longer contexts give kernel noise"
    )


def broad_excess_step(e: Paired, rerun: int, step: str) -> str:
    """More samples decide a broad excess."""
    return (
        f"decide it with more samples (`--samples {rerun}`): a shift of x{e.ratio:.3g} "
        f"that is real passes the x{MIN_RATIO:g}-drift test as samples grow; then: {step}"
    )


def few_far_above(e: Paired) -> str:
    """Far above match on a few samples."""
    return (
        f"{e.helper} is far above it on {e.up} sample{'s' if e.up != 1 else ''} and far "
        f"below on {e.down} (sign test p={e.tail_p:.2g}): what a state bug in a few "
        "samples looks like, too few to tell from chance"
    )


def few_far_above_step(need: int, step: str | None) -> str:
    """More prompts like the affected ones decide it (then the kernels' step, unless samples
    sit far above match with none below: kernels are never named while they do)."""
    then = (
        f"; then: {step}"
        if step
        else "; `--repeat 3` also tells: a state bug repeats on the same samples"
    )
    return (
        f"decide it with more prompts like the affected ones (see evidence): at least "
        f"{need} samples far above match and none below reach p<{EVIDENCE_P:g}{then}"
    )


def suspect(gate: str, match: float, what: str, b: Basis) -> str:
    """The suspicion's label."""
    return f"inconclusive: {gate}match diverges ({sci(match)}) and {what}" + tail(b)


def too_few_common(names: Sequence[str], n: int, match: float, b: Basis) -> str:
    """The paired test cannot run."""
    return (
        f"inconclusive (n too small): match diverges ({sci(match)}), and whether "
        f"{_and(names)} add{_s(len(names))} a state "
        f"bug cannot be told on {n} common samples (at least {MIN_COMMON} needed)" + tail(b)
    )


def too_few_step(step: str) -> str:
    """More samples, then the condition-1 step."""
    return f"re-run with more samples (`--samples 32`); then: {step}"


def match_path_only(clean: Sequence[str], match: float) -> str:
    """Match diverges, every cache path exact."""
    return (
        f"condition 1 on match's path only: match diverges ({sci(match)}) while "
        f"{_and(clean)} {'are' if len(clean) > 1 else 'is'} bit-identical, so the "
        "restored-prefix paths agree and a kernel is shape-variant only on the cold "
        "prefill-then-decode path"
    )


def cache_not_tested(ran: Sequence[str], match: float) -> str:
    """Match diverges, no cache path tested."""
    return f"condition 1: match diverges ({sci(match)}); condition 2 not tested: " + (
        f"{_and(ran)} ran but compared nothing, so whether a state bug hides "
        "under this noise is unknown"
        if ran
        else "run the cache-hit helpers to see whether a state bug hides under this noise"
    )


def deterministic_shape(clean: Sequence[str], dirty: Sequence[str], match: float) -> str:
    """Condition 1 with deterministic inference on."""
    which = (
        "every helper still diverges"
        if not clean
        else f"match and {_and(dirty)} still diverge ({_and(clean)} exact)"
    )
    return (
        f"condition 1 with deterministic inference on: {which} (match {sci(match)}): a kernel "
        "on the decode path is still shape-variant; deterministic inference fixes the "
        "reduction order, not the shape"
    )


def batch_variance(dirty: Sequence[str], excess: Sequence[Paired], match: float) -> str:
    """Condition 1: match diverges, the cache paths no more than it."""
    return (
        f"condition 1 (batch variance): match diverges ({sci(match)}) and "
        f"{_and(dirty)} {no_more(excess)}: kernels give different results for "
        "prefill and decode shapes"
    )


def gate_failures(failing: Sequence[str]) -> str:
    """Helpers that fail the gate, appended to a condition-1 label."""
    return f"; {_and(failing)} fail{_s(len(failing))} the gate" if failing else ""


def no_more(excess: Sequence[Paired]) -> str:
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


def affected_line(
    helper: str, ids: Sequence[int], rows: Mapping[object, Mapping], shared: str | None
) -> str:
    """The samples far above match (the first 8 with their prompt and cache figures), and what
    they share that the others do not."""
    listed = ", ".join(
        f"#{i} (prompt {rows[i].get('prompt_len')}, cached {rows[i].get('cached_tokens')})"
        if i in rows
        else f"#{i}"
        for i in ids[:8]
    )
    more = f" and {len(ids) - 8} more" if len(ids) > 8 else ""
    line = f"{helper}: far above match on {listed}{more}"
    return line + (
        f"; {shared}" if shared else "; no prompt length, context or cache figure sets them apart"
    )


# --------------------------------------------------------------------------- stated limits
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


def not_excluded(
    names: Sequence[str],
    match: float,
    deterministic: bool | None,
    failing: Sequence[str],
    b: Basis,
) -> str:
    """No state bug found, and none would have been found reliably. What match measured on
    its own still stands: its divergence is the kernels' (condition 1), whatever the cache
    paths turn out to hold."""
    cause = (
        "a kernel on the decode path is still shape-variant with deterministic inference on"
        if deterministic
        else "kernels give different results for prefill and decode shapes"
    )
    return (
        f"inconclusive: match diverges ({sci(match)}): {cause} (condition 1); no state bug "
        f"is found on {_and(names)}, but none would have been found reliably at this spread: "
        "a state bug is not excluded" + gate_failures(failing) + tail(b)
    )


def not_excluded_step(samples: int) -> str:
    """What decides a reading whose limit is not reached."""
    return (
        f"decide it with more samples (`--samples {samples}`), `--repeat 3` (a state bug "
        "repeats on the same samples, noise moves) or `--stress light`"
    )


def kernels_step(step: str) -> str:
    """Match's own step (its divergence is the kernels'), kept beside an open condition 2."""
    return f"for match's divergence: {step}"


def far_above(helper: str, ids: Sequence[int], n: int, match: float, b: Basis) -> str:
    """Samples of a cache path orders of magnitude above match, none the other way."""
    shown = ", ".join(f"#{i}" for i in ids[:8]) + (
        f" and {len(ids) - 8} more" if len(ids) > 8 else ""
    )
    return (
        f"inconclusive: match diverges ({sci(match)}) and {helper} is orders of magnitude "
        f"above it on {len(ids)} of {n} samples ({shown}) and on none the other way: too few "
        "to tell from chance, and not kernel noise until told" + tail(b)
    )


def direct_state(helper: str, ids: Sequence[int], top: float, match: float, b: Basis) -> str:
    """Match at rounding level everywhere, a cache path orders of magnitude above it."""
    shown = ", ".join(f"#{i}" for i in ids[:8]) + (
        f" and {len(ids) - 8} more" if len(ids) > 8 else ""
    )
    return (
        f"condition 2 (state bug) on {len(ids)} sample{'' if len(ids) == 1 else 's'} "
        f"({shown}): match stays at rounding level on every sample ({sci(match)}) while "
        f"{helper} reaches {sci(top)} on the same prompts, orders of magnitude beyond what "
        f"rounding gives: a state bug on {path_of(helper)}" + tail(b)
    )
