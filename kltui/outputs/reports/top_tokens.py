"""The tokens with the largest k3 of a helper, as the reports list them: where each sits, its
id and text (from the run's token texts; None where nobody fetched it), both logprobs, r and
k3. Computed once here, so the HTML page and any other report read the same rows."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kltui.session.store import HelperState

TOP_TOKENS = 10


@dataclass(frozen=True)
class LargeToken:
    """One of a helper's largest-k3 tokens (`text`: untrusted, shown escaped)."""

    sample: int
    position: int
    token_id: int
    text: str | None
    lp_a: float
    lp_b: float
    r: float
    k3: float


def logprob(x: float) -> str:
    """A logprob as the reports print it: 6 decimals, as the drill-down shows it (r and k3
    carry the difference between the two, whatever its size)."""
    return f"{x:.6f}"


def largest_k3(
    st: HelperState, token_text: dict[int, str] | None = None, n: int = TOP_TOKENS
) -> list[LargeToken] | None:
    """The `n` tokens of largest k3, NaN first (a fault); [] when every scored token is
    bit-identical; None when no token was scored."""
    samples = [st.book.samples[i] for i in st.book.order]
    k = np.concatenate([s.k3 for s in samples]) if samples else np.zeros(0)
    if not k.size:
        return None
    owner = np.repeat(np.arange(len(samples)), [s.k3.size for s in samples])
    offset = np.concatenate([np.arange(s.k3.size) for s in samples])
    rank = np.where(np.isnan(k), np.inf, k)  # a NaN is a fault: list it first
    n = min(n, k.size)
    top = np.argpartition(-rank, n - 1)[:n]
    top = top[np.argsort(-rank[top], kind="stable")]
    texts = token_text or {}
    rows = []
    for i in top:
        if not (rank[i] > 0 or np.isnan(k[i])):
            continue
        s, p = samples[owner[i]], int(offset[i])
        tid, lp_a, lp_b = int(s.token_ids[p]), float(s.lp_a[p]), float(s.lp_b[p])
        rows.append(
            LargeToken(s.sample, p, tid, texts.get(tid), lp_a, lp_b, lp_a - lp_b, float(k[i]))
        )
    return rows
