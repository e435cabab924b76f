"""Quiet vs stressed in words (`readings/stress.py` decides): each helper's reading in one line,
the traffic per server, what it did not reach, and the JSON `stress` entry that carries them."""

from __future__ import annotations

from typing import Any

from kltui.readings.paired import (
    EVIDENCE_P,
    MIN_COMMON,
    MIN_RATIO,
    SPREAD_MIN,
    SPREAD_P,
    STRAY_ULP_FLOOR,
    Paired,
)
from kltui.readings.stress import (
    Activity,
    HelperUnderLoad,
    Idle,
    IdleKind,
    SkipKind,
    SqueezeSkip,
    StressReading,
    StressVerdict,
    Uncovered,
)


def activity_line(a: Activity) -> str:
    """What the traffic did during one phase."""
    if a.paused:
        return f"during {a.moment} the traffic was paused (a flush needs an idle server)"
    kinds = ", ".join(f"{n} {k}" for k, n in a.by_kind.items() if n) or "none"
    squeeze = (
        f"; its squeeze filled the pool with {a.squeezed} tokens of other ids just "
        "before the hits, so the radix cache evicted part of the helper's prefixes"
        if a.squeezed
        else ""
    )
    return (
        f"during {a.moment} ({a.seconds:.2g} s) the traffic sent {a.sent} "
        f"requests ({kinds}), {a.in_flight} in flight when it began, {a.aborted} "
        f"aborted, {a.errors} errors{squeeze}"
    )


def idle_line(idle: Idle | None) -> str:
    """Why the traffic was idle ("" when its counts do not say)."""
    if idle is None:
        return ""
    if idle.kind is IdleKind.BOUND:
        return f"the traffic had reached its {idle.bound} bound"
    return "every background request failed" + (f": {idle.last_error}" if idle.last_error else "")


def _test(p: Paired) -> str:
    return (
        f"higher under stress in {p.higher}, lower in {p.lower}, equal within the "
        f"{STRAY_ULP_FLOOR:g} floor in {p.equal} "
        f"(signed-rank p={p.p:.2g}; beyond a x{MIN_RATIO:g} drift p={p.shift_p:.2g}; "
        f"minority sign test p={p.tail_p:.2g}; spread p={p.spread_p:.2g}; evidence needs "
        f"p<{EVIDENCE_P:g}, the spread p<{SPREAD_P:g} with a spread beyond {SPREAD_MIN:.2g})"
    )


def _idle_reading(h: HelperUnderLoad) -> str:
    why = f" ({idle_line(h.idle)})" if h.idle is not None else ""
    failed = h.idle is not None and h.idle.kind is IdleKind.FAILED
    rerun = "" if failed else f"; re-run with --helpers {h.helper} to measure it under load"
    return (
        f"inconclusive: no background request ran while it measured{why}, so its "
        f"stressed run was a quiet one{rerun}"
    )


def helper_line(h: HelperUnderLoad) -> str:
    """The helper's reading as one line."""
    head = f"{h.helper}: quiet vs stressed on {h.compared} samples: "
    if h.compared == 0:
        return head + "no sample scored in both runs"
    if h.load == 0 and not h.state_bug:
        return head + _idle_reading(h)
    if h.deterministic:
        if h.first is None:
            return head + "bit-identical in every sample"
        f = h.first
        where = f"sample {f.sample}, first position {f.first} ({f.side} side)"
        during = f"; {activity_line(h.during)}" if h.during else ""
        return (
            head + f"{h.compared - h.identical} differ on a deterministic server: "
            f"a state bug under load at {where}{during}"
        )
    p = h.paired
    assert p is not None
    if h.state_bug:
        return head + f"worse under load beyond noise: {_test(p)}"
    if p.too_few:
        return head + (
            f"inconclusive: fewer than {MIN_COMMON} common samples (the paired test "
            f"cannot reach p<{EVIDENCE_P:g}); re-run with --samples {MIN_COMMON * 2}"
        )
    return head + ("suspect, not evidence: " if p.suspect else "within noise: ") + _test(p)


def traffic_lines(r: StressReading) -> list[str]:
    """What the traffic was, per server."""
    out = []
    for url, c in r.traffic.items():
        kinds = ", ".join(f"{n} {k}" for k, n in (c.get("by_kind") or {}).items() if n)
        server = r.server_counts.get(url)
        if server is None:
            srv = "retractions and evictions not reported (no /metrics)"
        else:
            srv = f"server counted {int(server.get('retractions', 0))} retractions" + (
                f", {int(server['evicted_tokens'])} evicted tokens"
                if "evicted_tokens" in server
                else ""
            )
        stop = c.get("stopped")
        bound = f", stopped by its {stop} bound" if stop in ("requests", "seconds") else ""
        out.append(
            f"{url}: {r.level} traffic sent {c.get('sent', 0)} requests ({kinds or 'none'})"
            f" in {c.get('elapsed_s', 0):.3g} s, at most {c.get('max_in_flight', 0)} in "
            f"flight, {c.get('completed', 0)} completed, {c.get('aborted', 0)} aborted, "
            f"{c.get('errors', 0)} errors, {c.get('evictions_observed', 0)} evictions "
            f"observed; {srv}{bound}"
        )
    return out


def squeeze_skip_text(s: SqueezeSkip) -> str:
    """Why the level's squeeze sent nothing."""
    match s.kind:
        case SkipKind.NO_POOL:
            return "the server reports no KV pool size (max_total_num_tokens)"
        case SkipKind.OVER_LEVEL:
            return f"{s.needed} tokens needed, over the {s.level} level's {s.most}"
    return s.recorded or ""


def uncovered_line(u: Uncovered) -> str:
    """What the traffic did not reach on one server, and how to reach it."""
    skipped = u.squeeze_skipped
    why = f"; the squeeze was skipped: {squeeze_skip_text(skipped)}" if skipped else ""
    return (
        f"{u.url}: not exercised: {' and '.join(u.missed)} (the server counted none"
        f"{', and the traffic saw no shorter cache hit' if 'eviction' in u.missed else ''})"
        f"{why}; this reading covers concurrent batching and shared prefixes, not "
        f"{' or '.join(u.missed)}; to reach {'them' if len(u.missed) > 1 else 'it'}: a "
        "higher --stress level, or a server with a smaller KV pool (--max-total-tokens)"
    )


def coverage_lines(r: StressReading) -> list[str]:
    """What the traffic did not reach, so that "clean" is read as what it measured."""
    return [uncovered_line(u) for u in r.uncovered()]


def note_lines(r: StressReading) -> list[str]:
    """What was left out of the comparison."""
    out = [f"{h} on {s} did not run quiet: not compared" for h, s in r.not_quiet]
    return out + (["the stressed run recorded no traffic"] if r.no_traffic else [])


def scope_of(verdict: str, not_exercised: dict) -> str:
    """A clean verdict's suffix naming the paths its traffic never reached (`not_exercised`,
    as StressReading gives it or as its JSON holds it); "" otherwise."""
    lists = (ps for ps in not_exercised.values() if isinstance(ps, list))  # JSON is untrusted
    missed = sorted({str(p) for ps in lists for p in ps})
    return f" ({' and '.join(missed)} not exercised)" if verdict == "clean" and missed else ""


def scope(r: StressReading) -> str:
    """What a clean verdict did not cover, as its suffix ("" when it covered both)."""
    return scope_of(r.verdict, r.not_exercised())


def head(r: StressReading) -> str:
    """The verdict line; a clean reading names what it did not cover."""
    return f"stress ({r.level}): {r.verdict}{scope(r)}"


def lines(r: StressReading) -> list[str]:
    """The whole reading as lines: verdict, helpers, traffic, what it did not reach."""
    return [
        head(r),
        *(helper_line(h) for h in r.helpers),
        *traffic_lines(r),
        *coverage_lines(r),
        *note_lines(r),
    ]


def helper_json(h: HelperUnderLoad) -> dict[str, Any]:
    """The helper's reading as the JSON result writes it."""
    p = h.paired
    f = h.first
    return {
        "helper": h.helper,
        "server": h.server,
        "verdict": h.verdict,
        "compared_samples": h.compared,
        "identical_samples": h.identical,
        "first_difference": None
        if f is None
        else {"sample": f.sample, "position": f.first, "side": f.side},
        "paired": None
        if p is None
        else {
            "n": p.n,
            "higher": p.higher,
            "lower": p.lower,
            "ratio": p.ratio,
            "p": p.p,
            "shift_p": p.shift_p,
            "tail_p": p.tail_p,
        },
        "during": None if h.during is None else activity_line(h.during),
        "background_requests": h.load,
        "avg_kl_div": {"quiet": h.levels[0], "stressed": h.levels[1]},
        "status": {"quiet": h.statuses[0], "stressed": h.statuses[1]},
    }


def stress_json(r: StressReading) -> dict[str, Any]:
    """The reading as the JSON result's `stress` entry."""
    return {
        "level": r.level,
        "verdict": r.verdict,
        "helpers": [helper_json(h) for h in r.helpers],
        "traffic": r.traffic,
        "server_counts": r.server_counts,
        "not_exercised": r.not_exercised(),
        "notes": note_lines(r),
    }


__all__ = [
    "StressVerdict", "head", "helper_line", "lines", "scope", "scope_of", "squeeze_skip_text",
    "stress_json",
]  # fmt: skip
