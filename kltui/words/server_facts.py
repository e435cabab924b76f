"""A server's identity in words: the short facts of `kltui check`'s server lines ("tp 1",
"radix on", ...) and the one-line summary of the reports. Which settings, under which labels
and how a value reads are `session/servers.py`'s; an hf: reference's setting left to its
default (`HfDefault`) is spelled out here as its worker resolves it (engines/hf.py)."""

from __future__ import annotations

from collections.abc import Mapping

from kltui.engines.identity import ServerIdentity
from kltui.session.servers import (
    NO_TOKENIZER,
    SETTINGS,
    VLLM_KEYS,
    HfDefault,
    fault_of,
    hf_settings,
    text,
)

HF_DEFAULT_WORDS = {
    HfDefault.DTYPE: "the server's, else the checkpoint's",
    HfDefault.DEVICE: "cuda when available, else cpu",
    HfDefault.ATTN: "transformers' default (sdpa)",
}


def hf_fact(key: str, value: object) -> str:
    """One hf: reference setting as a fact: its value, a default spelled out, or "?"."""
    if isinstance(value, HfDefault):
        return f"{key} {HF_DEFAULT_WORDS[value]}"
    return f"{key} {'?' if value is None else value}"


def server_facts(s: ServerIdentity, ran: Mapping[str, object] | None = None) -> list[str]:
    """A reachable server's identity as short plain-text facts ("tp 1", "radix on", ...);
    `ran`: what an hf: reference loaded as (its helper's `reference_loaded`), once known."""
    engine = s.get("engine", "sglang")
    model = s.get("model_path") or s.get("served_model_name") or "?"
    facts = [f"{engine} {s.get('version', '?')}", f"model {model}"]
    if engine == "vllm":
        facts[0] += " (baseline)"
        return facts + [f"{k} {s.get(k)}" for k in VLLM_KEYS if s.get(k) is not None]
    if engine == "hf":
        # the reference is known before its worker loads: what ran once it has (`ran`), else
        # what was asked, a default spelled out as the worker resolves it
        facts[0] = "HF transformers (the reference)"
        facts += [hf_fact(k, v) for k, v in hf_settings(s, ran).items()]
        sha = s.get("local_weights_sha256")
        facts.append(f"weights sha256 {str(sha)[:12]}…" if sha else "weights not hashed")
        return facts
    for st in SETTINGS:
        if st.line and st.key not in ("engine", "version", "model_path"):
            value = s.get(st.key, "?") if st.show is text else st.show(s.get(st.key))
            facts.append(f"{st.short} {value}" if st.short else str(value))
    if s.get("skip_tokenizer_init"):
        facts.append(NO_TOKENIZER)
    if (fault := fault_of(s)) is not None:
        facts.append(f"fault {fault}")
    return facts


def server_summary(s: ServerIdentity, ran: Mapping[str, object] | None = None) -> str:
    """One plain-text line naming a server and the settings that matter (not escaped)."""
    if s.get("error"):
        return f"{s.get('url', '?')}: unreachable ({s.get('error')})"
    return f"{s.get('url', '?')} · " + " · ".join(server_facts(s, ran))
