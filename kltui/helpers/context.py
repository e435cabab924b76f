"""What a helper needs to run (HelperContext) and how its faults are tagged (PhaseError); the
phases every helper shares are `phases.py`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from kltui.engines.errors import EngineError
from kltui.engines.geometry import StateGeometry
from kltui.engines.sglang import PROCESS_IDENTITY, SGLangClient, sampling_params
from kltui.helpers.multiturn_plan import MultiturnShape
from kltui.metrics.hit_rules import HitRule
from kltui.metrics.k3 import DEFAULT_TAIL_THRESHOLD
from kltui.metrics.presets import ThresholdSource
from kltui.registry import DEFAULT_MAX_NEW_TOKENS
from kltui.session.events import (
    HelperFinished,
)

if TYPE_CHECKING:  # the HF reference's module loads only with a run that has one
    from kltui.engines.hf import HFSettings

COMPARABLE_TEMPERATURES = (0.0, 1.0)


def describe_logprob(v: float) -> str:
    """A non-finite or sentinel logprob as words."""
    if np.isnan(v):
        return "null or NaN"
    if np.isinf(v):
        return "+inf" if v > 0 else "-inf"
    return f"{v:g} (an -inf sentinel)"


class PhaseError(Exception):
    """An EngineError tagged with the helper phase it happened in. When it leaves a helper,
    `finished` holds the HelperFinished of what was measured until then."""

    def __init__(self, err: EngineError, helper: str, phase: str) -> None:
        super().__init__(str(err))
        self.err, self.helper, self.phase = err, helper, phase
        self.finished: HelperFinished | None = None

    def __str__(self) -> str:
        return f"{self.err.server} [{self.helper}/{self.phase}]: {self.err.message}"


@dataclass(frozen=True)
class ReferencePlan:
    """What hf_reference needs from the run: the reference's settings and recorded identity,
    each compared engine's recorded identity by URL, and the vLLM baseline (None: SGLang only)."""

    settings: HFSettings
    identity: dict
    engines: dict[str, dict]
    vllm_url: str | None = None
    vllm_api_key: str | None = field(default=None, repr=False)
    allow_different_models: bool = False


@dataclass
class HelperContext:
    """Everything a helper needs from the run: client, prompts, settings, gate."""

    client: SGLangClient
    prompts: list[np.ndarray]
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    temperature: float = 0.0
    threshold: float = 0.002
    tail_threshold: float = DEFAULT_TAIL_THRESHOLD
    stream: bool = True
    incremental: bool = False
    flush_timeout: float = 30.0
    min_cache_hit_ratio: float = 0.5
    skip_hit_assert: bool = False
    server_info: dict = field(default_factory=dict)
    # the server's state geometry (its RunStarted record) and the rule that counts a cache hit
    geometry: StateGeometry = field(default_factory=StateGeometry)
    hit_rule: HitRule = HitRule.ENGINE
    comma_ids: np.ndarray | None = None  # the turn-2 separator "," as ids
    comma_source: str = ""  # where comma_ids came from
    # run/tokenizer.LocalTokenizer or PendingTokenizer (encode, token_texts, describe) for a
    # server without one
    tokenizer: Any = None
    stream_interval: int | None = None  # tokens per streamed chunk; None: the server's own
    top_k: int = 0  # cross_engine: K of the top-K compared with the baseline
    threshold_source: ThresholdSource | None = None  # where `threshold` came from
    # a helper that compares against another engine (scope "baseline" in the registry)
    baseline_url: str | None = None
    baseline_api_key: str | None = field(default=None, repr=False)
    # the file vLLM's startup output went to, when kltui launched the baseline: the only
    # place that names the attention backend vLLM picked by itself (None: not launched by kltui)
    baseline_log: str | None = None
    request_timeout: float = 600.0
    # hf_reference: the transformers reference and the engines it is compared with
    reference: ReferencePlan | None = None
    # side A's engine when it is not `client` (hf_reference's vLLM row): the events' server
    server_url: str | None = None
    # multiturn: the kit's shape, and the sampling_seed its decode-side requests send (None:
    # none sent, as by every other helper)
    multiturn: MultiturnShape = field(default_factory=MultiturnShape)
    sampling_seed: int | None = None

    @property
    def server_tokenizes(self) -> bool:
        """False for a server started with --skip-tokenizer-init: it takes ids only."""
        return not self.server_info.get("skip_tokenizer_init")

    def identity(self, info: dict | None = None) -> tuple:
        """What identifies the server process (changes when it restarts)."""
        info = self.server_info if info is None else info
        return tuple(info.get(k) for k in PROCESS_IDENTITY)

    @property
    def server(self) -> str:
        """The server's URL (side A's engine's)."""
        return self.server_url or self.client.url

    def sampling(self, max_new_tokens: int, *, streamed: bool = False) -> dict:
        """The sampling_params of a helper's requests."""
        # SGLang's helpers send exactly these three keys; stream_interval only shapes how a
        # stream is cut into chunks (SGLang reads it per request), never what is computed.
        return sampling_params(
            temperature=self.temperature,
            max_new_tokens=max_new_tokens,
            ignore_eos=True,
            sampling_seed=self.sampling_seed if max_new_tokens > 0 else None,
            stream_interval=self.stream_interval if streamed else None,
        )
