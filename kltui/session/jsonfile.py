"""Writing what a command outputs to a file or stdout: every `--json` document (`check`,
`report`, `dumps`) and the reports. Here, below `outputs/` and `dumps/`, so both use one writer."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import orjson

from kltui.errors import UsageError
from kltui.session.codec import tag_floats


def write_output(path: str, data: str | bytes) -> None:
    """Writes a report to `path` ("-" is stdout); a failure is a one-line usage error."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if path == "-":
        sys.stdout.buffer.write(raw)
        sys.stdout.flush()
        return
    try:
        Path(path).write_bytes(raw)
    except OSError as e:
        raise UsageError(f"{path}: cannot write report ({e.strerror or e})") from None


def write_json_document(path: str, doc: dict, schema: str) -> None:
    """Writes a `--json` document that kltui/schemas/<schema>.schema.json describes (the tests
    validate every one against it); non-finite numbers as {"$float": ...}."""
    write_output(path, orjson.dumps(tag_floats(doc), option=orjson.OPT_INDENT_2) + b"\n")


def replace_json(path: Path, doc: dict) -> None:
    """`path` replaced whole by `doc` (a reader never sees half): a sweep's manifest, written
    as the sweep goes and once more, with its words, when it ended."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    os.replace(tmp, path)
