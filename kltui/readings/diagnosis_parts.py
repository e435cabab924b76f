"""The typed parts of a server's diagnosis besides its `Finding`: the figures of its headline,
each line of evidence as a record of its own kind, the suspects, the next step and its command.
Readings build these; `kltui/words/` renders them (a reading never returns text).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar

from kltui.readings.coverage import PageMisses, PoolShort, Untested
from kltui.readings.limit import Limit
from kltui.readings.paired import Paired

# a split whose side the prompt lengths also pick out this sharply is read as length, not state
# (bench/calibrate_splits.py: with it, no false condition 2 under length-correlated noise)
LENGTH_CONFOUND_P = 1e-3


class CommandKind(StrEnum):
    """The command a next step names."""

    DUMPS = "dumps"  # `kltui dumps`: find the shape-variant kernel
    CROSS_CHECK = "cross-check"  # `kltui check --server A --server B`: isolate a state bug
    RERUN = "rerun"  # `kltui check --samples N`
    RECORDED = "recorded"  # a command an imported file recorded (untrusted text)


@dataclass(frozen=True)
class Command:
    """A command to run next, as figures (the words render it)."""

    kind: CommandKind
    server: str = ""
    helpers: tuple[str, ...] = ()
    samples: int | None = None
    text: str | None = None  # RECORDED only


class StepKind(StrEnum):
    """What to do next."""

    NOTHING_TESTED = "nothing tested"
    SAMPLING = "sampling"
    EXACT_MISSED = "exact, samples missed"
    EXACT_WHERE_TESTED = "exact where tested"
    BASELINE = "run match too"
    STATE_UNCLEAR = "state unclear"
    CONDITION2 = "isolate the trigger"
    NOT_EXCLUDED = "more samples, repeat or stress"
    BROAD_EXCESS = "more samples decide the shift"
    FEW_FAR_ABOVE = "more prompts like the affected ones"
    TOO_FEW = "more samples"
    NOTHING_TO_FIX_UNCOVERED = "nothing to fix, paths not covered"
    NOTHING_TO_FIX = "nothing to fix for the gate"
    DUMPS = "find the kernel"
    RELAUNCH_DETERMINISTIC = "relaunch deterministic"
    DETERMINISTIC_UNKNOWN = "deterministic inference unknown"
    RECORDED = "recorded"  # an imported file's own step (untrusted text)


@dataclass(frozen=True)
class Step:
    """A next step with the figures its words need; `then` is the step after it."""

    kind: StepKind
    samples: int | None = None
    level: float | None = None
    gate: float | None = None
    helpers: tuple[str, ...] = ()
    command: Command | None = None
    then: Step | None = None
    ratio: float | None = None
    deterministic: bool | None = None
    text: str | None = None  # RECORDED only


class SuspectKind(StrEnum):
    """What to suspect: a kernel (condition 1) or a state path (condition 2)."""

    DETERMINISTIC_OFF = "deterministic inference off"
    DECODE_VS_EXTEND = "decode vs extend attention"
    TP_ALL_REDUCE = "tp all-reduce"
    CHUNKED_PREFILL = "chunked prefill"
    CUDA_GRAPH = "cuda graph"
    OUTSIDE_BATCH_INVARIANT = "kernels outside batch_invariant_ops"
    PATH = "the cache path"  # the registry's path of a helper
    PAGE_RESTORE = "page-granular restore"
    # from the state geometry (engines/geometry.py)
    TRACK_SAVE = "the decode checkpoint (track) save"
    SSM_CHECKPOINT = "the conv/SSM checkpoint restore"
    WINDOW_EVICTION = "the sliding-window eviction"


@dataclass(frozen=True)
class Suspect:
    """One suspect and its figures (`name`: the backend or the helper)."""

    kind: SuspectKind
    name: str | None = None
    figure: int | None = None
    longest: int | None = None


@dataclass(frozen=True)
class Headline:
    """The figures a finding's headline rests on; which of them matter depends on the finding
    (`words/diagnosis.py` renders one template per finding)."""

    helpers: tuple[str, ...] = ()  # the paths the finding names
    others: tuple[str, ...] = ()  # a second group: exact paths, paths that ran, not asked for
    primary: str | None = None  # the path whose state is named first
    level: float | None = None  # the named path's level (or its highest sample)
    match_level: float | None = None
    p: float | None = None
    n: int | None = None
    samples: tuple[int, ...] = ()
    temperature: float | None = None
    nonfinite: tuple[str, ...] = ()  # helpers with non-finite logprobs on both sides
    partial: bool = False  # bit-identical on the samples compared only
    fails: tuple[tuple[str, str], ...] = ()  # (helper, why) failing its gate
    failing: tuple[str, ...] = ()
    deterministic: bool | None = None
    match_tested: bool = False
    base: str | None = None
    why: Untested | None = None  # BASELINE_NOT_TESTED: why the base tested nothing
    paired: Paired | None = None
    excess: tuple[Paired, ...] = ()
    text: str | None = None  # an imported file's own label (untrusted text)
    importing: bool = False  # PENDING: an imported file still being read
    cold: int | None = None  # match's samples that reused fewer cached tokens (RESTORE_*)
    least: int | None = None  # the fewest cached tokens a differing sample of match reused


# --------------------------------------------------------------------------- evidence
class EvidenceKind(StrEnum):
    """The kinds of evidence line."""

    COUNT = "count"
    SETTINGS = "settings"
    PROTOCOL = "protocol"
    NOT_TESTED = "not tested"
    PAGE_MISSES = "page misses"
    POOL_SHORT = "kv pool short"
    NONFINITE = "non-finite"
    STRAY = "stray ulps"
    ONE_PATH = "one-path test"
    PAIRED = "paired test"
    NOISE = "kernel noise"
    AFFECTED = "affected samples"
    CONCENTRATED = "concentrated"
    PAGE_RESIDUES = "page residues"
    ONSET = "onset"
    LIMIT = "stated limit"
    KERNELS_STEP = "match's step"
    RECORDED = "recorded"
    IMPORTED = "imported"  # an imported file's reading (readings/imported.py)
    CACHED_DECODE = "divergence on reused cache"
    # from the state geometry (readings/geometry_evidence.py, issue 57)
    RESIDUES = "prompt residues against the geometry"
    RESTORED = "checkpoint restored"
    HANDOFF = "onset against the geometry"
    CROSSING = "geometry coverage"
    WINDOW_SPLIT = "divergence past the window"
    ROUTING = "routing flips"


@dataclass(frozen=True)
class Line:
    """The base of every evidence record: its kind, and whether it is a statistic (shown on
    request: `kltui check --explain`) or a plain figure."""

    kind: ClassVar[EvidenceKind]
    statistic: ClassVar[bool] = False


@dataclass(frozen=True)
class Count(Line):
    """One helper's samples that differ, level, max k3 and first divergence."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.COUNT
    helper: str
    differing: int
    scored: int | None
    level: float | None
    max_k3: float | None
    first: tuple[object, object] | None  # (sample, position)


@dataclass(frozen=True)
class Settings(Line):
    """The settings the server reported that decide what a number means: (key, value)."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.SETTINGS
    pairs: tuple[tuple[str, object], ...]


@dataclass(frozen=True)
class Protocol(Line):
    """A protocol finding (metrics/protocol.py's message): never read as numerics."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.PROTOCOL
    message: str


@dataclass(frozen=True)
class NotTested(Line):
    """A helper that ran and did not test its path."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.NOT_TESTED
    helper: str
    why: Untested


@dataclass(frozen=True)
class PageNote(Line):
    """Every skipped sample of a cache helper is the radix cache's page rounding."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.PAGE_MISSES
    misses: PageMisses


@dataclass(frozen=True)
class Nonfinite(Line):
    """Non-finite logprobs at the same positions on both sides: (sample, positions)."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.NONFINITE
    helper: str
    where: tuple[tuple[int, tuple[int, ...]], ...]


@dataclass(frozen=True)
class Stray(Line):
    """A cache path at or below the stray-ulp floor."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.STRAY
    helper: str


@dataclass(frozen=True)
class OnePath(Line):
    """With match exact: the chance that noise shared by every path missed the others."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.ONE_PATH
    statistic: ClassVar[bool] = True
    helper: str
    differing_samples: int
    samples: int
    differing: int
    tokens: int
    match_samples: int
    clean: tuple[tuple[str, int], ...]
    p: float | None


@dataclass(frozen=True)
class PairedLine(Line):
    """A cache path against match on the same samples (the paired tests' figures)."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.PAIRED
    statistic: ClassVar[bool] = True
    paired: Paired


@dataclass(frozen=True)
class Noise(Line):
    """A cache path above match beyond chance, but by no more than kernel noise."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.NOISE
    statistic: ClassVar[bool] = True
    paired: Paired


@dataclass(frozen=True)
class SampleRow:
    """One sample's prompt and cache figures (None where not recorded)."""

    index: int
    prompt_len: object = None
    cached_tokens: object = None
    recorded: bool = True  # False: the sample has no per-sample row to read figures from


class Figure(StrEnum):
    """A per-sample figure that can set the affected samples apart."""

    CONTEXT = "prompt + generated"
    PROMPT = "prompt length"
    CACHED = "cached_tokens"


@dataclass(frozen=True)
class Separator:
    """Every affected sample has `figure` >= `mine` and the others <= `theirs` (`above`), or
    the other way round."""

    figure: Figure
    above: bool
    mine: float
    theirs: float


@dataclass(frozen=True)
class Affected(Line):
    """The samples far above match, and what sets them apart."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.AFFECTED
    helper: str
    rows: tuple[SampleRow, ...]  # every affected sample, in order
    shared: tuple[Separator, ...]


@dataclass(frozen=True)
class Concentrated(Line):
    """Divergence concentrated in a quarter of the requests or fewer."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.CONCENTRATED
    helper: str
    n: int
    scored: int
    rows: tuple[SampleRow, ...]  # the first six


@dataclass(frozen=True)
class PageResidues(Line):
    """prompt_len % page size of the divergent and the passing samples."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.PAGE_RESIDUES
    helper: str
    page: int
    divergent: tuple[int, ...]
    passing: tuple[int, ...]


class OnsetKind(StrEnum):
    """Where in generation the divergent samples start to differ."""

    RESTORED_WRONG = "from the first token, above the tail there"
    FIRST_ROUNDING = "from the first token, at rounding level"
    FIRST_MIXED = "from the first token, above the tail in some"
    SOME_LATER = "from the first token in some, later in others"
    MID = "mid-generation"


@dataclass(frozen=True)
class Onset(Line):
    """Where the divergent samples first differ."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.ONSET
    helper: str
    onset: OnsetKind
    n: int  # divergent samples
    jumps: int  # above the tail threshold at the first token
    at_start: int
    later: int
    median: int | None
    earliest: int | None
    decode_state: bool  # the restored state holds decode-written KV (decode_cache_hit)


@dataclass(frozen=True)
class LimitLine(Line):
    """What a reading rules out on one cache path."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.LIMIT
    statistic: ClassVar[bool] = True
    limit: Limit


@dataclass(frozen=True)
class KernelsStep(Line):
    """Match's own step (its divergence is the kernels'), beside an open condition 2."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.KERNELS_STEP
    step: Step


@dataclass(frozen=True)
class Recorded(Line):
    """An evidence line an imported file recorded (untrusted text)."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.RECORDED
    text: str


@dataclass(frozen=True)
class CachedDecode(Line):
    """match's decode ran on a radix hit (cached_tokens > 0) in some samples, and its
    differing samples are those that reused the most: the divergence follows the reused
    cache."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.CACHED_DECODE
    helper: str
    least: int  # the fewest cached tokens a differing sample's decode reused
    cached: tuple[int, ...]  # samples whose decode reused at least `least` cached tokens
    differing: tuple[int, ...]  # samples that differ (all among `cached`)
    cold: int  # the other samples (fewer or no cached tokens), every one bit-identical
    # the chance that the differing samples all fall on the cached ones, times the thresholds
    # that could have been chosen (one per distinct cached_tokens value above 0)
    p: float
    # the same chance with the longest prompts as the side: under LENGTH_CONFOUND_P the samples
    # that reused the cache are the long ones, where noise that grows with length lands too
    p_length: float = 1.0

    @property
    def confounded(self) -> bool:
        """The prompt lengths split the differing samples from the exact ones as well."""
        return self.p_length < LENGTH_CONFOUND_P


@dataclass(frozen=True)
class PoolNote(Line):
    """A cache helper's misses beside a KV pool smaller than what its hits needed at once."""

    kind: ClassVar[EvidenceKind] = EvidenceKind.POOL_SHORT
    short: PoolShort
