"""Parity with verl 0.9.1's own `compute_offpolicy_metrics` (the `rollout_corr/*` metrics), run
on the fixture of test_rl_formulas.py padded into a batch as verl holds it: agreement to 1e-6
relative is required (it agrees to rounding).

verl's package cannot be imported here: `import verl` runs verl/__init__.py, which imports
verl.protocol, which imports ray (and tensordict), and the wheel is installed with --no-deps
(`pip install verl==0.9.1 --no-deps`: its dependencies are a whole training stack). The test
therefore loads the two files the function lives in, verl/utils/torch_functional.py and
verl/trainer/ppo/rollout_corr_helper.py, from the installed wheel by path, unmodified, with
the imports the metric function never calls (DataProto, config classes, device helpers,
tensordict, flash-attn) stubbed. Without verl 0.9.1 installed it is skipped, saying so;
test_rl_formulas.py checks the same numbers against the formulas by hand either way.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from kltui.metrics.rl import sequence_sums, verl_metrics
from tests.rl.test_rl_formulas import SEQS

torch = pytest.importorskip("torch")


def _verl_root() -> Path:
    try:
        dist = importlib.metadata.distribution("verl")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("verl 0.9.1 is not installed (pip install verl==0.9.1 --no-deps)")
    if dist.version != "0.9.1":
        pytest.skip(f"verl {dist.version} is installed; the parity test is for 0.9.1")
    return Path(str(dist.locate_file("verl")))


def _stub(name: str, **attrs) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__path__ = []  # a package, so that submodules can be stubbed under it
    mod.__dict__.update(attrs)
    return mod


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def verl_offpolicy(monkeypatch):
    root = _verl_root()

    class _Any:  # DataProto, config classes: named in annotations and other functions only
        pass

    stubs = {
        "verl": _stub("verl"),
        "verl.utils": _stub("verl.utils"),
        "verl.utils.device": _stub(
            "verl.utils.device", get_device_name=lambda: "cpu", get_torch_device=lambda: torch.cpu
        ),
        "verl.protocol": _stub("verl.protocol", DataProto=_Any),
        "verl.trainer": _stub("verl.trainer"),
        "verl.trainer.ppo": _stub("verl.trainer.ppo"),
        "verl.trainer.config": _stub("verl.trainer.config"),
        "verl.trainer.config.algorithm": _stub(
            "verl.trainer.config.algorithm", RolloutCorrectionConfig=_Any
        ),
        "verl.workers": _stub("verl.workers"),
        "verl.workers.config": _stub("verl.workers.config"),
        "verl.workers.config.actor": _stub("verl.workers.config.actor", PolicyLossConfig=_Any),
        "tensordict": _stub("tensordict", TensorDict=_Any),
    }
    for name, mod in stubs.items():
        monkeypatch.setitem(sys.modules, name, mod)
    tf = _load("verl.utils.torch_functional", root / "utils" / "torch_functional.py")
    stubs["verl.utils"].torch_functional = tf
    helper = _load(
        "verl.trainer.ppo.rollout_corr_helper", root / "trainer" / "ppo" / "rollout_corr_helper.py"
    )
    yield helper.compute_offpolicy_metrics
    for name in ("verl.utils.torch_functional", "verl.trainer.ppo.rollout_corr_helper"):
        sys.modules.pop(name, None)


def _padded(dtype):
    width = max(len(t) for t, _, _ in SEQS)
    old = torch.zeros(len(SEQS), width, dtype=dtype)
    roll = torch.zeros(len(SEQS), width, dtype=dtype)
    mask = torch.zeros(len(SEQS), width, dtype=dtype)
    for i, (t, r, m) in enumerate(SEQS):
        old[i, : len(t)] = torch.tensor(t, dtype=dtype)
        roll[i, : len(r)] = torch.tensor(r, dtype=dtype)
        mask[i, : len(m)] = torch.tensor(m, dtype=dtype)
    return old, roll, mask


def _ours():
    return verl_metrics(
        sequence_sums(
            [np.array(t) for t, _, _ in SEQS],
            [np.array(r) for _, r, _ in SEQS],
            [np.array(m, dtype=bool) for _, _, m in SEQS],
            [None] * len(SEQS),
        )
    )


def test_kltui_matches_verl_091_compute_offpolicy_metrics(verl_offpolicy):
    old, roll, mask = _padded(torch.float64)
    theirs = verl_offpolicy(old_log_prob=old, rollout_log_prob=roll, response_mask=mask)
    ours = _ours()
    assert set(theirs) == set(ours)
    for key, value in theirs.items():
        assert ours[key] == pytest.approx(value, rel=1e-6, abs=1e-12), key


def test_parity_holds_on_a_larger_random_batch(verl_offpolicy):
    rng = np.random.default_rng(7)
    lens = rng.integers(1, 200, size=64)
    width = int(lens.max())
    lt = np.zeros((64, width))
    lr = np.zeros((64, width))
    m = np.zeros((64, width))
    seqs = []
    for i, n in enumerate(lens):
        r = -rng.exponential(1.5, n)
        t = np.minimum(r + rng.normal(0, 0.05, n), 0)
        mm = (rng.random(n) > 0.1).astype(float)
        mm[0] = 1
        lt[i, :n], lr[i, :n], m[i, :n] = t, r, mm
        seqs.append((t, r, mm.astype(bool)))
    theirs = verl_offpolicy(
        old_log_prob=torch.tensor(lt),
        rollout_log_prob=torch.tensor(lr),
        response_mask=torch.tensor(m),
    )
    ours = verl_metrics(
        sequence_sums([s[0] for s in seqs], [s[1] for s in seqs], [s[2] for s in seqs], [None] * 64)
    )
    for key, value in theirs.items():
        assert ours[key] == pytest.approx(value, rel=1e-6, abs=1e-12), key
