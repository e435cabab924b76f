"""The evidence a diagnosis stands on, read off finished helpers: which are usable, which are
bit-exact, and whether a cache-hit helper's k3 exceeds match's beyond kernel noise (one-sided
tests on per-sample means), and where in generation divergence sits."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kltui.fmt import sci
from kltui.metrics.presets import DETERMINISTIC_KL_DIV
from kltui.session.store import HelperState

# "measured 0; any state bug produces values orders of magnitude higher" (the guide's 1e-9)
STRAY_ULP_FLOOR = DETERMINISTIC_KL_DIV
# chance, under kernel noise alone, below which a cache-hit helper's excess counts as evidence
EVIDENCE_P = 1e-3
UNUSABLE = ("error", "invalid", "vacuous")


def _usable(st: HelperState) -> bool:
    s = st.summary
    return s is not None and s.status not in UNUSABLE and bool(s.scored)


def _exact(st: HelperState) -> bool:
    return (st.summary.samples_with_difference or 0) == 0


def _count_line(st: HelperState) -> str:
    s = st.summary
    fd = s.first_divergence
    where = f", first divergence sample {fd['sample']} @ {fd['position']}" if fd else ""
    return (
        f"{st.helper}: {(s.samples_with_difference or 0)}/{s.scored} samples differ, "
        f"avg_kl_div {sci(s.avg_kl_div)}, max k3 {sci(s.max_k3)}{where}"
    )


def sign_test_p(higher: int, lower: int) -> float:
    """One-sided chance of >= `higher` wins out of higher+lower fair coin flips."""
    n = higher + lower
    if n == 0:
        return 1.0
    return sum(math.comb(n, j) for j in range(higher, n + 1)) / 2**n


def exceedance_p(k: int, n_x: int, n_y: int) -> float:
    """Chance that the k largest of n_x + n_y exchangeable values all come from the n_x group:
    C(n_x, k) / C(n_x + n_y, k). No distribution assumed, only that both sets are alike."""
    if k <= 0:
        return 1.0
    j = np.arange(k, dtype=np.float64)
    return float(np.exp(np.sum(np.log(n_x - j) - np.log(n_x + n_y - j))))


@dataclass
class Excess:
    """A cache-hit helper against match on the same prompts."""

    helper: str
    higher: int
    lower: int
    equal: int
    p_sign: float
    above: int  # tokens above match's largest k3
    p_tail: float
    level: float

    @property
    def significant(self) -> bool:
        return min(self.p_sign, self.p_tail) < EVIDENCE_P and self.level > STRAY_ULP_FLOOR

    def line(self) -> str:
        return (
            f"{self.helper} vs match on {self.higher + self.lower + self.equal} common samples: "
            f"higher in {self.higher}, lower in {self.lower}, equal in {self.equal} "
            f"(sign test p={self.p_sign:.2g}); {self.above} tokens above match's largest k3 "
            f"(p={self.p_tail:.2g})"
        )


def excess_over_match(st: HelperState, match: HelperState) -> Excess:
    a, m = st.book.samples, match.book.samples
    common = [s for s in st.book.order if s in m]
    mine = np.array([a[s].metrics.mean_k3 for s in common])
    theirs = np.array([m[s].metrics.mean_k3 for s in common])
    higher = int(np.count_nonzero(mine > theirs))
    lower = int(np.count_nonzero(mine < theirs))
    k3_m = np.concatenate([s.k3 for s in m.values()]) if m else np.zeros(0)
    k3_h = np.concatenate([s.k3 for s in a.values()]) if a else np.zeros(0)
    k3_m, k3_h = k3_m[np.isfinite(k3_m)], k3_h[np.isfinite(k3_h)]
    top = float(k3_m.max()) if k3_m.size else 0.0
    above = int(np.count_nonzero(k3_h > top))
    level = float(st.summary.avg_kl_div or 0.0)
    return Excess(
        st.helper,
        higher,
        lower,
        len(common) - higher - lower,
        sign_test_p(higher, lower),
        above,
        exceedance_p(above, k3_h.size, k3_m.size),
        level if math.isfinite(level) else math.inf,
    )


def _shape(st: HelperState, page_size: int | None) -> list[str]:
    """Which sequences diverge and where in generation: the two questions the KL guide asks."""
    s = st.summary
    helper = st.helper
    rows = [p for p in s.per_sample if p.get("n_nonzero")]
    scored = s.scored or 0
    if not rows or not scored:
        return []
    out = []
    if len(rows) <= scored / 4:
        bad = ", ".join(
            f"#{p['index']} (prompt {p['prompt_len']}, cached {p['cached_tokens']})"
            for p in rows[:6]
        )
        out.append(
            f"{helper}: divergence is concentrated in {len(rows)} of {scored} requests: {bad}; "
            "compare their prompt length, cached_tokens and page residue with the passing ones"
        )
    if isinstance(page_size, int) and page_size > 1:
        passing = [p for p in s.per_sample if not p.get("n_nonzero")]

        def residues(ps: list[dict]) -> str:
            vals = sorted({int(p["cached_tokens"]) % page_size for p in ps})
            return ", ".join(map(str, vals[:8])) + (" …" if len(vals) > 8 else "")

        if passing:
            out.append(
                f"{helper}: cached_tokens % page size {page_size}: divergent {{{residues(rows)}}}"
                f", passing {{{residues(passing)}}}"
            )
    firsts = np.array([p["first_divergence"] for p in rows])
    at_start = int(np.count_nonzero(firsts == 0))
    if at_start == len(rows):
        out.append(
            f"{helper}: every divergent sample differs from the first generated token: the "
            "state was already wrong when generation began (prefix restore, not decode)"
        )
    else:
        out.append(
            f"{helper}: divergence starts mid-generation (median position "
            f"{int(np.median(firsts))}, earliest {int(firsts.min())}): something during "
            "decode (window hand-off, checkpoint rotation, batch composition)"
        )
    return out
