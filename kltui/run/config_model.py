"""RunConfig: everything one run is asked to do, from the options and the config file (each
field declared in run/settings.py; run/config.py reads a config file into one)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from kltui.helpers.multiturn_plan import MultiturnShape
from kltui.metrics.k3 import DEFAULT_TAIL_THRESHOLD
from kltui.registry import DEFAULT_HELPERS, DEFAULT_MAX_NEW_TOKENS
from kltui.run.config_ablate import AblateSection
from kltui.run.prompts import DEFAULT_MAX_PROMPT_TOKENS, DEFAULT_SEED
from kltui.run.settings import FLEET_REQUIRE, SETTINGS
from kltui.run.thresholds import ThresholdEntry

STREAM_CHUNKS = 16
DEFAULT_FLEET_CONCURRENCY = 4


@dataclass
class RunConfig:
    """Everything one run is asked to do, from the options and the config file."""

    servers: list[str] = field(default_factory=list)
    baseline: str | None = None  # the vLLM baseline's URL (--baseline [vllm:]HOST:PORT)
    # the Hugging Face transformers reference (--baseline hf:PATH): HFSettings.to_dict()
    hf_baseline: dict | None = None
    baseline_log: str | None = None  # the baseline's startup log, for settings only it names
    helpers: list[str] = field(default_factory=lambda: list(DEFAULT_HELPERS))
    samples: int = 32
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    prompts: str | None = None
    max_prompt_tokens: int | None = DEFAULT_MAX_PROMPT_TOKENS
    seed: int = DEFAULT_SEED
    temperature: float = 0.0
    tail_threshold: float = DEFAULT_TAIL_THRESHOLD
    threshold: float | None = None
    preset: str | None = None
    thresholds: list[ThresholdEntry] = field(default_factory=list)
    # None: stream where something is shown live (the TUI), not in `kltui check`
    stream: bool | None = None
    # tokens per streamed chunk; None: max_new_tokens / STREAM_CHUNKS (see stream_interval_for)
    stream_interval: int | None = None
    flush_timeout: float = 30.0
    request_timeout: float = 600.0
    min_cache_hit_ratio: float = 0.5
    top_k: int = 5
    # worst samples per helper whose tail gets top-k + token text from a follow-up request
    extras: int = 3
    theme: str | None = None
    dump_dir: str | None = None  # where the TUI's dumper drill-down has the server write
    keymap: dict[str, str] = field(default_factory=dict)
    # the TUI flushes without asking first, even a shared server (`kltui check` never asks)
    yes_flush: bool = False
    # the console's diagnosis shows the statistics' lines too (`kltui check --explain`)
    explain: bool = False
    # run and compare servers whose model_path or weight version differ (refused otherwise)
    allow_different_models: bool = False
    api_key: str | None = field(default=None, repr=False)
    # max_prompt_tokens came from the command line or a config file, not the default: only then
    # are pre-cut token-id files (SGLang's input-id cache) cut again
    prompt_cut_asked: bool = field(default=False, repr=False)
    # for servers without a tokenizer (--skip-tokenizer-init): a local tokenizer (folder or a
    # name in the local HF cache) and/or decode_cache_hit's separator "," as ids
    tokenizer: str | None = None
    separator_ids: list[int] | None = None
    # fleet mode: the SGLang router whose workers are checked one by one (by their own URLs),
    # and how many of them run at once
    router: str | None = None
    fleet_concurrency: int = DEFAULT_FLEET_CONCURRENCY
    # what fails a fleet run: "gate" (each replica's helpers, as for --server) or "identical"
    # (also replicas that are not all bit-identical, or not all compared)
    # "gate": readings/fleet_model.DEFAULT_FLEET_REQUIRE, not imported for it (a fleet's reading
    # loads with a fleet run; tests/unit/run/test_settings.py keeps the two equal)
    fleet_require: str = FLEET_REQUIRE[0]
    # servers measured at once in one run (1: one after the other); each server's helpers still
    # run one after the other, and a server that fails does not stop the others
    concurrency: int = 1
    # --stress LEVEL (run/stress.py): a session of two runs, quiet then under background
    # traffic, compared per sample (readings/stress.py); `stressed` marks the second
    stress: str | None = None
    stressed: bool = False
    # --batch-sizes 1,8,32 (run/batch_sizes.py): the same prompts scored at each concurrency
    batch_sizes: list[int] | None = None
    # `kltui ablate`'s section of a config file; how a sweep is laid out, not what one run
    # measures, so it is never recorded
    ablate: AblateSection | None = field(default=None, repr=False)
    # the model's config.json when the server's model path is not readable here (issue 57)
    model_config: str | None = None
    # what counts as a cache hit: "engine" (a Mamba server's checkpoints, as SGLang's
    # kl_multiturn_utils counts them) or "kl_test_utils" (its rule on every server, for parity)
    hit_rule: str = "engine"
    # multiturn (issue 58, run/settings_multiturn.py): unified_radix_cache_kit's shape
    multiturn_groups: int = 3
    multiturn_branches: int = 3
    multiturn_prefix: int = 512
    multiturn_branch_suffix: int = 256
    multiturn_branch_step: int = 64
    multiturn_turn_suffixes: list[int] = field(default_factory=lambda: [512, 256])
    multiturn_interleave: bool = True
    multiturn_replay_batch: int = 1
    multiturn_temperature: float = 1.0
    multiturn_sampling_seed: int = 42

    def multiturn_shape(self) -> MultiturnShape:
        """The multiturn helper's shape from these settings."""
        return MultiturnShape(
            groups=self.multiturn_groups,
            branches=self.multiturn_branches,
            prefix=self.multiturn_prefix,
            branch_suffix=self.multiturn_branch_suffix,
            branch_step=self.multiturn_branch_step,
            turn_suffixes=tuple(self.multiturn_turn_suffixes),
            interleave=self.multiturn_interleave,
            replay_batch=self.multiturn_replay_batch,
            temperature=float(self.multiturn_temperature),
            sampling_seed=self.multiturn_sampling_seed,
        )

    def server_api_key(self) -> str | None:
        """The SGLang servers' (and router's) key: --api-key, else KLTUI_API_KEY; never sent to
        the vLLM baseline."""
        from kltui.engines.http import resolve_api_key  # here: `kltui --help` skips httpx

        return resolve_api_key(self.api_key)

    def baseline_api_key(self) -> str | None:
        """The vLLM baseline's own key (KLTUI_BASELINE_API_KEY), never the SGLang servers' key."""
        from kltui.engines.http import resolve_baseline_api_key

        return resolve_baseline_api_key()

    def streams(self, live_view: bool) -> bool:
        """Whether decodes are streamed (by default only where a view shows them live)."""
        return live_view if self.stream is None else self.stream

    def stream_interval_for(self) -> int:
        """Tokens per chunk of a streamed decode.

        SGLang's default stream resends every logprob so far with every token, so a 512-token
        decode costs the server and the client O(n^2) entries per sample; STREAM_CHUNKS chunks
        per sample keep the live heatmap moving at a small, bounded cost.
        """
        if self.stream_interval:
            return self.stream_interval
        return max(1, -(-self.max_new_tokens // STREAM_CHUNKS))

    @classmethod
    def record_keys(cls) -> tuple[str, ...]:
        """The keys of `to_record()`, in its order (the JSON report's `config`)."""
        skip = SETTINGS.unrecorded()
        return (*(f.name for f in fields(cls) if f.name not in skip), "api_key_set")

    def to_record(self) -> dict:
        """What goes into recordings and reports: every field run/settings.py records (no API
        key, nor how the TUI asks before a flush, nor an ablate: section)."""
        d = asdict(self)
        for name in SETTINGS.unrecorded():
            d.pop(name, None)
        # a key from KLTUI_API_KEY is used as well: say so
        d["api_key_set"] = bool(self.server_api_key())
        return d
