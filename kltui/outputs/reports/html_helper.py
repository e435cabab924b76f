"""One helper's section of the HTML report: its figures, notes, heatmap, most divergent
tokens and per-sample table. Every string from a server or recording goes through `esc`."""

from __future__ import annotations

from kltui import fmt
from kltui.metrics.k3 import MIN_SAMPLES_FOR_STABLE_MEAN
from kltui.metrics.summary import Summary
from kltui.outputs.hf_judge_rows import is_reference
from kltui.outputs.reports.common import (
    config_table,
    cross_rows,
    helper_status,
    max_location,
)
from kltui.outputs.reports.heatmap import heatmap_html
from kltui.outputs.reports.top_tokens import largest_k3, logprob
from kltui.registry import HELPERS
from kltui.session.helper_view import HelperView
from kltui.session.store import HelperState
from kltui.untrusted import UNKNOWN_TOKEN_TEXT, escape_controls
from kltui.untrusted import html_text as esc
from kltui.words.report_notes import helper_did_not_finish

MAX_SAMPLE_ROWS_OPEN = 16  # longer per-sample tables start folded

STATUS_LABEL = {
    "pass": "✓ pass",
    "fail": "✗ fail",
    "error": "! error",
    "invalid": "! invalid",
    "vacuous": "○ vacuous",
    "incomplete": "… incomplete",
    "interrupted": "… interrupted",
}


def badge(status: str) -> str:
    """A helper's status as an HTML badge."""
    cls = status if status in STATUS_LABEL else "unknown"
    return f'<span class="badge {cls}">{esc(STATUS_LABEL.get(status, status))}</span>'


def num_cell(x) -> str:
    """A number as the HTML tables show it."""
    return esc(fmt.sci(x))


def max_at(summary: Summary) -> str:
    """Where the maximum k3 sits, as the HTML shows it."""
    at = max_location(summary)
    if at is None:
        return ""
    return f" <span class='where'>sample {esc(at['sample'])} @ {esc(at['position'])}</span>"


def _stat(label: str, value: str, sub: str = "") -> str:
    return f"""<div class="stat"><div class="label">{label}</div><div class="value">{value}</div>
{f'<div class="sub">{sub}</div>' if sub else ""}</div>"""


def stats_html(st: HelperState) -> str:
    """A helper's figures against its gate."""
    v = HelperView.of(st)
    s = v.summary
    avg, thr, src = s.avg_kl_div, v.threshold, v.threshold_source
    source = f" · {esc(src.label)}" if src is not None else ""
    if s.passed:
        relation = f"below the threshold {num_cell(thr)}{source}"
    else:
        relation = f"threshold {num_cell(thr)}{source}"
    boot = s.bootstrap_95
    cards = [
        _stat("avg_kl_div", f'<span class="big">{num_cell(avg)}</span>', relation),
        _stat(
            "95% bootstrap interval",
            f"{num_cell(boot[0])} – {num_cell(boot[1])}" if boot else "–",
            "of avg_kl_div, resampling samples (seeded)",
        ),
        _stat(
            "tokens with k3 &gt; τ",
            f"{esc(fmt.pct(s.tail_fraction))} ({esc(s.n_tail or 0)})",
            f"τ = {num_cell(v.tail_threshold)} · "
            f"{esc(s.tokens if s.tokens is not None else '–')} tokens scored",
        ),
        _stat(
            "max k3",
            num_cell(s.max_k3),
            max_at(s).strip(),
        ),
        _stat(
            "first divergence",
            esc(fmt.position(s.first_divergence)),
            f"{esc(s.samples_with_difference or 0)} of {esc(v.scored)} samples differ at all",
        ),
        _stat(
            "token k3",
            f"mean {num_cell(s.token_mean_k3)}",
            f"p50 {num_cell(s.p50_k3)} · p99 {num_cell(s.p99_k3)}",
        ),
    ]
    if s.hits is not None:
        cards.append(_stat("cache hits", esc(s.hits), f"{esc(fmt.pct(s.hit_ratio))} of samples"))
    return f'<div class="stats">{"".join(cards)}</div>'


def notes_html(st: HelperState) -> str:
    """A helper's errors, cache-hit failures and warnings as notes."""
    v = HelperView.of(st)
    s = v.summary
    notes = []
    if s.error:
        notes.append(("err", f"error: {s.error}"))
    if s.hit_failure:
        notes.append(("err", s.hit_failure))
    if s.reason:
        notes.append(("warn", s.reason))
    if s.non_finite_tokens:
        notes.append(("err", f"{s.non_finite_tokens} tokens have a non-finite k3 (NaN or inf)"))
    if s.low_sample_warning and s.scored:
        notes.append(
            (
                "warn",
                f"only {s.scored} samples scored (fewer than {MIN_SAMPLES_FOR_STABLE_MEAN}): "
                "avg_kl_div is driven by its tail and can swing about 3x between runs",
            )
        )
    if not v.finished:
        notes.append(("warn", helper_did_not_finish(st.phase)))
    return "".join(f'<p class="note {c}">{esc(t)}</p>' for c, t in notes)


def token_html(text: str | None) -> str:
    """Token text, escaped, its spaces made visible as the TUI shows them ("␣"); a dim
    "(no text)" where nobody fetched it, never an empty cell."""
    if text is None:
        return f'<span class="muted">{UNKNOWN_TOKEN_TEXT}</span>'
    return f"<code>{esc(escape_controls(text).replace(' ', '␣'))}</code>"


def top_tokens_html(st: HelperState, token_text: dict[int, str] | None = None) -> str:
    """The tokens with the largest k3 of a helper, each with its text."""
    top = largest_k3(st, token_text)
    if top is None:
        return ""
    if not top:
        return (
            '<h4>Largest k3 tokens</h4><p class="muted">Every scored token has bit-identical '
            "logprobs on both paths.</p>"
        )
    rows = [
        f"<tr><td class='n'>{esc(t.sample)}</td><td class='n'>{t.position}</td>"
        f"<td class='n'>{esc(t.token_id)}</td><td>{token_html(t.text)}</td>"
        f"<td class='n'>{logprob(t.lp_a)}</td><td class='n'>{logprob(t.lp_b)}</td>"
        f"<td class='n'>{num_cell(t.r)}</td><td class='n strong'>{num_cell(t.k3)}</td></tr>"
        for t in top
    ]
    spec = HELPERS.get(st.helper)
    side_b = spec.side_b if spec else "decode"
    return f"""<h4>Largest k3 tokens</h4><table class="tokens"><thead><tr><th class="n">sample</th>
<th class="n">position</th><th class="n">token id</th><th>text</th><th class="n">logprob A (prefill)</th>
<th class="n">logprob B ({side_b})</th><th class="n">r = A − B</th><th class="n">k3</th></tr></thead>
<tbody>{"".join(rows)}</tbody></table>"""


def samples_html(st: HelperState) -> str:
    """The per-sample table of a helper, with each sample's heatmap strip."""
    rows = []
    # Samples never started have nothing to say; the heatmap already shows them unscored.
    for r in sorted(set(st.book.samples) | set(st.skipped) | set(st.decoded_len)):
        s = st.book.samples.get(r)
        if s is None:
            reason = st.skipped.get(r)
            text = f"skipped: {reason}" if reason is not None else "not scored"
            rows.append(
                f"<tr class='skip'><td class='n'>{r}</td><td colspan='8'>{esc(text)}</td></tr>"
            )
            continue
        m = s.metrics
        tail = " tail" if m.first_above_tail is not None else ""
        rows.append(
            f"<tr class='{tail.strip()}'><td class='n'>{r}</td><td class='n'>{m.n_tokens}</td>"
            f"<td class='n'>{esc(s.prompt_len)}</td><td class='n'>{esc(s.cached_tokens)}</td>"
            f"<td class='n strong'>{num_cell(m.mean_k3)}</td><td class='n'>{num_cell(m.max_k3)}"
            f"{f' <span class=where>@{m.argmax_k3}</span>' if m.max_k3 != 0 else ''}</td>"
            f"<td class='n'>{esc(fmt.sci(None) if m.first_divergence is None else m.first_divergence)}</td>"
            f"<td class='n'>{esc(fmt.sci(None) if m.first_above_tail is None else m.first_above_tail)}</td>"
            f"<td class='n'>{m.n_tail}</td></tr>"
        )
    if not rows:
        return ""
    opened = " open" if len(rows) <= MAX_SAMPLE_ROWS_OPEN else ""
    return f"""<details class="samples"{opened}><summary>Per-sample results ({len(rows)} samples)</summary>
<table class="per-sample"><thead><tr><th class="n">sample</th><th class="n">tokens</th>
<th class="n">prompt</th><th class="n">cached</th><th class="n">mean k3</th>
<th class="n">max k3 @ position</th><th class="n">first divergence</th><th class="n">first &gt; τ</th>
<th class="n">tokens &gt; τ</th></tr></thead><tbody>{"".join(rows)}</tbody></table></details>"""


def config_html(rows: list[dict]) -> str:
    """cross_engine's engine settings, side by side, with where each value was read."""
    if not rows:
        return ""

    def cell(v) -> str:
        return "–" if v is None else esc(v)

    body = "".join(
        f"<tr class='cfg-{esc(r.get('status'))}'><th>{cell(r.get('label'))}</th>"
        f"<td>{cell(r.get('sglang'))}</td><td>{cell(r.get('vllm'))}</td>"
        f"<td>{cell(r.get('status'))}</td><td class='muted'>{cell(r.get('source') or '')}</td></tr>"
        for r in rows
    )
    return (
        "<details open><summary>Engine settings (SGLang vs vLLM)</summary><table class='cross'>"
        "<thead><tr><th>setting</th><th>SGLang</th><th>vLLM</th><th>status</th>"
        f"<th>read from</th></tr></thead><tbody>{body}</tbody></table></details>"
    )


def helper_html(
    i: int,
    st: HelperState,
    name: str,
    show_server: bool,
    token_text: dict[int, str] | None = None,
) -> str:
    """One helper's section of the report (`token_text`: the run's token texts)."""
    server = f" <code class='srv'>{esc(st.server)}</code>" if show_server else ""
    if st.n_scored:
        body = stats_html(st)
    else:
        body = '<p class="muted">No sample was scored, so this helper has no figures.</p>'
    heat = f"<h4>Heatmap</h4>{heatmap_html(st)}" if st.n_scored or st.decoded_len else ""
    # the HF reference has a section of its own (reports/reference_section.py)
    cross = [] if is_reference(st) else cross_rows(st.summary)
    if cross:
        cells = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in cross)
        body = (
            f'<h4>Against the baseline</h4><table class="cross">{cells}</table>'
            + config_html(config_table(st.summary))
            + body
        )
    return f"""<section class="helper" id="h{i}">
<div class="helper-head"><h2>{esc(name)}</h2>{badge(helper_status(st))}{server}</div>
{notes_html(st)}{body}{heat}{top_tokens_html(st, token_text)}{samples_html(st)}</section>"""
