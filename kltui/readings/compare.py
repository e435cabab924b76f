"""Bitwise comparison of two sets of scored samples on the same prompt ids.

One comparison serves two questions from the KL guide: did a re-run give the same numbers
(same server, two runs: determinism), and do two servers give the same numbers (two configs,
one run: `cross_server.py` reads the pattern). Per token it compares the generated ids, side A
(prefill input logprobs) and side B (decode output logprobs). After the first generated id that
differs, the two contexts differ, so values past it are not compared (the ids difference is
reported instead).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

import numpy as np

from kltui.engines.identity import process_changes
from kltui.metrics.k3 import ScoreBook, ScoredSample
from kltui.session.store import SessionStore

SIDES = ("ids", "prefill", "decode")  # token ids; side A (input logprobs); side B (output)


class DiffSide(StrEnum):
    """Which values of a sample differ first (the JSON's `side`)."""

    IDS = "ids"  # the generated token ids
    PREFILL = "prefill"  # side A, input logprobs
    DECODE = "decode"  # side B, output logprobs
    BOTH = "both"  # prefill and decode at the same position
    LENGTH = "length"  # one side has fewer tokens, the rest equal


def _first_diff(x: np.ndarray, y: np.ndarray) -> int | None:
    differs = ~((x == y) | (np.isnan(x) & np.isnan(y)))
    return int(np.argmax(differs)) if differs.any() else None


def _max_abs(x: np.ndarray, y: np.ndarray) -> float:
    if not x.size:
        return 0.0
    with np.errstate(invalid="ignore"):
        d = np.abs(x - y)
    d[(x == y) | (np.isnan(x) & np.isnan(y))] = 0.0  # -inf == -inf is no difference
    return float(np.nanmax(d)) if not np.isnan(d).all() else float("nan")


@dataclass(frozen=True)
class SampleDiff:
    """Where one sample differs between two sides: token ids, then logprobs."""

    sample: int
    length_x: int
    length_y: int
    ids_first: int | None  # first generated position whose token id differs
    prefill_first: int | None  # side A, before ids_first
    decode_first: int | None  # side B, before ids_first
    prefill_max_abs: float
    decode_max_abs: float

    @property
    def first(self) -> int | None:
        """First position where anything differs (a length difference counts at its end)."""
        cands = [
            p for p in (self.ids_first, self.prefill_first, self.decode_first) if p is not None
        ]
        if self.length_x != self.length_y:
            cands.append(min(self.length_x, self.length_y))
        return min(cands) if cands else None

    @property
    def side(self) -> DiffSide | None:
        """Which values differ first (None: none differs)."""
        first = self.first
        if first is None:
            return None
        if self.ids_first == first:
            return DiffSide.IDS
        at = [
            s
            for s, p in (
                (DiffSide.PREFILL, self.prefill_first),
                (DiffSide.DECODE, self.decode_first),
            )
            if p == first
        ]
        if len(at) == 2:
            return DiffSide.BOTH
        return at[0] if at else DiffSide.LENGTH

    @property
    def identical(self) -> bool:
        """Whether every token id and logprob is the same."""
        return self.first is None

    def to_dict(self) -> dict:
        """The difference as a JSON object."""
        return {
            "sample": self.sample,
            "identical": self.identical,
            "first_position": self.first,
            "side": self.side,
            "ids_first_difference": self.ids_first,
            "prefill_first_difference": self.prefill_first,
            "decode_first_difference": self.decode_first,
            "prefill_max_abs_delta": self.prefill_max_abs,
            "decode_max_abs_delta": self.decode_max_abs,
            "tokens": [self.length_x, self.length_y],
        }


def compare_samples(x: ScoredSample, y: ScoredSample) -> SampleDiff:
    """How two scorings of one sample differ, bit for bit."""
    n = min(x.token_ids.size, y.token_ids.size)
    ids_first = _first_diff(np.asarray(x.token_ids[:n]), np.asarray(y.token_ids[:n]))
    m = n if ids_first is None else ids_first
    ax, ay = (np.asarray(s.lp_a[:m], dtype=np.float64) for s in (x, y))
    bx, by = (np.asarray(s.lp_b[:m], dtype=np.float64) for s in (x, y))
    return SampleDiff(
        x.sample,
        int(x.token_ids.size),
        int(y.token_ids.size),
        ids_first,
        _first_diff(ax, ay),
        _first_diff(bx, by),
        _max_abs(ax, ay),
        _max_abs(bx, by),
    )


@dataclass
class BookDiff:
    """One helper compared between two sides (runs or servers), over the samples both scored."""

    samples: list[SampleDiff] = field(default_factory=list)
    only_x: list[int] = field(default_factory=list)
    only_y: list[int] = field(default_factory=list)

    @property
    def comparable(self) -> int:
        """The number of samples both sides scored."""
        return len(self.samples)

    @property
    def identical_samples(self) -> int:
        """The number of common samples that are bit-identical."""
        return sum(1 for s in self.samples if s.identical)

    @property
    def identical(self) -> bool | None:
        """True when every sample both scored is bit-identical; None when none is common."""
        if not self.samples:
            return None
        return all(s.identical for s in self.samples)

    @property
    def first(self) -> SampleDiff | None:
        """The sample whose difference comes earliest (position, then sample index)."""
        diffs = [s for s in self.samples if not s.identical]
        return min(diffs, key=lambda s: (s.first, s.sample)) if diffs else None

    def max_abs(self, side: str) -> float:
        """The largest logprob difference on one side (a or b) over the samples."""
        vals = [getattr(s, f"{side}_max_abs") for s in self.samples]
        return float(np.nanmax(vals)) if vals and not np.isnan(vals).all() else 0.0

    def to_dict(self, per_sample: bool = True) -> dict:
        """The comparison as a JSON object (with or without each sample)."""
        first = self.first
        out: dict = {
            "identical": self.identical,
            "comparable_samples": self.comparable,
            "identical_samples": self.identical_samples,
            "first_difference": None
            if first is None
            else {"sample": first.sample, "position": first.first, "side": first.side},
            "ids_differ_samples": sum(1 for s in self.samples if s.ids_first is not None),
            "prefill_max_abs_delta": self.max_abs("prefill"),
            "decode_max_abs_delta": self.max_abs("decode"),
            "only_in_first": self.only_x,
            "only_in_second": self.only_y,
        }
        out["per_sample"] = [s.to_dict() for s in self.samples] if per_sample else None
        return out


def compare_books(x: ScoreBook, y: ScoreBook) -> BookDiff:
    """How one helper's scorings differ between two sides."""
    common = [s for s in x.order if s in y.samples]
    return BookDiff(
        [compare_samples(x.samples[s], y.samples[s]) for s in common],
        [s for s in x.order if s not in y.samples],
        [s for s in y.order if s not in x.samples],
    )


# --------------------------------------------------------------------------- whole runs
@dataclass(frozen=True)
class FirstDifference:
    """Where a re-run first differs from the run before: which helper, server, sample,
    position and side."""

    helper: str
    server: str
    sample: int
    position: int
    side: str | None

    def to_json(self) -> dict[str, Any]:
        """The place as the JSON result writes it."""
        return {
            "helper": self.helper,
            "server": self.server,
            "sample": self.sample,
            "position": self.position,
            "side": self.side,
        }


class NotComparable(StrEnum):
    """Why a re-run cannot be compared bit for bit with the run before."""

    HELPERS = "different helpers"  # the runs hold different helpers
    NO_HELPER = "no helper"  # no helper ran
    SAMPLES = "different samples"  # a helper scored other samples (`helper` names it)
    REPLACED = "server replaced"  # another process answered on a URL (`replaced` says what)


@dataclass(frozen=True)
class RerunEquality:
    """Whether a run is bit-identical to the one before it (the same helpers re-run on the
    same servers): None, with `why`, when nothing honest can be said."""

    identical: bool | None
    why: NotComparable | None = None  # why not comparable
    first_difference: FirstDifference | None = None
    helpers: dict[str, BookDiff] = field(default_factory=dict)  # helper key -> its comparison
    run: int = 0  # this run's number in its session (RerunChain); 0: not numbered
    previous: int = 0  # the number of the run it is compared with
    # url -> {launch-time key: (before, after)}: another process answered on that URL
    replaced: dict[str, dict[str, tuple[Any, Any]]] = field(default_factory=dict)
    helper: str | None = None  # the helper key that scored different samples (SAMPLES)

    def to_json(self, reason: str | None) -> dict[str, Any]:
        """The comparison as the JSON result's `repeat.equality` entries write it (`reason`:
        the words of `why`, words/compare.rerun_reason)."""
        numbered = {"run": self.run, "previous": self.previous} if self.run else {}
        first = self.first_difference
        replaced = {u: {k: list(v) for k, v in ch.items()} for u, ch in self.replaced.items()}
        return numbered | {
            "identical": self.identical,
            "reason": reason,
            "server_replaced": replaced or None,
            "first_difference": None if first is None else first.to_json(),
            "helpers": {k: d.to_dict(per_sample=False) for k, d in self.helpers.items()},
        }


def _where(helper: str, server: str, diff: BookDiff) -> FirstDifference | None:
    first = diff.first
    if first is None or first.first is None:
        return None
    return FirstDifference(helper, server, first.sample, first.first, first.side)


def replaced_servers(
    prev: SessionStore, cur: SessionStore
) -> dict[str, dict[str, tuple[Any, Any]]]:
    """The servers whose /server_info, read at the start of each run, says another process
    answered in `cur` than in `prev` (engines.identity.process_changes), by URL."""
    before = {s.url: s for s in prev.identities() if s.url is not None}
    out = {}
    for s in cur.identities():
        old = before.get(s.url) if s.url is not None else None
        if old is not None and s.url is not None and (changes := process_changes(old, s)):
            out[s.url] = changes
    return out


def rerun_equality(prev: SessionStore, cur: SessionStore, run: int = 0) -> RerunEquality:
    """Is `cur` (run number `run`, 0: unnumbered) bit-identical to `prev` (the same helpers
    re-run on the same servers)? Not comparable (None) when the runs hold different helpers or
    samples, or when a server was replaced in between: a relaunch changes the seed, the
    deterministic flag or the kernels' state, so a difference says nothing about
    non-determinism (and an equality nothing about determinism)."""
    eq = replace(_rerun_equality(prev, cur), run=run, previous=max(run - 1, 0))
    if replaced := replaced_servers(prev, cur):
        # the helpers' comparison stays in the JSON, but no difference is pointed at as news
        return replace(
            eq,
            identical=None,
            why=NotComparable.REPLACED,
            first_difference=None,
            replaced=replaced,
            helper=None,
        )
    return eq


def _rerun_equality(prev: SessionStore, cur: SessionStore) -> RerunEquality:
    if set(prev.helpers) != set(cur.helpers):
        return RerunEquality(None, NotComparable.HELPERS)
    if not cur.helpers:
        return RerunEquality(None, NotComparable.NO_HELPER)
    firsts: list[FirstDifference] = []
    helpers: dict[str, BookDiff] = {}
    for key, st in cur.helpers.items():
        other = prev.helpers[key]
        diff = compare_books(other.book, st.book)
        helpers[key] = diff
        if diff.only_x or diff.only_y:
            return RerunEquality(None, NotComparable.SAMPLES, None, helpers, helper=key)
        where = _where(st.helper, st.server, diff)
        if where is not None:
            firsts.append(where)
    if firsts:
        first = min(firsts, key=lambda w: (w.position, w.sample))
        return RerunEquality(False, None, first, helpers)
    return RerunEquality(True, None, None, helpers)


class RerunChain:
    """A session's runs that reached a server, each compared bit for bit with the one before:
    the one place re-run equality is computed (the run driver's and the replay's)."""

    def __init__(self) -> None:
        self.runs = 0  # runs counted so far
        self.previous: SessionStore | None = None

    def add(self, store: SessionStore) -> RerunEquality | None:
        """Counts a run that reached a server: its equality with the run before (both finished)
        as `rerun_equality`, numbered, else None."""
        if store.run is None:
            return None
        self.runs += 1
        eq = None
        if self.previous is not None and store.finished and self.previous.finished:
            eq = rerun_equality(self.previous, store, self.runs)
        self.previous = store
        return eq
