"""An import file as a run of the one event stream (session/events.py): RunStarted, one helper
`trainer_vs_rollout` (side A the trainer's logprobs, side B the rollout engine's), a
SampleScored per shown sample, a SampleSkipped and a Problem per record that cannot be used,
HelperFinished with the whole file's figures, RunFinished with the gate's verdict.

The file is read once, a chunk of records at a time; every figure (kltui's k3 summary, verl's
and slime's metrics) covers every usable record. The samples sent as SampleScored (what the
heatmap and the drill-down show) are bounded: the first `keep // 2` as they are read, so the
dashboard fills in at once, and at the end the `keep // 2` worst of the rest by mean k3. A
file of any size is shown in bounded memory, and the summary says how many are shown.
"""

from __future__ import annotations

import asyncio
import heapq
import math
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from kltui import __version__
from kltui.importer.reader import Source, open_source
from kltui.importer.schema import BadRecord, Record
from kltui.metrics.presets import DEFAULT_KL_DIV, ThresholdSource
from kltui.metrics.rl import Accumulator
from kltui.rl.gate import Gate
from kltui.rl.scan import scan
from kltui.rl.summary import build_summary
from kltui.session.events import (
    Event,
    HelperFinished,
    HelperStarted,
    PhaseChanged,
    Problem,
    RunFinished,
    RunStarted,
    RunVerdict,
    SampleScored,
    SampleSkipped,
)

HELPER = "trainer_vs_rollout"
CHUNK = 256  # records per vectorized pass
DEFAULT_KEEP = 2048  # samples sent as SampleScored
MAX_PROBLEMS = 100  # bad records sent as Problem events (every one is a SampleSkipped)
MAX_LISTED_BAD = 1000  # bad records listed in the summary (all are counted)


@dataclass
class ImportOptions:
    """How an import is read, gated and shown."""

    adapter: str = "auto"
    threshold: float | None = None  # avg_kl_div's gate (None: see gate_threshold)
    tail_threshold: float = 1e-3
    veto: float = 1e-4  # slime's rs_veto_threshold for the catastrophic fractions
    gates: list[Gate] = field(default_factory=list)
    keep: int = DEFAULT_KEEP
    texts: Callable[[list[int]], list[str]] | None = None  # a local tokenizer's token texts
    server_hint: str | None = "kltui import FILE --server URL"  # None: --server re-scores it
    clock: Callable[[], float] = time.time  # the events' times (a test fixes it)
    # after the file's helper, before RunFinished: more helpers on the shown records (the worst
    # `rescore` of them), e.g. rescore.py's re-scoring on a live server
    after: Callable[[list[Record]], AsyncIterator[Event]] | None = None
    rescore: int = 64

    @property
    def gate_threshold(self) -> float | None:
        """avg_kl_div's gate: --threshold; else the default, unless the user gave gates of
        their own (a --gate replaces the default gate, it does not add to it): None."""
        if self.threshold is not None:
            return self.threshold
        return None if self.gates else DEFAULT_KL_DIV

    @property
    def server_threshold(self) -> float:
        """The gate of the re-scoring helpers on a --server (a server's own gate)."""
        return DEFAULT_KL_DIV if self.threshold is None else self.threshold

    def threshold_source(self) -> ThresholdSource | None:
        """Where avg_kl_div's gate came from (None: there is none)."""
        if self.threshold is not None:
            return ThresholdSource("flag")
        return None if self.gates else ThresholdSource("default")


def label_of(path: str) -> str:
    """The 'server' of an import: its file."""
    return f"file:{os.path.basename(path)}"


@dataclass
class _Shown:
    """The samples the dashboard gets: the first ones, then a heap of the worst others."""

    first: int
    worst: int
    keep_first: bool = False  # hold on to the first ones too (for `after`)
    sent: int = 0
    heap: list[tuple[float, int, Record]] = field(default_factory=list)
    kept: list[tuple[float, int, Record]] = field(default_factory=list)

    def offer(self, mean_k3: float, rec: Record) -> bool:
        """True: send now (one of the first); else kept if among the worst so far."""
        key = mean_k3 if math.isfinite(mean_k3) else math.inf
        if self.sent < self.first:
            self.sent += 1
            if self.keep_first:
                self.kept.append((key, rec.index, rec.owned()))
            return True
        item = (key, rec.index, rec)
        if len(self.heap) < self.worst:
            heapq.heappush(self.heap, (key, rec.index, rec.owned()))
        elif item[:2] > self.heap[0][:2]:
            heapq.heapreplace(self.heap, (key, rec.index, rec.owned()))
        return False

    def rest(self) -> list[Record]:
        """The worst of the rest, in file order."""
        return [r for _, _, r in sorted(self.heap, key=lambda x: x[1])]

    def worst_shown(self, n: int) -> list[Record]:
        """The `n` worst of every shown record (the first ones too when kept), worst first."""
        return [r for _, _, r in sorted(self.kept + self.heap, key=lambda x: (-x[0], x[1]))[:n]]


def scored_event(rec: Record, server: str, texts) -> SampleScored:
    """One record as the SampleScored of side A = trainer, side B = rollout (counted tokens
    only: the loss mask decides what the trainer trains on, so what is compared)."""
    m = None if rec.mask.all() else rec.mask

    def side(x: np.ndarray, dtype: type) -> np.ndarray:
        return np.asarray(x if m is None else x[m], dtype=dtype)

    ids = side(rec.response_ids, np.int64)
    return SampleScored(
        HELPER,
        server,
        rec.index - 1,
        ids,
        side(rec.trainer, np.float64),
        side(rec.rollout, np.float64),
        0,
        int(rec.prompt_ids.size),
        texts=texts(ids.tolist()) if texts is not None else None,
    )


def _chunks(items: Iterator[Record | BadRecord]) -> Iterator[list[Record | BadRecord]]:
    chunk: list[Record | BadRecord] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


async def import_events(
    path: str, opts: ImportOptions, source: Source | None = None
) -> AsyncIterator[Event]:
    """The import of `path` as events (FileLineError before the first one when the file cannot
    be read at all)."""
    src = source if source is not None else open_source(path, opts.adapter)
    counted, sha, covers = scan(path, src.total is None, src.header.version is not None)
    total = src.total if src.total is not None else counted
    server = label_of(path)
    started = opts.clock()
    yield _run_started(path, opts, src, sha, covers, total, started)
    yield _helper_started(opts, src, server, total, started)
    yield PhaseChanged(HELPER, server, "read", at=opts.clock())
    acc = Accumulator(veto=opts.veto, tail=opts.tail_threshold)
    shown = _Shown(
        first=opts.keep - opts.keep // 2, worst=opts.keep // 2, keep_first=opts.after is not None
    )
    read = _Read()
    async for ev in read.records(src, acc, shown, path, server, total, opts):
        yield ev
    if read.n_bad > MAX_PROBLEMS:
        yield Problem(
            path, f"{read.n_bad - MAX_PROBLEMS} more bad record(s), listed in the summary", False
        )
    yield PhaseChanged(HELPER, server, "score", at=opts.clock())
    for rec in shown.rest():
        yield scored_event(rec, server, opts.texts)
    sums = acc.sums()
    sample_ids = np.concatenate(read.samples) if read.samples else np.zeros(0, dtype=np.int64)
    summary = build_summary(
        sums,
        sample_ids,
        acc,
        opts,
        n_records=sums.size + read.n_bad,
        bad=read.bad,
        n_bad=read.n_bad,
        shown=shown.sent + len(shown.heap),
        src=src,
    )
    yield HelperFinished(HELPER, server, summary, at=opts.clock())
    verdict = RunVerdict.PASS if summary["passed"] else RunVerdict.FAIL
    if opts.after is not None:
        async for ev in opts.after(shown.worst_shown(opts.rescore)):
            if isinstance(ev, Problem) and ev.fatal:
                verdict = RunVerdict.ERROR
            yield ev
    yield RunFinished({"verdict": verdict, "gates": summary["rl"]["gates"]}, verdict)


def _run_started(
    path: str,
    opts: ImportOptions,
    src: Source,
    sha: str,
    covers: str,
    total: int | None,
    started: float,
) -> RunStarted:
    """The import as a run: the file is its prompt set (named by its sha256, which is also the
    run id: the same file is the same run)."""
    header = src.header
    return RunStarted(
        run_id=sha[:12],  # the same file is the same run
        started_at=started,
        config={
            "helpers": [HELPER],
            "servers": [],
            "source": "import",
            "import": {"path": path, "adapter": header.adapter, "keep": opts.keep},
            "temperature": None,
        },
        servers=[],
        prompt_set={
            "source": "import",
            "n": total,
            "tokens": "?",
            "sha256": sha,
            "sha256_covers": covers,
            "path": path,
            "bytes": src.size,
            "adapter": header.adapter,
            "schema_version": header.version,
            "checked_against": header.source_version,
            "meta": header.meta,
        },
        kltui_version=__version__,
    )


def _helper_started(
    opts: ImportOptions, src: Source, server: str, total: int | None, started: float
) -> HelperStarted:
    """The one helper of an import: trainer (side A) against rollout (side B)."""
    header = src.header
    return HelperStarted(
        HELPER,
        server,
        total or 0,
        math.inf if opts.gate_threshold is None else opts.gate_threshold,  # inf: no gate
        opts.tail_threshold,
        settings={
            "source": "import",
            "side_a": "trainer",
            "side_b": "rollout",
            "adapter": header.adapter,
            "checked_against": header.source_version,
            "veto_threshold": opts.veto,
        },
        threshold_source=made.to_dict() if (made := opts.threshold_source()) else None,
        at=started,
    )


@dataclass
class _Read:
    """What reading the records keeps beside the accumulator: each chunk's sample ids, the bad
    records listed (the first MAX_LISTED_BAD) and how many there were."""

    samples: list[np.ndarray] = field(default_factory=list)
    bad: list[str] = field(default_factory=list)
    n_bad: int = 0

    async def records(
        self,
        src: Source,
        acc: Accumulator,
        shown: _Shown,
        path: str,
        server: str,
        total: int | None,
        opts: ImportOptions,
    ) -> AsyncIterator[Event]:
        """Reads every record into `acc`, chunk by chunk: the read's progress every 5 % of the
        records, the samples `shown` lets through now, and each bad record skipped."""
        done, step = 0, 5
        for chunk in _chunks(src.items()):
            done += len(chunk)
            if total and done * 100 // total >= step:
                step = done * 100 // total // 5 * 5 + 5
                yield PhaseChanged(
                    HELPER, server, f"read {min(100, done * 100 // total)}%", at=opts.clock()
                )
            recs = [r for r in chunk if isinstance(r, Record)]
            part = acc.add(
                [r.trainer for r in recs],
                [r.rollout for r in recs],
                [r.mask for r in recs],
                [r.step for r in recs],
            )
            self.samples.append(
                np.fromiter((r.index - 1 for r in recs), dtype=np.int64, count=len(recs))
            )
            means = part.cols["s_k3"] / np.maximum(part.cols["n"], 1.0)
            for rec, mean in zip(recs, means.tolist(), strict=True):
                if shown.offer(mean, rec):
                    yield scored_event(rec, server, opts.texts)
            for item in chunk:
                if isinstance(item, BadRecord):
                    for ev in self._skipped(item, path, server):
                        yield ev
            await asyncio.sleep(0)  # let the dashboard draw what came in

    def _skipped(self, item: BadRecord, path: str, server: str) -> list[Event]:
        """A bad record counted and skipped; a Problem for each of the first MAX_PROBLEMS."""
        self.n_bad += 1
        line = str(item)
        if len(self.bad) < MAX_LISTED_BAD:
            self.bad.append(line)
        out: list[Event] = [SampleSkipped(HELPER, server, item.index - 1, line)]
        if self.n_bad <= MAX_PROBLEMS:
            out.append(Problem(path, item.detail, False, HELPER, "read"))
        return out
