"""`kltui dumps analyze`'s verdict in words (`words/dumps.py`): one golden text per kind of
decode finding, of prefill finding and of the ranks' reading; tests/unit/dumps asserts the
kinds (`dumps/analyze.verdict_of`) and that the JSON's `verdict` is this text."""

from __future__ import annotations

from kltui.dumps.analyze import Divergence, DumpsVerdict, Found, RankFinding
from kltui.words.dumps import decode_words, prefill_words, ranks_words, verdict_words

QKV = "model.layers.1.self_attn.qkv_proj"
SAME = Divergence(Found.IDENTICAL)
NAMED = Divergence(Found.NAMED, QKV, 1e-3, 7, decode_step=2, inherited=5)
WHY = "cannot be named: its inputs differ"
UNNAMED = Divergence(Found.UNNAMED, None, 2.5e-2, 8, WHY, decode_step=3, inherited=4)


def _v(decode=SAME, prefill=SAME, **kw) -> DumpsVerdict:
    return DumpsVerdict(decode, 4, prefill, 6, 10, **kw)


def test_each_prefill_finding():
    assert prefill_words(_v()) == "prefill is M-invariant on the prompt rows (M=6 vs M=10)"
    named = Divergence(Found.NAMED, "model.norm", 3e-4, 5)
    assert prefill_words(_v(prefill=named)) == (
        "prefill is NOT M-invariant (M=6 vs M=10): first divergent module model.norm (inputs "
        "bit-identical), max |diff| 3.000e-04, position 5"
    )
    unnamed = Divergence(Found.UNNAMED, None, "nan", 5, WHY)
    assert prefill_words(_v(prefill=unnamed)) == (
        "prefill is NOT M-invariant (M=6 vs M=10): cannot be named: its inputs differ (max "
        "|diff| nan, position 5)"
    )


def test_each_decode_finding():
    assert decode_words(SAME, 4, "P") == (
        "decode and the fresh prefill are bit-identical (bit-equal, +0.0 and -0.0 counted equal, "
        "a NaN equal only to the same NaN bits) at every aligned module over 4 decode steps; P"
    )
    assert decode_words(NAMED, 4, "P") == (
        f"first divergent module: {QKV} at decode step 2 (position 7): inputs bit-identical "
        "(here and in the passes before it), output differs, max |diff| 1.000e-03; 5 later "
        "modules inherit it; P"
    )
    assert decode_words(UNNAMED, 4, "P") == (
        "at decode step 3 (position 8), cannot be named: its inputs differ (max |diff| "
        "2.500e-02; 4 later modules inherit it); P"
    )


def test_the_ranks():
    two_same = (RankFinding(0, True, None, None), RankFinding(1, True, None, None))
    assert ranks_words(_v(ranks=two_same, ranks_agree=True, shown=0)) == "all 2 ranks agree"
    two = (RankFinding(0, False, QKV, 2), RankFinding(1, False, QKV, 2))
    assert ranks_words(_v(NAMED, ranks=two, ranks_agree=True, shown=0)) == (
        "all 2 ranks agree on the first divergent module and step"
    )
    apart = (RankFinding(0, True, None, None), RankFinding(1, False, QKV, 2))
    assert ranks_words(_v(NAMED, ranks=apart, ranks_agree=False, shown=1)) == (
        f"the 2 ranks disagree (rank 0 bit-identical, rank 1 {QKV} at decode step 2); shown: "
        "rank 1, the earliest"
    )
    unnamed = (RankFinding(0, False, None, 3), RankFinding(1, True, None, None))
    assert ranks_words(_v(UNNAMED, ranks=unnamed, ranks_agree=False, shown=0)) == (
        "the 2 ranks disagree (rank 0 no module named at decode step 3, rank 1 bit-identical); "
        "shown: rank 0, the earliest"
    )


def test_the_paragraph():
    assert verdict_words(_v()) == decode_words(SAME, 4, prefill_words(_v()))
    two = (RankFinding(0, True, None, None), RankFinding(1, True, None, None))
    one_line = verdict_words(_v(ranks=two, ranks_agree=True, shown=0))
    assert one_line == f"{verdict_words(_v())}; all 2 ranks agree"
