"""The JSON contract in tests: every `--json` document a test writes or reads is validated
against the schema kltui ships (kltui/schemas/), so a missing, misspelled or mistyped key fails
the test that produced it. tests/conftest.py applies it to every in-process write; tests that
run kltui in a subprocess read its output through `read_check` / `read_dumps`."""

from __future__ import annotations

import json
from pathlib import Path

from jsonschema import Draft202012Validator

from kltui.schemas import load

_VALIDATORS: dict[str, Draft202012Validator] = {}


def validator(schema: str) -> Draft202012Validator:
    if schema not in _VALIDATORS:
        doc = load(schema)
        Draft202012Validator.check_schema(doc)
        _VALIDATORS[schema] = Draft202012Validator(doc)
    return _VALIDATORS[schema]


def schema_errors(doc, schema: str) -> list[str]:
    """Every violation as 'path: message' (empty when `doc` follows the schema)."""
    errors = sorted(validator(schema).iter_errors(doc), key=lambda e: list(e.absolute_path))
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:300]}" for e in errors]


def validate(doc, schema: str) -> None:
    """AssertionError naming every violation of kltui/schemas/<schema>.schema.json."""
    errors = schema_errors(doc, schema)
    assert not errors, f"not a valid `{schema} --json` document:\n" + "\n".join(errors[:20])


def read_json(path, schema: str) -> dict:
    """The document at `path`, parsed as strict JSON (no NaN/Infinity tokens) and validated."""

    def strict(token: str):
        raise AssertionError(f"{path}: {token} is not JSON (non-finite numbers are $float)")

    doc = json.loads(Path(path).read_text(encoding="utf-8"), parse_constant=strict)
    validate(doc, schema)
    return doc


def read_check(path) -> dict:
    return read_json(path, "check")


def read_dumps(path) -> dict:
    return read_json(path, "dumps")
