"""The HTML report: one self-contained file for reviewers (inline CSS, no script, no network).

Every piece of text that came from a server, a recording or a prompt file goes through `esc` (`kltui.untrusted.html_text`)
(html.escape). A Content-Security-Policy that forbids scripts and remote loads backs that up, so
even a missed escape could not run a token such as `<script>`. Heatmaps (reports/heatmap.py) are
palette PNGs embedded as data: URIs.
"""

from __future__ import annotations

import numpy as np

from kltui import __version__, fmt
from kltui.helpers.registry import HELPERS
from kltui.metrics.k3 import MIN_SAMPLES_FOR_STABLE_MEAN
from kltui.metrics.summary import Summary
from kltui.outputs.reports.common import (
    Origin,
    cross_rows,
    helper_names,
    helper_status,
    max_location,
    multi_server,
    prompt_summary,
    run_time,
    settings_rows,
    timestamp,
    verdict,
)
from kltui.outputs.reports.heatmap import heatmap_html
from kltui.session.compare import cross_server, describe_first_dict
from kltui.session.diagnosis import Diagnosis, diagnose
from kltui.session.store import HelperState, SessionStore
from kltui.untrusted import html_text as esc

CSP = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
    "base-uri 'none'; form-action 'none'"
)

MAX_SAMPLE_ROWS_OPEN = 16  # longer per-sample tables start folded
TOP_TOKENS = 10


CSS = """
:root{--ink:#1c2430;--muted:#5b6776;--line:#e3e8ee;--bg:#f3f5f8;--card:#fff;
--pass:#00785a;--pass-bg:#e3f4ee;--fail:#b34700;--fail-bg:#fdebdf;--warn:#8a5a00;
--warn-bg:#fff5dc;--info:#3b5b85;--info-bg:#e8eef7;
--mono:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.5 system-ui,-apple-system,
"Segoe UI",Roboto,"Helvetica Neue","DejaVu Sans",Arial,sans-serif}
main{max-width:1180px;margin:0 auto;padding:28px 24px 40px}
code{font-family:var(--mono);font-size:12.5px;background:#f0f3f7;padding:1px 5px;
border-radius:4px;overflow-wrap:anywhere}
h2{font-size:17px;margin:0 0 12px}h4{font-size:13.5px;margin:20px 0 8px;color:var(--ink)}
section,header.top{background:var(--card);border:1px solid var(--line);border-radius:10px;
padding:18px 22px;margin:0 0 16px}
header.top{border-left:6px solid var(--info);display:grid;grid-template-columns:1fr auto;
gap:4px 24px;align-items:center}
header.top.pass{border-left-color:var(--pass)}header.top.fail,header.top.error,
header.top.invalid{border-left-color:var(--fail)}header.top.interrupted{border-left-color:#c68a00}
.brand{font-weight:800;font-size:22px;letter-spacing:-.01em}
.brand span{font-weight:500;font-size:15px;color:var(--muted);margin-left:10px}
.verdict{grid-row:span 2;text-align:right}
.verdict-label{display:block;font-size:11px;text-transform:uppercase;letter-spacing:.1em;
color:var(--muted)}
.verdict-value{display:block;font-size:28px;font-weight:800;line-height:1.1}
.pass .verdict-value{color:var(--pass)}.fail .verdict-value,.error .verdict-value,
.invalid .verdict-value{color:var(--fail)}.interrupted .verdict-value{color:var(--warn)}
.tally{display:block;color:var(--muted);font-size:12.5px}
.meta{margin:0;color:var(--muted);font-size:12.5px}
.banner{background:var(--warn-bg);border:1px solid #f0d48a;color:#5c3d00;border-radius:8px;
padding:10px 14px;margin:0 0 16px}
.lede{color:var(--muted);margin:-6px 0 12px;font-size:13px}
table{border-collapse:collapse;width:100%;font-size:13px}
th,td{padding:6px 10px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
thead th{font-size:12px;color:var(--muted);font-weight:600;border-bottom:1.5px solid #cfd6df;
white-space:nowrap}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;font-family:var(--mono);
font-size:12.5px;white-space:nowrap}
table.results td:first-child{max-width:300px;overflow-wrap:anywhere}
tr.differs th,tr.differs td{background:var(--warn-bg)}thead th.n{font-family:inherit;font-size:12px}
table.tokens{width:auto;min-width:60%}
.strong{font-weight:700}.muted{color:var(--muted)}.where{color:var(--muted);font-size:11.5px}
table.results a{color:var(--ink);font-weight:600;text-decoration:none;border-bottom:1px dotted}
table.settings th[scope=row]{color:var(--muted);font-weight:500;width:220px}
.badge{display:inline-block;padding:1px 10px;border-radius:999px;font-size:12px;font-weight:700;
white-space:nowrap;background:var(--info-bg);color:var(--info)}
.badge.pass{background:var(--pass-bg);color:var(--pass)}
.badge.fail,.badge.error,.badge.invalid{background:var(--fail-bg);color:var(--fail)}
.badge.incomplete,.badge.interrupted{background:var(--warn-bg);color:var(--warn)}
.diag{border:1px solid var(--line);border-left:4px solid var(--info);border-radius:8px;
padding:10px 14px;margin:8px 0}
.diag.cond-exact{border-left-color:var(--pass)}.diag.cond-2,.diag.cond-1-2{
border-left-color:var(--fail)}.diag.cond-1{border-left-color:#c68a00}
.diag p{margin:6px 0 2px;font-weight:600}.diag p.next{font-weight:400}
.diag h4{margin:8px 0 0;font-size:12px;color:var(--muted)}.diag ul{margin:4px 0 0;padding-left:20px;
color:var(--muted)}
.diag-head{display:flex;gap:12px;align-items:center}.cond{font-size:11.5px;font-weight:700;
text-transform:uppercase;letter-spacing:.06em;color:var(--muted)}
.two{display:grid;grid-template-columns:1fr 1fr;gap:28px}.two p{margin:0 0 6px}
.hash code{font-size:11.5px}
dl.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(200px,1fr));gap:12px 20px;
margin:0}
dl.grid dt{font-size:12px;color:var(--muted)}dl.grid dd{margin:0;font-weight:600;
overflow-wrap:anywhere}
h2 code.srv{font-size:13px;font-weight:500;margin-left:6px;vertical-align:2px}
dl.cfg{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:0;font-size:13px}
dl.cfg dt{color:var(--muted)}dl.cfg dd{margin:0;font-family:var(--mono);font-size:12.5px}
ul.problems{list-style:none;margin:0;padding:0}
ul.problems li{padding:7px 10px;border-radius:6px;margin:4px 0;overflow-wrap:anywhere}
ul.problems li.err{background:var(--fail-bg)}ul.problems li.warn{background:var(--warn-bg)}
.kind{font-weight:700;text-transform:uppercase;font-size:11px;letter-spacing:.06em;
margin-right:8px}
.helper-head{display:flex;gap:12px;align-items:center;margin-bottom:10px}
.helper-head h2{margin:0;font-family:var(--mono);font-size:18px}
.note{margin:6px 0;padding:8px 12px;border-radius:6px;font-size:13px}
.note.err{background:var(--fail-bg);color:#7a2f00}.note.warn{background:var(--warn-bg);
color:#5c3d00}
.stats{display:grid;grid-template-columns:repeat(auto-fill,minmax(250px,1fr));gap:10px;
margin:12px 0 4px}
.stat{border:1px solid var(--line);border-radius:8px;padding:10px 14px;background:#fbfcfd}
.stat .label{font-size:12px;color:var(--muted);font-weight:600}
.stat .value{font-family:var(--mono);font-size:15px;font-weight:600;margin-top:2px}
.stat .big{font-size:21px}.stat .sub{color:var(--muted);font-size:12px;margin-top:2px}
figure.heat{margin:0}
.heat-plot{display:grid;grid-template-columns:44px 1fr;grid-template-rows:auto 22px}
.yaxis{position:relative;font:11px var(--mono);color:var(--muted)}
.yaxis span{position:absolute;right:8px;transform:translateY(-50%)}
.xaxis{grid-column:2;position:relative;font:11px var(--mono);color:var(--muted)}
.xaxis span{position:absolute;top:3px;transform:translateX(-50%)}
.xaxis span::before{content:"";position:absolute;left:50%;top:-4px;height:4px;
border-left:1px solid #9aa5b1}
.heat-frame{border:1px solid #cfd6df;background:#fff;line-height:0}
img.heatmap{display:block;width:100%;image-rendering:pixelated}
figcaption{color:var(--muted);font-size:12.5px;margin:6px 0 0 44px}
.legend{margin:12px 0 0 44px;display:flex;flex-wrap:wrap;gap:10px 18px;
align-items:flex-start}
.scale-title{font:600 12px var(--mono);line-height:14px;margin-top:12px}
.scale{position:relative;display:flex;height:44px;padding-top:12px}
.sw{display:block;width:34px;height:14px}
.scale i{position:absolute;top:30px;transform:translateX(-50%);font:10.5px var(--mono);
font-style:normal;color:var(--muted);white-space:nowrap}
.scale i::before{content:"";position:absolute;left:50%;top:-5px;height:4px;
border-left:1px solid #8a96a3}
.scale .tau{position:absolute;top:-2px;transform:translateX(-50%);font:700 11px var(--mono);
color:var(--ink)}
.scale .tau::after{content:"";position:absolute;left:50%;top:13px;height:15px;
border-left:2px solid var(--ink)}
.keys{display:flex;flex-wrap:wrap;gap:6px 14px;font-size:12px;color:var(--muted);
margin-top:12px}
.key{display:inline-flex;align-items:center;gap:5px}
.chip{display:inline-block;width:14px;height:14px;border:1px solid #c3cbd5}
details.samples{margin-top:14px}details.samples summary{cursor:pointer;font-weight:600;
color:var(--muted);font-size:13px;margin-bottom:6px}
tr.skip td{color:var(--muted);font-style:italic}tr.tail td:first-child{
box-shadow:inset 3px 0 0 var(--fail)}
footer{color:var(--muted);font-size:12px;margin-top:24px;line-height:1.6}
@media print{body{background:#fff}section,header.top{break-inside:avoid-page}
details.samples{display:block}}
"""


# --- page sections -------------------------------------------------------------------------

STATUS_LABEL = {
    "pass": "✓ pass",
    "fail": "✗ fail",
    "error": "! error",
    "invalid": "! invalid",
    "vacuous": "○ vacuous",
    "incomplete": "… incomplete",
    "interrupted": "… interrupted",
}


def _badge(status: str) -> str:
    cls = status if status in STATUS_LABEL else "unknown"
    return f'<span class="badge {cls}">{esc(STATUS_LABEL.get(status, status))}</span>'


def _num(x) -> str:
    return esc(fmt.sci(x))


def _max_at(summary: Summary) -> str:
    at = max_location(summary)
    if at is None:
        return ""
    return f" <span class='where'>sample {esc(at['sample'])} @ {esc(at['position'])}</span>"


def header_html(store: SessionStore, origin: Origin | None) -> str:
    run = store.run
    v = verdict(store)
    meta = [f"started {esc(timestamp(run_time(store, origin)))}"]
    if run is not None:
        meta.insert(0, f"run <code>{esc(run.run_id)}</code>")
        meta.append(f"recorded by kltui {esc(run.kltui_version)}")
    if origin is not None and origin.recording:
        meta.append(f"recording <code>{esc(origin.recording)}</code>")
    helpers = list(store.helpers.values())
    counts = {}
    for st in helpers:
        counts[helper_status(st)] = counts.get(helper_status(st), 0) + 1
    tally = ", ".join(f"{n} {esc(s)}" for s, n in counts.items()) or "no helper ran"
    down = sum(1 for s in (run.servers if run else []) if s.get("error"))
    if down:
        tally += f" · {down} server{'s' if down != 1 else ''} unreachable"
    return f"""<header class="top {v if v in STATUS_LABEL else "unknown"}">
<div class="brand">kltui<span>numerical alignment report</span></div>
<div class="verdict"><span class="verdict-label">verdict</span>
<span class="verdict-value">{esc(STATUS_LABEL.get(v, v))}</span>
<span class="tally">{len(helpers)} helper run{"s" if len(helpers) != 1 else ""}: {tally}</span>
</div>
<p class="meta">{" · ".join(meta)}</p>
</header>"""


def banners_html(store: SessionStore, origin: Origin | None) -> str:
    out = []
    if store.run is None:
        out.append("The recording holds no run: it ended before the servers were identified.")
    if origin is not None and origin.truncated:
        out.append(
            "The recording's last line was cut short (the run was killed while writing); "
            "everything up to the last complete event is shown."
        )
    if store.run is not None and store.finished is None:
        out.append("The run did not finish: results below are partial.")
    elif store.finished is not None and store.finished.verdict == "interrupted":
        out.append("The run was interrupted: results below are partial.")
    return "".join(f'<div class="banner">{esc(t)}</div>' for t in out)


def summary_html(store: SessionStore) -> str:
    if not store.helpers:
        return ""
    names = helper_names(store)
    rows = []
    for i, (key, st) in enumerate(store.helpers.items(), 1):
        s = st.summary or Summary()
        where = _max_at(s)
        rows.append(
            f"""<tr><td><a href="#h{i}">{esc(names[key])}</a></td>
<td>{_badge(helper_status(st))}</td>
<td class="n strong">{_num(s.avg_kl_div)}</td>
<td class="n">{_num(s.threshold if s.threshold is not None else st.threshold)}</td>
<td class="n">{esc(fmt.pct(s.tail_fraction))} <span class="muted">({esc(s.n_tail or 0)})</span></td>
<td class="n">{_num(s.max_k3)}{where}</td>
<td>{esc(fmt.position(s.first_divergence))}</td>
<td class="n">{esc(s.scored if s.scored is not None else st.n_scored)}/{esc(s.samples if s.samples is not None else st.n_samples)}</td>
<td class="n">{esc(s.skipped if s.skipped is not None else len(st.skipped))}</td></tr>"""
        )
    return f"""<section><h2>Results against thresholds</h2>
<p class="lede">A helper passes when avg_kl_div (the mean over samples of each sample's mean k3,
SGLang's definition) is below its threshold.</p>
<table class="results"><thead><tr><th>helper</th><th>result</th><th class="n">avg_kl_div</th>
<th class="n">threshold</th><th class="n">tokens &gt; τ</th><th class="n">max k3</th>
<th>first divergence</th><th class="n">scored</th><th class="n">skipped</th></tr></thead>
<tbody>{"".join(rows)}</tbody></table></section>"""


CONDITION_LABEL = {
    "exact": "bit-identical",
    "1": "condition 1 · shape-variant kernels",
    "2": "condition 2 · state bug",
    "1+2": "conditions 1 + 2",
    "unknown": "inconclusive",
}


def _items(title: str, lines: list[str]) -> str:
    if not lines:
        return ""
    return f"<h4>{esc(title)}</h4><ul>{''.join(f'<li>{esc(x)}</li>' for x in lines)}</ul>"


def diagnosis_html(diagnoses: list[Diagnosis]) -> str:
    if not diagnoses:
        return ""
    cards = []
    for d in diagnoses:
        kind = d.kind
        step = f'<p class="next">Next: {esc(d.next_step)}</p>' if d.next_step else ""
        cards.append(
            f"""<div class="diag cond-{esc(kind.replace("+", "-"))}">
<div class="diag-head"><span class="cond">{esc(CONDITION_LABEL.get(kind, kind))}</span>
<code>{esc(d.server)}</code></div>
<p>{esc(d.label)}</p>{step}{_items("Evidence", d.evidence)}{_items("Suspects", d.suspects)}</div>"""
        )
    return f"<section><h2>Diagnosis</h2>{''.join(cards)}</section>"


def cross_server_html(pairs: list[dict]) -> str:
    if not pairs:
        return ""
    blocks = []
    for pair in pairs:
        x, y = pair["servers"]
        rows = []
        for h, c in pair["helpers"].items():
            a, b = c["avg_kl_div"]
            same = {True: "identical", False: "differ", None: "–"}[c["identical"]]
            rows.append(
                f"<tr><td>{esc(h)}</td><td>{esc(same)}</td>"
                f'<td class="n">{c["identical_samples"]}/{c["comparable_samples"]}</td>'
                f"<td>{esc(describe_first_dict(c))}</td>"
                f'<td class="n">{esc(fmt.sci(a))}</td><td class="n">{esc(fmt.sci(b))}</td></tr>'
            )
        settings = "".join(
            f"<li>{esc(k)}: {esc(str(v[0]))} vs {esc(str(v[1]))}</li>"
            for k, v in pair["settings_differ"].items()
        )
        blocks.append(
            f"""<h3><code>{esc(x)}</code> vs <code>{esc(y)}</code></h3>
<p>{esc(pair["reading"])}</p>{f"<ul>{settings}</ul>" if settings else ""}
<table class="results"><thead><tr><th>helper</th><th>values</th>
<th class="n">identical samples</th><th>first difference</th>
<th class="n">avg_kl_div A</th><th class="n">avg_kl_div B</th></tr></thead>
<tbody>{"".join(rows)}</tbody></table>"""
        )
    return f"<section><h2>Servers compared</h2>{''.join(blocks)}</section>"


def servers_html(store: SessionStore) -> str:
    servers = store.run.servers if store.run else []
    if not servers:
        return ""
    errors = "".join(
        f'<p class="note err">{esc(s.get("url", "?"))} was not reachable: {esc(s["error"])}</p>'
        for s in servers
        if s.get("error")
    )
    rows = settings_rows(servers)
    if len(servers) == 1:  # one column of values reads better as a grid of labelled cells
        cells = "".join(
            f"<div><dt>{esc(label)}</dt><dd>{esc(values[0])}</dd></div>" for label, values in rows
        )
        url = esc(servers[0].get("url", "?"))
        return f"""<section><h2>Server <code class="srv">{url}</code></h2>{errors}
<dl class="grid">{cells}</dl></section>"""
    head = "".join(f"<th><code>{esc(s.get('url', '?'))}</code></th>" for s in servers)
    live = [i for i, srv in enumerate(servers) if not srv.get("error")]
    body = "".join(
        # Settings that differ between the reachable servers are what a comparison hinges on.
        f"<tr{' class=differs' if len({values[i] for i in live}) > 1 else ''}>"
        f"<th scope='row'>{esc(label)}</th>{''.join(f'<td>{esc(v)}</td>' for v in values)}</tr>"
        for label, values in rows
    )
    return f"""<section><h2>Servers</h2>{errors}
<p class="lede">Settings that differ between servers are highlighted.</p>
<table class="settings"><thead><tr><th>setting</th>{head}</tr></thead>
<tbody>{body}</tbody></table></section>"""


def _value(v: object) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return ", ".join(map(str, v))
    return str(v)


def prompts_html(store: SessionStore) -> str:
    if store.run is None:
        return ""
    ps = store.run.prompt_set or {}
    sha = ps.get("sha256")
    config = store.run.config or {}
    keys = (
        "helpers",
        "samples",
        "max_new_tokens",
        "temperature",
        "max_prompt_tokens",
        "seed",
        "preset",
        "threshold",
        "tail_threshold",
        "stream",
        "min_cache_hit_ratio",
    )
    cfg = "".join(
        f"<dt>{esc(k)}</dt><dd>{esc(_value(v))}</dd>"
        for k in keys
        if (v := config.get(k)) is not None
    )
    return f"""<section class="two"><div><h2>Prompt set</h2>
<p>{esc(prompt_summary(ps))}</p>
{f'<p class="hash">sha256 <code>{esc(sha)}</code></p>' if sha else ""}</div>
<div><h2>Run settings</h2><dl class="cfg">{cfg or "<dt>config</dt><dd>not recorded</dd>"}</dl>
</div></section>"""


def problems_html(store: SessionStore) -> str:
    if not store.problems:
        return ""
    items = []
    for p in store.problems:
        where = "/".join(x for x in (p.helper, p.phase) if x)
        items.append(
            f"""<li class="{"err" if p.fatal else "warn"}"><span class="kind">
{"error" if p.fatal else "warning"}</span><code>{esc(p.source)}</code>
{f'<span class="muted">[{esc(where)}]</span>' if where else ""} {esc(p.message)}</li>"""
        )
    return f"<section><h2>Problems and warnings</h2><ul class='problems'>{''.join(items)}</ul></section>"


def _stat(label: str, value: str, sub: str = "") -> str:
    return f"""<div class="stat"><div class="label">{label}</div><div class="value">{value}</div>
{f'<div class="sub">{sub}</div>' if sub else ""}</div>"""


def stats_html(st: HelperState) -> str:
    s = st.summary or Summary()
    avg, thr = s.avg_kl_div, (s.threshold if s.threshold is not None else st.threshold)
    source = f" · {esc(s.threshold_source)}" if s.threshold_source else ""
    if s.passed:
        relation = f"below the threshold {_num(thr)}{source}"
    else:
        relation = f"threshold {_num(thr)}{source}"
    boot = s.bootstrap_95
    cards = [
        _stat("avg_kl_div", f'<span class="big">{_num(avg)}</span>', relation),
        _stat(
            "95% bootstrap interval",
            f"{_num(boot[0])} – {_num(boot[1])}" if boot else "–",
            "of avg_kl_div, resampling samples (seeded)",
        ),
        _stat(
            "tokens with k3 &gt; τ",
            f"{esc(fmt.pct(s.tail_fraction))} ({esc(s.n_tail or 0)})",
            f"τ = {_num(s.tail_threshold if s.tail_threshold is not None else st.tail_threshold)} · "
            f"{esc(s.tokens if s.tokens is not None else '–')} tokens scored",
        ),
        _stat(
            "max k3",
            _num(s.max_k3),
            _max_at(s).strip(),
        ),
        _stat(
            "first divergence",
            esc(fmt.position(s.first_divergence)),
            f"{esc(s.samples_with_difference or 0)} of {esc(s.scored if s.scored is not None else st.n_scored)} "
            "samples differ at all",
        ),
        _stat(
            "token k3",
            f"mean {_num(s.token_mean_k3)}",
            f"p50 {_num(s.p50_k3)} · p99 {_num(s.p99_k3)}",
        ),
    ]
    if s.hits is not None:
        cards.append(_stat("cache hits", esc(s.hits), f"{esc(fmt.pct(s.hit_ratio))} of samples"))
    return f'<div class="stats">{"".join(cards)}</div>'


def notes_html(st: HelperState) -> str:
    s = st.summary or Summary()
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
    if st.summary is None:
        notes.append(("warn", f"helper did not finish (last phase: {st.phase})"))
    return "".join(f'<p class="note {c}">{esc(t)}</p>' for c, t in notes)


def top_tokens_html(st: HelperState) -> str:
    samples = [st.book.samples[i] for i in st.book.order]
    if not samples:
        return ""
    k = np.concatenate([s.k3 for s in samples])
    if not k.size:
        return ""
    owner = np.repeat(np.arange(len(samples)), [s.k3.size for s in samples])
    offset = np.concatenate([np.arange(s.k3.size) for s in samples])
    rank = np.where(np.isnan(k), np.inf, k)  # a NaN is a fault: list it first
    n = min(TOP_TOKENS, k.size)
    top = np.argpartition(-rank, n - 1)[:n]
    top = top[np.argsort(-rank[top], kind="stable")]
    top = [i for i in top if rank[i] > 0 or np.isnan(k[i])]
    if not top:
        return (
            '<h4>Largest k3 tokens</h4><p class="muted">Every scored token has bit-identical '
            "logprobs on both paths.</p>"
        )
    rows = []
    for i in top:
        s, p = samples[owner[i]], int(offset[i])
        rows.append(
            f"<tr><td class='n'>{esc(s.sample)}</td><td class='n'>{p}</td>"
            f"<td class='n'>{esc(int(s.token_ids[p]))}</td><td class='n'>{esc(repr(float(s.lp_a[p])))}</td>"
            f"<td class='n'>{esc(repr(float(s.lp_b[p])))}</td><td class='n strong'>{_num(float(k[i]))}</td></tr>"
        )
    spec = HELPERS.get(st.helper)
    side_b = spec.side_b if spec else "decode"
    return f"""<h4>Largest k3 tokens</h4><table class="tokens"><thead><tr><th class="n">sample</th>
<th class="n">position</th><th class="n">token id</th><th class="n">logprob A (prefill)</th>
<th class="n">logprob B ({side_b})</th><th class="n">k3</th></tr></thead>
<tbody>{"".join(rows)}</tbody></table>"""


def samples_html(st: HelperState) -> str:
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
            f"<td class='n strong'>{_num(m.mean_k3)}</td><td class='n'>{_num(m.max_k3)}"
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


def helper_html(i: int, st: HelperState, name: str, show_server: bool) -> str:
    server = f" <code class='srv'>{esc(st.server)}</code>" if show_server else ""
    if st.n_scored:
        body = stats_html(st)
    else:
        body = '<p class="muted">No sample was scored, so this helper has no figures.</p>'
    heat = f"<h4>Heatmap</h4>{heatmap_html(st)}" if st.n_scored or st.decoded_len else ""
    cross = cross_rows(st.summary)
    if cross:
        cells = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in cross)
        body = f'<h4>Against the baseline</h4><table class="cross">{cells}</table>' + body
    return f"""<section class="helper" id="h{i}">
<div class="helper-head"><h2>{esc(name)}</h2>{_badge(helper_status(st))}{server}</div>
{notes_html(st)}{body}{heat}{top_tokens_html(st)}{samples_html(st)}</section>"""


def html_report(store: SessionStore, origin: Origin | None = None) -> str:
    run = store.run
    names = helper_names(store)
    show_server = multi_server(store)
    helpers = "".join(
        helper_html(i, st, names[key], show_server)
        for i, (key, st) in enumerate(store.helpers.items(), 1)
    )
    title = f"kltui report · {verdict(store)}" + (f" · {run.run_id}" if run else "")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="kltui {esc(__version__)}">
<title>{esc(title)}</title><style>{CSS}</style></head>
<body><main>
{header_html(store, origin)}{banners_html(store, origin)}
{summary_html(store)}{diagnosis_html(diagnose(store))}{cross_server_html(cross_server(store))}
{servers_html(store)}
{prompts_html(store)}{problems_html(store)}{helpers}
<footer>Generated by kltui {esc(__version__)}. Per token k3 = exp(r) − 1 − r with r = logprob(A) −
logprob(B): A is a fresh prefill of prompt + output, B the decode that produced it (for
cross_engine, B is the baseline engine). k3 is 0 exactly when both logprobs are bit-identical.
</footer></main></body></html>
"""
