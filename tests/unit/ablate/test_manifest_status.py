"""A sweep manifest's configuration status is a closed vocabulary: read back as its kind, and a
word kltui never writes makes the manifest malformed (one line naming it), not a fifth state."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kltui.ablate.sweep import MANIFEST, ConfigStatus
from kltui.errors import UsageError
from kltui.run.sweep_manifest import load

SWEEP = Path(__file__).parents[2] / "tui" / "data" / "sweep"


def test_statuses_read_back_as_kinds():
    assert {type(r.status) for r in load(SWEEP).runs} == {ConfigStatus}
    assert load(SWEEP).runs[0].status is ConfigStatus.MEASURED


def test_an_unknown_status_is_a_malformed_manifest(tmp_path):
    folder = tmp_path / "sweep"
    shutil.copytree(SWEEP, folder)
    doc = json.loads((folder / MANIFEST).read_text())
    doc["configs"][1]["status"] = "half-done"
    (folder / MANIFEST).write_text(json.dumps(doc))
    with pytest.raises(UsageError) as e:
        load(folder)
    message = str(e.value)
    assert message.startswith(f"{folder / MANIFEST}: a malformed sweep manifest")
    assert "half-done" in message and "\n" not in message
