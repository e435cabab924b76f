"""One configuration of an ablation against the base (`readings/ablation.py` reads the sweep):
per helper its level, its per-sample test against the base's (`HelperReading`, `effect_of`),
the knobs as /server_info reports them (`SettingCheck`), and the configuration as a whole
(`ConfigReading`, `read_config`): refused when `kltui check` would refuse the pair, a flag that
changed nothing, a helper left untested (vacuous or starved of cache hits)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from kltui.ablate.plan import Config
from kltui.readings.ablation_kinds import (
    BASE_EFFECT,
    BASE_NOT_TESTED,
    INCONCLUSIVE,
    LOWER,
    NONE,
    NOT_TESTED,
    NOTHING,
    REDUCED,
    REDUCED_BY,
    REMOVED,
    REMOVED_ON,
    SAME,
    WORSE,
    Effect,
)
from kltui.readings.ablation_settings import SettingCheck, cache_turned_off, settings_of, shown
from kltui.readings.compare import compare_books
from kltui.readings.coverage import starved, untested
from kltui.readings.diagnosis import diagnose_server
from kltui.readings.evidence import excess_over_match, level_of, sample_mean
from kltui.readings.findings import Kind
from kltui.readings.identity import Conflict, conflict, refusal
from kltui.readings.paired import MIN_COMMON, STRAY_ULP_FLOOR, Paired, far_samples
from kltui.registry import same_engine
from kltui.session.store import HelperState, SessionStore


def num(x: float | None) -> str:
    """A level as the verdicts print it: 0, 8.5e-3, 1.2e-12 (– for unknown)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if x == 0:
        return "0"
    if math.isinf(x):
        return "inf"
    mant, exp = f"{x:.1e}".split("e")
    mant = mant.rstrip("0").rstrip(".")
    return f"{mant}e{int(exp)}"


def ids_text(ids: Sequence[int]) -> str:
    """ "#3, #17 and #29" (the first 8)."""
    shown = [f"#{i}" for i in ids[:8]]
    more = f" and {len(ids) - 8} more" if len(ids) > 8 else ""
    if len(shown) > 1 and not more:
        return f"{', '.join(shown[:-1])} and {shown[-1]}"
    return ", ".join(shown) + more


def removed_on(base: HelperState, st: HelperState) -> tuple[int, ...]:
    """The sample ids where the base sits orders of magnitude above this configuration, which
    stays at rounding level on every common sample, with none the other way: the knob removed
    the divergence on those samples (`paired.far_samples`, the diagnosis's direct evidence
    with this configuration in match's place). Empty when that is not what was measured."""
    common = [s for s in base.book.order if s in st.book.samples]
    high = np.array([sample_mean(base.book.samples[s]) for s in common], dtype=np.float64)
    low = np.array([sample_mean(st.book.samples[s]) for s in common], dtype=np.float64)
    far = far_samples(high, low)
    return tuple(common[i] for i in far.up) if far.direct else ()


def _floored(x: float) -> float:
    return max(x, 0.0) + STRAY_ULP_FLOOR


def helper_states(store: SessionStore) -> dict[str, HelperState]:
    """The store's helpers on its one server (the first the run names), by helper name."""
    ids = [i.url for i in store.identities() if i.url]
    server = ids[0] if ids else next((st.server for st in store.helpers.values()), None)
    return {
        st.helper: st
        for st in store.helpers.values()
        if st.server == server and same_engine(st.helper)
    }


def _server(store: SessionStore) -> str | None:
    ids = [i.url for i in store.identities() if i.url]
    return ids[0] if ids else next((st.server for st in store.helpers.values()), None)


def _conflict(store: SessionStore, base_store: SessionStore) -> Conflict | None:
    """One server under two URLs, or another model, as the recorded identities show."""
    server, base_server = _server(store), _server(base_store)
    if server is None or base_server is None:
        return None
    return conflict(base_store.identity(base_server), store.identity(server))


def _exact_samples(st: HelperState) -> int:
    """Samples whose prefill and decode logprobs are bit-identical in this configuration."""
    return sum(
        1
        for s in st.book.order
        if np.array_equal(
            np.asarray(st.book.samples[s].lp_a), np.asarray(st.book.samples[s].lp_b), equal_nan=True
        )
    )


@dataclass(frozen=True)
class HelperReading:
    """One helper of one configuration against the base's."""

    helper: str
    config: str
    level: float | None  # avg_kl_div (None: not tested)
    base_level: float | None
    scored: int
    exact_samples: int  # bit-identical prefill vs decode in this configuration
    common: int  # samples both this configuration and the base scored
    identical_to_base: int  # of those, bit-identical to the base's
    untested: str | None  # why this configuration's helper tested nothing
    effect: Effect
    why: str | None = None  # for INCONCLUSIVE: n too small, or inside the noise
    lower: Paired | None = None  # base above this configuration, per sample
    higher: Paired | None = None  # this configuration above the base, per sample
    samples: tuple[int, ...] = ()  # REMOVED_ON: the sample ids it was removed on

    @property
    def change(self) -> float | None:
        """avg_kl_div over the base's (None when either is unknown or the base is 0)."""
        if self.level is None or not self.base_level:
            return None
        return self.level / self.base_level

    @property
    def movement(self) -> float | None:
        """How far this configuration lowered the helper: log10 of the base's level over its
        own, both floored at 1e-9 (negative: raised it). None when either did not test."""
        if self.level is None or self.base_level is None:
            return None
        return math.log10(_floored(self.base_level) / _floored(self.level))

    def arrow(self) -> str:
        """ "8.5e-3 -> 0"."""
        return f"{num(self.base_level)} -> {num(self.level)}"

    def cell(self) -> str:
        """The helper's cell in the console table of knobs x helpers."""
        if self.effect == BASE_EFFECT:
            return num(self.level)
        if self.effect in (NOT_TESTED, BASE_NOT_TESTED):
            return self.effect
        if self.effect == SAME:
            return f"{num(self.level)} (= base)"
        return f"{num(self.level)} ({self.effect})"

    def line(self) -> str:
        """One line: the level against the base, the effect and what it rests on."""
        if self.effect == BASE_EFFECT:
            return (
                f"{self.helper}: avg_kl_div {num(self.level)}, {self.exact_samples}/"
                f"{self.scored} samples bit-identical"
                if self.untested is None
                else f"{self.helper}: not tested ({self.untested})"
            )
        if self.effect == NOT_TESTED:
            return f"{self.helper}: not tested ({self.untested}): not a fix"
        if self.effect == BASE_NOT_TESTED:
            return f"{self.helper}: {num(self.level)}; the base did not test it, nothing to compare"
        rest = (
            f"{self.exact_samples}/{self.scored} samples bit-identical; "
            f"{self.identical_to_base}/{self.common} identical to the base"
        )
        p = self.lower
        test = (
            f"; lower than the base in {p.higher} of {p.n} samples, higher in {p.lower} "
            f"(signed-rank p={p.p:.2g})"
            if p is not None and p.n
            else ""
        )
        why = f": {self.why}" if self.why else ""
        if self.samples:
            why = f" {ids_text(self.samples)}, at rounding level on every sample" + why
        return f"{self.helper}: {self.arrow()} ({self.effect}{why}; {rest}{test})"

    def to_json(self) -> dict:
        """The helper's entry in a configuration of the JSON `ablation` document."""
        p = self.lower
        return {
            "avg_kl_div": self.level,
            "base_avg_kl_div": self.base_level,
            "change": self.change,
            "scored": self.scored,
            "exact_samples": self.exact_samples,
            "common_samples": self.common,
            "identical_to_base_samples": self.identical_to_base,
            "untested": self.untested,
            "effect": self.effect,
            "why": self.why,
            "samples": list(self.samples),
            "paired": None
            if p is None
            else {
                "n": p.n,
                "higher": p.higher,
                "lower": p.lower,
                "equal": p.equal,
                "p": p.p,
                "ratio": p.ratio if math.isfinite(p.ratio) else None,
                "shift_p": p.shift_p,
            },
            "line": self.line(),
        }


def effect_of(
    name: str, helper: str, st: HelperState | None, base: HelperState | None
) -> HelperReading:
    """What one configuration's helper shows against the base's."""
    base_why = untested(base) if base is not None else "did not run"
    base_level = level_of(base) if base is not None and base_why is None else None
    why = untested(st) if st is not None else "did not run"
    if why is None and st is not None and base is not None and base_why is None:
        # hits far shorter than the base's test less than the base did: never a fix
        why = None if (short := starved(st, base)) is None else short.reason
    level = level_of(st) if st is not None and why is None else None
    scored = len(st.book.order) if st is not None else 0
    exact = _exact_samples(st) if st is not None else 0
    if st is not None and base is not None:
        diff = compare_books(base.book, st.book)
        common, same = diff.comparable, diff.identical_samples
    else:
        common = same = 0

    def reading(effect: Effect, **kw: Any) -> HelperReading:
        return HelperReading(
            helper, name, level, base_level, scored, exact, common, same, why, effect, **kw
        )

    if why is not None:
        return reading(NOT_TESTED)
    if base_level is None or level is None or st is None or base is None:
        return reading(BASE_NOT_TESTED)
    effect, kw = _compared(st, base, level, base_level, bool(common) and same == common)
    return reading(effect, **kw)


def _compared(
    st: HelperState, base: HelperState, level: float, base_level: float, identical: bool
) -> tuple[Effect, dict[str, Any]]:
    """The effect of a configuration whose helper and the base's both tested their path, with
    what the reading keeps of it (the paired tests, a reason, the samples)."""
    lower = excess_over_match(base, st)  # base above this configuration
    higher = excess_over_match(st, base)
    kw: dict[str, Any] = {"lower": lower, "higher": higher}
    if identical:
        return SAME, kw
    if base_level <= STRAY_ULP_FLOOR:
        if higher.significant:
            return WORSE, kw | {"why": "the base is at the floor"}
        return NOTHING, kw
    if lower.too_few:
        return INCONCLUSIVE, kw | {
            "why": f"n too small: {lower.n} common samples, {MIN_COMMON} needed"
        }
    at_floor = level <= STRAY_ULP_FLOOR
    tenfold = level * REDUCED_BY <= base_level
    if lower.beyond_chance:
        if at_floor:
            return REMOVED, kw
        return (REDUCED if tenfold else LOWER), kw
    if at_floor and (ids := removed_on(base, st)):
        # a knob that brings a few samples from far above rounding to it, and leaves the rest
        # where they were, is too few samples for a test over all of them: each is evidence
        return REMOVED_ON, kw | {"samples": ids}
    if at_floor or tenfold:
        why = (
            f"inside the noise: lower on {lower.higher} of {lower.n} samples, signed-rank "
            f"p={lower.p:.2g}"
        )
        return INCONCLUSIVE, kw | {"why": why}
    if higher.beyond_chance and level > base_level:
        return WORSE, kw
    return NONE, kw


@dataclass(frozen=True)
class ConfigReading:
    """One configuration: its helpers against the base's, its condition, and whether its
    flags took effect."""

    config: Config
    helpers: tuple[HelperReading, ...] = ()
    condition: int | None = None
    conditions: tuple[int, ...] = ()
    diagnosis: str | None = None
    settings: tuple[SettingCheck, ...] = ()
    identical_to_base: bool | None = None  # every helper the base tested, compared and equal
    missing: str | None = None  # why there is no result (the configuration did not run)
    kernels: bool = False  # match's divergence read as the kernels' (Diagnosis.kernels_shown)
    # every condition the diagnosis shows broken, as one key (Diagnosis.kind: "1+2" for both)
    kind: Kind | None = None

    @property
    def name(self) -> str:
        """The configuration's name."""
        return self.config.name

    @property
    def measured(self) -> bool:
        """Whether a result exists."""
        return self.missing is None

    def helper(self, name: str) -> HelperReading | None:
        """One helper's reading."""
        return next((h for h in self.helpers if h.helper == name), None)

    @property
    def took_effect(self) -> bool | None:
        """False when /server_info reports the base's value for one of its knobs, True when
        it reports every asked value, None when it does not say."""
        seen = [s.took_effect for s in self.settings]
        if any(t is False for t in seen):
            return False
        return True if seen and all(t is True for t in seen) else None

    @property
    def trap(self) -> str | None:
        """The line naming a flag that changed nothing (None: not this trap)."""
        if self.config.is_base or not self.measured:
            return None
        if self.took_effect is False:
            bad = next(s for s in self.settings if s.took_effect is False)
            return (
                f"{self.name}: the flag did not take effect: /server_info reports "
                f"{bad.key}={shown(bad.raw)}, the base's value ({bad.knob}={bad.reported}): "
                "check its guard"
            )
        if self.identical_to_base and not self._confirmed:
            said = ", ".join(f"{s.key}={shown(s.raw)}" for s in self.settings if s.key)
            reason = (
                f"/server_info reports {said} for the base as well, so it cannot tell"
                if self.took_effect and said
                else "/server_info does not say whether it took effect"
            )
            return (
                f"{self.name}: changed nothing: every helper bit-identical to the base "
                f"({self._identical_counts()} samples) and {reason}: either the flag did not "
                "take effect (check its guard) or the divergence does not depend on it"
            )
        return None

    @property
    def _confirmed(self) -> bool:
        """/server_info reports every asked value, and another one than the base's."""
        return bool(self.took_effect) and all(s.report_changed for s in self.settings)

    def _identical_counts(self) -> str:
        return ", ".join(
            f"{h.helper} {h.identical_to_base}/{h.common}" for h in self.helpers if h.common
        )

    @property
    def no_effect(self) -> str | None:
        """The line for a flag that /server_info confirms and that changed no bit of any
        helper: a measured "not this setting" (e.g. CUDA graph replay runs the same kernels),
        counted as a knob tried; None otherwise."""
        if self.config.is_base or not self.measured or self.trap is not None:
            return None
        if not (self.identical_to_base and self._confirmed):
            return None
        said = ", ".join(f"{s.key}={shown(s.raw)}" for s in self.settings)
        return (
            f"{self.name}: no effect: /server_info reports {said} and every helper is "
            f"bit-identical to the base ({self._identical_counts()} samples): the divergence "
            "does not depend on this setting"
        )

    def untested_lines(self) -> list[str]:
        """A knob that only turned a helper off: the helpers the base tested that this one
        did not, each "not tested", never fixed."""
        return [
            f"{self.name}: {h.helper} not tested ({h.untested}): turning a helper off is not a fix"
            for h in self.helpers
            if h.effect == NOT_TESTED and h.base_level is not None
        ]

    def movement(self, helpers: Sequence[str]) -> float | None:
        """How far it lowered the result: the largest lowering (log10, floored) over
        `helpers` that both tested; None when it did not count (a trap, nothing tested)."""
        if self.trap is not None or not self.measured:
            return None
        moves = [
            m
            for h in self.helpers
            if h.helper in helpers and h.effect != NOT_TESTED and (m := h.movement) is not None
        ]
        return max(moves) if moves else None

    @property
    def condition_cell(self) -> str:
        """The condition as every table shows it, from the configuration's one diagnosis
        (`diagnose_server`): 0, 1, 2, "1+2" when it shows both, inconclusive; – unmeasured."""
        if not self.measured:
            return "–"
        if self.kind is None or self.kind == Kind.UNKNOWN:
            return "inconclusive"
        return "0" if self.kind == Kind.EXACT else str(self.kind)

    def line(self) -> str:
        """The configuration in one line."""
        if not self.measured:
            return f"{self.name}: not measured ({self.missing})"
        cell = self.condition_cell
        cond = cell if cell == "inconclusive" else f"condition {cell}"
        # a trapped configuration's levels are shown, never its effects: they do not count
        parts = ", ".join(
            f"{h.helper} {num(h.level) if self.trap and h.level is not None else h.cell()}"
            for h in self.helpers
        )
        trap = f"; {self.trap}" if self.trap else ""
        return f"{self.name}: {parts} [{cond}]{trap}"

    def to_json(self, helpers: Sequence[str]) -> dict:
        """The configuration's entry in the JSON `ablation` document."""
        return self.config.to_json() | {
            "measured": self.measured,
            "missing": self.missing,
            "condition": self.condition,
            "conditions": list(self.conditions),
            "diagnosis": self.diagnosis,
            "took_effect": self.took_effect,
            "settings": {s.key or s.knob: s.to_json() for s in self.settings},
            "identical_to_base": self.identical_to_base,
            "trap": self.trap,
            "counted": self.measured and self.trap is None,  # false: not part of the verdict
            "movement": self.movement(helpers),
            "helpers": {h.helper: h.to_json() for h in self.helpers},
        }


def _blamed(h: HelperReading, st: HelperState | None, off: SettingCheck) -> HelperReading:
    """A helper left vacuous by the configuration's own knob: its reason says the knob did it
    (the helper's own words can only guess at a cause)."""
    if h.effect != NOT_TESTED or st is None or st.summary is None:
        return h
    if st.summary.status != "vacuous":
        return h
    why = (
        f"ran but compared nothing: {off.knob}={off.asked} turned the radix cache off "
        f"(/server_info reports {off.key}=true, for the base {shown(off.base_raw)}), so no "
        "cache hit can happen"
    )
    return replace(h, untested=why)


def read_config(
    cfg: Config, store: SessionStore | None, base_store: SessionStore, base_states: dict
) -> ConfigReading:
    """One configuration's reading against the base (its store None: it did not run)."""
    if store is None:
        return ConfigReading(cfg, missing="no result: the configuration did not run")
    if not cfg.is_base and (clash := _conflict(store, base_store)) is not None:
        # what `kltui check` refuses is no configuration of a sweep either (a folder read back)
        return ConfigReading(cfg, missing=f"refused: {refusal(clash)}")
    states = helper_states(store)
    names = list(base_states) + [h for h in states if h not in base_states]
    if cfg.is_base:
        helpers = tuple(
            HelperReading(
                h,
                cfg.name,
                level_of(st) if (why := untested(st)) is None else None,
                None,
                len(st.book.order),
                _exact_samples(st),
                0,
                0,
                why,
                BASE_EFFECT,
            )
            for h, st in base_states.items()
        )
    else:
        helpers = tuple(effect_of(cfg.name, h, states.get(h), base_states.get(h)) for h in names)
    server = _server(store)
    d = diagnose_server(store, server) if server is not None else None
    base_server = _server(base_store)
    info = dict(store.identity(server).reported) if server else {}
    base_info = dict(base_store.identity(base_server).reported) if base_server else {}
    tested = [h for h in helpers if h.base_level is not None]
    identical = None
    if tested and not cfg.is_base:
        if all(h.effect == SAME for h in tested):
            identical = True
        elif any(h.common and h.identical_to_base < h.common for h in tested):
            identical = False
    settings = settings_of(cfg, info, base_info)
    if (off := cache_turned_off(settings)) is not None:
        helpers = tuple(_blamed(h, states.get(h.helper), off) for h in helpers)
    return ConfigReading(
        cfg,
        helpers,
        None if d is None else d.condition,
        () if d is None else tuple(d.conditions),
        None if d is None else d.label,
        settings,
        identical,
        kernels=d is not None and d.kernels_shown,
        kind=None if d is None else d.kind,
    )
