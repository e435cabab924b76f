"""The typed findings and the JSON schema agree: every `Finding` is a value the schema admits
and the schema admits nothing else; every path-test kind is a `rests_on` verdict; the fleet's
aside kinds and the model check's bases are the schema's enums."""

from __future__ import annotations

import ast
from pathlib import Path

from kltui.readings.findings import Finding
from kltui.readings.fleet_model import AsideKind
from kltui.readings.identity import CheckBasis
from kltui.readings.path_test import PathKind
from kltui.schemas import load

READINGS = Path(__file__).resolve().parents[3] / "kltui" / "readings"


def _diagnosis_schema() -> dict:
    return load("check")["$defs"]["diagnosis"]["properties"]


def test_the_schema_admits_exactly_the_findings():
    assert _diagnosis_schema()["finding"]["enum"] == [f.value for f in Finding]


def test_the_schema_admits_exactly_the_path_kinds():
    tested = _diagnosis_schema()["rests_on"]["properties"]["tested"]["items"]
    assert set(tested["properties"]["verdict"]["enum"]) == {k.value for k in PathKind} | {None}


def test_the_schema_admits_exactly_the_aside_kinds_and_check_bases():
    defs = load("check")["$defs"]
    assert defs["fleet_aside_kinds"]["additionalProperties"]["enum"] == [k.value for k in AsideKind]
    (_, check) = defs["server_pair"]["properties"]["model_check"]["oneOf"]
    assert check["properties"]["basis"]["enum"] == [b.value for b in CheckBasis]


def test_every_finding_is_reached_by_the_decision():
    """A kind no decision returns is dead weight in the schema and the docs."""
    used = set()
    for path in READINGS.glob("diagnosis*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "Finding"
            ):
                used.add(node.attr)
    assert used == {f.name for f in Finding}
