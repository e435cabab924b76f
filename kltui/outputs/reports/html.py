"""The HTML report: one self-contained file for reviewers (inline CSS, no script, no network).

Every piece of text that came from a server, a recording or a prompt file goes through `esc` (`kltui.untrusted.html_text`)
(html.escape). A Content-Security-Policy that forbids scripts and remote loads backs that up, so
even a missed escape could not run a token such as `<script>`. Heatmaps (reports/heatmap.py) are
palette PNGs embedded as data: URIs.
"""

from __future__ import annotations

from kltui import __version__, fmt
from kltui.engines.geometry import geometry_of
from kltui.outputs.reports.common import (
    Origin,
    helper_names,
    helper_status,
    multi_server,
    prompt_summary,
    run_time,
    timestamp,
    verdict,
)
from kltui.outputs.reports.hf_judge_section import reference_html
from kltui.outputs.reports.html_css import CSS
from kltui.outputs.reports.html_helper import STATUS_LABEL, badge, helper_html, max_at, num_cell
from kltui.outputs.reports.multiturn_section import multiturn_html
from kltui.outputs.reports.rl_section import rl_html
from kltui.readings.cross_server import ServerPair, cross_server
from kltui.readings.diagnosis import Diagnosis, diagnose
from kltui.readings.fleet import fleet
from kltui.readings.fleet_model import Cell, Fleet
from kltui.session.helper_view import HelperView
from kltui.session.servers import settings_rows
from kltui.session.store import SessionStore
from kltui.untrusted import html_text as esc
from kltui.words.compare import first_difference
from kltui.words.cross_server import reading_line, uncompared
from kltui.words.diagnosis import said
from kltui.words.evidence import line as evidence_line
from kltui.words.fleet import failure_line, replica_cells, summary_line
from kltui.words.geometry import geometry_line
from kltui.words.report_headline import Partial, banner

CSP = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
    "base-uri 'none'; form-action 'none'"
)


# --- page sections -------------------------------------------------------------------------


def header_html(store: SessionStore, origin: Origin | None) -> str:
    """The report's heading: verdict, run id, times and versions."""
    run = store.run
    v = verdict(store)
    meta = [f"started {esc(timestamp(run_time(store, origin)))}"]
    if run is not None:
        meta.insert(0, f"run <code>{esc(run.run_id)}</code>")
        meta.append(f"recorded by kltui {esc(run.kltui_version)}")
    if origin is not None and origin.recording:
        meta.append(f"recording <code>{esc(origin.recording)}</code>")
    helpers = list(store.helpers.values())
    counts: dict[str, int] = {}
    for st in helpers:
        counts[helper_status(st)] = counts.get(helper_status(st), 0) + 1
    tally = ", ".join(f"{n} {esc(s)}" for s, n in counts.items()) or "no helper ran"
    down = sum(1 for s in store.identities() if s.error)
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
    """Warnings that the results are partial (no run, a cut-short recording, an unfinished run)."""
    out = []
    if store.run is None:
        out.append(Partial.NO_RUN)
    if origin is not None and origin.truncated:
        out.append(Partial.CUT_SHORT)
    if store.run is not None and store.finished is None:
        out.append(Partial.UNFINISHED)
    elif store.finished is not None and store.finished.verdict == "interrupted":
        out.append(Partial.INTERRUPTED)
    return "".join(f'<div class="banner">{esc(banner(k))}</div>' for k in out)


def reruns_html(origin: Origin | None) -> str:
    """`check --repeat`: each re-run compared bit for bit with the run before it."""
    if origin is None or not origin.reruns:
        return ""
    items = "".join(
        f'<li class="{"unknown" if same is None else "pass" if same else "fail"}">{esc(line)}</li>'
        for line, same in origin.reruns
    )
    return f"<section><h2>Re-runs (--repeat)</h2><ul class='reruns'>{items}</ul></section>"


def summary_html(store: SessionStore) -> str:
    """The results table, one row per helper and server."""
    if not store.helpers:
        return ""
    names = helper_names(store)
    rows = []
    for i, (key, st) in enumerate(store.helpers.items(), 1):
        v = HelperView.of(st)
        s = v.summary
        where = max_at(s)
        rows.append(
            f"""<tr><td><a href="#h{i}">{esc(names[key])}</a></td>
<td>{badge(v.result)}</td>
<td class="n strong">{num_cell(s.avg_kl_div)}</td>
<td class="n">{num_cell(v.threshold)}</td>
<td class="n">{esc(fmt.pct(s.tail_fraction))} <span class="muted">({esc(s.n_tail or 0)})</span></td>
<td class="n">{num_cell(s.max_k3)}{where}</td>
<td>{esc(fmt.position(s.first_divergence))}</td>
<td class="n">{esc(v.scored)}/{esc(v.samples)}</td>
<td class="n">{esc(v.skipped)}</td></tr>"""
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
    "1": "condition 1 · batch variance",
    "2": "condition 2 · state bug",
    "1+2": "conditions 1 + 2",
    "unknown": "inconclusive",
}


def _items(title: str, lines: list[str]) -> str:
    if not lines:
        return ""
    return f"<h4>{esc(title)}</h4><ul>{''.join(f'<li>{esc(x)}</li>' for x in lines)}</ul>"


def diagnosis_html(diagnoses: list[Diagnosis]) -> str:
    """One card per diagnosis."""
    if not diagnoses:
        return ""
    cards = []
    for d in diagnoses:
        kind, text = d.kind, said(d, explain=False)
        step = f'<p class="next">Next: {esc(text.next_step)}</p>' if text.next_step else ""
        # the statistics behind the reading, folded: `kltui check --explain` prints them
        stats = [evidence_line(e) for e in d.evidence if e.statistic]
        fold = (
            f"<details><summary>Statistics</summary>{_items('Tests', stats)}</details>"
            if stats
            else ""
        )
        cards.append(
            f"""<div class="diag cond-{esc(kind.replace("+", "-"))}">
<div class="diag-head"><span class="cond">{esc(CONDITION_LABEL.get(kind, kind))}</span>
<code>{esc(d.server)}</code></div>
<p>{esc(text.label)}</p>{step}{_items("Evidence", text.evidence)}{fold}{_items("Suspects", text.suspects)}</div>"""
        )
    return f"<section><h2>Diagnosis</h2>{''.join(cards)}</section>"


def cross_server_html(pairs: list[ServerPair]) -> str:
    """The server-vs-server comparison section."""
    if not pairs:
        return ""
    blocks = []
    for pair in pairs:
        x, y = pair.servers
        rows = []
        for h, c in pair.helpers.items():
            a, b = c.avg_kl_div
            same = {True: "identical", False: "differ", None: "not compared"}[c.identical]
            rows.append(
                f"<tr><td>{esc(h)}</td><td>{esc(same)}</td>"
                f'<td class="n">{c.diff.identical_samples}/{c.diff.comparable}</td>'
                f"<td>{esc(first_difference(c.diff))}</td>"
                f'<td class="n">{esc(fmt.sci(a))}</td><td class="n">{esc(fmt.sci(b))}</td></tr>'
            )
        settings = "".join(
            f"<li>{esc(k)}: {esc(str(v[0]))} vs {esc(str(v[1]))}</li>"
            for k, v in pair.settings_differ.items()
        )
        left = "".join(
            f"<li><code>{esc(h)}</code> not compared: {esc(why)}</li>"
            for h, why in uncompared(pair).items()
        )
        blocks.append(
            f"""<h3>A <code>{esc(x)}</code> vs B <code>{esc(y)}</code></h3>
<p>{esc(reading_line(pair))}</p>{f"<ul>{settings}</ul>" if settings else ""}\
{f'<ul class="uncompared">{left}</ul>' if left else ""}
<table class="results"><thead><tr><th>helper</th><th>values</th>
<th class="n">identical samples</th><th>first difference</th>
<th class="n">avg_kl_div A</th><th class="n">avg_kl_div B</th></tr></thead>
<tbody>{"".join(rows)}</tbody></table>"""
        )
    return f"<section><h2>Servers compared</h2>{''.join(blocks)}</section>"


def fleet_or_pairs_html(store: SessionStore) -> str:
    """A fleet run's comparison; for any other run, the servers compared pair by pair."""
    fl = fleet(store)
    return fleet_html(fl) if fl is not None else cross_server_html(cross_server(store))


def fleet_html(f: Fleet) -> str:
    """The fleet: its workers, the summary, each replica's verdict per helper (first group's
    first replica is the reference) and every helper's replicas x replicas matrix."""
    workers = "".join(
        f"<li><code>{esc(w['url'])}</code> {esc(str(w.get('worker_type')))}"
        + ("" if w.get("tested") else f": not checked: {esc(str(w.get('note')))}")
        + "</li>"
        for w in f.workers
    )
    group = f.group_of()
    helpers = list(f.matrices)
    rows = "".join(
        f"<tr><td><code>{esc(url)}</code></td>"
        f"<td class='n'>{group[url] + 1 if url in group else '–'}</td>"
        + "".join(f"<td>{esc(row[h])}</td>" for h in helpers)
        + "</tr>"
        for url, row in replica_cells(f).items()
    )
    head = "".join(f"<th>{esc(h)}</th>" for h in helpers)
    mats = "".join(_matrix_html(h, list(f.replicas), m) for h, m in f.matrices.items())
    return f"""<section><h2>Fleet</h2>
<p>router <code>{esc(str(f.router))}</code></p><ul>{workers}</ul>
<p>{esc(summary_line(f))}</p>{_gate_html(f)}
<table class="results"><thead><tr><th>replica</th><th class="n">group</th>{head}</tr></thead>
<tbody>{rows}</tbody></table>{mats}</section>"""


def _gate_html(f: Fleet) -> str:
    """`--fleet-require identical`'s outcome (nothing under the default `gate`)."""
    if f.require != "identical":
        return ""
    if (failure := failure_line(f)) is None:
        return "<p>fleet must be identical (--fleet-require identical): passed</p>"
    return (
        "<p><strong>fleet must be identical (--fleet-require identical): failed:</strong> "
        f"{esc(failure)}</p>"
    )


def _matrix_html(helper: str, urls: list[str], m: list[list[Cell | None]]) -> str:
    """One helper's replicas x replicas bit-equality matrix (numbered; the key lists URLs)."""
    if len(urls) > 16:  # a 40 x 40 table reads as noise: the per-replica table says it all
        return ""

    def cell(c: Cell | None) -> str:
        if c is None or c.identical is None:
            return "<td>·</td>"
        if not c.counted:  # a comparison that is no test of the path reads as none (issue 28)
            why = f"{c.comparable_samples} common samples, or a helper one replica did not test"
            return f"<td title='{esc(why)}'>·</td>"
        if c.identical:
            return "<td>=</td>"
        d = c.first
        at = f"s{d.sample}@{d.position}" if d else "≠"
        return f"<td title='{esc(at)}'>≠ {esc(at)}</td>"

    head = "".join(f"<th>{i + 1}</th>" for i in range(len(urls)))
    rows = "".join(
        f"<tr><th>{i + 1}</th>{''.join(cell(c) for c in row)}</tr>" for i, row in enumerate(m)
    )
    key = ", ".join(f"{i + 1} <code>{esc(u)}</code>" for i, u in enumerate(urls))
    return (
        f"<h3>{esc(helper)}: replicas x replicas</h3><p>{key}; = bit-identical, ≠ "
        f"s<i>sample</i>@<i>position</i> of the first difference, · not compared (or too few "
        "samples to count)</p>"
        f'<table class="results"><thead><tr><th></th>{head}</tr></thead><tbody>{rows}</tbody>'
        "</table>"
    )


def servers_html(store: SessionStore) -> str:
    """The servers' settings table (differences highlighted)."""
    servers = store.identities()
    if not servers:
        return ""
    errors = "".join(
        f'<p class="note err">{esc(s.get("url", "?"))} was not reachable: {esc(s.error)}</p>'
        for s in servers
        if s.error
    )
    rows = settings_rows(servers)
    states = [geometry_line(geometry_of(s)) for s in servers]
    if any(states):  # a stateful model's cache geometry (nothing for a dense one)
        rows.append(("state geometry", [st or "–" for st in states]))
    if len(servers) == 1:  # one column of values reads better as a grid of labelled cells
        cells = "".join(
            f"<div><dt>{esc(label)}</dt><dd>{esc(values[0])}</dd></div>" for label, values in rows
        )
        url = esc(servers[0].get("url", "?"))
        return f"""<section><h2>Server <code class="srv">{url}</code></h2>{errors}
<dl class="grid">{cells}</dl></section>"""
    head = "".join(f"<th><code>{esc(s.get('url', '?'))}</code></th>" for s in servers)
    live = [i for i, srv in enumerate(servers) if not srv.error]
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
    """The prompt set and the run's settings."""
    if store.run is None:
        return ""
    ps = store.run.prompt_set or {}
    sha = ps.get("sha256")
    config = store.config
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
    """The list of problems the run met."""
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


def page_head(title: str) -> str:
    """The opening of every self-contained kltui page: its CSP (nothing loaded from outside),
    the shared CSS and the escaped title, up to the opened <main>."""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="kltui {esc(__version__)}">
<title>{esc(title)}</title><style>{CSS}</style></head>
<body><main>"""


def html_report(store: SessionStore, origin: Origin | None = None) -> str:
    """The self-contained HTML report of a run."""
    run = store.run
    names = helper_names(store)
    show_server = multi_server(store)
    helpers = "".join(
        helper_html(i, st, names[key], show_server, store.token_text)
        for i, (key, st) in enumerate(store.helpers.items(), 1)
    )
    title = f"kltui report · {verdict(store)}" + (f" · {run.run_id}" if run else "")
    return f"""{page_head(title)}
{header_html(store, origin)}{banners_html(store, origin)}
{summary_html(store)}{reruns_html(origin)}{diagnosis_html(diagnose(store))}{fleet_or_pairs_html(store)}
{servers_html(store)}
{prompts_html(store)}{problems_html(store)}{rl_html(store)}{reference_html(store)}{multiturn_html(store)}{helpers}
<footer>Generated by kltui {esc(__version__)}. Per token k3 = exp(r) − 1 − r with r = logprob(A) −
logprob(B): A is a fresh prefill of prompt + output, B the decode that produced it (for
cross_engine, B is the baseline engine). k3 is 0 exactly when both logprobs are bit-identical.
</footer></main></body></html>
"""
