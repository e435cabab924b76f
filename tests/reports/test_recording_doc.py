"""docs/RECORDING.md must describe the format the code writes: event types and their fields,
the header, and an example whose complete lines decode."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import orjson

from kltui.session.codec import decode
from kltui.session.events import EVENT_TYPES
from kltui.session.recording import FORMAT, RUNS_DIR_ENV, VERSION

DOC = Path(__file__).resolve().parents[2] / "docs" / "RECORDING.md"


def doc_text() -> str:
    return DOC.read_text(encoding="utf-8")


def event_table() -> dict[str, list[str]]:
    """type -> fields, from the rows of the "Event types" table."""
    section = doc_text().split("## Event types", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\| `(\w+)` \| (.*?) \|", line)
        if m:
            rows[m.group(1)] = re.findall(r"`(\w+)`", m.group(2))
    return rows


def test_event_types_table_matches_events_module():
    table = event_table()
    assert sorted(table) == sorted(EVENT_TYPES)
    for name, cls in EVENT_TYPES.items():
        assert table[name] == [f.name for f in dataclasses.fields(cls)], name


def test_header_example_matches_recorder():
    text = doc_text()
    header = re.search(r'`(\{"format": .*?\})`', text).group(1)
    obj = orjson.loads(header)
    assert obj["format"] == FORMAT and obj["version"] == VERSION
    assert f"## Format (version {VERSION})" in text
    assert f"${RUNS_DIR_ENV}" in text and "--no-record" in text


def test_complete_example_lines_decode():
    block = doc_text().split("## Example", 1)[1].split("```", 2)[1]
    lines = [ln for ln in block.splitlines()[1:] if ln.strip()]
    assert orjson.loads(lines[0])["format"] == FORMAT
    complete = [ln for ln in lines[1:] if "…" not in ln]
    assert len(complete) >= 3
    decoded = [decode(orjson.loads(ln)) for ln in complete]
    scored = next(ev for ev in decoded if type(ev).__name__ == "SampleScored")
    assert scored.lp_a[0] == -0.6 and scored.lp_b[0] == -0.6000001
    assert scored.lp_a[1] == scored.lp_b[1] == -1.0
