"""A fleet's comparison as data (`readings/fleet.py` decides, `words/fleet.py` says it): the
cells of the replicas x replicas matrices, the groups, the odd replicas, the `Fleet`, and the
queries both read (a replica's helper, where two replicas first differ, what a replica did not
test)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kltui.readings.compare import BookDiff
from kltui.readings.coverage import Untested, coverage_of
from kltui.session.store import HelperState, SessionStore, helper_key

# what fails a fleet run (`--fleet-require`, `fleet: {require: ...}`): "gate", each replica's
# helpers as for --server; "identical", also replicas not all bit-identical or not all compared
# on every helper asked
FLEET_REQUIRE = ("gate", "identical")
DEFAULT_FLEET_REQUIRE = "gate"
ODD_NAMED = 3  # replicas outside the first group that the gate's failure describes one by one
SHORT_NAMED = 3  # replicas not fully compared that a summary or failure names with why

SIDES_SHOWN = {
    "ids": "generated token ids differ",
    "prefill": "prefill side",
    "decode": "decode side",
    "both": "prefill and decode side",
    "length": "one side has fewer tokens",
}


@dataclass(frozen=True)
class CellDifference:
    """Where two replicas first differ on one helper."""

    sample: int
    position: int
    side: str

    def to_json(self) -> dict[str, Any]:
        """The JSON form (a matrix cell's first_difference)."""
        return {"sample": self.sample, "position": self.position, "side": self.side}


@dataclass(frozen=True)
class Cell:
    """Replica x against replica y on one helper."""

    identical: bool | None  # None: no sample scored on both
    first: CellDifference | None  # the earliest difference
    prefill_max_abs_delta: float
    decode_max_abs_delta: float
    comparable_samples: int
    # both replicas tested this helper and share at least min_scored(samples) scored samples:
    # only then does the cell take part in the grouping and in "identical"
    counted: bool = False

    @classmethod
    def of(cls, diff: BookDiff, counted: bool = False) -> Cell:
        """The cell of one compared pair."""
        first = diff.first  # a differing sample: its position and side are set
        at = None
        if first is not None and first.first is not None and first.side is not None:
            at = CellDifference(first.sample, first.first, first.side)
        return cls(
            diff.identical,
            at,
            diff.max_abs("prefill"),
            diff.max_abs("decode"),
            diff.comparable,
            counted and diff.identical is not None,
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of this cell."""
        return {
            "identical": self.identical,
            "first_difference": None if self.first is None else self.first.to_json(),
            "prefill_max_abs_delta": self.prefill_max_abs_delta,
            "decode_max_abs_delta": self.decode_max_abs_delta,
            "comparable_samples": self.comparable_samples,
            "counted": self.counted,
        }


Matrix = list[list[Cell | None]]


@dataclass(frozen=True)
class FleetDifference:
    """Where two replicas first differ over every helper: the earliest position."""

    helper: str
    sample: int
    position: int
    side: str
    prefill_max_abs_delta: float
    decode_max_abs_delta: float

    def to_json(self) -> dict[str, Any]:
        """The JSON form (an odd replica's first_difference)."""
        return {
            "helper": self.helper,
            "sample": self.sample,
            "position": self.position,
            "side": self.side,
            "prefill_max_abs_delta": self.prefill_max_abs_delta,
            "decode_max_abs_delta": self.decode_max_abs_delta,
        }


@dataclass(frozen=True)
class Group:
    """Replicas bit-identical to each other, with the settings that set the group apart."""

    replicas: tuple[str, ...]
    settings: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """The JSON form (an entry of fleet.groups)."""
        return {"replicas": list(self.replicas), "settings": dict(self.settings)}


@dataclass(frozen=True)
class OddReplica:
    """A replica outside the largest group: against which replica, what differs and where."""

    replica: str
    group: int  # index into Fleet.groups
    against: str  # the largest group's first replica
    settings: dict[str, tuple[Any, Any]]  # setting -> (the largest group's value, this one's)
    first_difference: FleetDifference | None
    majority: bool  # the largest group is larger than any other: this one is "the odd one"

    def to_json(self) -> dict[str, Any]:
        """The JSON form (an entry of fleet.odd)."""
        return {
            "replica": self.replica,
            "group": self.group,
            "against": self.against,
            "settings": {k: [a, b] for k, (a, b) in self.settings.items()},
            "first_difference": None
            if self.first_difference is None
            else self.first_difference.to_json(),
            "majority": self.majority,
        }


@dataclass(frozen=True)
class Fleet:
    """The fleet comparison of a `--router` run: every replica against every other."""

    router: Any  # as recorded (untrusted)
    workers: list[Any]  # the router's workers as recorded (untrusted dicts)
    replicas: tuple[str, ...]
    helpers: tuple[str, ...]
    identical: bool | None  # None: not all compared on every helper
    groups: tuple[Group, ...]  # largest first
    uncompared: dict[str, Aside]  # replica -> why it was compared with none
    settings_differ: dict[str, list]  # setting -> one value per group
    odd: tuple[OddReplica, ...]
    matrices: dict[str, Matrix]  # helper -> replicas x replicas
    # the helpers the groups rest on: tested, with enough common samples, by some pair
    grouped_on: tuple[str, ...] = ()
    # replica -> why it was not compared on every helper asked (those outside every group were
    # set aside: they miss a helper the groups rest on, or share too few samples with a group)
    not_fully_compared: dict[str, Aside] = field(default_factory=dict)
    require: str = DEFAULT_FLEET_REQUIRE

    @property
    def failed(self) -> bool:
        """--fleet-require identical, and the replicas are not proven bit-identical on every
        path (words/fleet.failure_line says why)."""
        return self.require == "identical" and not self.identical

    def group_of(self) -> dict[str, int]:
        """Each grouped replica's group index."""
        return {u: gi for gi, g in enumerate(self.groups) for u in g.replicas}


def state_of(store: SessionStore, helper: str, url: str) -> HelperState | None:
    st = store.helpers.get(helper_key(helper, url))
    return st if st is not None and st.book.samples else None


def earliest(mats: dict[str, Matrix], i: int, j: int) -> FleetDifference | None:
    """Where replicas i and j first differ, over every helper whose cell counts: the earliest
    position."""
    found = [
        FleetDifference(
            name,
            c.first.sample,
            c.first.position,
            c.first.side,
            c.prefill_max_abs_delta,
            c.decode_max_abs_delta,
        )
        for name, m in mats.items()
        if (c := m[i][j]) is not None and c.counted and c.identical is False and c.first is not None
    ]
    return min(found, key=lambda f: (f.position, f.sample)) if found else None


class ShortKind(StrEnum):
    """Why one replica did not test one helper."""

    ERRORED = "errored"  # the replica errored in the helper (`phase`)
    AFTER_ERROR = "errored before"  # the replica errored before the helper ran
    NOT_RUN_YET = "has not run yet"  # the run still goes (the TUI's live view)
    DID_NOT_RUN = "did not run"
    STILL_RUNNING = "still running"
    DID_NOT_FINISH = "did not finish"
    NOT_TESTED = "not tested"  # coverage's rule (`untested`)


@dataclass(frozen=True)
class Shortfall:
    """Why one replica did not test one helper: the kind, the phase it errored in, or
    coverage's finding."""

    kind: ShortKind
    phase: str | None = None
    untested: Untested | None = None


def shortfall(store: SessionStore, url: str, helper: str) -> Shortfall | None:
    """Why replica `url` did not test `helper` (None: it did)."""
    st = store.helpers.get(helper_key(helper, url))
    if st is None:
        if (p := store.fatal(url, helper)) is not None:
            return Shortfall(ShortKind.ERRORED, p.phase)
        if store.fatal(url) is not None:
            return Shortfall(ShortKind.AFTER_ERROR)
        return Shortfall(ShortKind.NOT_RUN_YET if store.finished is None else ShortKind.DID_NOT_RUN)
    if st.summary is None:
        if (p := store.fatal(url, helper)) is not None or st.phase == "error":
            return Shortfall(ShortKind.ERRORED, p.phase if p is not None else None)
        going = store.finished is None
        return Shortfall(ShortKind.STILL_RUNNING if going else ShortKind.DID_NOT_FINISH)
    cov = coverage_of(st)
    return None if cov is None else Shortfall(ShortKind.NOT_TESTED, untested=cov)


def shortfalls(store: SessionStore, url: str, names: list[str]) -> dict[str, Shortfall]:
    """Each helper asked that replica `url` did not test, with why."""
    return {h: why for h in names if (why := shortfall(store, url, h)) is not None}


class AsideKind(StrEnum):
    """Why a replica was compared with no other (`Fleet.uncompared`) or not on every helper
    asked (`Fleet.not_fully_compared`)."""

    ERRORED = "errored"  # the replica's own fatal problem (`message`, recorded text)
    NOTHING_SCORED = "nothing scored"  # no helper scored a sample on it
    NO_OTHER = "no other replica"  # nothing to compare it with
    SHORT = "not tested"  # helpers it did not test (`short`)
    TOO_FEW = "too few in common"  # `helper`: `common` samples shared with `other`, `need`
    NOT_COMPARED = "not compared"  # with `other`, on no helper that falls short
    BOTH = "fits two groups"  # bit-identical to `other` and `third`, which differ
    SPLIT = "splits a group"  # bit-identical to `other`, not to `third` of its group


@dataclass(frozen=True)
class Aside:
    """Why a replica stands outside the comparison, with the figures it rests on."""

    kind: AsideKind
    message: str = ""
    short: tuple[tuple[str, Shortfall], ...] = ()  # (helper, why), in the run's order
    helper: str = ""
    common: int = 0
    need: int = 0
    other: str = ""
    third: str = ""
