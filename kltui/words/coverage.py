"""The words of coverage: why a helper did not test its path (`untested_words`, one line per
`NotTested` kind, as the diagnosis, the ablation, the cross-server and fleet readings and their
JSON say it), and why a cache path's samples missed (page rounding, a KV pool too small for the
hits), from `readings/coverage.py`."""

from __future__ import annotations

from collections.abc import Mapping

from kltui.readings.coverage import NotTested as Why
from kltui.readings.coverage import PageMisses, PoolShort, Untested
from kltui.readings.diagnosis_parts import Line, NotTested, PageNote, PoolNote


def untested_words(u: Untested) -> str:
    """Why a helper did not test its path ("only 3 of 8 samples scored (...)")."""
    match u.kind:
        case Why.UNUSABLE:
            word = "ran but compared nothing" if u.status == "vacuous" else u.status
            return f"{word}{': ' + u.detail if u.detail else ''}"
        case Why.NONE_SCORED:
            return f"no sample scored of {u.samples}"
        case Why.FEW_SCORED:
            return (
                f"only {u.scored} of {u.samples} samples scored (at least {u.need} needed to "
                "count as a test of its path)"
            )
        case Why.STARVED:
            return (
                f"cache hits much shorter than the base's: {u.short} of {u.samples} samples "
                f"cached {_tokens(u.cached)} where the base cached {_tokens(u.base_cached)} on "
                "the same prompts (a quarter or less): too little restored to test the path"
            )
    return str(u.kind)  # NOT_RUN, UNFINISHED: the kind's own words


def _tokens(span: tuple[int, int]) -> str:
    """ "1 token", "20-66 tokens": the range of cached tokens over some samples."""
    lo, hi = span
    return f"{lo} token" if lo == hi == 1 else f"{lo if lo == hi else f'{lo}-{hi}'} tokens"


def untested_map(why: Mapping[str, Untested]) -> dict[str, str]:
    """Helper -> why it did not test its path, in words (the JSON's `untested` maps)."""
    return {h: untested_words(u) for h, u in why.items()}


def not_tested_line(n: NotTested) -> str:
    """A helper that ran and did not test its path."""
    return f"{n.helper}: not tested: {untested_words(n.why)} (says nothing about its path)"


def pool_line(p: PoolShort) -> str:
    """A cache helper's misses beside a KV pool smaller than what its hits needed at once."""
    return (
        f"{p.helper}: {p.missed} of {p.samples} samples missed their hit, and the {p.samples} "
        f"hit requests' inputs hold {p.input_tokens:,} tokens where the server's KV pool holds "
        f"{p.pool_tokens:,} (max_total_num_tokens): every sample is warmed before the first "
        "hit, so the radix cache can evict the earliest before their turn; --samples "
        f"{p.fit} or fewer, shorter prompts (--max-prompt-tokens), or a larger pool "
        "(--mem-fraction-static, or the server alone on its GPU) test this path"
    )


def page_line(m: PageMisses) -> str:
    """Every skipped sample is the radix cache's page rounding."""
    if m.helper == "prefill_cache_hit":
        return (
            f"prefill_cache_hit: all {m.n} skipped samples have prompts of at most {m.page} "
            f"tokens, the server's page size, and cached_tokens 0: the radix cache keeps whole "
            f"pages only, so a prompt no longer than a page leaves nothing to hit; prompts "
            f"longer than {m.page} tokens (or a server with --page-size 1) test this path"
        )
    shown = ", ".join(str(c) for c in m.seen[:4]) + (", ..." if len(m.seen) > 4 else "")
    return (
        f"decode_cache_hit: all {m.n} skipped samples hit whole {m.page}-token pages only "
        f"(cached_tokens {shown}), none past the first turn's prompt: with "
        f"page size {m.page}, {m.new_tokens} generated tokens rarely fill a page past the "
        f"prompt; --max-new-tokens {2 * m.page} (twice the page size) gives every sample one"
    )


def line(e: Line) -> str | None:
    """A coverage record's line (None: not a coverage record)."""
    match e:
        case NotTested():
            return not_tested_line(e)
        case PageNote():
            return page_line(e.misses)
        case PoolNote():
            return pool_line(e.short)
    return None
