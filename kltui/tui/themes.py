"""Theme files (YAML) -> Textual themes, and the app-specific variables every theme may set.

Themes live in `<checkout>/themes` in a source tree and in `kltui/_data/themes` in a wheel;
users can add their own in `$XDG_CONFIG_HOME/kltui/themes`. A broken file is skipped with a
message rather than stopping the app.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from textual.color import Color, ColorParseError
from textual.theme import Theme

DEFAULT_THEME = "kltui-dark"
HEAT_STOPS = 8
THEME_FIELDS = (
    "primary",
    "secondary",
    "accent",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
    "success",
    "warning",
    "error",
)

# Fallbacks used by themes that do not set these (Textual's builtin themes, user themes).
VARIABLE_DEFAULTS: dict[str, str] = {
    "heat-zero": "#1f5c46",
    "heat-pending": "#4a5263",
    "heat-nan": "#ff3df2",
    "heat-marker": "#ffffff",
    "heat-cursor": "#ffe066",
    "heat-1": "#18233d",
    "heat-2": "#1d3a6b",
    "heat-3": "#245f94",
    "heat-4": "#2f8fa8",
    "heat-5": "#86b95b",
    "heat-6": "#e8c547",
    "heat-7": "#f08a3c",
    "heat-8": "#ef4747",
    "kl-ok": "ansi_green",
    "kl-warn": "ansi_yellow",
    "kl-bad": "ansi_red",
}


def theme_dirs() -> list[Path]:
    """The folders themes are read from (source checkout, installed wheel, user's)."""
    here = Path(__file__).resolve()
    dirs = [
        here.parents[2] / "themes",  # source checkout
        here.parents[1] / "_data" / "themes",  # installed wheel (force-include)
    ]
    config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    dirs.append(Path(config) / "kltui" / "themes")
    return dirs


@dataclass
class LoadedThemes:
    """The themes that loaded and the errors of those that did not."""

    themes: list[Theme] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _color(path: Path, key: str, value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{path.name}: '{key}' must be a colour string, got {value!r}")
    try:
        Color.parse(value)
    except ColorParseError:
        raise ValueError(f"{path.name}: '{key}' is not a colour: {value!r}") from None
    return value


def theme_from_file(path: Path) -> Theme:
    """A Textual theme from a theme YAML file."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise ValueError(f"{path.name}: cannot read theme ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        raise ValueError(f"{path.name}: a theme needs at least 'name' and 'primary'")
    if "primary" not in data:
        raise ValueError(f"{path.name}: a theme needs 'primary'")
    unknown = set(data) - set(THEME_FIELDS) - {"name", "dark", "variables"}
    if unknown:
        raise ValueError(f"{path.name}: unknown theme keys {sorted(unknown)}")
    kwargs: dict[str, Any] = {
        k: _color(path, k, data[k]) for k in THEME_FIELDS if data.get(k) is not None
    }
    variables = data.get("variables") or {}
    if not isinstance(variables, dict):
        raise ValueError(f"{path.name}: 'variables' must be a mapping")
    for k, v in variables.items():
        if str(k).startswith(("heat-", "kl-")):
            _color(path, k, v)
    return Theme(
        name=data["name"],
        dark=bool(data.get("dark", True)),
        variables={str(k): str(v) for k, v in variables.items()},
        **kwargs,
    )


def load_themes(dirs: list[Path] | None = None) -> LoadedThemes:
    """Every theme in the theme folders, the first of each name winning."""
    out = LoadedThemes()
    seen: set[str] = set()
    for d in dirs if dirs is not None else theme_dirs():
        if not d.is_dir():
            continue
        for path in sorted(d.glob("*.y*ml")):
            try:
                theme = theme_from_file(path)
            except ValueError as e:
                out.errors.append(str(e))
                continue
            if theme.name in seen:  # the checkout wins over an installed copy
                continue
            seen.add(theme.name)
            out.themes.append(theme)
    return out
