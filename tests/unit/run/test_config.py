import pytest

from kltui.run.config import ConfigError, RunConfig, load_config_file, resolve_threshold


def write(tmp_path, text):
    p = tmp_path / "cfg.yaml"
    p.write_text(text)
    return str(p)


def test_valid_config(tmp_path):
    cfg = load_config_file(
        write(
            tmp_path,
            """
servers: [localhost:30000]
helpers: match,decode_cache_hit
samples: 48
tail_threshold: 1.0e-4
thresholds:
  - model: Qwen/Qwen3-Next-80B-A3B-Instruct
    tp: 4
    kl_div: 0.002
    kl_div_prefill: 0.004
keymap: {open-sample: o}
""",
        )
    )
    assert cfg.helpers == ["match", "decode_cache_hit"]
    assert cfg.samples == 48 and cfg.tail_threshold == 1e-4
    assert cfg.thresholds[0].kl_div_prefill == 0.004
    assert cfg.keymap == {"open-sample": "o"}


def test_unknown_key_has_line_and_did_you_mean(tmp_path):
    path = write(tmp_path, "samples: 4\nmax_new_token: 8\n")
    with pytest.raises(
        ConfigError,
        match=r"cfg.yaml:2: unknown key 'max_new_token' \(did you "
        r"mean 'max_new_tokens'\?\)",
    ):
        load_config_file(path)


def test_wrong_type_names_line(tmp_path):
    with pytest.raises(ConfigError, match=r":3: 'samples' must be a positive integer"):
        load_config_file(write(tmp_path, "seed: 1\n\nsamples: many\n"))


def test_bool_is_not_an_int(tmp_path):
    with pytest.raises(ConfigError, match="samples"):
        load_config_file(write(tmp_path, "samples: true\n"))


def test_invalid_yaml_has_line(tmp_path):
    with pytest.raises(ConfigError, match=r"cfg.yaml:3: invalid YAML: expected"):
        load_config_file(write(tmp_path, "samples: 4\nhelpers: [match\n"))


def test_unknown_threshold_entry_key(tmp_path):
    with pytest.raises(ConfigError, match=r":4: unknown key 'kl_dvi'"):
        load_config_file(write(tmp_path, "thresholds:\n  - model: m\n    tp: 1\n    kl_dvi: 1\n"))


def test_unknown_helper(tmp_path):
    with pytest.raises(Exception, match="did you mean 'match'"):
        load_config_file(write(tmp_path, "helpers: [mach]\n"))


def test_missing_file():
    with pytest.raises(ConfigError, match="nope.yaml: file not found"):
        load_config_file("nope.yaml")


def test_threshold_resolution_order():
    cfg = RunConfig()
    t = resolve_threshold(
        cfg, "match", model="/models/Qwen3-Next-80B-A3B-Instruct", tp=4, deterministic=False
    )
    assert t.kl_div == 0.002 and t.source.preset == "sglang-ci" and not t.source.user_set
    t = resolve_threshold(
        cfg,
        "prefill_cache_hit",
        model="nvidia/NVIDIA-Nemotron-Nano-9B-v2",
        tp=1,
        deterministic=False,
    )
    assert t.kl_div == 0.012
    t = resolve_threshold(cfg, "match", model="x", tp=1, deterministic=True)
    assert t.kl_div == 1e-9 and t.source.preset == "deterministic"
    assert t.source.label == (
        "preset deterministic (server reports enable_deterministic_inference) (*)"
    )
    cfg.threshold = 0.5
    assert resolve_threshold(cfg, "match", model="x", tp=1, deterministic=True).kl_div == 0.5


def test_record_never_holds_api_key():
    cfg = RunConfig(api_key="sekrit-123")
    rec = cfg.to_record()
    assert "sekrit-123" not in repr(rec) and rec["api_key_set"] is True


def test_fleet_section_sets_router_and_concurrency(tmp_path):
    cfg = load_config_file(write(tmp_path, "fleet: {router: 127.0.0.1:30000, concurrency: 8}\n"))
    assert (cfg.router, cfg.fleet_concurrency) == ("127.0.0.1:30000", 8)
    assert RunConfig().fleet_concurrency == 4
    assert RunConfig().fleet_require == "gate"


def test_fleet_section_sets_what_fails_the_fleet(tmp_path):
    cfg = load_config_file(write(tmp_path, "fleet: {router: r:1, require: identical}\n"))
    assert cfg.fleet_require == "identical"
    assert cfg.to_record()["fleet_require"] == "identical"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("fleet: 127.0.0.1:30000\n", r"cfg.yaml:1: 'fleet' must be a mapping"),
        ("fleet:\n  concurrency: 2\n", r"cfg.yaml:2: 'fleet' needs 'router'"),
        ("fleet:\n  router: r:1\n  routr: x\n", r"cfg.yaml:3: unknown key 'routr' in fleet"),
        ("fleet:\n  router: r:1\n  concurrency: 0\n", r"cfg.yaml:3: 'fleet.concurrency' must"),
        ("fleet:\n  router: r:1\n  require: same\n", r"cfg.yaml:3: 'fleet.require' must be one"),
        ("fleet:\n  router: r:1\n  require: 1\n", r"cfg.yaml:3: 'fleet.require'"),
    ],
)
def test_bad_fleet_section_names_file_and_line(tmp_path, text, message):
    with pytest.raises(ConfigError, match=message):
        load_config_file(write(tmp_path, text))


def test_concurrency_from_the_file_and_the_command_line(tmp_path):
    from kltui.cli.options import build_config
    from kltui.cli.parser import make_parser

    assert RunConfig().concurrency == 1  # one server after the other, as before
    path = write(tmp_path, "servers: [127.0.0.1:30000, 127.0.0.1:30001]\nconcurrency: 2\n")
    assert load_config_file(path).concurrency == 2
    with pytest.raises(ConfigError, match=r"cfg.yaml:2: 'concurrency' must be a positive integer"):
        load_config_file(write(tmp_path, "servers: [127.0.0.1:30000]\nconcurrency: 0\n"))
    args = make_parser().parse_args(["check", "--server", "127.0.0.1:1", "--concurrency", "3"])
    assert build_config(args).concurrency == 3
