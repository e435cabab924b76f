"""The table's labels are explained under it (issue 44): "(none)", "(lower)", "(nothing to
remove)" and every other label a cell shows get one legend line each, in the console, the
Markdown and the HTML report; labels the table does not show are left out. Each label's words
are tests/unit/words/test_golden_ablation_legend.py's."""

from __future__ import annotations

import io

import numpy as np
from rich.console import Console

from kltui.ablate.plan import Config
from kltui.ablate.sweep import FAILED, MEASURED, ConfigRun, Sweep
from kltui.outputs.ablation import md_report, print_result
from kltui.outputs.ablation_html import html_report
from kltui.readings.ablation import NONE, NOTHING, Effect
from kltui.readings.ablation_outcome import outcome, reading
from kltui.untrusted import html_text, md_text
from kltui.words.ablation import verdict_line
from kltui.words.ablation_legend import NOT_MEASURED_LINE, legend, legend_line
from tests.unit.ablate.test_ablate_reading import INFO, rows_at, store, url


def _sweep(tmp_path) -> Sweep:
    rng = np.random.default_rng(2)
    base = {"match": rows_at(rng, [5e-3] * 32), "prefill_cache_hit": rows_at(rng, [0.0] * 32)}
    other = {"match": rows_at(rng, [5e-3] * 32), "prefill_cache_hit": rows_at(rng, [1e-12] * 32)}
    fa3 = Config("attention-backend=fa3", {"attention-backend": "fa3"})
    tp = Config("tp=2", {"tp": "2"})
    return Sweep(
        tmp_path,
        "launch",
        runs=[
            ConfigRun(Config("base"), "base", status=MEASURED, store=store(url(0), INFO, base)),
            ConfigRun(
                fa3,
                "fa3",
                status=MEASURED,
                store=store(url(1), INFO | {"attention_backend": "fa3"}, other),
            ),
            ConfigRun(tp, "tp", status=FAILED, error="tp=2: exited"),
        ],
    )


def test_the_legend_explains_the_labels_the_table_shows_in_every_medium(tmp_path):
    sweep = _sweep(tmp_path)
    ab = reading(sweep)
    fa3 = ab.configs[0]
    assert {h.helper: h.effect for h in fa3.helpers} == {
        "match": NONE,
        "prefill_cache_hit": NOTHING,
    }
    none_line, nothing_line = (legend_line(e, ab.floor) for e in (NONE, NOTHING))
    lines = legend(ab)
    assert lines == [none_line, nothing_line, NOT_MEASURED_LINE]
    assert legend_line(Effect.LOWER, ab.floor) not in lines
    buf = io.StringIO()
    print_result(Console(file=buf, width=300, color_system=None), sweep, outcome(sweep))
    out = buf.getvalue()
    table_end = out.index("└")
    assert table_end < out.index(none_line) < out.index(verdict_line(ab))
    md = md_report(sweep, outcome(sweep))
    assert f"<sub>{md_text(none_line)}</sub>" in md
    html = html_report(sweep, outcome(sweep))
    legend_at = html.index('<ul class="legend')
    assert html.index("</table>") < legend_at < html.index("</section>", legend_at)
    assert html_text(nothing_line) in html[legend_at:]
