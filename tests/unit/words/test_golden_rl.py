"""An imported file's reading in words (`words/rl.py`): the label of each `ImportKind`, each
`ImportLine` of evidence, the next step and its command, the JSON's `reading` rendered from
the recorded finding (or passed on as an older kltui recorded it), and each `RescoreKind` of
re-scoring on the server with match's two outcomes; tests/rl assert the findings and that the
console, JSON and reports show these words."""

from __future__ import annotations

from dataclasses import replace

from kltui.readings.imported import ImportFinding, ImportKind, ImportLine, Rescored, RescoreKind
from kltui.words.rl import (
    DECODE_EQUALS_PREFILL,
    NO_CONDITIONS,
    differing_line,
    evidence_line,
    label,
    next_command,
    next_step,
    reading_words,
    rescore_lines,
)

CMD = "kltui import FILE --server URL"
NOTHING = ImportFinding(ImportKind.NOTHING_USABLE, samples=0, bad=2)
SAME = ImportFinding(ImportKind.IDENTICAL, samples=6, bad=0, tokens=48)
MISMATCH = ImportFinding(
    ImportKind.MISMATCH,
    samples=300,
    bad=1,
    differ=5,
    tokens=2400,
    differ_tokens=5,
    worst_sample=50,
    worst_mean_k3=6.232e-3,
    top_count=3,
    top_share=0.97,
    first_median=5,
    first_earliest=2,
    catastrophic=1,
    veto=1e-4,
    server_command=CMD,
)
WHY = (
    "teacher-forced prefill shows whether today's server reproduces the rollout's logprobs, "
    "and the match helper on the same prompts whether its decode differs from its prefill"
)


def test_each_kind_has_its_label():
    assert label(NOTHING) == "inconclusive: no record could be used"
    assert label(SAME) == "bit-identical: the trainer reproduces every rollout logprob exactly"
    assert label(MISMATCH) == (
        "training-inference mismatch in 5 of 300 samples; worst sample 50 (mean k3 6.232e-03); "
        "cause not readable from the file"
    )


def test_each_evidence_line():
    said = {line: evidence_line(line, MISMATCH) for line in ImportLine}
    assert said == {
        ImportLine.UNUSABLE: "1 record(s) could not be used (see the problems)",
        ImportLine.COUNT: (
            "5 of 300 samples differ between trainer and rollout (5 of 2400 counted tokens)"
        ),
        ImportLine.NO_CONDITIONS: NO_CONDITIONS,
        ImportLine.CONCENTRATION: (
            "the worst 1% of samples (3 of 300) carry 97% of the summed per-sample mean k3"
        ),
        ImportLine.FIRST_POSITION: (
            "first differing position: median 5, earliest 2 (positions count trained tokens only)"
        ),
        ImportLine.VETO: (
            "1 sample(s) hold a token whose trainer/rollout probability ratio is below 0.0001 "
            "(slime's rs_veto_threshold: it would reject them)"
        ),
        ImportLine.LEFT_OUT: "1 record(s) could not be used and are left out (see the problems)",
    }
    assert NO_CONDITIONS == (
        "no condition-1/condition-2 reading: the file records neither the rollout engine's "
        "cache paths nor its batches, so batch variance cannot be told from a state bug"
    )


def test_the_next_step_and_its_command():
    assert next_step(NOTHING) == "fix the records named in the problems and import again"
    assert next_step(SAME) is None
    assert next_step(MISMATCH) == "re-score the file on the rollout server: " + WHY
    rescoring = replace(MISMATCH, server_command=None)  # --server re-scores it in this run
    assert next_step(rescoring) == "the re-scoring on the server, in this run, says which: " + WHY
    assert (next_command(MISMATCH), next_command(rescoring)) == (CMD, None)
    assert next_command(replace(SAME, server_command=CMD)) is None


def test_the_json_reading():
    assert reading_words(SAME.to_json()) == {
        "label": label(SAME),
        "evidence": [
            "0 of 6 samples differ between trainer and rollout (0 of 48 counted tokens)",
            NO_CONDITIONS,
        ],
        "next_step": None,
        "next_command": None,
    }
    older = {"label": "x", "evidence": ["y"], "next_step": None, "next_command": None}
    assert reading_words(older) is older  # recorded as words: shown as recorded
    assert reading_words(None) == {}


def test_each_rescore_kind_and_match():
    def said(kind, rollout, trainer, match=None):
        return rescore_lines(Rescored(kind, 6, rollout, trainer, match, 2.5e-4))

    assert said(RescoreKind.AGREE, 0, 0) == [
        "trainer, rollout and the server's prefill now agree bit for bit on 6 samples"
    ]
    assert said(RescoreKind.TRAINER, 0, 1) == [
        "the server's prefill now reproduces the rollout's logprobs exactly (6 samples), and the "
        "trainer differs from it in 1: the mismatch is between the trainer and the inference "
        "engine, not in the server's decode path"
    ]
    assert said(RescoreKind.ROLLOUT, 2, 0) == [
        "the trainer equals the server's prefill now on all 6 samples, and the recorded rollout "
        "differs from it in 2: the mismatch is on the rollout side (its decode path, or a server "
        "that changed since the rollout)"
    ]
    assert said(RescoreKind.BOTH, 2, 3) == [
        "the server's prefill now differs from the recorded rollout in 2 of 6 samples and from "
        "the trainer in 3: both sides differ from today's prefill"
    ]
    assert said(None, None, None, 0) == [DECODE_EQUALS_PREFILL]
    assert DECODE_EQUALS_PREFILL == (
        "match on the same prompts: the server's decode equals its prefill bit for bit"
    )
    assert said(None, None, None, 3) == [
        "match on the same prompts: the server's decode differs from its prefill in 3 samples "
        "(avg_kl_div 2.500e-04): decode is not batch-invariant on today's server"
    ]


def test_the_differing_samples():
    listed = [
        {"sample": 4, "mean_k3": 1.5e-2, "tokens_differ": 1, "first_position": 3},
        {"sample": 2, "mean_k3": 5e-3, "tokens_differ": 2, "first_position": 0},
    ]
    assert differing_line({"total": 2, "listed": listed}) == (
        "samples that differ (2, worst first): 4 (mean k3 1.500e-02, 1 tokens), "
        "2 (mean k3 5.000e-03, 2 tokens)"
    )
    assert differing_line({"total": 6, "listed": listed}) == (
        "samples that differ (6, worst first): 4 (mean k3 1.500e-02, 1 tokens), "
        "2 (mean k3 5.000e-03, 2 tokens), and 4 more"
    )
    assert differing_line({"total": 0, "listed": []}) is None
