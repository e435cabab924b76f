"""The ablation table's last column in words (`words/ablation_note.note`): one golden per case
(a failure, no result, each trap, no effect, helpers left untested, nothing) and the --stress
verdict after it; the sweep's tests assert the reading's kinds and that the table shows these."""

from __future__ import annotations

from kltui.ablate.plan import Config
from kltui.ablate.sweep import FAILED, INTERRUPTED, MEASURED, ConfigRun
from kltui.readings.ablation_config import ConfigReading
from kltui.readings.ablation_helper import HelperReading
from kltui.readings.ablation_kinds import Effect, Missing, Trap
from kltui.words.ablation_note import NO_EFFECT_NOTE, TRAP_NOTE, note, untested_note

K = Config("k", {"k": "1"})
DONE = ConfigRun(K, "k", status=MEASURED)
UNTESTED = HelperReading("prefill_cache_hit", "k", None, 1e-3, 0, 0, 0, 0, None, Effect.NOT_TESTED)


def test_each_case_of_the_note():
    failed = ConfigRun(K, "k", status=FAILED, error_kind="exited")
    assert note(ConfigReading(K, missing=Missing.NOT_RUN), failed) == "failed (exited)"
    cut = ConfigRun(K, "k", status=INTERRUPTED)
    assert note(ConfigReading(K, missing=Missing.NOT_RUN), cut) == "interrupted"
    assert note(ConfigReading(K, missing=Missing.NOT_RUN), None) == "not measured"
    assert TRAP_NOTE == {
        Trap.NOT_TAKEN: "the flag did not take effect",
        Trap.CHANGED_NOTHING: "changed nothing",
    }
    assert NO_EFFECT_NOTE == "no effect (took effect)"
    assert note(ConfigReading(K, (UNTESTED,)), DONE) == "not tested: prefill_cache_hit"
    assert untested_note(["a", "b"]) == "not tested: a, b"
    assert note(ConfigReading(K), DONE) == ""


def test_the_stressed_verdict_follows_the_note():
    loud = ConfigRun(K, "k", status=MEASURED, stress={"verdict": "state bug under load"})
    assert note(ConfigReading(K), loud) == "under --stress: state bug under load"
    assert note(ConfigReading(K, (UNTESTED,)), loud) == (
        "not tested: prefill_cache_hit; under --stress: state bug under load"
    )
