"""Quiet vs stressed: a `--stress` session's two runs on the same prompt set, read per helper.

On a server that says it runs deterministic inference, the premise of SGLang's own cache
consistency test holds: every token id and logprob of a sample must be the same with and without
background traffic, so any difference is a state bug under load, named by helper, sample, first
position and side (readings/compare.py), with what the traffic did during the phase that computed
that side (the StressTicks of run/stress.py). On any other server batch composition changes the
rounding, so a difference proves nothing by itself: each helper's per-sample mean k3 under
stress is tested against the quiet run's with the diagnosis' own paired test
(readings/paired.py), and only evidence beyond chance and above its drift tolerance is reported
as worse under load; anything less is noise, or inconclusive when there are too few samples.
The reading returns `StressVerdict`s with the figures they rest on; words/stress.py says them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from kltui.readings.compare import SampleDiff, compare_books
from kltui.readings.evidence import level_of, sample_mean
from kltui.readings.paired import (
    Paired,
    paired,
)
from kltui.session.events import StressTick
from kltui.session.helper_view import HelperView
from kltui.session.store import HelperState, SessionStore

# the helper phase that computed each side of a comparison (compare.SIDES): side A is the
# fresh prefill, side B (and the generated ids) the decode
PHASE_OF_SIDE = {"ids": "decode", "decode": "decode", "prefill": "prefill", "both": "decode"}


class StressVerdict(StrEnum):
    """What a helper's (or the session's) quiet-vs-stressed comparison came to."""

    STATE_BUG = "state bug under load"
    CLEAN = "clean"  # the session: no helper differs
    IDENTICAL = "identical"  # a deterministic server's helper: bit-identical
    WITHIN_NOISE = "within noise"
    SUSPECT = "suspect"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class Activity:
    """What the traffic did during one phase of one helper: the difference of two ticks."""

    moment: str
    seconds: float
    sent: int
    by_kind: dict[str, int]
    aborted: int
    errors: int
    in_flight: int  # when the phase started
    paused: bool
    squeezed: int = 0  # tokens of other ids the squeeze sent just before the phase's hits


def activity(ticks: list[StressTick], helper: str, phase: str) -> Activity | None:
    """The traffic during `helper`'s last `phase` (the scored one), from its ticks."""
    moment = f"{helper}/{phase}"
    idx = [i for i, t in enumerate(ticks) if t.moment == moment]
    return _activity_at(ticks, idx[-1]) if idx else None


def _activity_at(ticks: list[StressTick], i: int) -> Activity:
    """What the traffic did from tick `i` to the next (to the end: nothing more)."""
    moment = ticks[i].moment
    a = ticks[i].counts
    b = ticks[i + 1].counts if i + 1 < len(ticks) else a
    kinds_a, kinds_b = a.get("by_kind") or {}, b.get("by_kind") or {}
    return Activity(
        moment,
        float(b.get("elapsed_s", 0.0)) - float(a.get("elapsed_s", 0.0)),
        int(b.get("sent", 0)) - int(a.get("sent", 0)),
        {k: int(kinds_b.get(k, 0)) - int(kinds_a.get(k, 0)) for k in kinds_b},
        int(b.get("aborted", 0)) - int(a.get("aborted", 0)),
        int(b.get("errors", 0)) - int(a.get("errors", 0)),
        int(a.get("in_flight", 0)),
        moment.endswith("/flush"),
        _squeezed(a, b),
    )


def load_during(ticks: list[StressTick], helper: str) -> int | None:
    """Background requests that ran while `helper` measured: those sent in its measuring
    phases (not its flushes, when the traffic pauses) that did not fail, plus those in flight
    as each phase began. None when the traffic has no tick of the helper (unknown)."""
    prefix = f"{helper}/"
    idx = [i for i, t in enumerate(ticks) if t.moment.startswith(prefix)]
    if not idx:
        return None
    phases = [_activity_at(ticks, i) for i in idx if ticks[i].moment != f"{helper}/done"]
    return sum(max(0, a.sent - a.errors) + a.in_flight for a in phases if not a.paused)


def _squeezed(a: dict, b: dict) -> int:
    """Tokens the squeezes between two ticks sent (run/stress.py's `squeezes` list grows)."""
    before, after = a.get("squeezes") or [], b.get("squeezes") or []
    new = after[len(before) :] if isinstance(after, list) and isinstance(before, list) else []
    return sum(int(q.get("sent_tokens") or 0) for q in new if isinstance(q, dict))


class IdleKind(StrEnum):
    """Why the traffic may have been idle while a helper measured."""

    BOUND = "bound"  # it had reached its requests or seconds bound (`bound`)
    FAILED = "failed"  # every background request failed (`last_error`, when recorded)


@dataclass(frozen=True)
class Idle:
    """Why the traffic was idle, from its last counts (recorded text as it came)."""

    kind: IdleKind
    bound: str | None = None
    last_error: str | None = None


class SkipKind(StrEnum):
    """Why a level's squeeze (run/stress.py) sent nothing."""

    NO_POOL = "no-pool"  # the server reports no KV pool size (max_total_num_tokens)
    OVER_LEVEL = "over-level"  # the pool needed more tokens than the level's squeeze_max
    RECORDED = "recorded"  # a reason this kltui does not read: its recorded text as it came


@dataclass(frozen=True)
class SqueezeSkip:
    """A skipped squeeze: why, the tokens it needed, the level and the level's most."""

    kind: SkipKind
    needed: int | None = None
    level: str | None = None
    most: int | None = None
    recorded: str | None = None  # RECORDED's text (untrusted)


# OVER_LEVEL as recordings older than its figures (`level`, `squeeze_max`) said it: only there
# is the level's most read back from the recorded text
_OVER_LEVEL = re.compile(r"^(\d+) tokens needed, over the (\S+) level's (\d+)$")


def squeeze_skip(note: dict[str, Any]) -> SqueezeSkip | None:
    """Why a squeeze of a tick's `squeezes` list was skipped (None: it was not)."""
    said = note.get("skipped")
    if not said:
        return None
    if not note.get("pool"):
        return SqueezeSkip(SkipKind.NO_POOL)
    target, most, level = note.get("target"), note.get("squeeze_max"), note.get("level")
    if isinstance(target, int) and isinstance(most, int) and isinstance(level, str):
        return SqueezeSkip(SkipKind.OVER_LEVEL, target, level, most)
    over = _OVER_LEVEL.match(str(said))
    if over is None:
        return SqueezeSkip(SkipKind.RECORDED, recorded=str(said))
    return SqueezeSkip(SkipKind.OVER_LEVEL, int(over[1]), over[2], int(over[3]))


@dataclass(frozen=True)
class Uncovered:
    """A server's paths the traffic never reached ("eviction", "retraction"), and why its
    squeeze was skipped when it was."""

    url: str
    missed: tuple[str, ...]
    squeeze_skipped: SqueezeSkip | None = None


@dataclass(frozen=True)
class HelperUnderLoad:
    """One helper on one server, quiet against stressed."""

    helper: str
    server: str
    compared: int  # samples scored in both runs
    identical: int  # of those, bit-identical
    deterministic: bool
    first: SampleDiff | None = None  # the earliest difference (deterministic servers)
    paired: Paired | None = None  # stressed above quiet? (other servers)
    during: Activity | None = None  # the traffic in the phase of the first difference
    # each run's own result (HelperView): avg_kl_div and status, quiet then stressed
    levels: tuple[float | None, float | None] = (None, None)
    statuses: tuple[str, str] = ("", "")
    # background requests while it measured (load_during): 0 means the stressed run of this
    # helper was a quiet one (the traffic had stopped, or every request failed); None unknown
    load: int | None = None
    idle: Idle | None = None  # why the traffic was idle then, where the counts say

    @property
    def state_bug(self) -> bool:
        """A state bug under load: a bit difference on a deterministic server, or evidence
        beyond chance and drift on another."""
        if self.deterministic:
            return self.first is not None
        return self.paired is not None and self.paired.significant

    @property
    def verdict(self) -> StressVerdict:
        """identical | state bug under load | within noise | suspect | inconclusive."""
        if self.compared == 0:
            return StressVerdict.INCONCLUSIVE
        if self.state_bug:
            return StressVerdict.STATE_BUG
        if self.load == 0:
            return StressVerdict.INCONCLUSIVE
        if self.deterministic:
            return StressVerdict.IDENTICAL
        p = self.paired
        if p is None or p.too_few:
            return StressVerdict.INCONCLUSIVE
        return StressVerdict.SUSPECT if p.suspect else StressVerdict.WITHIN_NOISE


@dataclass(frozen=True)
class StressReading:
    """A --stress session's result: every helper quiet against stressed, and the traffic."""

    level: str
    helpers: list[HelperUnderLoad] = field(default_factory=list)
    traffic: dict[str, dict[str, Any]] = field(default_factory=dict)  # server -> last counts
    server_counts: dict[str, dict[str, float] | None] = field(default_factory=dict)
    not_quiet: list[tuple[str, str]] = field(default_factory=list)  # (helper, server)

    @property
    def state_bug(self) -> bool:
        """Whether any helper shows a state bug under load."""
        return any(h.state_bug for h in self.helpers)

    @property
    def verdict(self) -> StressVerdict:
        """state bug under load | clean | inconclusive (nothing compared, or no traffic)."""
        if self.state_bug:
            return StressVerdict.STATE_BUG
        sent = sum(int(c.get("sent", 0)) for c in self.traffic.values())
        if not self.helpers or all(h.compared == 0 for h in self.helpers) or sent == 0:
            return StressVerdict.INCONCLUSIVE
        if any(h.verdict == StressVerdict.INCONCLUSIVE for h in self.helpers):
            return StressVerdict.INCONCLUSIVE
        return StressVerdict.CLEAN

    def not_exercised(self) -> dict[str, list[str]]:
        """Per server, the paths the traffic never reached: "eviction" (nothing evicted by the
        server's count nor seen by the traffic), "retraction" (the server counted none). A
        path the server does not count (no /metrics) is left out: not known either way."""
        out: dict[str, list[str]] = {}
        for url, c in self.traffic.items():
            server = self.server_counts.get(url)
            missed = []
            if server is not None:
                if not c.get("evictions_observed") and not server.get("evicted_tokens"):
                    missed.append("eviction")
                if not server.get("retractions"):
                    missed.append("retraction")
            if missed:
                out[url] = missed
        return out

    @property
    def no_traffic(self) -> bool:
        """The stressed run recorded no traffic at all."""
        return not self.traffic

    def uncovered(self) -> list[Uncovered]:
        """What the traffic did not reach, per server, so that "clean" is read as what it
        measured: a production-sized pool takes far more than a light level sends before
        anything is evicted or retracted (an H200 8B server's 845617-token pool was never
        squeezed)."""
        out = []
        for url, missed in self.not_exercised().items():
            c = self.traffic.get(url) or {}
            skipped = [
                why
                for q in c.get("squeezes") or []
                if isinstance(q, dict) and (why := squeeze_skip(q)) is not None
            ]
            out.append(Uncovered(url, tuple(missed), skipped[0] if skipped else None))
        return out


def deterministic(store: SessionStore, url: str) -> bool:
    """Whether the server at `url` reported deterministic inference on (bit equality expected)."""
    return store.identity(url).enable_deterministic_inference is True


def _paired(st: HelperState, quiet: HelperState) -> Paired:
    """The stressed helper's per-sample means against the quiet run's (paired.paired)."""
    common = [s for s in st.book.order if s in quiet.book.samples]
    mine = np.array([sample_mean(st.book.samples[s]) for s in common], dtype=np.float64)
    theirs = np.array([sample_mean(quiet.book.samples[s]) for s in common], dtype=np.float64)
    return paired(st.helper, mine, theirs, level_of(st))


def read(quiet: SessionStore, stressed: SessionStore, level: str | None = None) -> StressReading:
    """The stressed run against the quiet one, helper by helper."""
    ticks: dict[str, list[StressTick]] = {}
    for t in stressed.stress:
        ticks.setdefault(t.server, []).append(t)
    level = level or next((t.level for t in stressed.stress), "?")
    helpers: list[HelperUnderLoad] = []
    not_quiet: list[tuple[str, str]] = []
    for key, st in stressed.helpers.items():
        q = quiet.helpers.get(key)
        if q is None:
            not_quiet.append((st.helper, st.server))
            continue
        diff = compare_books(q.book, st.book)
        det = deterministic(stressed, st.server)
        first = diff.first if det else None
        server_ticks = ticks.get(st.server, [])
        during = None
        if first is not None and first.side is not None:
            during = activity(server_ticks, st.helper, PHASE_OF_SIDE.get(first.side, "decode"))
        helpers.append(
            HelperUnderLoad(
                st.helper,
                st.server,
                diff.comparable,
                diff.identical_samples,
                det,
                first,
                None if det else _paired(st, q),
                during,
                (HelperView.of(q).summary.avg_kl_div, HelperView.of(st).summary.avg_kl_div),
                (str(HelperView.of(q).status), str(HelperView.of(st).status)),
                load_during(server_ticks, st.helper),
                _idle(server_ticks),
            )
        )
    traffic = {u: dict(ts[-1].counts) for u, ts in ticks.items()}
    server_counts = {
        u: next((t.counts.get("server") for t in reversed(ts) if t.moment == "end"), None)
        for u, ts in ticks.items()
    }
    return StressReading(level, helpers, traffic, server_counts, not_quiet)


def _idle(ticks: list[StressTick]) -> Idle | None:
    """Why the traffic may have been idle, from its last counts: the bound that stopped it,
    or every request failing."""
    if not ticks:
        return None
    c = ticks[-1].counts
    stop = c.get("stopped")
    if stop in ("requests", "seconds"):
        return Idle(IdleKind.BOUND, bound=str(stop))
    sent, errors = int(c.get("sent", 0)), int(c.get("errors", 0))
    if sent and errors >= sent:
        last = c.get("last_error")
        return Idle(IdleKind.FAILED, last_error=str(last) if last else None)
    return None


def is_stressed(store: SessionStore) -> bool:
    """Whether a run is the stressed half of a --stress session (its recorded config)."""
    return bool(store.config.get("stressed")) and bool(store.config.get("stress"))


__all__ = [
    "PHASE_OF_SIDE",
    "Activity",
    "HelperUnderLoad",
    "Idle",
    "IdleKind",
    "SkipKind",
    "SqueezeSkip",
    "StressReading",
    "Uncovered",
    "activity",
    "load_during",
    "read",
    "squeeze_skip",
]
