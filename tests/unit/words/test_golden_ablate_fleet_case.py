"""A replica's failed JUnit case in words (`words/fleet.odd_replica_failure`): one golden per
shape of `OddReplica` (the odd one out with the setting that separates it; no majority group,
no setting, no difference recorded); tests/integration/test_fleet.py asserts the report's case
carries it."""

from __future__ import annotations

from kltui.readings.fleet_model import FleetDifference, OddReplica
from kltui.words.fleet import odd_replica_failure

A, C = "http://10.0.0.1:30000", "http://10.0.0.3:30000"
AT = FleetDifference("match", 1, 3, "decode", 0.0, 0.5)
DET = "enable_deterministic_inference"


def test_the_odd_one_out_with_its_setting():
    odd = OddReplica(C, 1, A, {DET: (True, False)}, AT, majority=True)
    assert odd_replica_failure(odd, 2) == (
        f"not bit-identical to {A} (group 2 of 2; settings: {DET} false here, true in the "
        "largest group); first difference at match sample 1 @ 3 (decode side; max |Δ| prefill "
        "0, decode 0.5)"
    )


def test_no_majority_no_setting_no_difference_recorded():
    odd = OddReplica(C, 2, A, {}, None, majority=False)
    assert odd_replica_failure(odd, 3) == (
        f"no majority group; not bit-identical to {A} (group 3 of 3; no reported setting "
        "explains it); first difference at ?"
    )
