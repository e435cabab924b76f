"""The knobs of an ablation's configuration as /server_info reports them, beside the base's
(`SettingCheck`, `settings_of`): whether a flag took effect is read from the server, not
assumed from the launch command."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kltui.ablate.knobs import KNOBS, Knob, raw_knob
from kltui.ablate.plan import Config


def _same(a: str, b: str) -> bool:
    """Two knob values (as `Setting.read` gives them) name one setting: equal words, or
    equal numbers ("8" and "8.0")."""
    if a == b:
        return True
    try:
        return float(a) == float(b)
    except ValueError:
        return False


def knob_of(name: str) -> Knob:
    """The knob of a name (a raw flag when it is not one of KNOBS: its value as typed, which
    reads /server_info's true/false as on/off all the same)."""
    return KNOBS.get(name) or raw_knob(name)


@dataclass(frozen=True)
class SettingCheck:
    """One knob of a configuration as /server_info reports it, beside the base's."""

    knob: str
    key: str | None
    asked: str
    base: str | None  # the base's reported value, read as the knob's
    reported: str | None  # this configuration's
    raw: object = None  # this configuration's value as /server_info wrote it
    base_raw: object = None  # the base's

    @property
    def took_effect(self) -> bool | None:
        """True: reports the asked value; False: reports the base's other value; None: the
        key is not reported (or is the base's too, the base asked for the same)."""
        if self.reported is None:
            return None
        if _same(knob_of(self.knob).normalize(self.asked), self.reported):
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


def settings_of(cfg: Config, info: Mapping, base_info: Mapping) -> tuple[SettingCheck, ...]:
    """Each knob of `cfg` as /server_info reports it, beside the base's."""
    out = []
    for name, value in cfg.changes.items():
        s = knob_of(name).setting()
        if s is None:
            out.append(SettingCheck(name, None, value, None, None))
            continue
        out.append(
            SettingCheck(
                name,
                s.key,
                value,
                s.read(base_info),
                s.read(info),
                info.get(s.key),
                base_info.get(s.key),
            )
        )
    return tuple(out)


CACHE_KEY = "disable_radix_cache"


def cache_turned_off(checks: tuple[SettingCheck, ...]) -> SettingCheck | None:
    """The knob of a configuration that turned the radix cache off itself: /server_info
    reports disable_radix_cache=true here and another value for the base (None: not this)."""
    return next(
        (s for s in checks if s.key == CACHE_KEY and s.raw is True and s.report_changed), None
    )
