"""The words of coverage (`readings/coverage.py`): one golden line per `NotTested` kind, as the
diagnosis, the ablation, the cross-server and fleet readings and their JSON say it; the
readings' tests assert the kinds and figures."""

from __future__ import annotations

import pytest

from kltui.readings.coverage import NOT_RUN, NotTested, Untested
from kltui.words.coverage import untested_map, untested_words

ONE = (
    (NOT_RUN, "did not run"),
    (Untested(NotTested.UNFINISHED), "did not finish"),
    (
        Untested(NotTested.UNUSABLE, 0, 8, "vacuous", "radix cache disabled"),
        "ran but compared nothing: radix cache disabled",
    ),
    (Untested(NotTested.UNUSABLE, 0, 8, "error"), "error"),
    (Untested(NotTested.NONE_SCORED, 0, 8), "no sample scored of 8"),
    (
        Untested(NotTested.FEW_SCORED, 1, 8, need=4),
        "only 1 of 8 samples scored (at least 4 needed to count as a test of its path)",
    ),
    (
        Untested(NotTested.STARVED, 8, 8, short=6, cached=(1, 1), base_cached=(20, 66)),
        "cache hits much shorter than the base's: 6 of 8 samples cached 1 token where the base "
        "cached 20-66 tokens on the same prompts (a quarter or less): too little restored to "
        "test the path",
    ),
)


@pytest.mark.parametrize("untested, line", ONE)
def test_each_kind_in_words(untested: Untested, line: str):
    assert untested_words(untested) == line


def test_every_kind_has_its_golden_line():
    assert {u.kind for u, _ in ONE} == set(NotTested)


def test_a_starved_range_of_one_value_is_one_count():
    u = Untested(NotTested.STARVED, 4, 4, short=4, cached=(3, 3), base_cached=(40, 40))
    assert "cached 3 tokens where the base cached 40 tokens" in untested_words(u)
    assert untested_map({"match": NOT_RUN}) == {"match": "did not run"}
