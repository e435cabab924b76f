"""What a server's identity says: the settings that decide what an avg_kl_div means, listed
once for every view: the TUI's servers panel, `kltui check`'s server lines, the reports' table
and summaries, the JUnit properties and the cross-server comparison. Each view draws them its
own way; which settings, under which labels, and how a value reads, are decided here.

Every value came from a server (RunStarted.servers): views escape it for their medium. The
one-line facts and summary are said by `words/server_facts.py`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from kltui.engines.identity import ServerIdentity


def on_off(value) -> str:
    """A boolean setting as on / off (– when unknown)."""
    return "–" if value is None else ("on" if value else "off")


def off_on(value) -> str:
    """For SGLang's `disable_*` flags: True reads "off"."""
    return "–" if value is None else ("off" if value else "on")


def text(value) -> str:
    """A setting's value as text (– when unknown)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "–" if value is None else str(value)


@dataclass(frozen=True)
class Setting:
    """One server setting: its identity key, its labels and how it is shown."""

    key: str  # the identity key (RunStarted.servers[i][key])
    label: str  # in the reports' settings table
    short: str  # in one-line views: "tp 1", "radix on" ("" shows the value alone)
    show: Callable[[object], str] = text
    always: bool = True  # a table row even when no server reports it
    compared: bool = False  # a difference between two servers can explain different numbers
    line: bool = False  # in the one-line summary of an SGLang server


SETTINGS: tuple[Setting, ...] = (
    Setting("engine", "engine", "", line=True),
    Setting("version", "version", "", compared=True, line=True),
    Setting("model_path", "model", "model", compared=True, line=True),
    Setting("served_model_name", "served model name", "served", always=False),
    Setting("weight_version", "weight version", "weights", always=False),
    Setting("tp_size", "tensor parallel", "tp", compared=True, line=True),
    Setting("dp_size", "data parallel", "dp", always=False),
    Setting("dtype", "dtype", "dtype", compared=True, line=True),
    Setting("attention_backend", "attention backend", "attn", compared=True, line=True),
    Setting("page_size", "page size", "page", compared=True, line=True),
    Setting("disable_radix_cache", "radix cache", "radix", off_on, compared=True, line=True),
    Setting(
        "enable_deterministic_inference",
        "deterministic inference",
        "deterministic",
        on_off,
        compared=True,
        line=True,
    ),
    Setting("disable_cuda_graph", "cuda graph", "cuda graph", off_on, compared=True, line=True),
    Setting(
        "chunked_prefill_size",
        "chunked prefill size",
        "chunked prefill",
        always=False,
        compared=True,
    ),
    Setting("sampling_backend", "sampling backend", "sampling", always=False),
    Setting("speculative_algorithm", "speculative algorithm", "speculative", always=False),
    Setting(
        "incremental_streaming_output",
        "incremental streaming",
        "incremental",
        on_off,
        always=False,
    ),
    Setting("context_length", "context length", "context", always=False),
    Setting("random_seed", "random seed", "seed", always=False),
    # present only for a server started with --skip-tokenizer-init (engines.server_identity)
    Setting(
        "skip_tokenizer_init",
        "server tokenizer",
        "",
        lambda v: "none (--skip-tokenizer-init): ids only" if v else "yes",
        always=False,
    ),
    # the reference server's planted bug (none on a real server, so no row there)
    Setting("kltui_fault", "fault (reference server)", "fault", always=False, compared=True),
)
BY_KEY = {s.key: s for s in SETTINGS}
# Settings whose difference between two servers can explain different numbers.
COMPARED = tuple(s.key for s in SETTINGS if s.compared)
# What identifies a server in a one-line summary (and in JUnit properties).
SUMMARY_KEYS = (*(s.key for s in SETTINGS if s.line), "kltui_fault")
# vLLM (the baseline) reports other things; SGLang's radix and deterministic flags do not apply.
VLLM_KEYS = ("max_model_len", "dtype", "tp_size", "logprobs_mode")


NO_TOKENIZER = "no tokenizer (--skip-tokenizer-init)"


def settings_rows(servers: list[ServerIdentity]) -> list[tuple[str, list[str]]]:
    """(label, one value per server) for every setting worth showing for these servers."""
    ok = [s for s in servers if not s.get("error")]
    rows = []
    for st in SETTINGS:
        if st.always or any(s.get(st.key) is not None for s in ok):
            rows.append(
                (st.label, ["–" if s.get("error") else st.show(s.get(st.key)) for s in servers])
            )
    return rows


def fault_of(s: ServerIdentity) -> str | None:
    """The fault a reference server was started with, or None."""
    fault = s.get("kltui_fault")
    return None if fault in (None, "none", "") else str(fault)


class HfDefault(StrEnum):
    """An hf: reference's setting left to its default, named by its key; its worker resolves it
    (engines/hf.py) and `words/server_facts.py` says how."""

    DTYPE = "dtype"
    DEVICE = "device"
    ATTN = "attn_implementation"


HF_KEYS = ("dtype", "device", "attn_implementation", "batch_size")


def hf_settings(
    s: ServerIdentity, ran: Mapping[str, object] | None = None
) -> dict[str, object | HfDefault | None]:
    """An hf: reference's settings: what ran once its worker has loaded (`ran`: its helper's
    `reference_loaded`), else what was asked; a setting left to its default is its HfDefault
    (None: neither known nor defaulted)."""
    defaults = {d.value: d for d in HfDefault}
    out: dict[str, object | HfDefault | None] = {}
    for key in HF_KEYS:
        value = next((v for v in ((ran or {}).get(key), s.get(key)) if v is not None), None)
        out[key] = defaults.get(key) if value is None else value
    return out
