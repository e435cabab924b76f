"""Logprob contracts: which number each engine returns as a "logprob", so that a difference of
definition is never read as numerical drift.

A contract is (engine, positions, kind): `positions` is `prompt` (teacher-forced: SGLang's
input_token_logprobs, vLLM's prompt_logprobs) or `sampled` (the token the engine generated);
`kind` is one of
- `logprobs`: log_softmax of the model's logits over the whole vocabulary;
- `scaled_logprobs`: log_softmax(logits / T) (`temperature` holds T);
- `renormalised_logprobs`: after top-k / top-p masking, renormalised over the kept tokens;
- `logits`: the raw (or processed) logits themselves, not a distribution;
- None: not known.

What each engine returns, read from its source (SGLang 0.5.23, vLLM 0.32):
- SGLang prompt positions: log_softmax of the raw logits (layers/logprob_processor.py); the
  request's temperature and top-p never touch them.
- SGLang sampled positions: log_softmax(logits / T) from the sampler (layers/sampler.py), raw for
  a greedy batch (temperature 0 is sent as greedy) or with SGLANG_RETURN_ORIGINAL_LOGPROB=1;
  never top-k / top-p renormalised.
- vLLM follows `--logprobs-mode`. Sampled positions: raw_logprobs (default) = `logprobs`,
  raw_logits = `logits`, processed_logprobs = after temperature and top-k / top-p
  (`renormalised_logprobs`; for a greedy request vLLM skips both, so it is `logprobs`),
  processed_logits = `logits`. Prompt positions skip the sampling processors, so
  processed_* equal raw_* there: `logprobs` for *_logprobs, but `logits` for *_logits
  (gpu_model_runner._get_prompt_logprobs_dict).

Where two contracts differ, some comparisons stay exact: logits and logprobs differ by one
constant per position (the log-partition), and log_softmax(x / T) keeps the order of x, so top-1
agreement, top-k overlap and the flip margins' signs compare ranks exactly; the values (|delta|,
k3, union KL) do not survive, and `judge` refuses them with the setting that makes the
difference. Where two names mean the same numbers for this request (processed_logprobs on a
greedy request, SGLang's sampled logprobs at T = 1), the contract is normalised to `logprobs` and
the note says why.

`probe_kind` reads the kind off an answer: a position whose top-k values are a log-distribution
has them all <= 0 and their log-sum-exp <= 0; logits usually fail that at once.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

LOGPROBS, SCALED, RENORMALISED, LOGITS = (
    "logprobs",
    "scaled_logprobs",
    "renormalised_logprobs",
    "logits",
)
SAME, NORMALISED, DIFFERENCE, UNKNOWN = "same", "normalised", "difference", "unknown"
VLLM_MODES = ("raw_logprobs", "raw_logits", "processed_logprobs", "processed_logits")
# float32 log_softmax rounding: a top-k log-sum-exp a little above 0 is still a distribution
PROBE_TOL = 1e-3


@dataclass(frozen=True, slots=True)
class Contract:
    """What one engine returns as logprobs at one kind of position, and where that was read."""

    engine: str
    positions: str
    kind: str | None
    source: str
    temperature: float | None = None
    setting: str = ""  # the server setting that decides it, e.g. "--logprobs-mode raw_logits"
    note: str = ""  # why two names are the same numbers here

    def to_json(self) -> dict[str, Any]:
        """The contract as a JSON object."""
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Comparability:
    """Whether two contracts give comparable numbers: `values` (|delta|, k3, KL), `ranks`
    (top-1, top-k overlap, margins)."""

    status: str
    values: bool
    ranks: bool
    setting: str
    message: str

    def to_json(self) -> dict[str, Any]:
        """The verdict as a JSON object."""
        return asdict(self)


def sglang_contract(positions: str, temperature: float = 0.0) -> Contract:
    """SGLang's contract from its source; `temperature` is what kltui sends."""
    if positions == "prompt":
        return Contract(
            "sglang",
            positions,
            LOGPROBS,
            "SGLang source: input logprobs are log_softmax of the raw logits",
        )
    t = float(temperature)
    if t <= 1e-6 or t == 1.0:
        why = "greedy: the sampler returns raw log_softmax" if t <= 1e-6 else "T = 1"
        return Contract(
            "sglang",
            positions,
            LOGPROBS,
            "SGLang source: the sampler's log_softmax(logits / T)",
            t,
            note=why,
        )
    return Contract(
        "sglang",
        positions,
        SCALED,
        "SGLang source: the sampler's log_softmax(logits / T) (raw only with "
        "SGLANG_RETURN_ORIGINAL_LOGPROB=1, which /server_info does not report)",
        t,
        f"temperature {t:g}",
    )


def vllm_contract(
    positions: str,
    mode: str | None,
    *,
    temperature: float = 0.0,
    sampling_filters: bool = False,
    source: str = "vLLM /server_info logprobs_mode",
) -> Contract:
    """vLLM's contract from its --logprobs-mode (None: not reported); `sampling_filters`:
    the request sends top-k / top-p / min-p."""
    if mode is None:
        return Contract("vllm", positions, None, "not reported (no dev-mode /server_info)")
    mode = str(mode)
    setting = f"--logprobs-mode {mode}"
    if mode not in VLLM_MODES:
        return Contract("vllm", positions, None, source, setting=setting, note="unknown mode")
    if mode.endswith("_logits"):
        return Contract("vllm", positions, LOGITS, source, setting=setting)
    if mode == "raw_logprobs":
        return Contract("vllm", positions, LOGPROBS, source, setting=setting)
    # processed_logprobs
    if positions == "prompt":
        return Contract(
            "vllm",
            positions,
            LOGPROBS,
            source,
            setting=setting,
            note="prompt positions skip the sampling processors",
        )
    if temperature <= 1e-6 or (temperature == 1.0 and not sampling_filters):
        return Contract(
            "vllm",
            positions,
            LOGPROBS,
            source,
            temperature,
            setting,
            "a greedy request skips temperature and top-k/top-p"
            if temperature <= 1e-6
            else "T = 1 without top-k/top-p changes nothing",
        )
    kind = RENORMALISED if sampling_filters else SCALED
    return Contract("vllm", positions, kind, source, temperature, setting)


def probe_kind(top_lp: np.ndarray, tol: float = PROBE_TOL) -> str | None:
    """`logprobs` when every position's top-k values can be a log-distribution (all <= 0,
    log-sum-exp <= 0), `logits` when some cannot, None without a finite value."""
    lp = np.asarray(top_lp, dtype=np.float64)
    if lp.ndim == 1:
        lp = lp[:, None]
    finite = np.isfinite(lp)
    if not finite.any():
        return None
    with np.errstate(over="ignore"):
        m = np.where(finite, lp, -np.inf).max(axis=1)
        ok_rows = np.isfinite(m)
        s = np.where(
            finite, np.exp(np.where(finite, lp, 0.0) - np.where(ok_rows, m, 0)[:, None]), 0
        )
        lse = np.where(ok_rows, m + np.log(np.where(ok_rows, s.sum(axis=1), 1.0)), -np.inf)
    if (lp[finite] > tol).any() or (lse > tol).any():
        return LOGITS
    return LOGPROBS


def probe_rows(
    top_ids: np.ndarray, top_lp: np.ndarray, token_ids: np.ndarray, token_lp: np.ndarray
) -> np.ndarray:
    """[P, K+1] values to probe: each position's top-K plus the scored token's own logprob,
    which is left out (-inf) where that token is one of the top-K: engines list it twice then,
    and counted twice a real distribution would seem to sum above 1."""
    inside = (np.asarray(top_ids) == np.asarray(token_ids)[:, None]).any(axis=1)
    own = np.where(inside, -np.inf, np.asarray(token_lp, dtype=np.float64))
    return np.concatenate([np.asarray(top_lp, dtype=np.float64), own[:, None]], axis=1)


def with_probe(declared: Contract, probed: str | None, what: str) -> Contract:
    """The declared contract checked against what an answer showed: a measured kind wins."""
    if probed is None:
        return declared
    if declared.kind == probed or (declared.kind in (SCALED, RENORMALISED) and probed == LOGPROBS):
        # a scaled or renormalised distribution is a log-distribution too: the probe agrees
        return Contract(
            declared.engine,
            declared.positions,
            declared.kind,
            f"{declared.source}; probe: {what}",
            declared.temperature,
            declared.setting,
            declared.note,
        )
    was = f"declared {declared.kind}" if declared.kind else "not declared"
    setting = declared.setting
    if not setting and probed == LOGITS and declared.engine == "vllm":
        # the one vLLM setting that returns logits where logprobs were asked for
        setting = "--logprobs-mode raw_logits or processed_logits (seen by the probe)"
    return Contract(
        declared.engine,
        declared.positions,
        probed,
        f"probe: {what} ({was})",
        declared.temperature,
        setting,
        declared.note,
    )


def judge(a: Contract, b: Contract) -> Comparability:
    """Can A's numbers be compared with B's? Same kind: yes. A kind unknown: compared, said
    unknown. Different kinds: ranks yes (order survives a per-position shift and 1/T), values
    no, naming the setting."""
    setting = " / ".join(x for x in (a.setting, b.setting) if x)
    if a.kind is None or b.kind is None:
        who = a if a.kind is None else b
        return Comparability(
            UNKNOWN,
            True,
            True,
            setting,
            f"{who.engine}'s {who.positions} logprob definition is not known ({who.source}); "
            "the numbers are compared as logprobs",
        )
    if a.kind == b.kind and (a.kind != SCALED or a.temperature == b.temperature):
        notes = "; ".join(f"{c.engine}: {c.note}" for c in (a, b) if c.note)
        return Comparability(
            NORMALISED if notes else SAME,
            True,
            True,
            setting,
            f"both {a.kind}" + (f" ({notes})" if notes else ""),
        )
    return Comparability(
        DIFFERENCE,
        False,
        True,
        setting or f"{a.engine} {a.kind} vs {b.engine} {b.kind}",
        f"contract difference: {a.engine}'s {a.positions} values are {_kind(a)}, "
        f"{b.engine}'s are {_kind(b)}"
        + (f" ({setting})" if setting else "")
        + "; their difference would measure the definition, not the engines: |delta|, k3 "
        "and KL are refused, top-1/top-k agreement and flip margins compare ranks",
    )


def _kind(c: Contract) -> str:
    if c.kind == SCALED:
        return f"log_softmax(logits / {c.temperature:g})"
    return {LOGPROBS: "log-probabilities", RENORMALISED: "renormalised after top-k/top-p"}.get(
        str(c.kind), str(c.kind)
    )
