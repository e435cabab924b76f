"""The score phase's warnings about what a server answered beside the logprobs asked for: an
answer with output logprobs it was not asked for, ids reported differently at prompt positions,
and compared positions scored with the id the server claimed (SGLang's documented quirk). Each
is one Problem, never fatal: the gate's figures stand."""

from __future__ import annotations

from kltui.engines.idcheck import describe as describe_ids
from kltui.session.events import Problem


def stray_output(server: str, helper: str, samples: list[int], results: list) -> Problem | None:
    """A warning when the scoring prefill (max_new_tokens 0) answered with output logprobs
    and no output token: dropped, as that side is never read, but said, as it is a server
    answering what it was not asked (real SGLang 0.5.23 under load)."""
    stray = [(s, r.stray_output_logprobs) for s, r in zip(samples, results, strict=True)]
    stray = [(s, n) for s, n in stray if n]
    if not stray:
        return None
    listed = ", ".join(f"sample {s} ({n})" for s, n in stray[:5])
    more = f" and {len(stray) - 5} more" if len(stray) > 5 else ""
    return Problem(
        server,
        f"[{helper}/prefill] the scoring prefill (max_new_tokens 0) came back with "
        f"output_token_logprobs and no output token for {len(stray)} sample(s): {listed}"
        f"{more}; ignored (only its input logprobs are scored, and they were checked id "
        "by id)",
        fatal=False,
        helper=helper,
        phase="prefill",
    )


def prompt_ids(server: str, helper: str, found: list) -> Problem:
    """Ids the server reports differently at prompt positions: no metric reads them."""
    n = sum(p.size for _, p, _, _ in found)
    sample, pos, reported, sent = found[0]
    return Problem(
        server,
        f"[{helper}/prefill] the server reported another token id than was sent at {n} "
        f"prompt position(s) in "
        f"{len(found)} sample(s) (sample {sample}: {describe_ids(pos, reported, sent)}); "
        "no metric reads prompt positions, so the run goes on (said once for this helper)",
        fatal=False,
        helper=helper,
        phase="prefill",
    )


def reported_ids(server: str, helper: str, compared: list) -> Problem:
    """One warning for every compared position scored with a reported id quirk."""
    sample, pairs = compared[0]
    n = sum(len(p) for _, p in compared)
    return Problem(
        server,
        f"[{helper}/score] the server reported another token id than the one scored "
        f"at {n} compared position(s) in {len(compared)} sample(s) (sample {sample}: "
        + "; ".join(f"pos {k}: sent {sent}, reported {rep}" for k, sent, rep in pairs[:5])
        + "); scored anyway, as SGLang's helpers do, and listed as id_mismatches",
        fatal=False,
        helper=helper,
        phase="score",
    )
