"""Reports built from a SessionStore (live or replayed): the JSON document `check --json` writes."""

from __future__ import annotations

from pathlib import Path

import orjson

from kltui import __version__
from kltui.codec import json_safe
from kltui.session import SessionStore

SUMMARY_FIELDS = (
    "status",
    "samples",
    "scored",
    "skipped",
    "avg_kl_div",
    "token_mean_k3",
    "p50_k3",
    "p99_k3",
    "max_k3",
    "max_k3_sample",
    "max_k3_position",
    "tail_fraction",
    "n_tail",
    "tail_threshold",
    "threshold",
    "threshold_source",
    "passed",
    "samples_with_difference",
    "first_divergence",
    "bootstrap_95",
    "low_sample_warning",
    "hits",
    "hit_ratio",
    "hit_failure",
    "error",
    "reason",
    "tokens",
    "non_finite_tokens",
)


def helper_entries(store: SessionStore) -> dict[str, dict]:
    """Keyed by helper name, or helper@server when several servers ran the same helper."""
    names = [st.helper for st in store.helpers.values()]
    out = {}
    for st in store.helpers.values():
        key = st.helper if names.count(st.helper) == 1 else st.key
        entry: dict = {"server": st.server}
        if st.summary is not None:
            entry.update({k: st.summary.get(k) for k in SUMMARY_FIELDS if k in st.summary})
            entry["per_sample"] = st.summary.get("per_sample", [])
        else:
            entry.update(
                {
                    "status": st.phase,
                    "samples": st.n_samples,
                    "scored": st.n_scored,
                    "passed": False,
                }
            )
        entry["skipped_samples"] = [{"index": s, "reason": r} for s, r in st.skipped.items()]
        out[key] = entry
    return out


def json_report(store: SessionStore) -> dict:
    run = store.run
    return json_safe(
        {
            "kltui_version": __version__,
            "run_id": run.run_id if run else None,
            "started_at": run.started_at if run else None,
            "servers": run.servers if run else [],
            "prompt_set": run.prompt_set if run else {},
            "config": run.config if run else {},
            "helpers": helper_entries(store),
            "problems": [
                {
                    "source": p.source,
                    "message": p.message,
                    "fatal": p.fatal,
                    "helper": p.helper,
                    "phase": p.phase,
                }
                for p in store.problems
            ],
            "verdict": store.finished.verdict if store.finished else "interrupted",
        }
    )


def write_json(store: SessionStore, path: str) -> None:
    Path(path).write_bytes(orjson.dumps(json_report(store), option=orjson.OPT_INDENT_2))
