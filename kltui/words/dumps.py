"""`kltui dumps analyze`'s verdict in words (`dumps/analyze.verdict_of` decides: decode against
the fresh prefill, the prompt prefill's M-invariance, the ranks): the one paragraph the console,
the TUI's dumps screen, the JSON's `verdict` and `ablate --chain` show. The front ends give
`verdict_words` to `dumps/analyze.analyze` (through `dumps/run.drill_down`)."""

from __future__ import annotations

from kltui.dumps.analyze import Divergence, DumpsVerdict, Found
from kltui.dumps.compare import EQUALITY


def _num(x: object) -> str:
    return x if isinstance(x, str) else f"{x:.3e}"


def prefill_words(v: DumpsVerdict) -> str:
    """Whether the prompt prefill is M-invariant, and where it is not."""
    p, ms = v.prefill, f"M={v.m_prompt} vs M={v.m_fresh}"
    if p.found is Found.IDENTICAL:
        return f"prefill is M-invariant on the prompt rows ({ms})"
    where = (
        f"first divergent module {p.module} (inputs bit-identical), max |diff| "
        f"{_num(p.max_abs_diff)}, position {p.position}"
        if p.found is Found.NAMED
        else f"{p.unnamed_reason} (max |diff| {_num(p.max_abs_diff)}, position {p.position})"
    )
    return f"prefill is NOT M-invariant ({ms}): {where}"


def decode_words(d: Divergence, aligned_steps: object, prefill: str) -> str:
    """Decode against the fresh prefill, then the prefill's clause."""
    if d.found is Found.IDENTICAL:
        return (
            f"decode and the fresh prefill are bit-identical ({EQUALITY}) at every aligned "
            f"module over {aligned_steps} decode steps; {prefill}"
        )
    where = f"decode step {d.decode_step} (position {d.position})"
    later = f"{d.inherited} later modules inherit it"
    if d.found is Found.UNNAMED:
        return (
            f"at {where}, {d.unnamed_reason} (max |diff| {_num(d.max_abs_diff)}; {later}); "
            f"{prefill}"
        )
    return (
        f"first divergent module: {d.module} at {where}: inputs bit-identical (here and in the "
        f"passes before it), output differs, max |diff| {_num(d.max_abs_diff)}; {later}; "
        f"{prefill}"
    )


def ranks_words(v: DumpsVerdict) -> str:
    """One clause on the ranks: under TP each holds a shard, and a divergence on one rank alone
    (or at another module) points at that rank's shard or at the collective between them."""
    n = len(v.ranks)
    if v.ranks_agree:
        return f"all {n} ranks agree" + (
            "" if v.decode.found is Found.IDENTICAL else " on the first divergent module and step"
        )
    parts = [
        f"rank {r.rank} bit-identical"
        if r.identical
        else f"rank {r.rank} {r.module or 'no module named'} at decode step {r.decode_step}"
        for r in v.ranks
    ]
    return f"the {n} ranks disagree ({', '.join(parts)}); shown: rank {v.shown}, the earliest"


def verdict_words(v: DumpsVerdict) -> str:
    """The one-paragraph reading of an analysis (the JSON's `verdict`)."""
    text = decode_words(v.decode, v.aligned_steps, prefill_words(v))
    return f"{text}; {ranks_words(v)}" if v.ranks else text
