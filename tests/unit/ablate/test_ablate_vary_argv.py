"""`kltui ablate --vary "--raw-flag=V1,V2"` (issue 29: any raw flag is a knob): the value starts
with `--`, which argparse would read as an option of its own."""

from __future__ import annotations

import pytest

from kltui.cli.ablate import join_raw_varies
from kltui.cli.commands import main


def test_a_raw_flag_after_vary_is_kept_as_its_value():
    argv = ["ablate", "--vary", "--triton-attention-num-kv-splits=1,8", "--vary", "tp=2"]
    assert join_raw_varies(argv) == [
        "ablate",
        "--vary=--triton-attention-num-kv-splits=1,8",
        "--vary",
        "tp=2",
    ]
    # an option after --vary without a value is left for argparse to refuse; after `--` nothing
    assert join_raw_varies(["ablate", "--vary", "--pairs"]) == ["ablate", "--vary", "--pairs"]
    assert join_raw_varies(["ablate", "--", "--vary", "--x=1"]) == [
        "ablate",
        "--",
        "--vary",
        "--x=1",
    ]


def test_a_raw_flag_the_server_does_not_have_is_refused_by_name(tmp_path, capsys):
    # the reference server's own --help is read: it has no --triton-attention-num-kv-splits
    code = main(
        [
            "ablate", "--headless", "--launch", "python -m kltui.reference serve",
            "--vary", "--triton-attention-num-kv-splits=1,8", "--folder", str(tmp_path / "s"),
        ]
    )  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err
    assert err.startswith("kltui: error: --vary '--triton-attention-num-kv-splits=1,8': ")
    assert "--triton-attention-num-kv-splits" in err and "no " in err
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize(
    ("option", "said"),
    [
        (["--baseline-log", "v.log"], "--baseline-log: kltui ablate compares configurations"),
        (["--hf-dtype", "float32"], "--hf-dtype: kltui ablate compares configurations"),
    ],
)
def test_check_options_a_sweep_does_not_carry_are_refused_in_one_line(
    tmp_path, capsys, option, said
):
    code = main(["ablate", "--launch", "x", "--vary", "tp=2", *option, "--folder", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith(f"kltui: error: {said}") and "\n" not in err
