"""Servers and prompts for the stateful archs' tests (--arch mamba / swa): prompts of exact
lengths cut from the corpus, and the shared servers by their flags."""

from __future__ import annotations

from pathlib import Path

from kltui.reference import CHECKPOINT_DIR
from kltui.reference.launcher import ReferenceServer
from tests.reference.kit import RefClient, k3
from tests.servers import ReferenceServers

CORPUS = CHECKPOINT_DIR.parent / "corpus.txt"


def serve(pool: ReferenceServers, *flags: str, deterministic: bool = True) -> ReferenceServer:
    """The session's shared server with these extra flags, sampling with seed 0."""
    return pool.server(random_seed=0, deterministic=deterministic, extra_args=tuple(flags))


def prompts(client: RefClient, lengths: list[int]) -> list[list[int]]:
    """BOS + corpus text, one prompt of each length, each from its own offset."""
    ids = client.tokenize([Path(CORPUS).read_text()[:5000]])[0]
    return [[0, *ids[1 + 37 * i : 1 + 37 * i + n - 1]] for i, n in enumerate(lengths)]


def exact(values: list[float]) -> bool:
    return all(v == 0.0 for v in values)


def multiturn(
    c: RefClient, prefix: list[int], branches: list[list[int]], turns: list[list[int]], n: int
) -> list[tuple[int, int, int, float]]:
    """SGLang's kl_multiturn_utils run, reduced: branches over a shared prefix, each turn
    appending its suffix to the branch's history and output, submitted one at a time
    interleaved across branches; then every turn replayed alone after a flush. Returns
    (branch, turn, cached_tokens, mean k3) per turn."""
    c.flush()
    history = [[*prefix, *b] for b in branches]
    runs = []
    for t, suffix in enumerate([[], *turns]):
        for b in range(len(branches)):
            ids = [*history[b], *suffix]
            (res,) = c.decode_batch([ids], n)
            out = res["output_ids"]
            lps = [e[0] for e in res["meta_info"]["output_token_logprobs"]]
            runs.append((b, t, ids, out, lps, res["meta_info"]["cached_tokens"]))
            history[b] = [*ids, *out]
    rows = []
    for b, t, ids, out, lps, cached in runs:
        (replayed,) = c.replay([ids], [out])
        ks = k3(replayed, lps)
        rows.append((b, t, cached, sum(ks) / len(ks)))
    return rows
