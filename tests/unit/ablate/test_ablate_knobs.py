"""kltui ablate's knobs (issue 29): --vary specs, the installed server's flags read from its
--help (real SGLang text and the reference server's), unknown knobs refused before anything
starts, a launch argv edited in every form, and /server_info read as knob values."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kltui.ablate.knobs import (
    KNOBS,
    apply,
    check_known,
    current,
    installed_flags,
    parse_vary,
    settings_key,
    switch_flags,
)
from kltui.errors import UsageError

DATA = Path(__file__).resolve().parents[2] / "data" / "sglang_help"
SGLANG = "python -m sglang.launch_server --model-path M".split()


def one_line_error(spec: str) -> str:
    with pytest.raises(UsageError) as e:
        parse_vary(spec)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


# --------------------------------------------------------------------------- --vary
def test_named_knobs_parse_and_normalize():
    v = parse_vary("attention-backend=fa3, triton")
    assert v.knob.name == "attention-backend" and v.values == ("fa3", "triton")
    assert v.knob.flags == ("--attention-backend",)
    assert parse_vary("cuda-graph=OFF,true").values == ("off", "on")
    assert parse_vary("tp=2").knob.flags[0] == "--tp-size"
    assert parse_vary("dtype=half,bfloat16").values == ("float16", "bfloat16")
    assert parse_vary("chunked-prefill-size=-1,512").values == ("-1", "512")


def test_raw_flags_are_knobs_too():
    v = parse_vary("--triton-attention-num-kv-splits=1,8")
    assert v.knob.raw and v.knob.flags == ("--triton-attention-num-kv-splits",)
    assert v.values == ("1", "8") and not v.knob.switch
    assert v.knob.key == "triton_attention_num_kv_splits"
    # a raw flag's values are what the user typed, whatever they look like (issue 44)
    s = parse_vary("--enable-mixed-chunk=on,off")
    assert not s.knob.switch and s.values == ("on", "off")
    assert parse_vary("--chunked-prefill-size=0").values == ("0",)
    assert parse_vary("--max-running-requests=1").values == ("1",)


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("attention-backend", "expected KNOB=V1,V2"),
        ("=fa3", "expected KNOB=V1,V2"),
        ("attention-backend=", "an empty value"),
        ("attention-backend=fa3,,triton", "an empty value"),
        ("atention-backend=fa3", "unknown knob 'atention-backend' (closest: attention-backend)"),
        ("cuda-graph=maybe", "cuda-graph takes on or off, not 'maybe'"),
        ("page-size=big", "page-size takes a whole number, not 'big'"),
        ("attention-backend=fa3,fa3", "fa3 given more than once"),
        ("cuda-graph=off,false", "off given more than once"),
        ("--bad flag=1", "is not a flag name"),
    ],
)
def test_bad_specs_are_one_line_naming_the_spec(spec, says):
    msg = one_line_error(spec)
    assert says in msg, msg
    assert msg.startswith(f"--vary {spec.strip()!r}") or msg.startswith("--vary '")


def test_a_control_character_in_a_spec_is_escaped():
    msg = one_line_error("foo\x1b[2J=1")
    assert "\x1b" not in msg and "\n" not in msg


# --------------------------------------------------------------------------- --help
def test_installed_flags_from_real_sglang_usage_block():
    flags = installed_flags((DATA / "launch_server_usage_0.5.8.post1.txt").read_text())
    for f in (
        "--model-path",
        "--attention-backend",
        "--sampling-backend",
        "--disable-cuda-graph",
        "--disable-radix-cache",
        "--page-size",
        "--chunked-prefill-size",
        "--enable-deterministic-inference",
        "--dtype",
        "--kv-cache-dtype",
        "--tensor-parallel-size",
        "--enable-torch-compile",
        "--triton-attention-num-kv-splits",
    ):
        assert f in flags, f
    # the usage block names an option by its first spelling only
    assert "--tp-size" not in flags
    assert "--ss" not in flags  # the error line after the block is not a flag list


def test_installed_flags_from_real_sglang_options_section():
    flags = installed_flags((DATA / "server_options_excerpt.txt").read_text())
    assert {"--tensor-parallel-size", "--tp-size", "--model", "--model-path"} <= flags
    assert {"--disable-cuda-graph", "--disable-cuda-graph-padding", "--sampling-backend"} <= flags
    # flags named inside help sentences are not the program's own
    assert "--attention-" not in flags and "--log-level" not in flags
    assert "--help" not in flags


def test_installed_flags_from_the_reference_servers_help():
    out = subprocess.run(
        [sys.executable, "-m", "kltui.reference", "serve", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    flags = installed_flags(out)
    # whatever it lists today: every option line's flags, nothing from its help sentences
    listed = {
        tok.rstrip(",")
        for line in out.splitlines()
        if line.startswith("  -")
        for tok in line.split()
        if tok.startswith("--")
    }
    assert {"--page-size", "--disable-radix-cache", "--port"} <= flags
    assert listed - {"--help"} <= flags
    assert "--deterministic" in flags or "--enable-deterministic-inference" in flags
    switches = switch_flags(out)
    assert {
        "--disable-radix-cache",
        "--deterministic",
        "--enable-deterministic-inference",
    } <= switches
    assert (
        not {"--chunked-prefill-size", "--max-running-requests", "--page-size", "--fault"}
        & switches
    )
    assert not {"--dtype", "--checkpoint", "--model-path"} & switches


def test_check_known_refuses_an_unknown_knob_with_the_closest_flag():
    flags = installed_flags((DATA / "server_options_excerpt.txt").read_text())
    with pytest.raises(UsageError) as e:
        check_known([parse_vary("deterministic=on")], flags)
    msg = str(e.value)
    assert "\n" not in msg and "deterministic (--enable-deterministic-inference)" in msg
    with pytest.raises(UsageError) as e:
        check_known([parse_vary("--triton-attention-num-kv-split=1,8")], flags)
    assert "closest: --triton-attention-num-kv-splits" in str(e.value)
    with pytest.raises(UsageError, match="no flag could be read"):
        check_known([parse_vary("tp=2")], set())


# what `python -m kltui.reference serve --help` lists
REFERENCE_FLAGS = {
    "--api-key", "--checkpoint", "--chunked-prefill-size", "--cuda-graph-max-bs",
    "--deterministic", "--disable-cuda-graph", "--disable-radix-cache", "--dtype",
    "--enable-deterministic-inference", "--enable-metrics", "--fault", "--fault-window",
    "--host", "--incremental-streaming-output", "--max-running-requests", "--max-total-tokens",
    "--model-path", "--page-size", "--port", "--random-seed", "--skip-tokenizer-init",
    "--stream-interval", "--test-retract-interval", "--threads",
}  # fmt: skip


def test_a_flag_is_suggested_only_when_it_is_close():
    # issue 46 item 5: --vary attention-backend against the reference server: "closest: --api-key"
    with pytest.raises(UsageError) as e:
        check_known([parse_vary("attention-backend=fa3,triton")], REFERENCE_FLAGS)
    msg = str(e.value)
    assert "closest" not in msg and "--api-key" not in msg, msg
    assert "this server has no such setting to vary" in msg, msg
    with pytest.raises(UsageError, match="closest: --page-size"):
        check_known([parse_vary("--page-sizes=1,16")], REFERENCE_FLAGS)


def test_check_known_puts_the_installed_spelling_first():
    usage = installed_flags((DATA / "launch_server_usage_0.5.8.post1.txt").read_text())
    (tp,) = check_known([parse_vary("tp=2")], usage)
    assert tp.knob.flags[0] == "--tensor-parallel-size"
    assert apply(SGLANG, tp.knob, "2")[-2:] == ["--tensor-parallel-size", "2"]
    (det,) = check_known([parse_vary("deterministic=on")], {"--deterministic", "--port"})
    assert det.knob.flags[0] == "--deterministic"
    assert apply(["serve"], det.knob, "on") == ["serve", "--deterministic"]


# --------------------------------------------------------------------------- switches
MIXED = {"--enable-mixed-chunk"}


def test_switches_are_the_flags_the_help_shows_taking_no_value():
    usage = switch_flags((DATA / "launch_server_usage_0.5.8.post1.txt").read_text())
    assert {
        "--disable-cuda-graph",
        "--enable-deterministic-inference",
        "--skip-tokenizer-init",
    } <= usage
    assert not {"--page-size", "--chunked-prefill-size", "--dtype", "--model-path"} & usage
    assert "--cuda-graph-bs" not in usage  # "[--cuda-graph-bs CUDA_GRAPH_BS [CUDA_GRAPH_BS ...]]"
    options = switch_flags((DATA / "server_options_excerpt.txt").read_text())
    assert {"--disable-radix-cache", "--disable-cuda-graph", "--enable-torch-compile"} <= options
    assert not {"--tp-size", "--tensor-parallel-size", "--model", "--attention-backend"} & options


def test_a_raw_flag_is_a_switch_only_when_the_help_shows_it_taking_no_value():
    # issue 44: --chunked-prefill-size=0 read as "off" (skipped as the base's own value) and
    # --max-running-requests=1 as "on" (written bare: "expected one argument")
    flags = REFERENCE_FLAGS
    switches = {"--disable-radix-cache", "--deterministic", "--enable-metrics"}
    cps, mrr, radix = check_known(
        [
            parse_vary("--chunked-prefill-size=0"),
            parse_vary("--max-running-requests=1"),
            parse_vary("--disable-radix-cache=on,off"),
        ],
        flags,
        switches,
    )
    assert not cps.knob.switch and cps.values == ("0",)
    assert apply(["serve"], cps.knob, "0") == ["serve", "--chunked-prefill-size", "0"]
    assert not mrr.knob.switch and apply(["serve"], mrr.knob, "1") == [
        "serve",
        "--max-running-requests",
        "1",
    ]
    assert radix.knob.switch and radix.values == ("on", "off")
    assert apply(["serve"], radix.knob, "on") == ["serve", "--disable-radix-cache"]
    with pytest.raises(UsageError) as e:
        check_known([parse_vary("--enable-metrics=2")], flags, switches)
    assert "--help shows --enable-metrics taking no value: give on or off" in str(e.value)
    with pytest.raises(UsageError, match="on given more than once"):
        check_known([parse_vary("--enable-metrics=yes,1")], flags, switches)


# --------------------------------------------------------------------------- argv
def test_apply_replaces_a_value_in_place_keeping_its_form():
    argv = [*SGLANG, "--attention-backend", "triton", "--port", "1"]
    out = apply(argv, "attention-backend", "fa3")
    assert out == [*SGLANG, "--attention-backend", "fa3", "--port", "1"]
    eq = apply([*SGLANG, "--page-size=1", "--port", "1"], "page-size", "16")
    assert eq == [*SGLANG, "--page-size=16", "--port", "1"]
    assert argv == [*SGLANG, "--attention-backend", "triton", "--port", "1"]  # not mutated


def test_apply_appends_an_absent_value_and_drops_repeats():
    assert apply(SGLANG, "page-size", "4") == [*SGLANG, "--page-size", "4"]
    argv = [*SGLANG, "--tp", "2", "--port", "1", "--tensor-parallel-size=4"]
    assert apply(argv, "tp", "8") == [*SGLANG, "--tp", "8", "--port", "1"]
    neg = apply(SGLANG, "chunked-prefill-size", "-1")
    assert neg[-2:] == ["--chunked-prefill-size", "-1"]
    assert current(neg, KNOBS["chunked-prefill-size"]) == "-1"


def test_apply_switches_on_and_off():
    off = apply(SGLANG, "cuda-graph", "off")
    assert off == [*SGLANG, "--disable-cuda-graph"]
    assert apply(off, "cuda-graph", "on") == SGLANG
    assert apply(off, "cuda-graph", "off") == off  # present once, not twice
    det = apply([*SGLANG, "--port", "1"], "deterministic", "on")
    assert det == [*SGLANG, "--port", "1", "--enable-deterministic-inference"]
    # a switch is never followed by a value: the next word stays where it was
    assert apply([*SGLANG, "--disable-radix-cache", "--port", "1"], "radix-cache", "on") == [
        *SGLANG,
        "--port",
        "1",
    ]


def test_apply_raw_flags_in_both_forms():
    knob = parse_vary("--triton-attention-num-kv-splits=1,8").knob
    spaced = [*SGLANG, "--triton-attention-num-kv-splits", "8", "--port", "1"]
    assert apply(spaced, knob, "1") == [
        *SGLANG,
        "--triton-attention-num-kv-splits",
        "1",
        "--port",
        "1",
    ]
    eq = [*SGLANG, "--triton-attention-num-kv-splits=8"]
    assert apply(eq, knob, "1") == [*SGLANG, "--triton-attention-num-kv-splits=1"]
    (mixed,) = check_known([parse_vary("--enable-mixed-chunk=on,off")], MIXED, MIXED)
    switch = mixed.knob
    assert apply(SGLANG, switch, "on") == [*SGLANG, "--enable-mixed-chunk"]
    # the raw flag's arity is unknown: the next word is its value unless it is a flag
    assert apply([*SGLANG, "--enable-mixed-chunk", "--port", "1"], switch, "off") == [
        *SGLANG,
        "--port",
        "1",
    ]


def test_current_reads_the_base_value():
    assert current(SGLANG, KNOBS["cuda-graph"]) == "on"
    assert current([*SGLANG, "--disable-cuda-graph"], KNOBS["cuda-graph"]) == "off"
    assert current(SGLANG, KNOBS["deterministic"]) == "off"
    assert current(SGLANG, KNOBS["attention-backend"]) is None  # the server's default
    argv = [*SGLANG, "--page-size", "1", "--page-size=4"]
    assert current(argv, KNOBS["page-size"]) == "4"  # argparse: the last one wins


# --------------------------------------------------------------------------- /server_info
def test_settings_keys_read_server_info_as_knob_values():
    info = {
        "attention_backend": "fa3",
        "disable_cuda_graph": True,
        "disable_radix_cache": False,
        "page_size": 16,
        "enable_deterministic_inference": True,
        "dtype": "half",
        "tp_size": 2,
        "enable_torch_compile": False,
        "triton_attention_num_kv_splits": 8,
    }
    cg = settings_key("cuda-graph")
    assert cg is not None and cg.key == "disable_cuda_graph"
    assert cg.read(info) == "off" and cg.matches(info, "off") and not cg.matches(info, "on")
    radix = settings_key("radix-cache")
    assert radix is not None and radix.read(info) == "on"
    assert settings_key("page-size").matches(info, "16")  # type: ignore[union-attr]
    assert settings_key("tp").key == "tp_size"  # type: ignore[union-attr]
    assert settings_key("dtype").matches(info, "float16")  # type: ignore[union-attr]
    assert settings_key("deterministic").read(info) == "on"  # type: ignore[union-attr]
    assert settings_key("torch-compile").read(info) == "off"  # type: ignore[union-attr]
    assert settings_key("attention-backend").matches({}, "fa3") is None  # type: ignore[union-attr]
    raw = settings_key("--triton-attention-num-kv-splits")
    assert raw is not None and raw.matches(info, "8") and not raw.matches(info, "1")
    assert {k.key for k in KNOBS.values()} >= {
        "attention_backend",
        "sampling_backend",
        "chunked_prefill_size",
        "kv_cache_dtype",
    }
    with pytest.raises(UsageError, match="unknown knob"):
        settings_key("nope")
