"""A server's per-id quirk (real SGLang reports the last vocabulary id as 0) is told apart from
a misaligned answer, which must still fail."""

from __future__ import annotations

import numpy as np

from kltui.engines.idcheck import Misalignment, check_ids, describe, unexplained

RNG = np.random.default_rng(7)
SENT = RNG.integers(1, 1023, size=200)
SENT[[5, 40, 150]] = 1023  # the last id of a 1024-token vocabulary, three times


def test_equal_ids_pass():
    found = check_ids(SENT.copy(), SENT)
    assert found.kind is None and found.misaligned is None and found.positions.size == 0


def test_last_vocabulary_id_reported_as_zero_is_a_quirk():
    reported = np.where(SENT == 1023, 0, SENT)
    found = check_ids(reported, SENT)
    assert found.kind is None and found.misaligned is None
    assert found.positions.tolist() == [5, 40, 150]
    assert describe(found.positions, reported, SENT).startswith("pos 5: sent 1023, reported 0")


def test_shifted_answer_is_misaligned():
    reported = np.concatenate([SENT[:1], SENT[:-1]])
    found = check_ids(reported, SENT)
    assert found.kind is Misalignment.MOST_DIFFER and found.misaligned is not None
    assert found.positions.size * 2 > found.compared == SENT.size


def test_answer_of_another_prompt_with_a_shared_prefix_is_misaligned():
    # same length, same first 180 tokens: only 20 positions differ, but their ids occur (and
    # are reported correctly) elsewhere in the row, which no per-id quirk does
    other = SENT.copy()
    other[180:] = SENT[100:120]
    found = check_ids(other, SENT)
    assert found.kind is Misalignment.SOMETIMES_SENT and found.misaligned is not None
    assert found.token is not None and found.at is not None and found.at < 180
    assert other[found.at] == SENT[found.at] == found.token  # reported as sent there


def test_one_id_reported_two_ways_is_misaligned():
    sent = np.array([7, 8, 9, 7, 10, 11, 12, 13, 14, 15])
    reported = sent.copy()
    reported[0], reported[3] = 1, 2
    found = check_ids(reported, sent)
    assert found.kind is Misalignment.SEVERAL_IDS and found.misaligned is not None


def test_quirk_reported_only_sometimes_is_misaligned():
    reported = SENT.copy()
    reported[5] = 0  # 1023 at 40 and 150 is reported as sent
    found = check_ids(reported, SENT)
    assert found.kind is Misalignment.SOMETIMES_SENT and (found.token, found.at) == (1023, 40)
    assert found.misaligned is not None  # its words: tests/unit/words/test_golden_idcheck.py


def test_describe_names_the_first_few_positions():
    pos = np.arange(8)
    text = describe(pos, np.zeros(8, dtype=np.int64), np.full(8, 1023))
    assert text.count("pos ") == 5 and text.endswith("+3 more")


def _row(prompt: list[int], tail: list[int], reported_tail: list[int], reported_prompt=None):
    sent = np.array(prompt + tail)
    reported = np.array((reported_prompt or prompt) + reported_tail)
    return reported, sent, len(prompt)


def test_a_tail_shifted_by_one_is_not_a_quirk():
    # every compared id is off, and each maps consistently: check_ids alone lets it by
    prompt, tail = [5, 6, 7, 8, 9, 10, 11, 12, 13, 14], [40, 41, 42]
    reported, sent, start = _row(prompt, tail, [14, 40, 41])
    assert check_ids(reported, sent).misaligned is None
    assert unexplained([(reported, sent, start)]) == (0, 0)


def test_the_last_vocabulary_id_as_zero_at_a_compared_position_is_tolerated():
    rows = [_row([5, 6, 7], [1023, 8], [0, 8]), _row([9, 10], [11, 1023], [11, 0])]
    assert unexplained(rows) is None


def test_two_ids_reported_as_zero_cannot_both_be_the_last_vocabulary_id():
    rows = [_row([5, 6, 7], [1023, 8], [0, 8]), _row([9, 10], [11, 500], [11, 0])]
    assert unexplained(rows) == (1, 1)


def test_a_mapping_seen_at_prompt_positions_is_tolerated_at_compared_ones():
    rows = [
        _row([5, 77, 7], [8, 77], [8, 3], reported_prompt=[5, 3, 7]),
        _row([9, 10], [77, 12], [3, 12]),
    ]
    assert unexplained(rows) is None
    # the same id reported as something else at a compared position is not
    assert unexplained([rows[0], _row([9, 10], [77, 12], [4, 12])]) == (1, 0)
