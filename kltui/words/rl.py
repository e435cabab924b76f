"""The words of an import file's summary (`rl/reading.py`, `rl/rescore.py`): its reading (an
`ImportFinding`: the label, each evidence line, the next step), the samples that differ, worst
first, and what re-scoring on the server says, as the console, the JSON and the reports show
them."""

from __future__ import annotations

from typing import TypedDict

from kltui.fmt import sci
from kltui.readings.imported import ImportFinding, ImportKind, ImportLine, Rescored, RescoreKind

DECODE_EQUALS_PREFILL = (
    "match on the same prompts: the server's decode equals its prefill bit for bit"
)


def label(f: ImportFinding) -> str:
    """The reading's headline."""
    if f.kind is ImportKind.NOTHING_USABLE:
        return "inconclusive: no record could be used"
    if f.kind is ImportKind.IDENTICAL:
        return "bit-identical: the trainer reproduces every rollout logprob exactly"
    return (
        f"training-inference mismatch in {f.differ} of {f.samples} samples; worst sample "
        f"{f.worst_sample} (mean k3 {sci(f.worst_mean_k3)}); cause not readable from the file"
    )


NO_CONDITIONS = (
    "no condition-1/condition-2 reading: the file records neither the rollout engine's "
    "cache paths nor its batches, so batch variance cannot be told from a state bug"
)


def evidence_line(line: ImportLine, f: ImportFinding) -> str:
    """One evidence line of the reading."""
    if line is ImportLine.UNUSABLE:
        return f"{f.bad} record(s) could not be used (see the problems)"
    if line is ImportLine.COUNT:
        return (
            f"{f.differ} of {f.samples} samples differ between trainer and rollout "
            f"({f.differ_tokens} of {f.tokens} counted tokens)"
        )
    if line is ImportLine.NO_CONDITIONS:
        return NO_CONDITIONS
    if line is ImportLine.CONCENTRATION:
        return (
            f"the worst 1% of samples ({f.top_count} of {f.samples}) carry "
            f"{f.top_share:.0%} of the summed per-sample mean k3"
        )
    if line is ImportLine.FIRST_POSITION:
        return (
            f"first differing position: median {f.first_median}, earliest "
            f"{f.first_earliest} (positions count trained tokens only)"
        )
    if line is ImportLine.VETO:
        return (
            f"{f.catastrophic} sample(s) hold a token whose trainer/rollout probability "
            f"ratio is below {f.veto:g} (slime's rs_veto_threshold: it would reject them)"
        )
    return f"{f.bad} record(s) could not be used and are left out (see the problems)"


_WHY_RESCORE = (
    "teacher-forced prefill shows whether today's server reproduces the rollout's "
    "logprobs, and the match helper on the same prompts whether its decode differs from "
    "its prefill"
)


def next_step(f: ImportFinding) -> str | None:
    """The next step: fix the records, nothing, or re-score on the rollout server (which tells
    the causes apart)."""
    if f.kind is ImportKind.NOTHING_USABLE:
        return "fix the records named in the problems and import again"
    if f.kind is ImportKind.IDENTICAL:
        return None
    if f.server_command is None:  # --server is re-scoring the file now: "server now" follows
        return "the re-scoring on the server, in this run, says which: " + _WHY_RESCORE
    return "re-score the file on the rollout server: " + _WHY_RESCORE


def next_command(f: ImportFinding) -> str | None:
    """The next step's command: re-scoring on the rollout server, for a mismatch only."""
    return f.server_command if f.kind is ImportKind.MISMATCH else None


class ReadingWords(TypedDict):
    """The reading as the import's JSON (`reading`) and console say it."""

    label: str
    evidence: list[str]
    next_step: str | None
    next_command: str | None


def reading_words(recorded: object) -> ReadingWords | dict:
    """The words of the reading a summary recorded (`rl.reading`): rendered from its finding,
    or as recorded by a kltui that wrote the words themselves ({} for none)."""
    f = ImportFinding.from_json(recorded)
    if f is None:
        return recorded if isinstance(recorded, dict) else {}
    return {
        "label": label(f),
        "evidence": [evidence_line(line, f) for line in f.lines],
        "next_step": next_step(f),
        "next_command": next_command(f),
    }


def differing_line(differing: dict) -> str | None:
    """The differing samples as one line, worst first ("N more" past the listed ones); None
    when none differs or the summary predates the list."""
    listed = differing.get("listed") or []
    total = int(differing.get("total") or 0)
    if not total or not listed:
        return None
    named = ", ".join(
        f"{d.get('sample')} (mean k3 {sci(d.get('mean_k3'))}, {d.get('tokens_differ')} tokens)"
        for d in listed
    )
    more = f", and {total - len(listed)} more" if total > len(listed) else ""
    return f"samples that differ ({total}, worst first): {named}{more}"


def rescore_lines(r: Rescored) -> list[str]:
    """What re-scoring on the server says, one line each: where the three numbers per token
    agree and where they do not, then match's decode against its prefill."""
    n, svr, tvs, m = r.scored, r.rollout_differ, r.trainer_differ, r.match_differ
    lines = []
    if r.kind is RescoreKind.AGREE:
        lines.append(
            f"trainer, rollout and the server's prefill now agree bit for bit on {n} samples"
        )
    elif r.kind is RescoreKind.TRAINER:
        lines.append(
            f"the server's prefill now reproduces the rollout's logprobs exactly ({n} "
            f"samples), and the trainer differs from it in {tvs}: the mismatch is between "
            "the trainer and the inference engine, not in the server's decode path"
        )
    elif r.kind is RescoreKind.ROLLOUT:
        lines.append(
            f"the trainer equals the server's prefill now on all {n} samples, and the "
            f"recorded rollout differs from it in {svr}: the mismatch is on the rollout side "
            "(its decode path, or a server that changed since the rollout)"
        )
    elif r.kind is RescoreKind.BOTH:
        lines.append(
            f"the server's prefill now differs from the recorded rollout in {svr} of {n} "
            f"samples and from the trainer in {tvs}: both sides differ from today's prefill"
        )
    if m is not None:
        lines.append(
            DECODE_EQUALS_PREFILL
            if m == 0
            else f"match on the same prompts: the server's decode differs from its prefill in {m} "
            f"samples (avg_kl_div {sci(r.match_avg)}): decode is not "
            "batch-invariant on today's server"
        )
    return lines
