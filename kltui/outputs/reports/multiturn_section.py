"""multiturn in the Markdown, HTML and JUnit reports: the reading's lines (words/multiturn.py)
and, in Markdown and HTML, the turns that diverge or missed their hit, each with its hit
(actual / expected), mean k3 and first divergent position. Empty for a run without it."""

from __future__ import annotations

from html import escape

from kltui import fmt
from kltui.outputs.reports.multiturn_json import reading_of
from kltui.readings.multiturn import HitKind, MultiturnReading, TurnRow, read_multiturn
from kltui.session.store import HelperState, SessionStore
from kltui.untrusted import html_text, md_text
from kltui.words.multiturn import HIT_WORDS, divergence_line, expected_text, reading_lines

COLUMNS = ("turn", "cached", "expected", "hit", "mean k3", "first divergence")


def _cells(r: TurnRow) -> list[str]:
    first = "none" if r.first_divergence is None else str(r.first_divergence)
    return [
        f"{r.place.label} turn {r.place.turn}",
        str(r.place.cached_tokens),
        expected_text(r.expected),
        HIT_WORDS[r.hit],
        fmt.sci(r.mean_k3),
        first,
    ]


def _notable(m: MultiturnReading) -> list[TurnRow]:
    return [r for r in m.rows if r.divergent or r.hit in (HitKind.SHORT, HitKind.OFF)]


def _readings(store: SessionStore) -> list[tuple[HelperState, MultiturnReading]]:
    out = []
    for st in store.helpers.values():
        m = reading_of(store, st)
        if m is not None:
            out.append((st, m))
    return out


def multiturn_markdown(store: SessionStore) -> list[str]:
    """The section's Markdown lines."""
    lines: list[str] = []
    for st, m in _readings(store):
        lines += ["", f"#### multiturn on {md_text(st.server)}"]
        lines += [f"- {md_text(line)}" for line in reading_lines(m)]
        rows = _notable(m)
        if rows:
            lines += ["", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
            lines += ["| " + " | ".join(md_text(c) for c in _cells(r)) + " |" for r in rows]
    return lines


def multiturn_html(store: SessionStore) -> str:
    """The section as HTML (every string escaped)."""
    parts = []
    for st, m in _readings(store):
        items = "".join(f"<li>{html_text(line)}</li>" for line in reading_lines(m))
        rows = "".join(
            "<tr>" + "".join(f"<td>{html_text(c)}</td>" for c in _cells(r)) + "</tr>"
            for r in _notable(m)
        )
        head = "".join(f"<th>{escape(c)}</th>" for c in COLUMNS)
        table = f"<table><tr>{head}</tr>{rows}</table>" if rows else ""
        parts.append(
            f"<section><h3>multiturn on {html_text(st.server)}</h3><ul>{items}</ul>{table}"
            "</section>"
        )
    return "".join(parts)


def multiturn_details(st: HelperState) -> list[str]:
    """JUnit: the reading's lines of a multiturn helper ([] for any other)."""
    m = read_multiturn(st)
    return reading_lines(m) if m is not None else []


def multiturn_failure(st: HelperState) -> str:
    """JUnit: the divergent turns, named, for a multiturn helper's failure message ('' else)."""
    m = read_multiturn(st)
    return "" if m is None or not m.divergent else "; " + divergence_line(m)
