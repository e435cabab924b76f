"""A snapshot of an imported file in the dashboard at a fixed size (the fixture: a seeded file
with planted offsets, tests/tui/test_import_view.py)."""

from __future__ import annotations

from tests.tui.test_import_view import SIZE, import_app, loaded, planted


def test_snapshot_of_an_imported_file(snap_compare, tmp_path):
    path = planted(tmp_path)
    assert snap_compare(import_app(path), terminal_size=SIZE, run_before=loaded)
