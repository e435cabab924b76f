"""Why a server's reported ids cannot be a per-id quirk, in words: one golden line per kind of
`engines/idcheck.Misalignment` (the message a misaligned answer fails with); the id check's tests
assert the kind and its figures."""

from __future__ import annotations

import numpy as np

from kltui.engines.idcheck import IdCheck, Misalignment

DIFFER = np.arange(3)  # three positions differ


def test_most_differ():
    found = IdCheck(DIFFER, Misalignment.MOST_DIFFER, compared=4)
    assert found.misaligned == "3 of 4 positions differ"


def test_sometimes_sent():
    found = IdCheck(DIFFER, Misalignment.SOMETIMES_SENT, token=1023, at=40)
    assert found.misaligned == (
        "token 1023 is reported as sent at position 40 but not everywhere else"
    )


def test_several_ids():
    found = IdCheck(DIFFER, Misalignment.SEVERAL_IDS)
    assert found.misaligned == "one sent id is reported as several different ids"


def test_a_quirk_says_nothing():
    assert IdCheck(DIFFER).misaligned is None
