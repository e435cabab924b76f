"""The Markdown report: short, complete, and inert when pasted (rendered with markdown-it)."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

from kltui.cli.report import load_store
from kltui.outputs.reports.md import ICON, MAX_PROBLEMS, md_report
from kltui.readings.diagnosis import diagnose
from kltui.readings.findings import Finding
from kltui.session.events import Problem
from kltui.untrusted import md_text
from kltui.words.diagnosis import said
from kltui.words.report_headline import headline
from kltui.words.report_notes import did_not_finish, more_problems
from kltui.words.server_facts import server_summary
from tests.reports.synth import (
    URL,
    HelperSpec,
    demo_run,
    error_run,
    hostile_run,
    multi_server_run,
    record,
    run_events,
)

# CommonMark passes raw HTML through (as GitHub does before sanitizing), so any unescaped
# markup from a recording would show up as a tag in the rendered output.
RENDER = MarkdownIt("commonmark").enable("table")


def build(tmp_path, events) -> str:
    path = tmp_path / f"r{len(list(tmp_path.iterdir()))}.jsonl"  # recorders append: a new file
    store, origin = load_store(record(path, events))
    return md_report(store, origin)


def table_rows(rendered: str) -> list[list[str]]:
    body = re.search(r"<tbody>(.*?)</tbody>", rendered, re.S).group(1)
    return [
        re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", body, re.S)
    ]


def test_demo_summary_is_short_and_complete(tmp_path):
    md = build(tmp_path, demo_run())
    lines = md.splitlines()
    assert lines[0] == f"### {headline(ICON['fail'], 1, 3)}"  # golden: test_golden_report
    assert len(lines) <= 20 and max(len(ln) for ln in lines) < 400
    rows = table_rows(RENDER.render(md))
    assert [r[0] for r in rows] == ["match", "prefill_cache_hit", "decode_cache_hit"]
    assert rows[2][1:4] == ["❌ fail", "<strong>1.239e-01</strong>", "2.000e-03"]
    assert rows[2][4] == "64.96% (178)" and rows[2][7] == "7/8 / 1"
    assert rows[1][1] == "⚪ vacuous"
    store, _ = load_store(tmp_path / "r0.jsonl")
    (d,) = diagnose(store)  # too few samples in common for the paired test: no verdict
    assert (d.server, d.finding) == (URL, Finding.TOO_FEW_COMMON)
    assert f"- **Diagnosis** {URL}: {md_text(said(d).label)}" in md  # its words, as said
    assert "sha256 `9f2c4e1a7b3d5c60`" in md
    (server,) = store.identities()  # its line as the words say it (golden: tests/unit/words)
    assert (server.get("version"), server.get("tp_size")) == ("0.5.23", 1)
    assert f"- **Server** {md_text(server_summary(server))}" in md


def test_hostile_text_renders_literally(tmp_path):
    md = build(tmp_path, hostile_run())
    rendered = RENDER.render(md)
    assert "<script" not in rendered and "<img" not in rendered
    assert "&lt;script&gt;document.title='pwned'&lt;/script&gt;" in rendered
    assert all(len(r) == 8 for r in table_rows(rendered))  # a "|" in data never splits a cell
    assert "a|b*c_[x](y)" in rendered  # the attention backend, literally
    assert "@here $x$" in rendered and "\\@here" in md and "\\$x\\$" in md
    assert "\x00" not in md and "\x1b" not in md


def test_md_escape():
    assert md_text("a|b") == "a\\|b"
    assert md_text("*x* _y_ `z` [l](u) <b> #1 ~s~ & @me $m$") == (
        "\\*x\\* \\_y\\_ \\`z\\` \\[l\\](u) \\<b\\> \\#1 \\~s\\~ \\& \\@me \\$m\\$"
    )
    assert md_text("line\nbreak\r\x00end") == "line break end"


def test_multi_server_and_errors(tmp_path):
    md = build(tmp_path, multi_server_run())
    assert f"### {headline(ICON['error'], 2, 2)}" in md
    names = [r[0] for r in table_rows(RENDER.render(md))]
    assert names == ["match@http://127.0.0.1:30000", "match@http://127.0.0.1:30001"]
    down = next(s for s in load_store(tmp_path / "r0.jsonl")[0].identities() if s.get("error"))
    assert (down.get("url"), down.get("error")) == ("http://10.0.0.9:30000", "connection refused")
    assert md_text(server_summary(down)) in md  # golden: tests/unit/words/test_golden_servers
    assert "**Error** http://10.0.0.9:30000: connection refused" in md
    md = build(tmp_path, error_run())
    assert "⛔ error" in md and "⏸ incomplete" in md
    assert "- match: HTTP 500 from /generate" in md
    assert f"- {md_text('decode_cache_hit')}: {md_text(did_not_finish('decode'))}\n" in md


def test_problem_list_is_capped(tmp_path):
    problems = tuple(Problem(URL, f"warning {i}", fatal=False) for i in range(MAX_PROBLEMS + 5))
    md = build(tmp_path, run_events([HelperSpec("match")], problems=problems, verdict="pass"))
    assert md.count("**Warning**") == MAX_PROBLEMS
    assert f"- {more_problems(5)}\n" in md  # golden: tests/unit/words/test_golden_report
