"""The reference server's state: its settings (`ServerSettings`, the launch flags) and what
every route shares (`ReferenceState`: the loaded model, tokenizer, cache, engine and scheduler),
with what its info endpoints report (/server_info, /get_loads, /metrics, /model_info).
"""

from __future__ import annotations

import dataclasses
import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import torch

from kltui.reference import CHECKPOINT_DIR
from kltui.reference.arch import Arch
from kltui.reference.cache import RadixCache
from kltui.reference.checkpoints import StateKeeper
from kltui.reference.engine import Engine, GenRequest, Sampling
from kltui.reference.faults import Fault
from kltui.reference.mamba import RecurrentBlock
from kltui.reference.model import LlamaForCausalLM, dtype_name, load_model
from kltui.reference.responses import Renderer
from kltui.reference.scheduler import Scheduler
from kltui.reference.tokenizer import TextTokenizer

SGLANG_VERSION = "0.5.23"
# A valid PEP 440 version that still reads as 0.5.23 to a client comparing release numbers.
VERSION = f"{SGLANG_VERSION}+kltui.reference"


@dataclass(frozen=True)
class ServerSettings:
    checkpoint: Path = CHECKPOINT_DIR
    host: str = "127.0.0.1"
    port: int = 30000
    deterministic: bool = False
    fault: str = "none"
    fault_window: int = 32
    page_size: int = 1
    incremental_streaming_output: bool = False
    api_key: str | None = None
    disable_radix_cache: bool = False
    max_total_tokens: int = 65536
    stream_interval: int = 1
    random_seed: int | None = None
    threads: int = 1
    max_running_requests: int = 128
    chunked_prefill_size: int = 8192
    skip_tokenizer_init: bool = False
    dtype: str = "float32"
    enable_metrics: bool = False
    retract_interval: int | None = None
    # the planted fault stays dormant until the N-th flush (0: from the start)
    fault_after_flushes: int = 0
    arch: Arch = Arch()


class ReferenceState:
    """The loaded model and the running machinery, shared by all routes."""

    def __init__(self, settings: ServerSettings, launch_command: str) -> None:
        self.settings = settings
        self.launch_command = launch_command
        self.checkpoint = str(Path(settings.checkpoint).resolve())
        self.random_seed = (
            settings.random_seed if settings.random_seed is not None else random.randrange(1 << 30)
        )
        torch.manual_seed(self.random_seed)
        self.model: LlamaForCausalLM = load_model(settings.checkpoint, settings.dtype)
        self.arch = dataclasses.replace(settings.arch, page_size=settings.page_size)
        self._build_arch()
        self.served = settings.arch.served_folder(Path(settings.checkpoint).resolve())
        self.tokenizer = TextTokenizer(settings.checkpoint)
        cfg = self.model.config
        self.context_length = cfg.max_position_embeddings
        self.eos_ids = frozenset(cfg.eos_ids) | (
            {self.tokenizer.eos_token_id} if self.tokenizer.eos_token_id is not None else set()
        )
        self.bos_id = cfg.bos_token_id if cfg.bos_token_id is not None else 0
        self.planted = Fault(settings.fault, settings.fault_window)
        self.flushes = 0
        fault = (
            Fault("none", settings.fault_window) if settings.fault_after_flushes else self.planted
        )
        self.cache = RadixCache(
            settings.page_size,
            settings.max_total_tokens,
            disabled=settings.disable_radix_cache,
            partial_evict=fault.partial_evict,
        )
        self.engine = Engine(
            self.model,
            self.cache,
            eos_ids=sorted(self.eos_ids),
            deterministic=settings.deterministic,
            fault=fault,
            decode_tail=lambda ids: self.tokenizer.decode(ids, True),
            random_seed=self.random_seed,
            chunked_prefill_size=settings.chunked_prefill_size,
            keeper=StateKeeper(self.arch, fault),
        )
        self.scheduler = Scheduler(
            self.engine,
            max_running=settings.max_running_requests,
            max_prefill_tokens=settings.chunked_prefill_size,
            retract_interval=settings.retract_interval,
        )
        self.renderer = Renderer(
            self.tokenizer.token_text,
            self.tokenizer.decode,
            with_text=not settings.skip_tokenizer_init,
        )
        self.startup_time = time.time()

    def _build_arch(self) -> None:
        """--arch mamba: the recurrent block (seeded weights); --arch swa: layer windows."""
        n = self.model.config.num_hidden_layers
        if self.arch.swa:
            self.model.layer_windows = self.arch.layer_windows(n)
        if self.arch.mamba:
            cfg = self.model.config
            block = RecurrentBlock(cfg.hidden_size, cfg.rms_norm_eps)
            block.init_weights()
            self.model.recurrent = block.to(self.model.lm_head.weight.dtype).eval()

    def warm_up(self) -> None:
        """One tiny generate outside the cache, so the first real request pays no lazy init."""
        req = GenRequest(
            "warmup",
            [self.bos_id, 5, 6],
            Sampling(temperature=0.0, max_new_tokens=2),
            use_cache=False,
        )
        a = self.engine.admit(req)
        self.engine.prefill([a])
        self.engine.decode([a])

    def flushed(self) -> None:
        """A flush succeeded: the N-th wakes a dormant fault (--fault-after-flushes N)."""
        self.flushes += 1
        if self.flushes == self.settings.fault_after_flushes:
            self.engine.fault = self.planted
            self.engine.keeper.fault = self.planted
            self.cache.partial_evict = self.planted.partial_evict

    def server_info_json(self) -> dict:
        """/server_info: the launch settings SGLang reports, then the live internal state."""
        return {
            **self._served_settings(),
            **self._schedule_settings(),
            **self.arch.server_info_json(),
            "disable_overlap_schedule": True,
            "speculative_algorithm": None,
            "enable_cache_report": False,
            "enable_metrics": self.settings.enable_metrics,
            "weight_version": "default",
            "api_key_required": self.settings.api_key is not None,
            "launch_command": self.launch_command,
            "max_total_num_tokens": self.settings.max_total_tokens,
            "max_req_input_len": self.context_length - 1,
            "startup_time": self.startup_time,
            "version": VERSION,
            **self._kltui_keys(),
            "internal_states": [self._internal_state()],
        }

    def _served_settings(self) -> dict[str, object]:
        """What is served and how it is loaded (the model path is the served folder)."""
        s, served = self.settings, str(self.served)
        return {
            "model_path": served,
            "tokenizer_path": served,
            "tokenizer_mode": "auto",
            "skip_tokenizer_init": s.skip_tokenizer_init,
            "load_format": "auto",
            "trust_remote_code": False,
            "dtype": dtype_name(s.dtype),
            "kv_cache_dtype": "auto",
            "context_length": self.context_length,
            "device": "cpu",
            "served_model_name": served,
            "is_embedding": False,
            "host": s.host,
            "port": s.port,
        }

    def _schedule_settings(self) -> dict[str, object]:
        """The scheduler's and the cache's settings, the ones the alignment depends on."""
        s = self.settings
        return {
            "max_running_requests": s.max_running_requests,
            "max_total_tokens": s.max_total_tokens,
            "chunked_prefill_size": s.chunked_prefill_size,
            "max_prefill_tokens": s.chunked_prefill_size,
            "schedule_policy": "fcfs",
            "page_size": s.page_size,
            "tp_size": 1,
            "dp_size": 1,
            "pp_size": 1,
            "ep_size": 1,
            "stream_interval": s.stream_interval,
            "incremental_streaming_output": s.incremental_streaming_output,
            "random_seed": self.random_seed,
            "attention_backend": "torch_native",
            "sampling_backend": "pytorch",
            "disable_radix_cache": s.disable_radix_cache,
            "enable_deterministic_inference": s.deterministic,
        }

    def _kltui_keys(self) -> dict[str, object]:
        """The keys only this server reports: that it is kltui's, and what fault it plants."""
        s = self.settings
        return {
            "kltui_reference_server": True,
            "kltui_fault": s.fault,
            "kltui_fault_window": s.fault_window if s.fault == "window-evict" else None,
            "kltui_checkpoint": Path(self.checkpoint).name,
            "kltui_arch": self.arch.name,
        }

    def _internal_state(self) -> dict[str, object]:
        """SGLang's counters beside the server's own state: flushes so far, and whether the
        planted fault is awake (--fault-after-flushes)."""
        waiting, running = self.scheduler.counts()
        cfg = self.model.config
        kv_bytes_per_token = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * cfg.head_dim * 4
        weight_bytes = sum(p.numel() for p in self.model.parameters()) * 4
        return {
            "last_gen_throughput": self.scheduler.stats.throughput(),
            "generated_tokens": self.scheduler.stats.generated_tokens,
            "forward_steps": self.scheduler.stats.steps,
            "kltui_flushes": self.flushes,
            "kltui_fault_active": self.engine.fault.name != "none",
            "num_running_reqs": running,
            "num_waiting_reqs": waiting,
            "cached_tokens": self.cache.total_tokens,
            "memory_usage": {
                "weight": weight_bytes / 2**30,
                "kvcache": self.cache.total_tokens * kv_bytes_per_token / 2**30,
                "token_capacity": self.settings.max_total_tokens,
            },
        }

    def loads_json(self) -> dict:
        """SGLang 0.5.23's /v1/loads?include=core, for the fields kltui reads."""
        waiting, running = self.scheduler.counts()
        return {
            "timestamp": datetime.now(UTC).isoformat(),
            "version": VERSION,
            "accelerator": None,
            "num_accelerators": 1,
            "loads": [
                {
                    "timestamp": time.time(),
                    "dp_rank": 0,
                    "num_running_reqs": running,
                    "num_waiting_reqs": waiting,
                    "num_used_tokens": self.cache.total_tokens,
                    "max_total_num_tokens": self.settings.max_total_tokens,
                    "max_running_requests": self.settings.max_running_requests,
                }
            ],
        }

    def metrics(self) -> str:
        """SGLang's Prometheus text for the names kltui reads (retractions, queue, cache)."""
        waiting, running = self.scheduler.counts()
        stats, cache = self.scheduler.stats, self.cache
        label = f'{{model_name="{Path(self.checkpoint).name}"}}'
        rows = [
            ("sglang:num_running_reqs", "gauge", running),
            ("sglang:num_queue_reqs", "gauge", waiting),
            ("sglang:token_usage", "gauge", cache.total_tokens / max(1, cache.max_tokens)),
            ("sglang:num_retracted_requests_total", "counter", stats.retracted),
            ("sglang:evicted_tokens_total", "counter", cache.evicted_tokens),
            ("sglang:generation_tokens_total", "counter", stats.generated_tokens),
        ]
        out = []
        for name, kind, value in rows:
            out += [f"# TYPE {name} {kind}", f"{name}{label} {float(value)!r}"]
        return "\n".join(out) + "\n"

    def model_info_json(self) -> dict:
        served_cfg = self.arch.config_json(
            {"num_hidden_layers": self.model.config.num_hidden_layers}
        )
        return {
            "model_path": str(self.served),
            "tokenizer_path": str(self.served),
            "is_generation": True,
            "preferred_sampling_params": None,
            "weight_version": "default",
            "has_image_understanding": False,
            "has_audio_understanding": False,
            "model_type": served_cfg.get("model_type", "llama"),
            "architectures": served_cfg.get("architectures", ["LlamaForCausalLM"]),
            "served_model_name": str(self.served),
            "load_format": "auto",
            "reasoning_parser": None,
            "tool_call_parser": None,
            "disaggregation_mode": "null",
        }


# ---- responses ----
