"""`kltui ablate`'s command line and sweep set-up (issue 29): which --help is read, what is
refused before anything starts (one line, exit 2), the ablate: section of a config file, the
memory fraction of --parallel, file names in the sweep folder and the exit codes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kltui.ablate.plan import Config
from kltui.ablate.sweep import FAILED, MEASURED, ConfigRun, Sweep, file_stem
from kltui.cli.commands import main
from kltui.errors import UsageError
from kltui.readings.ablation_outcome import outcome
from kltui.readings.ablation_stress import StressedConfig, config_stress
from kltui.readings.stress import StressVerdict
from kltui.run.ablate import SweepSpec, help_command, is_sglang, prepare
from kltui.run.config import ConfigError, RunConfig, load_config_file
from kltui.run.sweep_manifest import load
from kltui.words.ablation_note import stress_verdict
from kltui.words.ablation_stress import verdict_of

SGLANG = "python -m sglang.launch_server --model-path M --attention-backend triton".split()
FLAGS = {"--model-path", "--attention-backend", "--disable-cuda-graph", "--mem-fraction-static"}


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        (SGLANG, ["python", "-m", "sglang.launch_server", "--help"]),
        (["python3", "-u", "-m", "kltui.reference", "serve", "--page-size", "4"],
         ["python3", "-u", "-m", "kltui.reference", "serve", "--help"]),
        (["python", "serve.py", "--port", "1"], ["python", "serve.py", "--help"]),
        (["sglang", "serve", "--model-path", "M"], ["sglang", "serve", "--help"]),
        (["/opt/venv/bin/python3.11", "-m", "sglang.launch_server"],
         ["/opt/venv/bin/python3.11", "-m", "sglang.launch_server", "--help"]),
    ],
)  # fmt: skip
def test_the_help_read_is_the_program_with_its_module_and_subcommands(argv, want):
    assert help_command(argv) == want


def test_an_sglang_command_is_told_by_its_module_or_program():
    assert is_sglang(SGLANG) and is_sglang(["sglang", "serve"])
    assert not is_sglang(
        [sys.executable, "-m", "kltui.reference", "serve", "--model-path", "sglang"]
    )


def spec(argv=SGLANG, varies=("cuda-graph=off",), parallel=1) -> SweepSpec:
    return SweepSpec(
        RunConfig(), Path("/nonexistent"), launch=tuple(argv), varies=varies, parallel=parallel
    )


def test_parallel_sglang_servers_share_the_memory_unless_the_command_sets_it():
    p = prepare(spec(parallel=2), FLAGS)
    assert all("--mem-fraction-static" in c.argv for c in p.configs)
    i = p.base.argv.index("--mem-fraction-static")
    assert p.base.argv[i + 1] == "0.425"
    own = prepare(spec([*SGLANG, "--mem-fraction-static=0.3"], parallel=2), FLAGS)
    assert own.base.argv[-1] == "--mem-fraction-static=0.3"
    assert "--mem-fraction-static" not in prepare(spec(), FLAGS).base.argv


def test_raw_values_reach_the_launch_as_typed_on_the_reference_servers_help():
    # issue 44: the installed --help decides a raw flag's arity; its values are never rewritten
    ref = [sys.executable, "-m", "kltui.reference", "serve", "--dtype", "bfloat16"]
    p = prepare(
        spec(
            ref,
            varies=(
                "--chunked-prefill-size=0",
                "--max-running-requests=1",
                "--disable-radix-cache=on",
            ),
        )
    )
    assert p.skipped == ()
    argv = {c.name: c.argv[len(ref) :] for c in p.singles}
    assert argv == {
        "--chunked-prefill-size=0": ("--chunked-prefill-size", "0"),
        "--max-running-requests=1": ("--max-running-requests", "1"),
        "--disable-radix-cache=on": ("--disable-radix-cache",),
    }


def test_unknown_knobs_and_an_empty_plan_are_refused_before_anything_starts():
    with pytest.raises(UsageError, match=r"the installed server has no page-size \(--page-size\)"):
        prepare(spec(varies=("page-size=1,4",)), FLAGS)
    with pytest.raises(UsageError, match="nothing to compare: attention-backend=triton: the base"):
        prepare(spec(varies=("attention-backend=triton",)), FLAGS)
    with pytest.raises(UsageError, match="nothing to vary"):
        prepare(spec(varies=()), FLAGS)


def test_file_names_in_the_sweep_folder_are_safe_and_unique():
    taken: set[str] = set()
    assert file_stem("attention-backend=fa3", taken) == "attention-backend=fa3"
    assert (
        file_stem("--triton-attention-num-kv-splits=8", taken) == "triton-attention-num-kv-splits=8"
    )
    assert file_stem("a/../b c", taken) == "a_.._b_c"
    assert file_stem("attention-backend=fa3", taken) == "attention-backend=fa3-2"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--vary", "cuda-graph=off"], "ablate needs --launch CMD with --vary"),
        (["--launch", "x", "--server", "127.0.0.1:1"], "not both"),
        (["--server", "127.0.0.1:1"], "attach mode needs at least two --server URLs"),
        (["--server", "127.0.0.1:1", "--server", "127.0.0.1:2", "--vary", "tp=2"],
         "--vary, --pairs and --chain need --launch"),
        (["--launch", "python -m x 'unclosed", "--vary", "tp=2"], "No closing quotation"),
        (["--launch", "python -m x", "--vary", "colour=red"], "unknown knob 'colour'"),
        (["--launch", "x", "--vary", "tp=2", "--no-record"], "--no-record: kltui ablate records"),
        (["--replay", "/tmp", "--launch", "x"], "--launch: --replay re-reads a sweep folder"),
        (["--launch", "x", "--vary", "tp=2", "--baseline", "127.0.0.1:1"], "--baseline: "),
    ],
)  # fmt: skip
def test_bad_command_lines_are_one_line_and_exit_2(args, said, capsys, tmp_path):
    code = main(["ablate", *args, "--folder", str(tmp_path / "s")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and said in err and "\n" not in err, err
    assert not (tmp_path / "s").exists()


def test_a_launch_command_that_is_not_there_is_one_line_and_exit_3(capsys, tmp_path):
    code = main(["ablate", "--launch", "no-such-server-xyz --port 1", "--vary", "tp=2",
                 "--folder", str(tmp_path / "s")])  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 3 and err == "kltui: error: base: command not found: no-such-server-xyz"


def test_the_config_files_ablate_section(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("samples: 8\nablate:\n  launch: python -m sglang.launch_server\n"
                 "  vary: [cuda-graph=off, 'tp=1,2']\n  pairs: true\n  parallel: 2\n")  # fmt: skip
    cfg = load_config_file(str(f))
    assert cfg.ablate is not None and cfg.ablate.vary == ["cuda-graph=off", "tp=1,2"]
    assert cfg.ablate.pairs is True and cfg.ablate.parallel == 2 and cfg.samples == 8
    assert "ablate" not in cfg.to_record()  # how a sweep is laid out, not what a run measures
    for body, said in [
        ("ablate:\n  vary: 3\n", r"c.yaml:2: 'ablate.vary' must be a list of KNOB=V1,V2 strings"),
        ("ablate:\n  launch: ''\n", r"c.yaml:2: 'ablate.launch' must be the server's launch"),
        ("ablate:\n  vary: [tp=1,2]\n", r"got \['tp=1', 2\]; quote a spec with commas: \"tp=1,2\""),
        ("ablate:\n  parallel: 0\n", r"c.yaml:2: 'ablate.parallel' must be a positive integer"),
        ("ablate:\n  pair: true\n", r"c.yaml:2: unknown key 'pair' in ablate \(did you mean 'pairs'\?\)"),
        ("ablate: [x]\n", r"c.yaml:1: 'ablate' must be a mapping"),
    ]:  # fmt: skip
        f.write_text(body)
        with pytest.raises(ConfigError, match=said):
            load_config_file(str(f))


def test_exit_codes_of_a_sweep(tmp_path):
    base = ConfigRun(Config("base"), "base", status=MEASURED)
    other = ConfigRun(Config("tp=2", {"tp": "2"}), "tp=2", status=FAILED, error="tp=2: died")
    sweep = Sweep(tmp_path, "launch", runs=[base, other])
    assert outcome(sweep).exit_code == 3  # no configuration but the base was measured
    base.status = FAILED
    assert outcome(sweep).exit_code == 3
    sweep.interrupted = True
    assert outcome(sweep).exit_code == 130


def test_a_folder_that_is_not_a_sweep_is_one_line(tmp_path):
    with pytest.raises(UsageError, match="no sweep manifest"):
        load(tmp_path)
    (tmp_path / "ablation.json").write_text('{"format": "kltui-ablation", "version": 99}')
    with pytest.raises(UsageError, match="written by a newer kltui"):
        load(tmp_path)
    (tmp_path / "ablation.json").write_text("{")
    with pytest.raises(UsageError, match="cannot read the sweep manifest"):
        load(tmp_path)


def test_a_configurations_clean_stress_verdict_names_what_was_not_exercised():
    run = ConfigRun(Config("base"), "base", status=MEASURED)
    missed = {"http://127.0.0.1:1": ["eviction"]}
    run.stress = {"verdict": "clean", "not_exercised": missed}
    c = config_stress(run)
    assert c == StressedConfig("base", StressVerdict.CLEAN, missed)
    assert c is not None and c.verdict is StressVerdict.CLEAN
    # the table's note says it in words/ablation_stress.py's words (golden there)
    assert stress_verdict(run) == verdict_of(c) != c.verdict
    run.stress = {"verdict": "clean", "not_exercised": {}}
    assert stress_verdict(run) == "clean"
    # a recording from before the field, and the other verdicts, read as they were
    run.stress = {"verdict": "clean"}
    assert config_stress(run) == StressedConfig("base", StressVerdict.CLEAN, {})
    assert stress_verdict(run) == "clean"
    run.stress = {"verdict": "state bug under load", "not_exercised": {"u": ["retraction"]}}
    assert config_stress(run).verdict is StressVerdict.STATE_BUG  # type: ignore[union-attr]
    assert stress_verdict(run) == StressVerdict.STATE_BUG
    run.stress = {"verdict": "worse"}  # a word this kltui does not know stays as recorded
    assert stress_verdict(run) == "worse"
    run.stress = None
    assert config_stress(run) is None and stress_verdict(run) is None
