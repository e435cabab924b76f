"""`kltui web` served beyond this machine, in words: the golden warning with the re-run and
screenshot keys on, and read-only (`cli/web.warning`); the web tests assert when it warns."""

from __future__ import annotations

from kltui.cli.web import warning

URL = "http://box:8000"
HEAD = f"kltui web: WARNING: {URL} is reachable from other machines, with no login; "


def test_keys_on():
    assert warning("0.0.0.0", URL, read_only=False) == HEAD + (
        "anyone who reaches it can press r (re-run: new requests to your servers) and s (write "
        "screenshots on this machine); --read-only turns those keys off"
    )


def test_read_only():
    assert warning("0.0.0.0", URL, read_only=True) == HEAD + (
        "read-only: r (re-run) and s (screenshot) are off, but every new tab still starts its "
        "own run of the served command"
    )
