"""JSON Schemas (draft 2020-12) of what `kltui check --json`, `kltui dumps --json`,
`kltui ablate --json` and `kltui import --json` write; docs/JSON.md describes every key. kltui itself never validates at
run time (no jsonschema dependency); the tests validate every document they write against these.
"""

from __future__ import annotations

import json
from importlib.resources import files

NAMES = ("check", "dumps", "ablation", "import")


def load(name: str) -> dict:
    """The schema `name` ("check", "dumps" or "ablation") as a dict, read from the package."""
    if name not in NAMES:
        raise ValueError(f"no schema {name!r}; there are {', '.join(NAMES)}")
    return json.loads(files(__package__).joinpath(f"{name}.schema.json").read_text("utf-8"))
