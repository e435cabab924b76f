"""One configuration of an ablation against the base (`readings/ablation.py` reads the sweep):
its helpers (`readings/ablation_helper.py`: `HelperReading`, `effect_of`), the knobs as
/server_info reports them (`SettingCheck`), and the configuration as a whole (`ConfigReading`,
`read_config`): refused when `kltui check` would refuse the pair, a flag that changed nothing,
a helper left untested (vacuous or starved of cache hits), its condition from its one
diagnosis."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from kltui.ablate.plan import Config
from kltui.readings.ablation_helper import (
    HelperReading,
    effect_of,
    exact_samples_of,
)
from kltui.readings.ablation_kinds import BASE_EFFECT, NOT_TESTED, SAME, Missing, Trap
from kltui.readings.ablation_settings import SettingCheck, cache_turned_off, settings_of
from kltui.readings.coverage import coverage_of
from kltui.readings.diagnosis import Diagnosis, diagnose_server
from kltui.readings.evidence import level_of
from kltui.readings.findings import Kind
from kltui.readings.identity import Conflict, conflict
from kltui.registry import same_engine
from kltui.session.store import HelperState, SessionStore

__all__ = ["ConfigReading", "HelperReading", "helper_states", "read_config"]


def servers(store: SessionStore) -> list[str]:
    """The servers the run names, in its order, then those only its helpers ran on; a
    configuration's one server is the first."""
    named = [i.url for i in store.identities() if i.url]
    return list(dict.fromkeys([*named, *(st.server for st in store.helpers.values())]))


def helper_states(store: SessionStore) -> dict[str, HelperState]:
    """The store's helpers on its one server (the first the run names), by helper name."""
    server = next(iter(servers(store)), None)
    return {
        st.helper: st
        for st in store.helpers.values()
        if st.server == server and same_engine(st.helper)
    }


def _conflict(store: SessionStore, base_store: SessionStore) -> Conflict | None:
    """One server under two URLs, or another model, as the recorded identities show."""
    server, base_server = servers(store), servers(base_store)
    if not server or not base_server:
        return None
    return conflict(base_store.identity(base_server[0]), store.identity(server[0]))


@dataclass(frozen=True)
class ConfigReading:
    """One configuration: its helpers against the base's, its condition, and whether its
    flags took effect."""

    config: Config
    helpers: tuple[HelperReading, ...] = ()
    condition: int | None = None
    conditions: tuple[int, ...] = ()
    diagnosis: Diagnosis | None = None  # its words: words/ablation_json
    settings: tuple[SettingCheck, ...] = ()
    identical_to_base: bool | None = None  # every helper the base tested, compared and equal
    missing: Missing | None = None  # why there is no result (the configuration did not run)
    kernels: bool = False  # match's divergence read as the kernels' (Diagnosis.kernels_shown)
    # every condition the diagnosis shows broken, as one key (Diagnosis.kind: "1+2" for both)
    kind: Kind | None = None
    refused: Conflict | None = None  # Missing.REFUSED: the pair `kltui check` refuses

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
    def trap(self) -> Trap | None:
        """A flag that changed nothing (None: not this trap): /server_info reports the base's
        value for a knob, or every helper is bit-identical to the base while /server_info
        cannot tell (`words/ablation_config.trap_line` says which)."""
        if self.config.is_base or not self.measured:
            return None
        if self.took_effect is False:
            return Trap.NOT_TAKEN
        if self.identical_to_base and not self.confirmed:
            return Trap.CHANGED_NOTHING
        return None

    @property
    def not_taken(self) -> SettingCheck | None:
        """The first knob /server_info reports at the base's value (Trap.NOT_TAKEN)."""
        return next((s for s in self.settings if s.took_effect is False), None)

    @property
    def confirmed(self) -> bool:
        """/server_info reports every asked value, and another one than the base's."""
        return bool(self.took_effect) and all(s.report_changed for s in self.settings)

    @property
    def no_effect(self) -> bool:
        """A flag that /server_info confirms and that changed no bit of any helper: a measured
        "not this setting" (e.g. CUDA graph replay runs the same kernels), counted as a knob
        tried."""
        if self.config.is_base or not self.measured or self.trap is not None:
            return False
        return bool(self.identical_to_base and self.confirmed)

    def turned_off(self) -> tuple[HelperReading, ...]:
        """A knob that only turned a helper off: the helpers the base tested that this one
        did not, each "not tested", never fixed."""
        return tuple(h for h in self.helpers if h.effect == NOT_TESTED and h.base_level is not None)

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


def _blamed(h: HelperReading, st: HelperState | None, off: SettingCheck) -> HelperReading:
    """A helper left vacuous by the configuration's own knob: its reason says the knob did it
    (the helper's own words can only guess at a cause)."""
    if h.effect != NOT_TESTED or st is None or st.summary is None:
        return h
    if st.summary.status != "vacuous":
        return h
    return replace(h, blamed=off)


def _base_helpers(name: str, base_states: dict[str, HelperState]) -> tuple[HelperReading, ...]:
    """The base's helpers: each level and its own bit-identical samples (nothing to compare)."""
    return tuple(
        HelperReading(
            h,
            name,
            level_of(st) if (cov := coverage_of(st)) is None else None,
            None,
            len(st.book.order),
            exact_samples_of(st),
            0,
            0,
            cov,
            BASE_EFFECT,
            not_tested=None if cov is None else cov.kind,
        )
        for h, st in base_states.items()
    )


def _identical(helpers: Sequence[HelperReading]) -> bool | None:
    """Every helper the base tested bit-identical to it (None: nothing compared)."""
    tested = [h for h in helpers if h.base_level is not None]
    if not tested:
        return None
    if all(h.effect == SAME for h in tested):
        return True
    if any(h.common and h.identical_to_base < h.common for h in tested):
        return False
    return None


def read_config(
    cfg: Config, store: SessionStore | None, base_store: SessionStore, base_states: dict
) -> ConfigReading:
    """One configuration's reading against the base (its store None: it did not run)."""
    if store is None:
        return ConfigReading(cfg, missing=Missing.NOT_RUN)
    if not cfg.is_base and (clash := _conflict(store, base_store)) is not None:
        # what `kltui check` refuses is no configuration of a sweep either (a folder read back)
        return ConfigReading(cfg, missing=Missing.REFUSED, refused=clash)
    states = helper_states(store)
    names = list(base_states) + [h for h in states if h not in base_states]
    if cfg.is_base:
        helpers = _base_helpers(cfg.name, base_states)
    else:
        helpers = tuple(effect_of(cfg.name, h, states.get(h), base_states.get(h)) for h in names)
    server = next(iter(servers(store)), None)
    d = diagnose_server(store, server) if server is not None else None
    base_server = next(iter(servers(base_store)), None)
    info = dict(store.identity(server).reported) if server else {}
    base_info = dict(base_store.identity(base_server).reported) if base_server else {}
    identical = None if cfg.is_base else _identical(helpers)
    settings = settings_of(cfg, info, base_info)
    if (off := cache_turned_off(settings)) is not None:
        helpers = tuple(_blamed(h, states.get(h.helper), off) for h in helpers)
    return ConfigReading(
        cfg,
        helpers,
        None if d is None else d.condition,
        () if d is None else tuple(d.conditions),
        d,
        settings,
        identical,
        kernels=d is not None and d.kernels_shown,
        kind=None if d is None else d.kind,
    )
