"""`kltui dumps` on real SGLang 0.5.23 (CPU, the shipped checkpoint) launched with its own dumper
hooks: the capture, the alignment proof, and a named module checked against the files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kltui.cli import main
from tests.json_contract import read_dumps

torch = pytest.importorskip("torch")

PREFIX = "non_intrusive__"


@pytest.fixture(scope="module")
def live(sglang_dumper, tmp_path_factory):
    url, dump_dir = sglang_dumper
    out = tmp_path_factory.mktemp("dumps-json") / "r.json"
    args = ["dumps", "--server", url, "--dump-dir", str(dump_dir), "--prompt-tokens", "16"]
    code = main([*args, "--new-tokens", "4", "--json", str(out)])
    assert code in (0, 1), code
    return code, read_dumps(out)


def _load(folder: Path, step: int, name: str):
    hits = sorted(folder.glob(f"step={step}___*___name={name}___*"))
    assert len(hits) == 1, (folder, step, name, hits)
    return torch.load(hits[0], weights_only=True)["value"]


def test_capture_is_aligned_and_consistent(live):
    code, r = live
    assert r["server_version"] == "0.5.23"
    assert r["input_ids_identical"] is True and r["embedding_identical"] is True
    assert r["embedding_module"] == "model.embed_tokens"
    assert r["prompt_tokens"] == 16 and r["aligned_steps"] == 4
    assert r["fresh_prefill_tokens"] == 16 + 4
    assert len(r["output_ids"]) == 5 and len(r["prompt_ids"]) == 16
    assert code == (0 if r["identical"] and r["prefill"]["identical"] else 1)
    # the decode steps are single-request passes of the rids kltui sent
    assert r["rid_decode"].endswith("-decode") and r["rid_prefill"].endswith("-prefill")


def test_named_module_is_what_the_files_show(live):
    _, r = live
    if r["identical"]:
        pytest.skip(f"decode and prefill bit-identical on this CPU: {r['verdict']}")
    mod, k, pos = r["first_divergent_module"], r["decode_step"], r["position"]
    a, b = Path(r["dir_a"]), Path(r["dir_b"])
    steps_a = sorted({int(p.name.split("___")[0][5:]) for p in a.glob("*.pt")})
    step_b = int(next(b.glob("*.pt")).name.split("___")[0][5:])
    step_a = steps_a[k]  # steps_a[0] is the prompt's prefill
    out_a = _load(a, step_a, f"{PREFIX}{mod}.output")
    out_b = _load(b, step_b, f"{PREFIX}{mod}.output")
    diff = (out_a[0].double() - out_b[pos].double()).abs().max().item()
    assert diff > 0 and diff == r["max_abs_diff"]
    assert r["inputs_identical"] is True
    in_a = _load(a, step_a, f"{PREFIX}{mod}.inputs.0")
    in_b = _load(b, step_b, f"{PREFIX}{mod}.inputs.0")
    assert torch.equal(in_a[0], in_b[pos])
    # every module written before it at that step is bit-identical
    names = [m["module"] for m in r["modules"]]
    assert all(m["status"] != "inherited" for m in r["modules"][: names.index(mod)])


def test_copied_folders_give_the_same_analysis(live, tmp_path, capsys):
    _, r = live
    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(r["dir_a"], a)
    shutil.copytree(r["dir_b"], b)
    out = tmp_path / "again.json"
    code = main(["dumps", "analyze", str(a), str(b), "--json", str(out)])
    again = read_dumps(out)
    for key in ("first_divergent_module", "max_abs_diff", "decode_step", "position", "inherited"):
        assert again[key] == r[key], key
    assert again["prefill"] == r["prefill"]
    assert code == (0 if again["identical"] and again["prefill"]["identical"] else 1)


def test_refuses_while_dumping_is_already_on(sglang_dumper, tmp_path, capsys):
    import httpx

    url, dump_dir = sglang_dumper
    httpx.post(
        f"{url}/dumper/configure", json={"enable": True, "exp_name": "other"}
    ).raise_for_status()
    try:
        code = main(["dumps", "--server", url, "--dump-dir", str(tmp_path), "--new-tokens", "2"])
    finally:
        httpx.post(f"{url}/dumper/configure", json={"enable": False}).raise_for_status()
    err = capsys.readouterr().err
    assert code == 2 and "already enabled" in err and "DUMPER_SERVER_PORT=reuse" in err
    assert not list(tmp_path.iterdir())


async def test_tui_drill_down_opens_the_module_table(sglang_dumper):
    """The TUI's `u` path end to end: hooks found, capture and analysis in a worker, table."""
    from kltui.tui.screens.dumps import DumpsScreen
    from kltui.tui.screens.dumps_run import DumpsRunScreen
    from tests.tui.kit import drawn_at, replay_app, until

    url, dump_dir = sglang_dumper
    app = replay_app(dump_dir=str(dump_dir))
    async with app.run_test(size=(160, 50)) as pilot:
        app.open_dumps(url)
        run = app.screen
        assert isinstance(run, DumpsRunScreen)
        await until(pilot, lambda: run.outcome != "running", 300)
        assert run.outcome == "done", run.steps
        assert [s.split(" ")[0] for s in run.steps] == [
            "checking", "loading", "dumping", "dumping", "analyzing"
        ]  # fmt: skip
        await until(pilot, lambda: isinstance(app.screen, DumpsScreen))
        r = app.screen.result
        assert r["server_version"] == "0.5.23" and r["aligned_steps"] == 8
        assert r["input_ids_identical"] is True and r["embedding_identical"] is True
        # the named module, or every module's status when none differs, drawn in the table
        name = r["first_divergent_module"] or "identical"
        await until(pilot, lambda: name in drawn_at(app.screen, "#dumps-table"))
