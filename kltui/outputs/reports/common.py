"""Reports built from a SessionStore (live or replayed): the JSON document `check --json` writes,
and the pieces the HTML, Markdown and JUnit reports share (names, statuses, server settings).

Reports never compute metrics: every number comes from a helper's summary, its ScoreBook or
`diagnosis.diagnose` or `compare`. Everything read from a recording is untrusted text; each format escapes it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from kltui import __version__, fmt
from kltui.metrics.summary import Summary
from kltui.outputs.reports.cross_server_json import pair_entry
from kltui.outputs.reports.multiturn_json import multiturn_entry, reading_of
from kltui.readings.batch_sizes import probe_json
from kltui.readings.cross_server import cross_server
from kltui.readings.diagnosis import diagnose
from kltui.readings.fleet import fleet
from kltui.readings.floors import floors_of
from kltui.readings.three_way import three_way
from kltui.session import jsonfile
from kltui.session.codec import tag_floats
from kltui.session.helper_view import HelperView
from kltui.session.store import HelperState, SessionStore
from kltui.words.diagnosis import to_json as diagnosis_json
from kltui.words.fleet import fleet_json
from kltui.words.floors import floor_rows, verdict_line
from kltui.words.three_way import three_way_json

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
    "hit_rule",
    "hit_step",
    "cache_counts",
    "kv_pool_tokens",
    "hit_input_tokens",
    "separator_ids",
    "separator_source",
    "error",
    "reason",
    "tokens",
    "non_finite_tokens",
    "id_mismatch_tokens",
    "id_mismatches",
    "protocol",
)


# one entry of a helper's per_sample list; a key a helper did not report is null
PER_SAMPLE_FIELDS = (
    "index",
    "n_tokens",
    "prompt_len",
    "cached_tokens",
    "mean_k3",
    "max_k3",
    "first_divergence",
    "first_above_tail",
    "n_tail",
    "n_nonzero",
    "id_mismatch",
)


# cross_engine's figures in the JSON report: report name -> key of the helper's summary
CROSS_FIELDS = {
    "top1_agreement": "top1_agreement",
    "top5_agreement": "top5_agreement",
    "max_abs_delta": "max_abs_delta",
    "mean_abs_delta": "mean_abs_delta",
    "union_topk_kl": "union_kl_mean",
    "first_greedy_mismatch": "first_token_mismatch",
    "config_mismatches": "config_mismatches",
    "config_unknown": "config_unknown",
}
# cross_engine's objects in the JSON report (not JUnit properties): report name -> summary key
CROSS_OBJECTS = {
    "config_table": "alignment",
    "flip_margins": "flip_margins",
    "contract": "contract",
    "floors": "floors",
}

# hf_reference's object in the JSON report (`reference`): report name -> summary key
REFERENCE_FIELDS = {
    "engine": "engine",
    "reference": "reference",
    "union_exact": "union_exact",
    "union_coverage": "union_coverage",
    "reference_flips": "reference_flips",
    "across_dtypes": "across_dtypes",
    "config_diff": "reference_alignment",
    "loaded": "reference_loaded",
    "per_sample": "reference_per_sample",
    "engines_pair": "engines_pair",
}


def reference_fields(summary: Summary | None) -> dict | None:
    """hf_reference's figures against the reference (None for every other helper)."""
    if summary is None or not summary.has("reference_flips"):
        return None
    return {name: summary.figures.get(key) for name, key in REFERENCE_FIELDS.items()}


def reference_ran(store: SessionStore) -> dict | None:
    """What the hf: reference loaded as (dtype, device, attention, ...), from hf_reference's
    summary; None before it loaded or in a run without one."""
    for st in store.helpers.values():
        fields = reference_fields(st.summary)
        if fields is not None and isinstance(fields.get("loaded"), dict) and fields["loaded"]:
            return fields["loaded"]
    return None


def contract_line(c: object) -> str:
    """The logprob contract verdict in one line ("not checked" for older recordings)."""
    if not isinstance(c, dict):
        return "not checked"
    status = str(c.get("status"))
    if status == "difference":
        return str(c.get("message"))
    return f"{status}: {c.get('message')}"


def flip_line(fm: object) -> str:
    """One line on the top-1 flips and their margins (the same text in every view)."""
    if not isinstance(fm, dict) or not fm.get("flips"):
        return "none"
    line = fm.get("line")
    text = (
        f"{fm.get('flips')}: {fm.get('within_line')} inside {line:g} nats (expected near a tie), "
        f"{fm.get('across_line')} across (not rounding)"
    )
    if fm.get("margin_unknown"):
        text += f", {fm['margin_unknown']} without a second token"
    big = fm.get("largest")
    if isinstance(big, dict) and fm.get("max_margin") is not None:
        text += (
            f"; widest {fmt.sci(fm['max_margin'])} nats at sample {big.get('sample')} @ "
            f"{big.get('position')}, median {fmt.sci(fm.get('median_margin'))}"
        )
    return text


def flip_properties(fm: object) -> list[tuple[str, object]]:
    """The flip summary as flat JUnit properties (name suffix, value)."""
    if not isinstance(fm, dict):
        return []
    return [
        ("flips", fm.get("flips")),
        ("flips_within_margin_line", fm.get("within_line")),
        ("flips_across_margin_line", fm.get("across_line")),
        ("flip_margin_line", fm.get("line")),
        ("flip_max_margin", fm.get("max_margin")),
    ]


def cross_fields(summary: Summary | None) -> dict | None:
    """The baseline comparison's figures (None for every helper but cross_engine)."""
    if summary is None or not summary.has("agreement_line"):
        return None
    return {name: summary.figures.get(key) for name, key in CROSS_FIELDS.items()}


def cross_rows(summary: Summary | None) -> list[tuple[str, str]]:
    """(label, plain-text value) of the cross-engine figures, for Markdown, HTML and JUnit."""
    f = cross_fields(summary)
    if f is None or summary is None:
        return []

    def rate(x) -> str:
        return "–" if x is None else f"{x * 100:.1f}%"

    line = summary.figures.get("agreement_line")
    where = f.get("first_greedy_mismatch")
    return [
        (
            "top-1 agreement",
            rate(f["top1_agreement"]) + (f" (line {line * 100:.0f}%)" if line else ""),
        ),
        ("top-5 agreement", rate(f["top5_agreement"])),
        ("max |Δ logprob|", fmt.sci(f["max_abs_delta"])),
        ("mean |Δ logprob|", fmt.sci(f["mean_abs_delta"])),
        ("union top-k KL", fmt.sci(f["union_topk_kl"])),
        (
            "first greedy mismatch",
            f"sample {where.get('sample')} @ {where.get('position')}"
            if isinstance(where, dict)
            else "none",
        ),
        ("top-1 flips", flip_line(summary.figures.get("flip_margins"))),
        ("logprob contract", contract_line(summary.figures.get("contract"))),
        ("config mismatches", ", ".join(map(str, f["config_mismatches"] or [])) or "none"),
        # an empty mismatch list is not "the same": what one side does not report is listed
        ("not known on both", ", ".join(map(str, f["config_unknown"] or [])) or "none"),
        *floor_rows(floors_of(summary.figures)),
    ]


def config_table(summary: Summary | None) -> list[dict]:
    """cross_engine's settings table (rows of `kltui.metrics.alignment`), [] for other helpers
    and older recordings; values came from servers: escape them for the medium."""
    if summary is None or not summary.has("agreement_line"):
        return []
    rows = summary.figures.get("alignment")
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


@dataclass(frozen=True)
class Origin:
    """Where a store's events came from, shown in report headers."""

    recording: str | None = None
    truncated: bool = False  # the recording's last line was cut (a killed run)
    created: float | None = None  # the recording header's wall-clock time
    # `check --repeat`: each re-run's comparison with the run before ("re-run 2 vs 1:
    # bit-identical") and whether it was identical (None: nothing comparable)
    reruns: tuple[tuple[str, bool | None], ...] = ()


def verdict(store: SessionStore) -> str:
    """The run's verdict (interrupted when it never finished)."""
    return store.finished.verdict if store.finished else "interrupted"


def helper_names(store: SessionStore) -> dict[str, str]:
    """helper key -> helper name, or helper@server when several servers ran the same helper."""
    names = [st.helper for st in store.helpers.values()]
    return {
        key: st.helper if names.count(st.helper) == 1 else st.key
        for key, st in store.helpers.items()
    }


def helper_status(st: HelperState) -> str:
    """pass | fail | vacuous | error | invalid from the summary; error or incomplete without."""
    return HelperView.of(st).result


def helper_seconds(st: HelperState) -> float | None:
    """The helper's duration on the store's clock (session.fold times a replayed store)."""
    return HelperView.of(st).seconds


def max_location(summary: Summary) -> dict | None:
    """{"sample", "position"} of the largest k3, or None when there is none worth pointing at
    (nothing scored, or every token bit-identical so "the max" is just the first token)."""
    if summary.max_k3_sample is None or summary.max_k3 == 0:
        return None
    return {"sample": summary.max_k3_sample, "position": summary.max_k3_position}


def multi_server(store: SessionStore) -> bool:
    """Whether the helpers ran on more than one server."""
    return len({st.server for st in store.helpers.values()}) > 1


def prompt_summary(ps: dict) -> str:
    """The prompt set as one line (source, count, tokens, lengths)."""
    if not ps:
        return "no prompt set recorded"
    if ps.get("source") == "import":  # a file: what it is and holds, no prompt-set settings
        n = ps.get("n")
        return (
            f"import: {ps.get('path')}, {ps.get('adapter')} (checked against "
            f"{ps.get('checked_against')}), {(ps.get('bytes') or 0) / 1e6:.1f} MB"
            + (f", {n} records" if isinstance(n, int) else "")
        )
    return (
        f"{ps.get('source', '?')}: {ps.get('n', '?')} prompts, {ps.get('tokens', '?')} tokens "
        f"(length {ps.get('min_len', '?')}–{ps.get('max_len', '?')}, "
        f"max_prompt_tokens {ps.get('max_prompt_tokens')}, seed {ps.get('seed', '?')})"
    )


def timestamp(epoch: float | None) -> str:
    """An epoch time as UTC text."""
    if not isinstance(epoch, int | float):
        return "unknown time"
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(epoch))


def run_time(store: SessionStore, origin: Origin | None) -> float | None:
    """When the run started (else when the recording was created)."""
    if store.run is not None:
        return store.run.started_at
    return origin.created if origin else None


def helper_entries(store: SessionStore) -> dict[str, dict]:
    """Keyed by helper name, or helper@server when several servers ran the same helper.

    Every entry has every key (docs/JSON.md): what a helper did not report is null."""
    names = helper_names(store)
    out = {}
    for key, st in store.helpers.items():
        entry: dict = {"server": st.server, **dict.fromkeys(SUMMARY_FIELDS)}
        entry.update(dict.fromkeys(CROSS_FIELDS))
        entry.update(dict.fromkeys(CROSS_OBJECTS))
        entry["reference"] = None
        entry["multiturn"] = multiturn_entry(reading_of(store, st))
        v = HelperView.of(st)
        if v.finished:
            # the JSON copies what the helper reported, key for key
            entry.update(v.reported(SUMMARY_FIELDS))
            # sent once, in HelperStarted (older recordings: in the summary too)
            entry["threshold"], entry["tail_threshold"] = v.threshold, v.tail_threshold
            src = v.threshold_source
            entry["threshold_source"] = src.label if src is not None else None
            entry["status"] = v.result  # older recordings: from `passed`
            entry.update(cross_fields(v.summary) or {})
            if cross_fields(v.summary) is not None:
                entry.update(
                    {name: v.summary.figures.get(key) for name, key in CROSS_OBJECTS.items()}
                )
                if isinstance(fl := entry.get("floors"), dict):
                    entry["floors"] = {**fl, "line": verdict_line(fl)}
            entry["reference"] = reference_fields(v.summary)
            entry["per_sample"] = [
                {**dict.fromkeys(PER_SAMPLE_FIELDS), **s} if isinstance(s, dict) else s
                for s in v.summary.per_sample
            ]
        else:
            entry.update(
                {
                    "status": v.result,  # error, or incomplete (cut short)
                    "samples": v.samples,
                    "scored": v.scored,
                    "passed": False,
                    "per_sample": [],
                }
            )
        entry["skipped_samples"] = [{"index": s, "reason": r} for s, r in st.skipped.items()]
        out[names[key]] = entry
    return out


def server_json(s: dict) -> dict:
    """A server's identity with every key its kind has (null where older recordings or the
    server did not say). vLLM's settings stay as reported: its `quantization: null` means "not
    quantized", so an unreported setting is absent, not null."""
    if not isinstance(s, dict):
        return s
    if "error" in s:
        return {
            "url": s.get("url"),
            "engine": s.get("engine"),
            "error": s["error"],
            "error_kind": s.get("error_kind"),
        }
    if s.get("engine", "sglang") == "sglang":
        from kltui.engines.sglang import IDENTITY_KEYS  # here: reports need no httpx otherwise

        return {**dict.fromkeys(IDENTITY_KEYS), **s, "engine": "sglang"}
    return s


def config_json(config: dict) -> dict:
    """The run's config with every key today's kltui records (null where an older recording
    has none)."""
    from kltui.run.config import RunConfig

    # a fleet run's router and workers are the report's own `fleet` entry
    entry = {**dict.fromkeys(RunConfig.record_keys()), **config}
    entry.pop("fleet", None)
    return entry


def json_report(store: SessionStore) -> dict:
    """The JSON document `check --json` writes (docs/JSON.md)."""
    run = store.run
    return tag_floats(
        {
            "kltui_version": __version__,
            "run_id": run.run_id if run else None,
            "started_at": run.started_at if run else None,
            "servers": [server_json(s) for s in run.servers] if run else [],
            "prompt_set": run.prompt_set if run else {},
            "config": config_json(run.config) if run else {},
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
            "diagnosis": [diagnosis_json(d) for d in diagnose(store)],
            "cross_server": [pair_entry(pair) for pair in cross_server(store)],
            "fleet": None if (fl := fleet(store)) is None else fleet_json(fl),
            "three_way": None if (tw := three_way(store)) is None else three_way_json(tw),
            "verdict": verdict(store),
            "repeat": None,  # `check --repeat N` (N > 1) fills it in
            "stress": None,  # `check --stress LEVEL` fills it in (readings/stress.py)
            "batch_probe": [probe_json(ev) for ev in store.batch_probes] or None,
        }
    )


def write_json(store: SessionStore, path: str, extra: dict | None = None) -> None:
    """Write the JSON document of a run, with extra top-level keys."""
    doc = json_report(store)
    if extra:
        doc.update(extra)
    jsonfile.write_json_document(path, doc, "check")
