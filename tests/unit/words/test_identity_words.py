"""The words of the model check and of a refused pair: one golden line per `ModelState`, per
`CheckBasis` and per `ConflictKind`; the readings' tests (tests/unit/readings/test_same_weights.py)
assert the states, bases and figures."""

from __future__ import annotations

import pytest

from kltui.readings.identity import (
    CheckBasis,
    Conflict,
    ConflictKind,
    ModelCheck,
    ModelState,
    Unhashed,
)
from kltui.run.refusal import check_words, refusal
from kltui.words.identity import check_json, model_line

V7 = ModelCheck(ModelState.SAME, CheckBasis.WEIGHT_VERSION, "7", "7", "llama")
H1, H2 = "ab" * 32, "cd" * 32


@pytest.mark.parametrize(
    "check, line",
    [
        (V7, "same weights (weight_version 7 reported by both servers)"),
        (
            ModelCheck(ModelState.DIFFERENT, CheckBasis.WEIGHT_VERSION, "7", "8"),
            "different weights (weight_version 7 vs 8)",
        ),
        (
            ModelCheck(ModelState.UNVERIFIED, CheckBasis.ONE_VERSION, "7", name="llama"),
            "weights not verified (same model name llama, weights not verified: weight_version 7 "
            "on one server only)",
        ),
    ],
)
def test_each_state_in_words(check: ModelCheck, line: str):
    assert model_line(check) == line


BASES = (
    (ModelCheck(ModelState.DIFFERENT, CheckBasis.MODEL_PATH, "/m/a", "/m/b"), "model_path /m/a vs /m/b"),
    (ModelCheck(ModelState.SAME, CheckBasis.REPORTED_HASH, H1, H1), "weights_sha256 abababababab… reported by both servers"),
    (ModelCheck(ModelState.DIFFERENT, CheckBasis.REPORTED_HASH, H1, H2), "weights_sha256 abababababab… vs cdcdcdcdcdcd…"),
    (ModelCheck(ModelState.SAME, CheckBasis.LOCAL_HASH, H1, H1, "llama"), "the same config.json and *.safetensors on this machine, sha256 abababababab…"),
    (ModelCheck(ModelState.DIFFERENT, CheckBasis.LOCAL_HASH, H1, H2, "llama"), "the config.json and *.safetensors differ on this machine (sha256 abababababab… vs cdcdcdcdcdcd…) although both folders are named llama"),
    (V7, "weight_version 7 reported by both servers"),
    (ModelCheck(ModelState.DIFFERENT, CheckBasis.WEIGHT_VERSION, "7", "8"), "weight_version 7 vs 8"),
    (ModelCheck(ModelState.UNVERIFIED, CheckBasis.ONE_VERSION, "7", name="llama"), "same model name llama, weights not verified: weight_version 7 on one server only"),
    (
        ModelCheck(
            ModelState.UNVERIFIED,
            CheckBasis.NOTHING,
            name="llama",
            unhashed=(Unhashed("A", "http://a:1"), Unhashed("B", "http://b:1", "no folder here")),
        ),
        "same model name llama, weights not verified: A http://a:1: not hashed; B http://b:1: no folder here",
    ),
)  # fmt: skip


@pytest.mark.parametrize("check, line", BASES)
def test_each_basis_in_words(check: ModelCheck, line: str):
    assert check_words(check) == line


def test_every_basis_has_its_golden_line():
    assert {c.basis for c, _ in BASES} == set(CheckBasis)


def test_the_json_check_carries_its_words_and_its_basis():
    assert check_json(V7) == {
        "state": "same",
        "why": "weight_version 7 reported by both servers",
        "basis": "weight_version",
    }


def test_each_refusal_in_words():
    same = Conflict(ConflictKind.SAME_PROCESS, "http://a:1", "http://b:1", 12.5, 30000)
    assert refusal(same) == (
        "http://a:1 and http://b:1 are the same server (same startup_time 12.5 and port 30000 in "
        "/server_info): comparing a server with itself proves nothing; name each server once"
    )
    other = ModelCheck(ModelState.DIFFERENT, CheckBasis.MODEL_PATH, "/m/a", "/m/b")
    moot = Conflict(ConflictKind.DIFFERENT_MODEL, "http://a:1", "http://b:1", check=other)
    assert refusal(moot, "--allow-different-models runs them anyway") == (
        "http://b:1 serves another model than http://a:1 (model_path /m/a vs /m/b): their "
        "numbers cannot be compared; --allow-different-models runs them anyway"
    )
