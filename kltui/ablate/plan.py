"""The configurations of an ablation: a base, then one knob changed at a time.

Launch mode: the base is the launch command as given; each `--vary` value that differs from
the base's own value of that knob (read off the argv: a switch absent is its default, a value
flag absent is the server's default and so never equal) is one configuration, in the order the
varies were given. `--pairs` comes after the single-knob results: the K knobs whose single
change moved the result most (`reading.Ablation.movement`), each at its value that moved it
most, combined two at a time.

Attach mode: servers that already run are compared by what /server_info reports; the knobs
that separate each one from the base are read from their settings keys.

Names are stable and short: "base", "attention-backend=fa3", "cuda-graph=off+deterministic=on"
(knobs in the order the sweep names them).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kltui.ablate.knobs import KNOBS, Knob, Vary, apply, current
from kltui.errors import UsageError
from kltui.untrusted import one_line

BASE = "base"


@dataclass(frozen=True)
class Config:
    """One configuration of the sweep: its name, the knobs it changes from the base (knob
    name -> value; empty for the base) and its launch argv (empty in attach mode, where
    `server` is the URL of the running server)."""

    name: str
    changes: dict[str, str] = field(default_factory=dict)
    argv: tuple[str, ...] = ()
    server: str | None = None
    # attach mode: knobs whose settings key one of the two servers did not report
    unknown: tuple[str, ...] = ()

    @property
    def is_base(self) -> bool:
        """Whether this is the base configuration."""
        return not self.changes and self.name == BASE

    def to_json(self) -> dict:
        """The configuration as the JSON `ablation` document writes it."""
        return {
            "name": self.name,
            "changes": dict(self.changes),
            "argv": list(self.argv),
            "server": self.server,
            "unknown": list(self.unknown),
        }


def config_name(changes: Mapping[str, str]) -> str:
    """ "base", or each change as knob=value joined by '+', in the order given."""
    return "+".join(f"{k}={v}" for k, v in changes.items()) or BASE


@dataclass(frozen=True)
class Skipped:
    """A value left out because the base already runs with it."""

    knob: str
    value: str

    def line(self) -> str:
        """Why it is not a configuration of its own."""
        return f"{self.knob}={self.value}: the base already runs with it (skipped)"


@dataclass(frozen=True)
class Plan:
    """The base, the single-knob configurations, and the values skipped as the base's own."""

    base: Config
    singles: tuple[Config, ...]
    varies: tuple[Vary, ...]
    skipped: tuple[Skipped, ...] = ()

    @property
    def configs(self) -> tuple[Config, ...]:
        """The base, then every single-knob configuration."""
        return (self.base, *self.singles)

    def knob(self, name: str) -> Knob:
        """A knob of this plan by its name."""
        for v in self.varies:
            if v.knob.name == name:
                return v.knob
        raise KeyError(name)

    def combined(self, changes: Mapping[str, str]) -> Config:
        """The base with several knobs changed at once (knobs in the plan's order)."""
        order = [v.knob.name for v in self.varies]
        ordered = {k: changes[k] for k in order if k in changes}
        argv = list(self.base.argv)
        for k, val in ordered.items():
            argv = apply(argv, self.knob(k), val)
        return Config(config_name(ordered), ordered, tuple(argv))


def _overlap(varies: Sequence[Vary]) -> None:
    seen: dict[str, str] = {}
    for v in varies:
        for f in v.knob.flags:
            if f in seen:
                first = seen[f]
                what = (
                    f"{v.knob.name} given twice"
                    if first == v.knob.name
                    else f"{v.knob.name} and {first} set the same flag {f}"
                )
                raise UsageError(f"--vary {one_line(v.spec, 80)!r}: {what}; give it once")
            seen[f] = v.knob.name


def plan(base_argv: Sequence[str], varies: Iterable[Vary]) -> Plan:
    """The base (`base_argv` as given) and one configuration per varied value that differs
    from the base's own value of that knob (UsageError when one flag is varied twice)."""
    vs = tuple(varies)
    if not vs:
        raise UsageError("nothing to vary: give at least one --vary KNOB=V1,V2")
    _overlap(vs)
    argv = list(base_argv)
    base = Config(BASE, {}, tuple(argv))
    singles, skipped = [], []
    for v in vs:
        own = current(argv, v.knob)
        for val in v.values:
            if own is not None and own == val:
                skipped.append(Skipped(v.knob.name, val))
                continue
            changes = {v.knob.name: val}
            singles.append(Config(config_name(changes), changes, tuple(apply(argv, v.knob, val))))
    return Plan(base, tuple(singles), vs, tuple(skipped))


def pairs(p: Plan, movement: Mapping[str, float], k: int = 2) -> tuple[Config, ...]:
    """The pairs of the `k` knobs whose single change moved the result most: `movement` maps
    a single configuration's name to how far it moved the result (larger: further; a name
    left out was not measured or did not count, e.g. a flag that did not take effect). Each
    knob is taken at its value that moved it most; ties keep the plan's order. Fewer than
    two knobs measured: no pairs."""
    if k < 2:
        raise UsageError(f"--pairs needs at least 2 knobs to combine, not {k}")
    best: dict[str, tuple[float, int, str]] = {}  # knob -> (movement, plan position, value)
    for pos, cfg in enumerate(p.singles):
        if cfg.name not in movement or len(cfg.changes) != 1:
            continue
        ((knob, val),) = cfg.changes.items()
        m = float(movement[cfg.name])
        if knob not in best or m > best[knob][0]:
            best[knob] = (m, pos, val)
    top = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[1][1]))[:k]
    order = [v.knob.name for v in p.varies]
    # combined in the plan's order, so a pair's name does not depend on the ranking
    chosen = {knob: val for knob, (_, _, val) in sorted(top, key=lambda kv: order.index(kv[0]))}
    return tuple(
        p.combined({a: chosen[a], b: chosen[b]}) for a, b in itertools.combinations(chosen, 2)
    )


# --------------------------------------------------------------------------- attach mode
def separating(
    base: Mapping[str, object], other: Mapping[str, object], knobs: Iterable[Knob] | None = None
) -> tuple[dict[str, str], tuple[str, ...]]:
    """The knobs whose settings key reports another value on `other` than on `base` (knob ->
    other's value), and the knobs one of the two does not report."""
    changes: dict[str, str] = {}
    unknown: list[str] = []
    for knob in KNOBS.values() if knobs is None else knobs:
        s = knob.setting()
        if s is None:
            continue
        a, b = s.read(base), s.read(other)
        if a is None or b is None:
            if a is not None or b is not None:
                unknown.append(knob.name)
            continue
        if not s.matches(base, b):
            changes[knob.name] = b
    return changes, tuple(unknown)


def attach(
    base_url: str,
    base_info: Mapping[str, object],
    others: Sequence[tuple[str, Mapping[str, object]]],
    knobs: Iterable[Knob] | None = None,
) -> tuple[Config, ...]:
    """Attach mode: the base server, then each other server as a configuration named by the
    knobs that separate it from the base (read from /server_info; `knobs`: which ones, every
    knob kltui knows by default). Two servers separated by the same knobs keep apart by a
    '#2' suffix; one separated by none is named "same settings"."""
    ks = tuple(KNOBS.values() if knobs is None else knobs)
    out = [Config(BASE, {}, (), base_url)]
    used: dict[str, int] = {BASE: 1}
    for url, info in others:
        changes, unknown = separating(base_info, info, ks)
        name = config_name(changes) if changes else "same settings"
        used[name] = used.get(name, 0) + 1
        if used[name] > 1:
            name = f"{name}#{used[name]}"
        out.append(Config(name, changes, (), url, unknown))
    return tuple(out)
