"""What a multiturn run says (issue 58): which group, branch and turn diverge, from which
generated position, whether each turn's hit was as SGLang asserts it, and whether the divergent
turns share a hit-length remainder that the clean ones do not.

A turn diverges when its own mean k3 is above the helper's gate (on a bit-exact gate: any
difference). The remainder test compares, within the turn indices where some turn diverges, the
divergent turns' remainders with the clean turns' ones, for two quantities (the hit,
cached_tokens, and the turn's history, its input length) and each modulus: the page size, the
track interval when the server reports one, then powers of two up to 64. A modulus separates
when no divergent turn shares a remainder with a clean one: a state bug tied to where a hit ends
(SGLang #29792: a decode-side save past a page or track boundary) separates, kernel noise does
not. Typed findings only: the words are kltui/words/multiturn.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kltui.metrics.turn_hits import HitExpectation
from kltui.session.store import HelperState
from kltui.session.turns import TurnPlace

POWERS = (2, 4, 8, 16, 32, 64)


class HitKind(StrEnum):
    """A turn's cached_tokens against SGLang's assert."""

    AS_ASSERTED = "as_asserted"
    SHORT = "short"  # fewer than the rule accepts: less was restored than the history
    OFF = "off"  # not what the rule accepts, and not fewer (a hit past the history)
    UNKNOWN = "unknown"  # no rule recorded


class RemainderKind(StrEnum):
    """Whether the divergent turns' hits end on remainders the clean ones never do."""

    SEPARATES = "separates"  # some (quantity, modulus) splits divergent from clean turns
    SHARED = "shared"  # every tried modulus gives some divergent turn a clean turn's remainder
    ALL_DIVERGENT = "all_divergent"  # no clean turn to compare with at those turn indices
    NO_DIVERGENCE = "no_divergence"


class Quantity(StrEnum):
    """The lengths whose remainders are compared."""

    CACHED_TOKENS = "cached_tokens"  # where the turn's hit ended
    HISTORY = "history"  # the turn's input length (where its prefill ended)


@dataclass(frozen=True)
class TurnRow:
    """One turn of one conversation: where it sits, its hit, its k3."""

    sample: int
    place: TurnPlace
    hit: HitKind
    n_tokens: int
    mean_k3: float
    max_k3: float
    first_divergence: int | None  # first generated position whose logprobs differ at all
    divergent: bool

    @property
    def expected(self) -> HitExpectation | None:
        """The rule's expectation for this turn's hit."""
        return self.place.expected


@dataclass(frozen=True)
class Separation:
    """One (quantity, modulus) that splits the divergent turns from the clean ones."""

    quantity: Quantity
    modulus: int
    divergent: tuple[int, ...]  # the remainders of the divergent turns
    clean: tuple[int, ...]  # the remainders of the clean turns


@dataclass(frozen=True)
class Remainders:
    """The remainder test's result; `found` lists every separating pair, the hit before the
    history, each in the order tried (the server's page size and track interval first)."""

    kind: RemainderKind
    found: tuple[Separation, ...] = ()
    moduli: tuple[int, ...] = ()  # the moduli tried


@dataclass(frozen=True)
class MultiturnReading:
    """A multiturn helper's turns read: the tree, the divergent and short turns, remainders."""

    rows: tuple[TurnRow, ...]  # group > branch > turn order
    remainders: Remainders
    turn_avg: tuple[float | None, ...]  # per turn index: avg of the turns' mean k3
    gate: float

    @property
    def divergent(self) -> tuple[TurnRow, ...]:
        """The turns above the gate."""
        return tuple(r for r in self.rows if r.divergent)

    @property
    def short(self) -> tuple[TurnRow, ...]:
        """The turns whose hit is not as asserted."""
        return tuple(r for r in self.rows if r.hit in (HitKind.SHORT, HitKind.OFF))

    @property
    def last_turn_avg(self) -> float | None:
        """The last turn's avg: what SGLang's kit reports as avg_kl_div (it replays only it)."""
        return self.turn_avg[-1] if self.turn_avg else None


def _hit(place: TurnPlace) -> HitKind:
    e = place.expected
    if e is None:
        return HitKind.UNKNOWN
    if e.holds(place.cached_tokens):
        return HitKind.AS_ASSERTED
    return HitKind.SHORT if place.cached_tokens < e.floor else HitKind.OFF


def read_multiturn(
    st: HelperState, page_size: int | None = None, track_interval: int | None = None
) -> MultiturnReading | None:
    """The reading of one multiturn helper state (None when no sample names its place)."""
    if not st.places:
        return None
    gate = st.threshold if st.threshold == st.threshold else 0.0  # NaN: never said
    rows = []
    for sample, place in sorted(
        st.places.items(), key=lambda kv: (kv[1].group, kv[1].branch, kv[1].turn)
    ):
        scored = st.book.samples.get(sample)
        if scored is None:
            continue
        m = scored.metrics
        divergent = m.mean_k3 > gate if gate > 0 else m.n_nonzero > 0
        rows.append(
            TurnRow(
                sample,
                place,
                _hit(place),
                m.n_tokens,
                m.mean_k3,
                m.max_k3,
                m.first_divergence,
                divergent,
            )
        )
    known = [m for m in (page_size, track_interval) if m is not None and m > 1]
    moduli = tuple(dict.fromkeys([*known, *POWERS]))  # the server's own first
    return MultiturnReading(tuple(rows), remainders(rows, moduli), _turn_avg(rows), gate)


def _turn_avg(rows: list[TurnRow]) -> tuple[float | None, ...]:
    n = 1 + max((r.place.turn for r in rows), default=-1)
    out: list[float | None] = []
    for t in range(n):
        means = [r.mean_k3 for r in rows if r.place.turn == t]
        out.append(sum(means) / len(means) if means else None)
    return tuple(out)


def _value(r: TurnRow, q: Quantity) -> int:
    return r.place.cached_tokens if q is Quantity.CACHED_TOKENS else r.place.history


def remainders(rows: list[TurnRow], moduli: tuple[int, ...]) -> Remainders:
    """Whether some (quantity, modulus) splits the divergent turns from the clean turns of the
    same turn indices."""
    bad = [r for r in rows if r.divergent]
    if not bad:
        return Remainders(RemainderKind.NO_DIVERGENCE, moduli=moduli)
    turns = {r.place.turn for r in bad}
    good = [r for r in rows if not r.divergent and r.place.turn in turns]
    if not good:
        return Remainders(RemainderKind.ALL_DIVERGENT, moduli=moduli)
    found = []
    for q in Quantity:
        for m in moduli:
            rb = {_value(r, q) % m for r in bad}
            rg = {_value(r, q) % m for r in good}
            if not rb & rg:
                found.append(Separation(q, m, tuple(sorted(rb)), tuple(sorted(rg))))
    kind = RemainderKind.SEPARATES if found else RemainderKind.SHARED
    return Remainders(kind, tuple(found), moduli)
