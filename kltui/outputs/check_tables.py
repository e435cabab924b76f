"""What `kltui check` prints of a run (`outputs/headless.py`): each server's line, the results
table, cross_engine's figures and its engine settings side by side."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from kltui import fmt
from kltui.engines.geometry import geometry_of
from kltui.engines.identity import ServerIdentity
from kltui.outputs.reports.common import contract_line, flip_line
from kltui.readings.floors import floors_of
from kltui.session.helper_view import HelperView
from kltui.session.store import SessionStore
from kltui.untrusted import console_markup, one_line, safe
from kltui.words.floors import ENGINES, how, verdict_line
from kltui.words.geometry import geometry_phrases
from kltui.words.server_facts import server_facts


def server_line(s: ServerIdentity) -> str:
    """One server as `kltui check` prints it (the facts are session.servers')."""
    url = console_markup(s.get("url", "?"))
    if s.error:
        return f"[red]✗[/] {url}: {console_markup(s.error)}"
    facts = server_facts(s) + geometry_phrases(geometry_of(s))
    return f"[bold]{url}[/] " + console_markup(" · ".join(facts))


def cross_line(s: Mapping[str, Any]) -> Text:
    """The migration guide's figures: agreement rates against its 95% line, |delta|, KL."""

    def rate(x):
        return "–" if x is None else f"{x * 100:.1f}%"

    line = s.get("agreement_line", 0.95)
    mism = s.get("first_token_mismatch")
    where = f"sample {mism['sample']} @ {mism['position']}" if mism else "none"
    out = Text.assemble(
        ("cross_engine: ", "bold"),
        f"top-1 agreement {rate(s.get('top1_agreement'))}, top-5 {rate(s.get('top5_agreement'))}"
        f" (line {line * 100:.0f}%), max |Δlogprob| {fmt.sci(s.get('max_abs_delta'))}, "
        f"mean {fmt.sci(s.get('mean_abs_delta'))}, union-top-k KL {fmt.sci(s.get('union_kl_mean'))}"
        f", first greedy token mismatch {where}",
    )
    c = s.get("contract")
    if isinstance(c, dict) and c.get("status") != "same":
        style = "bold red" if c.get("status") == "difference" else "yellow"
        out.append(f"; logprob contract {contract_line(c)}", style=style)
    fm = s.get("flip_margins")
    if isinstance(fm, dict) and fm.get("flips"):
        out.append(
            f"; top-1 flips {flip_line(fm)}", style="bold red" if fm.get("across_line") else ""
        )
    if s.get("config_mismatches"):
        out.append(f"; config mismatches: {', '.join(s['config_mismatches'])}", style="yellow")
    if s.get("config_unknown"):
        # never read an empty mismatch list as "the same": say what could not be compared
        out.append(f"; not known on both: {', '.join(s['config_unknown'])}", style="magenta")
    return out


def floors_table(s: Mapping[str, Any]) -> tuple[Table | None, Text] | None:
    """cross_engine's gap beside each engine's own noise, in the same figures, and the line
    that reads the gap against them (None: no floors in this run or recording)."""
    fl = floors_of(s)
    if fl is None:
        return None
    line = Text.assemble(("floors: ", "bold"), verdict_line(fl))
    if fl.get("error"):
        return None, line
    t = Table(title=f"each engine's own noise (floors): {how(fl)}", title_justify="left")
    for col in ("pair", "avg k3", "mean |Δ|", "max |Δ|", "top-1", "flips (across)", "differing"):
        t.add_column(col, justify="left" if col == "pair" else "right")
    gap = fl.get("gap") if isinstance(fl.get("gap"), dict) else {}
    rows: list[tuple[str, Any, str | None]] = [("SGLang vs vLLM (the gap)", gap, None)]
    rows += [(f"{name} vs itself", fl.get(key), key) for key, name in ENGINES]
    for label, f, key in rows:
        if not isinstance(f, dict):
            continue
        fm = f.get("flip_margins") if isinstance(f.get("flip_margins"), dict) else None
        zero = " (exactly 0)" if f.get("zero") else ""
        t.add_row(
            label,
            fmt.sci(f.get("avg_k3")) + zero,
            fmt.sci(f.get("mean_abs_delta")),
            fmt.sci(f.get("max_abs_delta")),
            fmt.pct(f.get("top1_agreement")),
            "–" if fm is None else f"{fm.get('flips')} ({fm.get('across_line')})",
            "–" if key is None else f"{f.get('differing_positions')}/{f.get('positions')}",
        )
    return t, line


def print_cross(console: Console, figures: Mapping[str, Any]) -> None:
    """cross_engine's figures, its floors and its settings table, as `kltui check` prints."""
    console.print(cross_line(figures), soft_wrap=True, emoji=False)
    if (floors := floors_table(figures)) is not None:
        if floors[0] is not None:
            console.print(floors[0])
        console.print(floors[1], soft_wrap=True, emoji=False)
    if (table := alignment_table(figures)) is not None:
        console.print(table)


_ROW_STYLE = {"match": "green", "mismatch": "yellow", "unknown": "magenta", "info": "dim"}


def alignment_table(s: Mapping[str, Any]) -> Table | None:
    """cross_engine's checklist: each setting as each engine reported it, and where from."""
    rows = s.get("alignment")
    if not isinstance(rows, list) or not rows:
        return None
    t = Table(title="engine settings (SGLang vs vLLM)", title_justify="left")
    for col in ("setting", "SGLang", "vLLM", "status", "read from"):
        t.add_column(col)
    for r in rows:
        if not isinstance(r, dict):
            continue
        status = str(r.get("status"))
        style = _ROW_STYLE.get(status, "")
        if status == "mismatch" and r.get("severity") == "refuse":
            style = "bold red"
        elif status == "mismatch" and r.get("severity") == "info":
            style = "dim yellow"
        t.add_row(
            safe(r.get("label") or r.get("key"), limit=60),
            safe("–" if r.get("sglang") is None else one_line(r.get("sglang"), 60)),
            safe("–" if r.get("vllm") is None else one_line(r.get("vllm"), 60)),
            safe(status, style),
            safe(r.get("source") or "", "dim", limit=80),
        )
    return t


def results_table(store: SessionStore) -> Table:
    """The results table, one row per helper and server."""
    t = Table(title="kltui results", title_justify="left")
    for col in (
        "helper",
        "scored",
        "skipped",
        "avg_kl_div",
        "threshold",
        "token mean k3",
        "max k3 (sample@pos)",
        "tail > tau",
        "first divergence",
        "time",
        "result",
    ):
        t.add_column(col, justify="right" if col not in ("helper", "result") else "left")
    multi = len({st.server for st in store.helpers.values()}) > 1
    for st in store.by_server():
        v = HelperView.of(st)
        s = v.summary
        name = st.key if multi else st.helper
        status = v.status
        style = {"pass": "green", "fail": "red"}.get(status, "yellow")
        mx = s.max_k3
        where = f" ({s.max_k3_sample}@{s.max_k3_position})" if s.max_k3_sample is not None else ""
        t.add_row(
            console_markup(name),
            f"{v.scored}/{v.samples}",
            str(v.skipped),
            fmt.sci(s.avg_kl_div),
            fmt.sci(v.threshold),
            fmt.sci(s.token_mean_k3),
            fmt.sci(mx) + where,
            f"{fmt.pct(s.tail_fraction)} ({(s.n_tail or 0)})",
            fmt.position(s.first_divergence),
            fmt.duration(st.elapsed) if v.finished else "–",
            f"[{style}]{console_markup(str(status))}[/]",
        )
    return t
