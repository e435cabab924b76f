"""The condition of a configuration has one source (issue 44): the table's column, the matrix's
and the configuration's line read the configuration's own diagnosis (`diagnose_server`, the
reading its recording replays as), so a server showing both conditions reads "1+2" everywhere,
never "1" beside "conditions 1 and 2 ... a state bug"."""

from __future__ import annotations

import numpy as np

from kltui.ablate.plan import Config
from kltui.ablate.sweep import MEASURED, ConfigRun, Sweep
from kltui.outputs.ablation_matrix import matrix_rows
from kltui.outputs.ablation_rows import rows
from kltui.readings.ablation_outcome import reading
from kltui.readings.diagnosis import diagnose_server
from kltui.readings.findings import Finding, Kind
from kltui.words.ablation_json import ablation_json
from kltui.words.diagnosis import label
from tests.unit.ablate.test_ablate_reading import INFO, rows_at, store, url


def test_the_condition_column_is_the_configurations_own_diagnosis(tmp_path):
    rng = np.random.default_rng(3)
    both = {
        "match": rows_at(rng, [5e-3] * 32),
        "prefill_cache_hit": rows_at(rng, [5e-3] * 32),
        "decode_cache_hit": rows_at(rng, [0.5] * 32),  # far beyond match: a state bug
    }
    base = store(url(0), INFO, both)
    d = diagnose_server(base, url(0))
    assert d.kind == Kind.BOTH and d.finding is Finding.BOTH
    other = store(url(1), INFO | {"attention_backend": "fa3"}, both)
    sweep = Sweep(
        tmp_path,
        "launch",
        runs=[
            ConfigRun(Config("base"), "base", status=MEASURED, store=base),
            ConfigRun(
                Config("attention-backend=fa3", {"attention-backend": "fa3"}),
                "fa3",
                status=MEASURED,
                store=other,
            ),
        ],
    )
    ab = reading(sweep)
    assert [cond for _, _, cond, _ in rows(sweep, ab)] == ["1+2", "1+2"]
    assert [r.condition for r in matrix_rows(sweep, ab, "match", {})] == ["1+2", "1+2"]
    assert ab.base.kind is Kind.BOTH  # its line's "[condition 1+2]": test_golden_ablate_config
    doc = ablation_json(ab)["configs"][0]
    assert doc["conditions"] == [1, 2] and doc["diagnosis"] == label(d)
