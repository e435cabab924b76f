"""The JSON `ablation` document's kinds (issue 60): the schema's enums are the readings' own
StrEnums, so a kind added to a reading cannot be written without the schema knowing it."""

from __future__ import annotations

import json
from pathlib import Path

import kltui
from kltui.readings.ablation_kinds import Shape, Step, Trap, VerdictKind
from kltui.readings.coverage import NotTested

SCHEMA = Path(kltui.__file__).parent / "schemas" / "ablation.schema.json"


def test_the_schema_enums_are_the_readings_kinds():
    defs = json.loads(SCHEMA.read_text())["$defs"]
    assert defs["verdict"]["properties"]["kind"]["enum"] == [k.value for k in VerdictKind]
    assert defs["verdict"]["properties"]["step"]["enum"] == [None, *(s.value for s in Step)]
    assert defs["helper_verdict"]["properties"]["shape"]["enum"] == [s.value for s in Shape]
    assert defs["config"]["properties"]["trap_kind"]["enum"] == [None, *(t.value for t in Trap)]
    untested = defs["helper"]["properties"]["untested_kind"]["enum"]
    assert untested == [None, *(n.value for n in NotTested)]
