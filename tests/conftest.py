"""Shared by every test tier: each `--json` document written in-process goes through
`kltui.session.jsonfile.write_json_document`, validated here against the schema it names
(tests/json_contract.py) before it is written."""

from __future__ import annotations

import pytest

from tests.json_contract import validate


@pytest.fixture(autouse=True)
def _json_documents_follow_their_schema(monkeypatch):
    from kltui.session import jsonfile
    from kltui.session.codec import tag_floats

    original = jsonfile.write_json_document

    def checked(path, doc, schema):
        validate(tag_floats(doc), schema)
        return original(path, doc, schema)

    monkeypatch.setattr(jsonfile, "write_json_document", checked)
