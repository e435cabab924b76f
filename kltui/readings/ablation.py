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

The JSON `ablation` document (`Ablation.to_json`), proposed shape:

```json
{
  "base": "base",
  "verdict": {
    "kind": "localized",            // not reproduced | localized | reduced |
                                    // no single knob | inconclusive
    "line": "localized: attention-backend=fa3 removes match's divergence (8.5e-3 -> 0, 32/32 samples bit-identical)",
    "helpers": [{"helper": "match", "kind": "localized", "line": "...",
                 "sufficient": ["attention-backend=fa3"], "reducing": [], "untested_by": [],
                 "samples": []}],       // localized on these sample ids only ([]: on all)
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
                 "untested": null, "effect": "removed", "why": null, "samples": [],
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

from kltui.ablate.plan import BASE, Config, Plan
from kltui.readings.ablation_config import (
    ConfigReading,
    HelperReading,
    helper_states,
    ids_text,
    num,
    read_config,
)
from kltui.readings.ablation_exact import floor_of
from kltui.readings.ablation_introduced import (
    Introduction,
    introduced_line,
    introduced_step,
    introductions,
)
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
    VerdictKind,
)
from kltui.readings.ablation_settings import SettingCheck
from kltui.readings.paired import MIN_COMMON, STRAY_ULP_FLOOR
from kltui.session.store import SessionStore

__all__ = [
    "BASE_EFFECT", "BASE_NOT_TESTED", "INCONCLUSIVE", "INCONCLUSIVE_KIND", "INTRODUCED",
    "INTRODUCED_KIND", "Introduction", "LOCALIZED", "LOWER",
    "NONE", "NOT_REPRODUCED", "NOT_TESTED", "NOTHING", "NO_SINGLE", "REDUCED", "REDUCED_BY",
    "REDUCED_KIND", "REMOVED", "REMOVED_ON", "SAME", "WORSE", "Ablation", "ConfigReading", "Effect",
    "HelperReading", "HelperVerdict", "SettingCheck", "Verdict", "VerdictKind", "num", "read",
]  # fmt: skip


@dataclass(frozen=True)
class HelperVerdict:
    """The verdict on one helper's divergence in the base."""

    helper: str
    kind: VerdictKind
    line: str
    sufficient: tuple[str, ...] = ()  # configurations that remove it
    reducing: tuple[str, ...] = ()  # that lower it at least 10x, not to the floor
    untested_by: tuple[str, ...] = ()  # configurations that left its path untested
    # localized on these sample ids only: the base far above rounding there, the sufficient
    # configurations at rounding level everywhere (empty: on every sample, or not localized)
    samples: tuple[int, ...] = ()

    def to_json(self) -> dict:
        """The helper's verdict as the JSON `ablation` document writes it."""
        return {
            "helper": self.helper,
            "kind": self.kind,
            "line": self.line,
            "sufficient": list(self.sufficient),
            "reducing": list(self.reducing),
            "untested_by": list(self.untested_by),
            "samples": list(self.samples),
        }


@dataclass(frozen=True)
class Verdict:
    """What the sweep localized, and the next step."""

    kind: VerdictKind
    line: str
    helpers: tuple[HelperVerdict, ...] = ()
    traps: tuple[str, ...] = ()
    next_step: str | None = None
    chain: bool = False  # localized condition 1 in the base: the dumper drill-down applies
    # knobs that bring a divergence to a helper the base passes at the floor (exit 1)
    introduced: tuple[Introduction, ...] = ()

    def to_json(self) -> dict:
        """The verdict as the JSON `ablation` document writes it."""
        return {
            "kind": self.kind,
            "line": self.line,
            "helpers": [h.to_json() for h in self.helpers],
            "traps": list(self.traps),
            "next_step": self.next_step,
            "chain": self.chain,
            "introduced": [i.to_json() for i in self.introduced],
        }


def _removal(r: HelperReading) -> str:
    if r.effect == REMOVED_ON:
        return f"{r.arrow()}, at rounding level on every sample"
    return f"{r.arrow()}, {r.exact_samples}/{r.scored} samples bit-identical"


def _on_samples(
    helper: str, found: Sequence[tuple[str, HelperReading]], together: bool
) -> HelperVerdict:
    """Localized on the named samples only: each configuration of `found` brings them from
    orders of magnitude above rounding to rounding level (Effect.REMOVED_ON)."""
    ids = tuple(sorted({i for _, r in found for i in r.samples}))
    what = " and ".join(f"{n} ({_removal(r)})" for n, r in found)
    verb = "removes" if len(found) == 1 else "each remove"
    lead = f"no single knob explains {helper}'s divergence; together " if together else ""
    line = (
        f"localized on {len(ids)} sample{'s' if len(ids) != 1 else ''} ({ids_text(ids)}): {lead}"
        f"{what} {verb} {helper}'s divergence there, where the base sits orders of magnitude "
        "above rounding"
    )
    return HelperVerdict(helper, LOCALIZED, line, tuple(n for n, _ in found), samples=ids)


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

    def with_effect(cs: Sequence[ConfigReading], effect: Effect) -> list[tuple[str, HelperReading]]:
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
    if on := with_effect(singles, REMOVED_ON):
        return _on_samples(helper, on, together=False)
    if on := with_effect(combos, REMOVED_ON):
        return _on_samples(helper, on, together=True)
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
    # the level divergences are read against: the 1e-9 stray-ulp floor, or the base's gate
    # where it is lower (`--threshold 0`: bit-exact; readings/ablation_exact.py)
    floor: float = STRAY_ULP_FLOOR

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
            "floor": self.floor,
            "verdict": self.verdict.to_json(),
            "configs": [c.to_json(self.diverging) for c in (self.base, *self.configs)],
        }


def _joined(verdicts: Sequence[HelperVerdict], kind: VerdictKind) -> str:
    """The helpers' lines as one, each verdict word said once ("localized: A removes match's
    divergence (...); A removes decode_cache_hit's divergence (...)"). Helpers that read
    differently are led by the overall kind (the weakest, which sets the exit code) and each
    helper's: "no single knob overall (localized for match; no single knob for
    decode_cache_hit): localized: ...; no single knob explains ..."."""
    kinds = list(dict.fromkeys(hv.kind for hv in verdicts))
    lead = ""
    if len(kinds) > 1:
        each = "; ".join(f"{hv.kind} for {hv.helper}" for hv in verdicts)
        lead = f"{kind} overall ({each}): "
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
    return lead + "; ".join(out)


def _next_step(kind: VerdictKind, chain: bool, paired_run: bool, small: bool) -> str | None:
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
    base_states = helper_states(base_store)
    base = read_config(base_cfg, base_store, base_store, base_states)
    rest = tuple(read_config(c, stores.get(c.name), base_store, base_states) for c in others)
    paired_run = any(len(c.changes) > 1 for c in others) if pairs_run is None else pairs_run
    traps = tuple(t for c in rest if (t := c.trap) is not None) + tuple(
        line for c in rest for line in c.untested_lines()
    )
    tested = [h for h in base.helpers if h.untested is None]
    not_tested = [
        f"{h.helper} not tested in the base ({h.untested})" for h in base.helpers if h.untested
    ]
    floors = {h: floor_of(st) for h, st in base_states.items()}
    diverging = tuple(
        h.helper for h in tested if (h.level or 0.0) > floors.get(h.helper, STRAY_ULP_FLOOR)
    )
    floor = min((floors.get(h.helper, STRAY_ULP_FLOOR) for h in tested), default=STRAY_ULP_FLOOR)
    if not tested:
        line = "inconclusive: the base tested nothing" + (
            f" ({'; '.join(not_tested)})" if not_tested else ""
        )
        v = Verdict(INCONCLUSIVE_KIND, line, (), traps, "make the base's helpers test their paths")
        return Ablation(base, rest, v, (), tuple(not_tested))
    intros = introductions(rest)
    if not diverging:
        levels = ", ".join(f"{h.helper} {num(h.level)}" for h in tested)
        if intros:
            line = f"introduced: {introduced_line(intros)}; the base passes at the floor ({levels})"
            v = Verdict(
                INTRODUCED_KIND, line, (), traps, introduced_step(intros), introduced=intros
            )
            return Ablation(base, rest, v, (), tuple(not_tested), floor)
        line = f"not reproduced: the base passes at the floor ({levels}): nothing to localize"
        if not_tested:
            line += f"; {'; '.join(not_tested)}"
        v = Verdict(NOT_REPRODUCED, line, (), traps)
        return Ablation(base, rest, v, (), tuple(not_tested), floor)
    verdicts = tuple(_helper_verdict(h.helper, h, rest) for h in tested if h.helper in diverging)
    kind = min((hv.kind for hv in verdicts), key=lambda k: _STRENGTH[k])
    line = _joined(verdicts, kind)
    if intros:
        line += f"; {introduced_line(intros)}"
    chain = kind == LOCALIZED and base.kernels
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
    v = Verdict(kind, line, verdicts, traps, step, chain, intros)
    no_effect = tuple(t for c in rest if (t := c.no_effect) is not None)
    return Ablation(base, rest, v, diverging, no_effect + tuple(not_tested), floor)
