"""What an ablation measured: per configuration and helper, against the base.

Input: one finished `SessionStore` per configuration (what a `kltui check` run on that
configuration's server folds into), keyed by configuration name, the base's among them. The
prompt set and ids are the same in every configuration, so sample ids line up.

Per configuration and helper:
- avg_kl_div and its change against the base;
- per-sample bit-equality to the base (`session/compare.compare_books`, the comparison behind
  re-run equality) and the samples that are exact in the configuration itself;
- the condition (`session/diagnosis.diagnose_server` on the configuration's store);
- the paired per-sample test of the diagnosis (`session/evidence.excess_over_match`, i.e.
  `session/paired.paired` on per-sample mean k3): is the base above this configuration on the
  same prompts beyond chance? Noise is never read as an effect.

The verdict says only what was measured:
- "not reproduced": every helper the base tested is at or below the 1e-9 floor;
- "localized": a knob on its own brings a diverging helper to the floor, beyond chance; every
  such knob is listed;
- "reduced": at least 10x lower beyond chance, not at the floor;
- "no single knob explains it": nothing removes or reduces it; the next step is --pairs;
- "inconclusive": too few common samples (paired.MIN_COMMON), or an effect inside the noise.
The overall kind is the weakest of the diverging helpers' (localized > reduced > no single
knob > inconclusive): a divergence is localized only when every diverging helper is.

Two traps are named and never counted as fixes:
- a flag that changed nothing: /server_info reports the base's value for the knob's settings
  key ("the flag did not take effect: check its guard"), or every helper is bit-identical to
  the base while /server_info does not say (either it did not take effect or the divergence
  does not depend on it). Bit-identical with the flag confirmed by /server_info is no trap
  but a measured "no effect" (a note, and a knob tried: CUDA graph replay runs the same
  kernels, so cuda-graph=off changes no bit);
- a knob that only turns a helper off: radix-cache=off leaves the cache helpers vacuous, so
  they are "not tested" (`session/coverage.untested`), never "fixed".

The JSON `ablation` document (`Ablation.to_json`), proposed shape:

```json
{
  "base": "base",
  "verdict": {
    "kind": "localized",            // not reproduced | localized | reduced |
                                    // no single knob | inconclusive
    "line": "localized: attention-backend=fa3 removes match's divergence (8.5e-3 -> 0, 32/32 samples bit-identical)",
    "helpers": [{"helper": "match", "kind": "localized", "line": "...",
                 "sufficient": ["attention-backend=fa3"], "reducing": [], "untested_by": []}],
    "traps": ["cuda-graph=off: the flag did not take effect: ..."],
    "next_step": "...",
    "chain": true                   // localized condition 1: the dumper drill-down applies
  },
  "configs": [
    {"name": "attention-backend=fa3", "changes": {"attention-backend": "fa3"},
     "argv": ["python", "-m", "sglang.launch_server", "..."], "server": "http://127.0.0.1:PORT",
     "unknown": [],
     "measured": true,              // false: no store (it did not run); `missing` says why
     "missing": null,
     "condition": 0, "conditions": [], "diagnosis": "label of diagnose_server",
     "took_effect": true,           // false: /server_info reports the base's value; null: not reported
     "settings": {"attention_backend": {"base": "triton", "reported": "fa3", "asked": "fa3"}},
     "identical_to_base": false,    // every helper the base tested compared and bit-identical
     "trap": null,                  // the flag-changed-nothing line, when it applies
     "counted": true,               // false: a trap or not measured, not part of the verdict
     "movement": 3.2,               // log10 of the base's avg_kl_div over this one's (floored)
     "helpers": {
       "match": {"avg_kl_div": 0.0, "base_avg_kl_div": 0.0085, "change": 0.0,
                 "scored": 32, "exact_samples": 32,
                 "common_samples": 32, "identical_to_base_samples": 0,
                 "untested": null, "effect": "removed", "why": null,
                 "paired": {"n": 32, "higher": 32, "lower": 0, "equal": 0, "p": 2.3e-10,
                            "ratio": 8.5e6, "shift_p": 2.3e-10},
                 "line": "match: 8.5e-3 -> 0 (removed; 32/32 samples bit-identical; ...)"}
     }}
  ]
}
```
The base is the first entry of `configs` (its helpers' effect is "base").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from kltui.ablate.knobs import KNOBS, Knob, raw_knob
from kltui.ablate.plan import BASE, Config, Plan
from kltui.readings.compare import compare_books
from kltui.readings.coverage import starved, untested
from kltui.readings.diagnosis import diagnose_server
from kltui.readings.evidence import excess_over_match, level_of
from kltui.readings.identity import Conflict, conflict, refusal
from kltui.readings.paired import MIN_COMMON, STRAY_ULP_FLOOR, Paired
from kltui.registry import same_engine
from kltui.session.store import HelperState, SessionStore
from kltui.untrusted import one_line

REDUCED_BY = 10.0  # "reduced": at least this many times lower than the base

# effects of a configuration on one helper
BASE_EFFECT = "base"
REMOVED = "removed"  # at the floor, beyond chance
REDUCED = "reduced"  # >= 10x lower, beyond chance
LOWER = "lower"  # lower beyond chance, less than 10x
NONE = "none"  # not lower beyond chance
WORSE = "worse"  # higher beyond chance
SAME = "same"  # bit-identical to the base on every common sample
INCONCLUSIVE = "inconclusive"
NOT_TESTED = "not tested"  # the configuration's helper tested nothing
NOTHING = "nothing to remove"  # the base is at the floor on this helper
BASE_NOT_TESTED = "base not tested"

# verdict kinds, strongest first
NOT_REPRODUCED = "not reproduced"
LOCALIZED = "localized"
REDUCED_KIND = "reduced"
NO_SINGLE = "no single knob"
INCONCLUSIVE_KIND = "inconclusive"
_STRENGTH = {LOCALIZED: 4, REDUCED_KIND: 3, NO_SINGLE: 2, INCONCLUSIVE_KIND: 1}


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


def _shown(x: object) -> str:
    """A reported setting as JSON writes it (server text: one line, cut)."""
    if isinstance(x, bool):
        return "true" if x else "false"
    return "null" if x is None else one_line(x, 40)


def _same(a: str, b: str) -> bool:
    """Two knob values (as `Setting.read` gives them) name one setting: equal words, or
    equal numbers ("8" and "8.0")."""
    if a == b:
        return True
    try:
        return float(a) == float(b)
    except ValueError:
        return False


def _floored(x: float) -> float:
    return max(x, 0.0) + STRAY_ULP_FLOOR


def _knob_of(name: str, value: str) -> Knob:
    return KNOBS.get(name) or raw_knob(name, [value])


def _states(store: SessionStore) -> dict[str, HelperState]:
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
    effect: str
    why: str | None = None  # for INCONCLUSIVE: n too small, or inside the noise
    lower: Paired | None = None  # base above this configuration, per sample
    higher: Paired | None = None  # this configuration above the base, per sample

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


def _effect(
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

    def reading(effect: str, **kw) -> HelperReading:
        return HelperReading(
            helper, name, level, base_level, scored, exact, common, same, why, effect, **kw
        )

    if why is not None:
        return reading(NOT_TESTED)
    if base_level is None or level is None or st is None or base is None:
        return reading(BASE_NOT_TESTED)
    lower = excess_over_match(base, st)  # base above this configuration
    higher = excess_over_match(st, base)
    kw = {"lower": lower, "higher": higher}
    if common and same == common:
        return reading(SAME, **kw)
    if base_level <= STRAY_ULP_FLOOR:
        if higher.significant:
            return reading(WORSE, why="the base is at the floor", **kw)
        return reading(NOTHING, **kw)
    if lower.too_few:
        return reading(
            INCONCLUSIVE,
            why=f"n too small: {lower.n} common samples, {MIN_COMMON} needed",
            **kw,
        )
    at_floor = level <= STRAY_ULP_FLOOR
    tenfold = level * REDUCED_BY <= base_level
    if lower.beyond_chance:
        if at_floor:
            return reading(REMOVED, **kw)
        if tenfold:
            return reading(REDUCED, **kw)
        return reading(LOWER, **kw)
    if at_floor or tenfold:
        return reading(
            INCONCLUSIVE,
            why=f"inside the noise: lower on {lower.higher} of {lower.n} samples, signed-rank "
            f"p={lower.p:.2g}",
            **kw,
        )
    if higher.beyond_chance and level > base_level:
        return reading(WORSE, **kw)
    return reading(NONE, **kw)


@dataclass(frozen=True)
class SettingCheck:
    """One knob of a configuration as /server_info reports it, beside the base's."""

    knob: str
    key: str | None
    asked: str
    base: str | None  # the base's reported value, read as the knob's
    reported: str | None  # this configuration's
    raw: object = None  # this configuration's value as /server_info wrote it

    @property
    def took_effect(self) -> bool | None:
        """True: reports the asked value; False: reports the base's other value; None: the
        key is not reported (or is the base's too, the base asked for the same)."""
        if self.reported is None:
            return None
        if _same(_knob_of(self.knob, self.asked).normalize(self.asked), self.reported):
            return True
        if self.base is not None and self.reported == self.base:
            return False
        return None

    @property
    def report_changed(self) -> bool:
        """Whether /server_info reports another value here than for the base: only then does
        its report tell the flag's effect apart from a server that always says the same."""
        return self.base is not None and self.reported is not None and self.base != self.reported

    def to_json(self) -> dict:
        """The check as the JSON `ablation` document writes it."""
        return {"base": self.base, "reported": self.reported, "asked": self.asked}


def _settings(cfg: Config, info: Mapping, base_info: Mapping) -> tuple[SettingCheck, ...]:
    out = []
    for name, value in cfg.changes.items():
        s = _knob_of(name, value).setting()
        if s is None:
            out.append(SettingCheck(name, None, value, None, None))
            continue
        out.append(
            SettingCheck(name, s.key, value, s.read(base_info), s.read(info), info.get(s.key))
        )
    return tuple(out)


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
                f"{bad.key}={_shown(bad.raw)}, the base's value ({bad.knob}={bad.reported}): "
                "check its guard"
            )
        if self.identical_to_base and not self._confirmed:
            said = ", ".join(f"{s.key}={_shown(s.raw)}" for s in self.settings if s.key)
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
        said = ", ".join(f"{s.key}={_shown(s.raw)}" for s in self.settings)
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

    def line(self) -> str:
        """The configuration in one line."""
        if not self.measured:
            return f"{self.name}: not measured ({self.missing})"
        cond = "inconclusive" if self.condition is None else f"condition {self.condition}"
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


def _read_config(
    cfg: Config, store: SessionStore | None, base_store: SessionStore, base_states: dict
) -> ConfigReading:
    if store is None:
        return ConfigReading(cfg, missing="no result: the configuration did not run")
    if not cfg.is_base and (clash := _conflict(store, base_store)) is not None:
        # what `kltui check` refuses is no configuration of a sweep either (a folder read back)
        return ConfigReading(cfg, missing=f"refused: {refusal(clash)}")
    states = _states(store)
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
        helpers = tuple(_effect(cfg.name, h, states.get(h), base_states.get(h)) for h in names)
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
    return ConfigReading(
        cfg,
        helpers,
        None if d is None else d.condition,
        () if d is None else tuple(d.conditions),
        None if d is None else d.label,
        _settings(cfg, info, base_info),
        identical,
    )


@dataclass(frozen=True)
class HelperVerdict:
    """The verdict on one helper's divergence in the base."""

    helper: str
    kind: str
    line: str
    sufficient: tuple[str, ...] = ()  # configurations that remove it
    reducing: tuple[str, ...] = ()  # that lower it at least 10x, not to the floor
    untested_by: tuple[str, ...] = ()  # configurations that left its path untested

    def to_json(self) -> dict:
        """The helper's verdict as the JSON `ablation` document writes it."""
        return {
            "helper": self.helper,
            "kind": self.kind,
            "line": self.line,
            "sufficient": list(self.sufficient),
            "reducing": list(self.reducing),
            "untested_by": list(self.untested_by),
        }


@dataclass(frozen=True)
class Verdict:
    """What the sweep localized, and the next step."""

    kind: str
    line: str
    helpers: tuple[HelperVerdict, ...] = ()
    traps: tuple[str, ...] = ()
    next_step: str | None = None
    chain: bool = False  # localized condition 1 in the base: the dumper drill-down applies

    def to_json(self) -> dict:
        """The verdict as the JSON `ablation` document writes it."""
        return {
            "kind": self.kind,
            "line": self.line,
            "helpers": [h.to_json() for h in self.helpers],
            "traps": list(self.traps),
            "next_step": self.next_step,
            "chain": self.chain,
        }


def _removal(r: HelperReading) -> str:
    return f"{r.arrow()}, {r.exact_samples}/{r.scored} samples bit-identical"


def _helper_verdict(
    helper: str, base: HelperReading, configs: Sequence[ConfigReading]
) -> HelperVerdict:
    counted = [c for c in configs if c.measured and c.trap is None]
    # a configuration that did not test this helper's path says nothing about it either way
    off = tuple(
        c.name for c in counted if (r := c.helper(helper)) is None or r.effect == NOT_TESTED
    )
    counted = [c for c in counted if c.name not in off]
    singles = [c for c in counted if len(c.config.changes) == 1]
    combos = [c for c in counted if len(c.config.changes) > 1]

    def with_effect(cs: Sequence[ConfigReading], effect: str) -> list[tuple[str, HelperReading]]:
        return [
            (c.name, r) for c in cs if (r := c.helper(helper)) is not None and r.effect == effect
        ]

    level = num(base.level)
    removed = with_effect(singles, REMOVED)
    if removed:
        what = " and ".join(f"{n} ({_removal(r)})" for n, r in removed)
        verb = "removes" if len(removed) == 1 else "each remove"
        if len(removed) == 1:
            n, r = removed[0]
            line = f"localized: {n} removes {helper}'s divergence ({_removal(r)})"
        else:
            line = f"localized: {what} {verb} {helper}'s divergence"
        return HelperVerdict(helper, LOCALIZED, line, tuple(n for n, _ in removed))
    together = with_effect(combos, REMOVED)
    if together:
        what = " and ".join(f"{n} ({_removal(r)})" for n, r in together)
        line = (
            f"localized: no single knob explains {helper}'s divergence; together {what} "
            f"{'removes' if len(together) == 1 else 'each remove'} it"
        )
        return HelperVerdict(helper, LOCALIZED, line, tuple(n for n, _ in together))
    reduced = with_effect(singles, REDUCED) + with_effect(combos, REDUCED)
    if reduced:
        what = " and ".join(
            f"{n} ({r.arrow()}, x{1 / (r.change or math.inf):.3g} lower, p={r.lower.p:.2g})"
            if r.lower is not None
            else f"{n} ({r.arrow()})"
            for n, r in reduced
        )
        line = f"reduced: {what} lowers {helper}'s divergence at least {REDUCED_BY:g}x beyond chance, not to the floor"
        return HelperVerdict(helper, REDUCED_KIND, line, (), tuple(n for n, _ in reduced))
    unsure = with_effect(singles, INCONCLUSIVE) + with_effect(combos, INCONCLUSIVE)
    if base.scored < MIN_COMMON or unsure:
        why = (
            [f"the base scored {base.scored} samples ({MIN_COMMON} needed)"]
            if base.scored < MIN_COMMON
            else []
        ) + [f"{n}: {r.arrow()}, {r.why}" for n, r in unsure]
        line = f"inconclusive for {helper}'s divergence ({level}): {'; '.join(why)}"
        return HelperVerdict(helper, INCONCLUSIVE_KIND, line)
    untested_by = f"; not tested by {', '.join(off)}" if off else ""
    if not singles and not combos and off:
        line = (
            f"inconclusive for {helper}'s divergence ({level}): no configuration that took "
            f"effect tested its path (not tested by {', '.join(off)})"
        )
        return HelperVerdict(helper, INCONCLUSIVE_KIND, line, untested_by=off)
    if not singles and not combos:
        # nothing but the base counts: "no knob explains it" would claim knobs were tried
        missing = [c.name for c in configs if not c.measured]
        trapped = [c.name for c in configs if c.measured and c.trap is not None]
        parts = [f"not measured: {', '.join(missing)}"] * bool(missing) + [
            f"not counted, see its line: {', '.join(trapped)}"
        ] * bool(trapped)
        line = (
            f"inconclusive for {helper}'s divergence ({level}): no configuration besides the "
            f"base counts ({'; '.join(parts) or 'none was planned'})"
        )
        return HelperVerdict(helper, INCONCLUSIVE_KIND, line)
    tried = ", ".join(c.name for c in singles)
    also = f"; nor do {', '.join(c.name for c in combos)}" if combos else ""
    line = (
        f"no single knob explains {helper}'s divergence ({level}): none of {tried} removes "
        f"or reduces it beyond chance{also}{untested_by}"
    )
    return HelperVerdict(helper, NO_SINGLE, line, untested_by=off)


@dataclass(frozen=True)
class Ablation:
    """The whole sweep: the base, every configuration against it, and the verdict."""

    base: ConfigReading
    configs: tuple[ConfigReading, ...]
    verdict: Verdict
    diverging: tuple[str, ...] = ()  # helpers the base tested above the floor
    notes: tuple[str, ...] = field(default=())

    def movement(self) -> dict[str, float]:
        """Each single-knob configuration that counts (measured, no trap) -> how far it
        lowered the base's divergence (log10, floored): what `plan.pairs` ranks."""
        out = {}
        for c in self.configs:
            if len(c.config.changes) == 1 and (m := c.movement(self.diverging)) is not None:
                out[c.name] = m
        return out

    def lines(self) -> list[str]:
        """The console lines: every configuration, then the traps, then the verdict and the
        next step."""
        out = [c.line() for c in (self.base, *self.configs)]
        out += list(self.verdict.traps)
        out += list(self.notes)
        out.append(self.verdict.line)
        if self.verdict.next_step:
            out.append(f"next: {self.verdict.next_step}")
        return out

    def to_json(self) -> dict:
        """The JSON `ablation` document (shape: this module's docstring)."""
        return {
            "base": self.base.name,
            "verdict": self.verdict.to_json(),
            "configs": [c.to_json(self.diverging) for c in (self.base, *self.configs)],
        }


def _joined(verdicts: Sequence[HelperVerdict]) -> str:
    """The helpers' lines as one, each verdict word said once ("localized: A removes match's
    divergence (...); A removes decode_cache_hit's divergence (...)")."""
    out: list[str] = []
    said = None
    for hv in verdicts:
        prefix, text = f"{hv.kind}: ", hv.line
        if text.startswith(prefix):
            if said == hv.kind:
                text = text[len(prefix) :]
            said = hv.kind
        else:
            said = None
        out.append(text)
    return "; ".join(out)


def _next_step(kind: str, chain: bool, paired_run: bool, small: bool) -> str | None:
    if kind == NOT_REPRODUCED:
        return None
    if kind == LOCALIZED:
        return (
            "find the module: relaunch the base with the dumper's environment, "
            "--disable-cuda-graph and --disable-prefill-cuda-graph, and run kltui dumps"
            if chain
            else None
        )
    if kind == INCONCLUSIVE_KIND:
        return (
            "re-run with more samples (--samples 32)"
            if small
            else "re-run with more samples or longer generations, so the paired test can tell"
        )
    if paired_run:
        return "vary other knobs, or find the module on the base with kltui dumps"
    return "re-run with --pairs: the knobs that moved it most, two at a time"


def read(
    configs: Sequence[Config] | Plan,
    stores: Mapping[str, SessionStore],
    pairs_run: bool | None = None,
) -> Ablation:
    """The ablation from one finished store per configuration (by name; a configuration
    without one did not run). The base is the configuration named "base" (else the first);
    `pairs_run` says whether --pairs configurations are among them (default: any
    configuration changes two knobs or more)."""
    cfgs = list(configs.configs if isinstance(configs, Plan) else configs)
    if not cfgs:
        raise ValueError("no configuration to read")
    base_cfg = next((c for c in cfgs if c.name == BASE), cfgs[0])
    base_store = stores.get(base_cfg.name)
    others = [c for c in cfgs if c is not base_cfg]
    if base_store is None:
        base = ConfigReading(base_cfg, missing="no result: the base did not run")
        rest = tuple(ConfigReading(c, missing="not read: the base did not run") for c in others)
        v = Verdict(
            INCONCLUSIVE_KIND, "inconclusive: the base did not run, nothing to compare with"
        )
        return Ablation(base, rest, v)
    base_states = _states(base_store)
    base = _read_config(base_cfg, base_store, base_store, base_states)
    rest = tuple(_read_config(c, stores.get(c.name), base_store, base_states) for c in others)
    paired_run = any(len(c.changes) > 1 for c in others) if pairs_run is None else pairs_run
    traps = tuple(t for c in rest if (t := c.trap) is not None) + tuple(
        line for c in rest for line in c.untested_lines()
    )
    tested = [h for h in base.helpers if h.untested is None]
    not_tested = [
        f"{h.helper} not tested in the base ({h.untested})" for h in base.helpers if h.untested
    ]
    diverging = tuple(h.helper for h in tested if (h.level or 0.0) > STRAY_ULP_FLOOR)
    if not tested:
        line = "inconclusive: the base tested nothing" + (
            f" ({'; '.join(not_tested)})" if not_tested else ""
        )
        v = Verdict(INCONCLUSIVE_KIND, line, (), traps, "make the base's helpers test their paths")
        return Ablation(base, rest, v, (), tuple(not_tested))
    if not diverging:
        levels = ", ".join(f"{h.helper} {num(h.level)}" for h in tested)
        line = f"not reproduced: the base passes at the floor ({levels}): nothing to localize"
        if not_tested:
            line += f"; {'; '.join(not_tested)}"
        return Ablation(base, rest, Verdict(NOT_REPRODUCED, line, (), traps), (), tuple(not_tested))
    verdicts = tuple(_helper_verdict(h.helper, h, rest) for h in tested if h.helper in diverging)
    kind = min((hv.kind for hv in verdicts), key=lambda k: _STRENGTH[k])
    line = _joined(verdicts)
    chain = kind == LOCALIZED and base.condition == 1
    small = any(hv.kind == INCONCLUSIVE_KIND and "needed" in hv.line for hv in verdicts)
    step = _next_step(kind, chain, paired_run, small)
    blind = [
        hv
        for hv in verdicts
        if hv.kind == INCONCLUSIVE_KIND and hv.untested_by and "no configuration" in hv.line
    ]
    alone = [hv for hv in verdicts if "besides the base counts" in hv.line]
    if blind and kind == INCONCLUSIVE_KIND and not small:
        names = sorted({n for hv in blind for n in hv.untested_by})
        step = (
            f"vary knobs that leave {', '.join(hv.helper for hv in blind)} testing its path "
            f"({', '.join(names)} turned it off)"
        )
    if alone and kind == INCONCLUSIVE_KIND and not small:
        step = (
            "measure at least one other configuration: fix the failed ones (their lines say "
            "why) or vary a knob that takes effect"
        )
    v = Verdict(kind, line, verdicts, traps, step, chain)
    no_effect = tuple(t for c in rest if (t := c.no_effect) is not None)
    return Ablation(base, rest, v, diverging, no_effect + tuple(not_tested))
