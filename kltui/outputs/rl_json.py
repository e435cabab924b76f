"""`kltui import --json OUT`: the import's result as one JSON document
(kltui/schemas/import.schema.json, docs/JSON.md), read from the store."""

from __future__ import annotations

from kltui import __version__
from kltui.session import jsonfile
from kltui.session.store import SessionStore
from kltui.words.rl import reading_words

K3_KEYS = (
    "samples",
    "scored",
    "skipped",
    "tokens",
    "avg_kl_div",
    "threshold",
    "tail_threshold",
    "token_mean_k3",
    "p50_k3",
    "p99_k3",
    "max_k3",
    "max_k3_sample",
    "max_k3_position",
    "n_tail",
    "tail_fraction",
    "samples_with_difference",
    "first_divergence",
    "bootstrap_95",
    "low_sample_warning",
    "status",
    "passed",
)


def import_document(store: SessionStore) -> dict:
    """The JSON document of an imported file (its one helper, and any re-scoring after it)."""
    finished = [(st, dict(st.summary.raw)) for st in store.helpers.values() if st.summary]
    main = next((st for st, raw in finished if isinstance(raw.get("rl"), dict)), None)
    raw: dict = next((r for st, r in finished if st is main), {})
    found = raw.get("rl")
    rl: dict = found if isinstance(found, dict) else {}
    rescored = [
        {"helper": st.helper, "server": st.server, **_k3(r)} for st, r in finished if st is not main
    ]
    return {
        "schema": "kltui-import/1",
        "kltui_version": __version__,
        "verdict": store.finished.verdict if store.finished else None,
        "source": rl.get("source", {}),
        "records": rl.get("records", 0),
        "usable": rl.get("usable", 0),
        "shown": rl.get("shown", 0),
        "k3": _k3(raw),
        "verl": rl.get("verl", {}),
        "slime": rl.get("slime", {}),
        "slime_veto_threshold": rl.get("slime_veto_threshold"),
        "by_step": rl.get("by_step", []),
        "gates": rl.get("gates", []),
        "reading": reading_words(rl.get("reading", {})),
        "differing_samples": rl.get("differing_samples"),  # null: recorded before the list
        "bad_records": rl.get("bad_records", 0),
        "bad": rl.get("bad", []),
        "rescored": rescored,
        "problems": [p.message for p in store.problems],
    }


def _k3(raw: dict) -> dict:
    return {k: raw.get(k) for k in K3_KEYS if k in raw}


def write_import_json(store: SessionStore, path: str) -> None:
    """Writes the document to `path` ("-": stdout)."""
    jsonfile.write_json_document(path, import_document(store), "import")
