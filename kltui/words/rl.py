"""The words of an import file's summary (`rl/reading.py`, `rl/rescore.py`): the samples that
differ, worst first, and what re-scoring on the server says, as the console and the reports
show them."""

from __future__ import annotations

from kltui.fmt import sci


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


def _differs(summary: dict | None) -> int | None:
    if not isinstance(summary, dict) or not summary.get("scored"):
        return None
    return int(summary.get("samples_with_difference") or 0)


def rescore_reading(
    server_vs_rollout: dict | None, trainer_vs_server: dict | None, match: dict | None
) -> list[str]:
    """What re-scoring on the server says (the summaries of rescore.py's helpers), one line
    each: where the three numbers per token agree and where they do not."""
    svr, tvs, m = _differs(server_vs_rollout), _differs(trainer_vs_server), _differs(match)
    lines = []
    if svr is not None and tvs is not None:
        n = int((server_vs_rollout or {}).get("scored") or 0)
        if svr == 0 and tvs == 0:
            lines.append(
                f"trainer, rollout and the server's prefill now agree bit for bit on {n} samples"
            )
        elif svr == 0:
            lines.append(
                f"the server's prefill now reproduces the rollout's logprobs exactly ({n} "
                f"samples), and the trainer differs from it in {tvs}: the mismatch is between "
                "the trainer and the inference engine, not in the server's decode path"
            )
        elif tvs == 0:
            lines.append(
                f"the trainer equals the server's prefill now on all {n} samples, and the "
                f"recorded rollout differs from it in {svr}: the mismatch is on the rollout side "
                "(its decode path, or a server that changed since the rollout)"
            )
        else:
            lines.append(
                f"the server's prefill now differs from the recorded rollout in {svr} of {n} "
                f"samples and from the trainer in {tvs}: both sides differ from today's prefill"
            )
    if m is not None:
        lines.append(
            "match on the same prompts: the server's decode equals its prefill bit for bit"
            if m == 0
            else f"match on the same prompts: the server's decode differs from its prefill in {m} "
            f"samples (avg_kl_div {sci((match or {}).get('avg_kl_div'))}): decode is not "
            "batch-invariant on today's server"
        )
    return lines
