"""docs/RELIABILITY.md cannot drift from the suite: its generated part must be what the
catalogue renders to, and every row of its tables must be a test that pytest collects."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import pytest

from tests.hostile.harness import ROOT

DOC = ROOT / "docs" / "RELIABILITY.md"
# section heading -> the test whose parametrize ids the section's first column lists
SECTIONS = {
    "Server faults in `kltui check`": "test_check_faults.py::test_fault_in_check",
    "Retries": "test_check_faults.py::test_safe_requests_are_retried_with_backoff",
    "Bad files": "test_bad_files.py::test_bad_file",
}


def _generator():
    spec = importlib.util.spec_from_file_location(
        "gen_reliability_doc", ROOT / "scripts" / "gen_reliability_doc.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def doc_rows(heading: str) -> list[list[str]]:
    """The table rows under `### heading`, as lists of cells."""
    text = DOC.read_text(encoding="utf-8")
    part = text.split(f"### {heading}\n", 1)[1].split("\n### ", 1)[0]
    rows = []
    for line in part.splitlines():
        if line.startswith("| ") and not line.startswith("| ID ") and "---" not in line:
            cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
            rows.append([c.strip() for c in cells])
    return rows[1:] if rows and rows[0][0] in ("phase", "test (in tests/hostile/)") else rows


@pytest.fixture(scope="module")
def collected() -> set[str]:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/hostile",
            "--ignore=tests/hostile/test_reliability_doc.py",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ids = {ln.strip() for ln in proc.stdout.splitlines() if "::" in ln}
    assert len(ids) > 100
    return ids


def test_generated_part_is_up_to_date():
    assert _generator().main(["--check"]) == 0, "run: python scripts/gen_reliability_doc.py"


@pytest.mark.parametrize("heading", list(SECTIONS))
def test_every_row_is_a_collected_test_and_every_test_a_row(heading, collected):
    test = SECTIONS[heading]
    in_doc = {row[0].strip("`") for row in doc_rows(heading)}
    prefix = f"tests/hostile/{test}["
    in_suite = {i[len(prefix) : -1] for i in collected if i.startswith(prefix)}
    assert in_doc, f"no rows under {heading!r}"
    assert in_doc == in_suite, {"doc only": in_doc - in_suite, "suite only": in_suite - in_doc}


def test_every_interrupt_row_is_collected_for_both_signals(collected):
    rows = doc_rows("Interrupts")
    assert len(rows) == 7
    for phase, *_, signals in rows:
        for sig in signals.split(", "):
            node = f"tests/hostile/test_interrupts.py::test_interrupt_during_phase[{phase}-{sig}]"
            assert node in collected, node


def test_every_named_behaviour_is_a_collected_test(collected):
    rows = doc_rows("Other behaviours")
    assert rows
    for row in rows:
        test = f"tests/hostile/{row[0].strip('`')}"
        assert any(i == test or i.startswith(test + "[") for i in collected), test
