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
  such knob is listed. Or "localized on samples": the base sits orders of magnitude above
  rounding on a few samples only and the knob leaves every sample at rounding level (the
  diagnosis's direct evidence, `paired.far_samples`, with the configuration in match's place):
  too few samples for a test over all of them (3 of 32: signed-rank p=0.12), each one evidence
  on its own, named in the line and in `samples`;
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

The reading holds kinds and figures; its words (every line below) are words/ablation.py's,
the JSON `ablation` document words/ablation_json.py's, shape:

```json
{
  "base": "base",
  "verdict": {
    "kind": "localized",            // not reproduced | localized | reduced |
                                    // no single knob | inconclusive
    "line": "localized: attention-backend=fa3 removes match's divergence (8.5e-3 -> 0, 32/32 samples bit-identical)",
    "helpers": [{"helper": "match", "kind": "localized", "shape": "removed", "line": "...",
                 "sufficient": ["attention-backend=fa3"], "reducing": [], "untested_by": [],
                 "samples": []}],       // localized on these sample ids only ([]: on all)
    "traps": ["cuda-graph=off: the flag did not take effect: ..."],
    "next_step": "...",
    "step": "find the module",      // the next step's kind (null: none)
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
     "trap_kind": null,             // its kind: the flag did not take effect | changed nothing
     "counted": true,               // false: a trap or not measured, not part of the verdict
     "movement": 3.2,               // log10 of the base's avg_kl_div over this one's (floored)
     "helpers": {
       "match": {"avg_kl_div": 0.0, "base_avg_kl_div": 0.0085, "change": 0.0,
                 "scored": 32, "exact_samples": 32,
                 "common_samples": 32, "identical_to_base_samples": 0,
                 "untested": null, "untested_kind": null, "effect": "removed", "why": null, "samples": [],
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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from kltui.ablate.plan import BASE, Config, Plan
from kltui.readings.ablation_config import ConfigReading, HelperReading, helper_states, read_config
from kltui.readings.ablation_exact import floor_of
from kltui.readings.ablation_introduced import Introduction, introductions
from kltui.readings.ablation_kinds import (
    _STRENGTH,
    BASE_EFFECT,
    BASE_NOT_TESTED,
    INCONCLUSIVE,
    INCONCLUSIVE_KIND,
    INTRODUCED,
    INTRODUCED_KIND,
    LOCALIZED,
    LOWER,
    NO_SINGLE,
    NONE,
    NOT_REPRODUCED,
    NOT_TESTED,
    NOTHING,
    REDUCED,
    REDUCED_BY,
    REDUCED_KIND,
    REMOVED,
    REMOVED_ON,
    SAME,
    WORSE,
    Effect,
    Missing,
    Shape,
    Step,
    VerdictKind,
    Why,
)
from kltui.readings.ablation_settings import SettingCheck
from kltui.readings.paired import MIN_COMMON, STRAY_ULP_FLOOR
from kltui.session.store import SessionStore

__all__ = [
    "BASE_EFFECT", "BASE_NOT_TESTED", "INCONCLUSIVE", "INCONCLUSIVE_KIND", "INTRODUCED",
    "INTRODUCED_KIND", "Introduction", "LOCALIZED", "LOWER",
    "NONE", "NOT_REPRODUCED", "NOT_TESTED", "NOTHING", "NO_SINGLE", "REDUCED", "REDUCED_BY",
    "REDUCED_KIND", "REMOVED", "REMOVED_ON", "SAME", "WORSE", "Ablation", "ConfigReading", "Effect",
    "HelperReading", "HelperVerdict", "SettingCheck", "Shape", "Step", "Verdict", "VerdictKind",
    "read",
]  # fmt: skip

Found = tuple[tuple[str, HelperReading], ...]  # configuration name -> its reading of the helper


@dataclass(frozen=True)
class HelperVerdict:
    """The verdict on one helper's divergence in the base, and what it rests on."""

    helper: str
    kind: VerdictKind
    shape: Shape
    base: HelperReading  # the base's reading of the helper (its level, its samples)
    sufficient: tuple[str, ...] = ()  # configurations that remove it
    reducing: tuple[str, ...] = ()  # that lower it at least 10x, not to the floor
    untested_by: tuple[str, ...] = ()  # configurations that left its path untested
    # localized on these sample ids only: the base far above rounding there, the sufficient
    # configurations at rounding level everywhere (empty: on every sample, or not localized)
    samples: tuple[int, ...] = ()
    found: Found = ()  # the configurations its shape names, with their readings
    tried: tuple[str, ...] = ()  # NO_SINGLE: the single knobs that count
    combos: tuple[str, ...] = ()  # NO_SINGLE: the combinations that count
    missing: tuple[str, ...] = ()  # ALONE: configurations not measured
    trapped: tuple[str, ...] = ()  # ALONE: configurations measured but a trap

    @property
    def too_few(self) -> bool:
        """Inconclusive for want of samples: the base's, or a configuration's in common."""
        return self.shape == Shape.UNSURE and (
            self.base.scored < MIN_COMMON or any(r.why == Why.TOO_FEW for _, r in self.found)
        )


@dataclass(frozen=True)
class Verdict:
    """What the sweep localized, and the next step."""

    kind: VerdictKind
    helpers: tuple[HelperVerdict, ...] = ()
    step: Step | None = None
    step_helpers: tuple[str, ...] = ()  # Step.BLIND: the helpers whose path was turned off
    step_configs: tuple[str, ...] = ()  # Step.BLIND, Step.INTRODUCED: the knobs it names
    chain: bool = False  # localized condition 1 in the base: the dumper drill-down applies
    # knobs that bring a divergence to a helper the base passes at the floor (exit 1)
    introduced: tuple[Introduction, ...] = ()


def _with_effect(helper: str, cs: Sequence[ConfigReading], effect: Effect) -> Found:
    return tuple(
        (c.config.name, r) for c in cs if (r := c.helper(helper)) is not None and r.effect == effect
    )


def _removed(helper: str, base: HelperReading, singles: list, combos: list) -> HelperVerdict | None:
    """Localized: knobs that remove it (on every sample, else on named samples), single knobs
    before combinations."""
    for cs, shape in ((singles, Shape.REMOVED), (combos, Shape.TOGETHER)):
        if found := _with_effect(helper, cs, REMOVED):
            return HelperVerdict(
                helper, LOCALIZED, shape, base, tuple(n for n, _ in found), found=found
            )
    for cs, shape in ((singles, Shape.ON_SAMPLES), (combos, Shape.ON_SAMPLES_TOGETHER)):
        if found := _with_effect(helper, cs, REMOVED_ON):
            ids = tuple(sorted({i for _, r in found for i in r.samples}))
            names = tuple(n for n, _ in found)
            return HelperVerdict(helper, LOCALIZED, shape, base, names, samples=ids, found=found)
    return None


def _helper_verdict(
    helper: str, base: HelperReading, configs: Sequence[ConfigReading]
) -> HelperVerdict:
    counted = [c for c in configs if c.measured and c.trap is None]
    # a configuration that did not test this helper's path says nothing about it either way
    off = tuple(
        c.config.name for c in counted if (r := c.helper(helper)) is None or r.effect == NOT_TESTED
    )
    counted = [c for c in counted if c.config.name not in off]
    singles = [c for c in counted if len(c.config.changes) == 1]
    combos = [c for c in counted if len(c.config.changes) > 1]
    if (found := _removed(helper, base, singles, combos)) is not None:
        return found
    both = singles + combos
    if reduced := _with_effect(helper, singles, REDUCED) + _with_effect(helper, combos, REDUCED):
        names = tuple(n for n, _ in reduced)
        return HelperVerdict(helper, REDUCED_KIND, Shape.REDUCED, base, (), names, found=reduced)
    unsure = _with_effect(helper, singles, INCONCLUSIVE) + _with_effect(
        helper, combos, INCONCLUSIVE
    )
    if base.scored < MIN_COMMON or unsure:
        return HelperVerdict(helper, INCONCLUSIVE_KIND, Shape.UNSURE, base, found=unsure)
    if not both and off:
        return HelperVerdict(helper, INCONCLUSIVE_KIND, Shape.BLIND, base, untested_by=off)
    if not both:
        # nothing but the base counts: "no knob explains it" would claim knobs were tried
        missing = tuple(c.config.name for c in configs if not c.measured)
        trapped = tuple(c.config.name for c in configs if c.measured and c.trap is not None)
        return HelperVerdict(
            helper, INCONCLUSIVE_KIND, Shape.ALONE, base, missing=missing, trapped=trapped
        )
    return HelperVerdict(
        helper,
        NO_SINGLE,
        Shape.NO_SINGLE,
        base,
        untested_by=off,
        tried=tuple(c.config.name for c in singles),
        combos=tuple(c.config.name for c in combos),
    )


@dataclass(frozen=True)
class Ablation:
    """The whole sweep: the base, every configuration against it, and the verdict."""

    base: ConfigReading
    configs: tuple[ConfigReading, ...]
    verdict: Verdict
    diverging: tuple[str, ...] = ()  # helpers the base tested above the floor
    # configurations /server_info confirms that changed no bit: a knob tried, "no effect"
    no_effect: tuple[ConfigReading, ...] = ()
    # the level divergences are read against: the 1e-9 stray-ulp floor, or the base's gate
    # where it is lower (`--threshold 0`: bit-exact; readings/ablation_exact.py)
    floor: float = STRAY_ULP_FLOOR

    @property
    def tested(self) -> tuple[HelperReading, ...]:
        """The base's helpers that tested their path."""
        return tuple(h for h in self.base.helpers if h.untested is None)

    @property
    def base_untested(self) -> tuple[HelperReading, ...]:
        """The base's helpers that did not test their path (`untested` says why)."""
        return tuple(h for h in self.base.helpers if h.untested)

    def movement(self) -> dict[str, float]:
        """Each single-knob configuration that counts (measured, no trap) -> how far it
        lowered the base's divergence (log10, floored): what `plan.pairs` ranks."""
        out = {}
        for c in self.configs:
            if len(c.config.changes) == 1 and (m := c.movement(self.diverging)) is not None:
                out[c.config.name] = m
        return out


def _next_step(kind: VerdictKind, chain: bool, paired_run: bool, small: bool) -> Step | None:
    if kind == NOT_REPRODUCED:
        return None
    if kind == LOCALIZED:
        return Step.CHAIN if chain else None
    if kind == INCONCLUSIVE_KIND:
        return Step.MORE_SAMPLES if small else Step.LONGER
    return Step.VARY_OTHER if paired_run else Step.PAIRS


def _diverging_verdict(
    verdicts: tuple[HelperVerdict, ...], chain_ok: bool, paired_run: bool, intros: tuple
) -> Verdict:
    """The verdict over the diverging helpers: the weakest of theirs, and its next step."""
    kind = min((hv.kind for hv in verdicts), key=lambda k: _STRENGTH[k])
    chain = kind == LOCALIZED and chain_ok
    small = any(hv.kind == INCONCLUSIVE_KIND and hv.too_few for hv in verdicts)
    step = _next_step(kind, chain, paired_run, small)
    blind = [hv for hv in verdicts if hv.shape == Shape.BLIND]
    helpers: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    if blind and kind == INCONCLUSIVE_KIND and not small:
        step = Step.BLIND
        helpers = tuple(hv.helper for hv in blind)
        names = tuple(sorted({n for hv in blind for n in hv.untested_by}))
    if any(hv.shape == Shape.ALONE for hv in verdicts) and kind == INCONCLUSIVE_KIND and not small:
        step, helpers, names = Step.ALONE, (), ()
    return Verdict(kind, verdicts, step, helpers, names, chain, intros)


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
        base = ConfigReading(base_cfg, missing=Missing.BASE_NOT_RUN)
        rest = tuple(ConfigReading(c, missing=Missing.NOT_READ) for c in others)
        return Ablation(base, rest, Verdict(INCONCLUSIVE_KIND))
    base_states = helper_states(base_store)
    base = read_config(base_cfg, base_store, base_store, base_states)
    rest = tuple(read_config(c, stores.get(c.name), base_store, base_states) for c in others)
    paired_run = any(len(c.changes) > 1 for c in others) if pairs_run is None else pairs_run
    tested = [h for h in base.helpers if h.untested is None]
    floors = {h: floor_of(st) for h, st in base_states.items()}
    diverging = tuple(
        h.helper for h in tested if (h.level or 0.0) > floors.get(h.helper, STRAY_ULP_FLOOR)
    )
    floor = min((floors.get(h.helper, STRAY_ULP_FLOOR) for h in tested), default=STRAY_ULP_FLOOR)
    if not tested:
        return Ablation(base, rest, Verdict(INCONCLUSIVE_KIND, step=Step.TEST_PATHS))
    intros = introductions(rest)
    if not diverging:
        if intros:
            names = tuple(dict.fromkeys(i.config for i in intros))
            v = Verdict(INTRODUCED_KIND, (), Step.INTRODUCED, (), names, introduced=intros)
            return Ablation(base, rest, v, (), (), floor)
        return Ablation(base, rest, Verdict(NOT_REPRODUCED), (), (), floor)
    verdicts = tuple(_helper_verdict(h.helper, h, rest) for h in tested if h.helper in diverging)
    v = _diverging_verdict(verdicts, base.kernels, paired_run, intros)
    no_effect = tuple(c for c in rest if c.no_effect)
    return Ablation(base, rest, v, diverging, no_effect, floor)
