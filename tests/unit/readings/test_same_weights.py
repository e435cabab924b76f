"""Identity beyond names (issue 28): the same model means the same weights (a hash or a weight
version, else "unverified"), and the same server under two URLs is one server."""

from __future__ import annotations

import json
import os
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from kltui.engines import weights
from kltui.engines.identity import ServerIdentity, same_process
from kltui.readings.identity import (
    CheckBasis,
    ConflictKind,
    conflict,
    model_check,
    models_differ,
)
from kltui.reference import CHECKPOINT_DIR
from kltui.run.refusal import check_words
from kltui.words.identity import check_json
from tests.reports.synth import server


def perturb(folder: Path, factor: float = 1.01) -> None:
    """Every float32 tensor of the folder's model.safetensors scaled by `factor`, in place."""
    path = folder / "model.safetensors"
    raw = bytearray(path.read_bytes())
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    for name, t in header.items():
        if name == "__metadata__":
            continue
        assert t["dtype"] == "F32"
        lo, hi = (8 + n + o for o in t["data_offsets"])
        arr = np.frombuffer(bytes(raw[lo:hi]), dtype=np.float32) * np.float32(factor)
        raw[lo:hi] = arr.astype(np.float32).tobytes()
    path.write_bytes(bytes(raw))


@pytest.fixture
def copies(tmp_path, monkeypatch):
    """The shipped checkpoint twice under its own folder name, the second one perturbed 1%."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    weights.forget()
    same, other = tmp_path / "a" / "checkpoint", tmp_path / "b" / "checkpoint"
    shutil.copytree(CHECKPOINT_DIR, same)
    shutil.copytree(CHECKPOINT_DIR, other)
    perturb(other)
    return same, other


def sglang(url: str, path: Path | str, **over) -> ServerIdentity:
    return ServerIdentity.of(server(url, model_path=str(path), **over))


def hashed(url: str, path: Path, **over) -> ServerIdentity:
    """A server's identity as the runner records it: with the local weights hash."""
    local = weights.local_weights(url, str(path))
    return sglang(url, path, **local.record(), **over)


# ------------------------------------------------------------------ hashing the folder
def test_the_local_hash_covers_config_and_safetensors_and_only_them(copies):
    same, other = copies
    a = weights.local_weights("http://127.0.0.1:1", str(CHECKPOINT_DIR))
    b = weights.local_weights("http://localhost:2", str(same))
    c = weights.local_weights("http://[::1]:3", str(other))
    assert a.sha256 is not None and len(a.sha256) == 64 and a.note is None
    assert a.files == 2  # config.json and model.safetensors
    assert a.sha256 == b.sha256 != c.sha256
    (same / "tokenizer_config.json").write_text("{}")  # not weights: the hash stays
    weights.forget()
    assert weights.local_weights("http://127.0.0.1:1", str(same)).sha256 == a.sha256


def test_the_hash_is_cached_per_path_mtime_and_size(copies):
    same, _ = copies
    first = weights.local_weights("http://127.0.0.1:1", str(same)).sha256
    f = same / "model.safetensors"
    st = f.stat()
    data = bytearray(f.read_bytes())
    data[-1] ^= 1  # same size; the mtime is put back: the cache cannot tell
    f.write_bytes(bytes(data))
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert weights.local_weights("http://127.0.0.1:1", str(same)).sha256 == first
    weights.forget(disk=False)  # a new process: the cache on disk still knows the file
    assert weights.local_weights("http://127.0.0.1:1", str(same)).sha256 == first
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # a newer file is re-read
    assert weights.local_weights("http://127.0.0.1:1", str(same)).sha256 != first


def test_no_local_hash_for_a_remote_server_a_missing_folder_or_no_safetensors(tmp_path):
    remote = weights.local_weights("http://10.1.2.3:30000", str(CHECKPOINT_DIR))
    assert remote.sha256 is None and "not on this machine" in (remote.note or "")
    missing = weights.local_weights("http://127.0.0.1:1", str(tmp_path / "nope"))
    assert missing.sha256 is None and "not found on this machine" in (missing.note or "")
    hub = weights.local_weights("http://127.0.0.1:1", "meta-llama/Llama-3.1-8B-Instruct")
    assert hub.sha256 is None and hub.note
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "config.json").write_text("{}")
    empty = weights.local_weights("http://127.0.0.1:1", str(tmp_path / "empty"))
    assert empty.sha256 is None and "no *.safetensors" in (empty.note or "")
    assert weights.local_weights("http://127.0.0.1:1", None).note


# ------------------------------------------------------------------ same / different / unverified
def test_same_folder_name_different_weights_is_another_model(copies):
    same, other = copies
    a, b = hashed("http://127.0.0.1:1", same), hashed("http://127.0.0.1:2", other)
    check = model_check(a, b)
    assert (check.state, check.same) == ("different", False)
    assert check.basis == CheckBasis.LOCAL_HASH and check.a != check.b  # the hashes here
    assert models_differ(a, b) == check
    assert check_json(check) == {
        "state": "different",
        "why": check_words(check),
        "basis": "local_weights_sha256",
    }


def test_same_weights_verified_on_this_machine(copies):
    same, _ = copies
    a = hashed("http://127.0.0.1:1", CHECKPOINT_DIR)
    b = hashed("http://127.0.0.1:2", same)
    check = model_check(a, b)
    assert (check.state, check.same) == ("same", True)
    assert check.basis == CheckBasis.LOCAL_HASH and check.a == check.b
    assert models_differ(a, b) is None


def test_same_name_unverified_says_why_and_is_not_a_difference():
    a = sglang("http://10.0.0.1:30000", "/models/llama")
    b = sglang("http://10.0.0.2:30000", "/models/llama", weight_version="default")
    check = model_check(a, b)
    assert (check.state, check.same) == ("unverified", None)
    assert (check.basis, check.name) == (CheckBasis.NOTHING, "llama")  # the placeholder counts not
    assert [(u.label, u.url, u.note) for u in check.unhashed] == [
        ("A", "http://10.0.0.1:30000", None),
        ("B", "http://10.0.0.2:30000", None),
    ]
    assert models_differ(a, b) is None  # not refused: nothing says they differ


def test_a_weight_version_counts_unless_it_is_the_default_placeholder():
    a = sglang("http://10.0.0.1:1", "/m/llama", weight_version="step-100")
    b = sglang("http://10.0.0.2:1", "/m/llama", weight_version="step-200")
    check = model_check(a, b)
    assert (check.state, check.basis, check.a, check.b) == (
        "different",
        CheckBasis.WEIGHT_VERSION,
        "step-100",
        "step-200",
    )
    c = sglang("http://10.0.0.2:1", "/m/llama", weight_version="step-100")
    assert model_check(a, c).state == "same"
    d = sglang("http://10.0.0.1:1", "/m/llama", weight_version="default")
    e = sglang("http://10.0.0.2:1", "/m/llama", weight_version="default")
    assert model_check(d, e).state == "unverified"


def test_a_reported_weights_hash_decides_before_the_folder():
    a = sglang("http://10.0.0.1:1", "/m/llama", weights_sha256="ab" * 32)
    b = sglang("http://10.0.0.2:1", "/m/llama", weights_sha256="ab" * 32)
    assert model_check(a, b).state == "same"
    c = sglang("http://10.0.0.2:1", "/m/llama", weights_sha256="cd" * 32)
    assert model_check(a, c).state == "different"


def test_a_different_name_is_still_another_model():
    a = sglang("http://10.0.0.1:1", "/m/llama")
    b = sglang("http://10.0.0.2:1", "/m/mistral")
    assert model_check(a, b).state == "different"
    check = model_check(a, b)
    assert (check.basis, check.a, check.b) == (CheckBasis.MODEL_PATH, "/m/llama", "/m/mistral")


# ------------------------------------------------------------------ one server, two URLs
def test_the_same_server_under_two_urls_is_recognised():
    a = sglang("http://127.0.0.1:30000", "/m/llama", startup_time=12.5, port=30000)
    b = sglang("http://localhost:30000", "/m/llama", startup_time=12.5, port=30000)
    assert same_process(a, b) is not None
    c = conflict(a, b)
    assert c is not None and c.kind == ConflictKind.SAME_PROCESS
    assert (c.startup_time, c.port) == (12.5, 30000)
    other_port = sglang("http://127.0.0.1:30001", "/m/llama", startup_time=12.5, port=30001)
    assert same_process(a, other_port) is None
    restarted = sglang("http://localhost:30000", "/m/llama", startup_time=13.0, port=30000)
    assert same_process(a, restarted) is None
    unknown = sglang("http://localhost:30000", "/m/llama", startup_time=None, port=30000)
    assert same_process(unknown, unknown) is None  # nothing to go on: not the same
