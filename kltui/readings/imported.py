"""An imported file's reading (`kltui import`, computed by `rl/reading.py`) as a typed finding:
what the file shows of the training-inference mismatch (a `ImportKind` and the figures it rests
on), which evidence lines apply (`ImportLine`), and the next step's command. Its words are
`words/rl.py`'s; the import's summary records `to_json()` and the diagnosis of an imported file
carries it (`Diagnosis.imported`). Re-scoring on the server (`--server`) is `Rescored`: where
its helpers put the mismatch (`RescoreKind`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from enum import StrEnum
from typing import ClassVar

from kltui.readings.diagnosis_parts import EvidenceKind, Line


class ImportKind(StrEnum):
    """What the file shows."""

    NOTHING_USABLE = "nothing usable"  # no record could be used: inconclusive
    IDENTICAL = "bit-identical"  # the trainer reproduces every rollout logprob exactly
    MISMATCH = "mismatch"  # samples differ; the cause is not readable from the file


class ImportLine(StrEnum):
    """One evidence line of the reading."""

    UNUSABLE = "unusable"  # the records that could not be used, when none could
    COUNT = "count"  # the samples and tokens that differ
    NO_CONDITIONS = "no conditions"  # why there is no condition-1/condition-2 reading
    CONCENTRATION = "concentration"  # the share of the worst 1% of samples
    FIRST_POSITION = "first position"  # where the differences start
    VETO = "veto"  # what slime's veto would reject
    LEFT_OUT = "left out"  # the records left out


@dataclass(frozen=True)
class ImportFinding:
    """The reading's kind and its figures (None: not measured, as for a file with no usable
    record)."""

    kind: ImportKind
    samples: int  # usable samples
    bad: int  # records that could not be used
    differ: int = 0  # samples where trainer and rollout differ
    tokens: int = 0  # counted tokens
    differ_tokens: int = 0  # counted tokens that differ
    worst_sample: int | None = None  # the sample of the largest mean k3
    worst_mean_k3: float | None = None
    top_count: int | None = None  # the worst 1% of samples, counted
    top_share: float | None = None  # their share of the summed per-sample mean k3
    first_median: int | None = None  # the first differing position (trained tokens only)
    first_earliest: int | None = None
    catastrophic: int = 0  # samples with a token below slime's veto ratio
    veto: float | None = None  # slime's rs_veto_threshold
    # the next step's command: re-score on the rollout server (None: --server is doing it now)
    server_command: str | None = None

    @property
    def lines(self) -> tuple[ImportLine, ...]:
        """The evidence lines that apply, in the order they are said."""
        if self.kind is ImportKind.NOTHING_USABLE:
            return (ImportLine.UNUSABLE,)
        out = [ImportLine.COUNT, ImportLine.NO_CONDITIONS]
        if self.kind is ImportKind.IDENTICAL:
            return tuple(out)
        if self.top_share is not None:
            out.append(ImportLine.CONCENTRATION)
        if self.first_median is not None:
            out.append(ImportLine.FIRST_POSITION)
        if self.catastrophic:
            out.append(ImportLine.VETO)
        if self.bad:
            out.append(ImportLine.LEFT_OUT)
        return tuple(out)

    def to_json(self) -> dict[str, object]:
        """The summary's `rl.reading` (recorded in the HelperFinished event)."""
        return {**asdict(self), "kind": str(self.kind)}

    @classmethod
    def from_json(cls, raw: object) -> ImportFinding | None:
        """The finding a summary recorded; None for a reading recorded as words (before the
        kind) or anything else."""
        if not isinstance(raw, dict) or raw.get("kind") not in set(ImportKind):
            return None
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in raw.items() if k in known}
        return cls(**{**values, "kind": ImportKind(raw["kind"])})


@dataclass(frozen=True)
class ImportEvidence(Line):
    """One evidence line of an imported file's reading."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.IMPORTED
    line: ImportLine
    finding: ImportFinding


class RescoreKind(StrEnum):
    """Where re-scoring on the server (`--server`, `rl/rescore.py`) puts the mismatch: the
    server's prefill now against the recorded rollout, and against the trainer."""

    AGREE = "all agree"  # trainer, rollout and the server's prefill agree bit for bit
    TRAINER = "trainer"  # the prefill reproduces the rollout; the trainer differs from it
    ROLLOUT = "rollout"  # the trainer equals the prefill; the recorded rollout differs
    BOTH = "both"  # the prefill differs from both sides


@dataclass(frozen=True)
class Rescored:
    """What re-scoring on the server found (None: that helper did not score)."""

    kind: RescoreKind | None  # None: the two prefill comparisons did not both score
    scored: int  # samples server_vs_rollout scored
    rollout_differ: int | None  # samples where the prefill differs from the rollout
    trainer_differ: int | None  # samples where the trainer differs from the prefill
    match_differ: int | None  # match on the same prompts: samples where decode differs
    match_avg: float | None  # match's avg_kl_div


def _differs(summary: object) -> int | None:
    if not isinstance(summary, dict) or not summary.get("scored"):
        return None
    return int(summary.get("samples_with_difference") or 0)


def rescored(server_vs_rollout: object, trainer_vs_server: object, match: object) -> Rescored:
    """The re-scoring's finding from its helpers' summaries (server_vs_rollout,
    trainer_vs_server and match; each None or a summary dict)."""
    svr, tvs, m = _differs(server_vs_rollout), _differs(trainer_vs_server), _differs(match)
    kind = None
    if svr is not None and tvs is not None:
        kind = (
            (RescoreKind.AGREE if tvs == 0 else RescoreKind.TRAINER)
            if svr == 0
            else (RescoreKind.ROLLOUT if tvs == 0 else RescoreKind.BOTH)
        )
    scored = server_vs_rollout.get("scored") if isinstance(server_vs_rollout, dict) else None
    avg = match.get("avg_kl_div") if isinstance(match, dict) else None
    return Rescored(
        kind,
        int(scored or 0),
        svr,
        tvs,
        m,
        float(avg) if isinstance(avg, int | float) else None,
    )
