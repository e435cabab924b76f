"""`kltui dumps` against servers without the dumper hooks, and `kltui probe-ops` on this CPU."""

from __future__ import annotations

import json
import os
import socket

import pytest

from kltui.cli import main

pytest.importorskip("torch")


def test_server_without_dumper_hooks_prints_launch_settings(reference_servers, tmp_path, capsys):
    url = reference_servers.url()
    code = main(["dumps", "--server", url, "--dump-dir", str(tmp_path), "--new-tokens", "2"])
    err = capsys.readouterr().err
    assert code == 2
    first, *settings = err.strip().splitlines()
    assert "no /dumper/ routes" in first and "DUMPER_SERVER_PORT=reuse" in first
    text = "\n".join(settings)
    for need in (
        "DUMPER_ENABLE=0",
        "DUMPER_SERVER_PORT=reuse",
        "DUMPER_NON_INTRUSIVE_MODE=all",
        f"DUMPER_DIR={tmp_path}",
        "--disable-cuda-graph",
        "--disable-prefill-cuda-graph",
    ):
        assert need in text
    assert not list(tmp_path.iterdir())


def test_unreachable_server_is_exit_3(tmp_path, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = main(["dumps", "--server", f"127.0.0.1:{port}", "--dump-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 3 and "cannot connect" in err


def test_probe_ops_refuses_m1_against_m1(tmp_path, capsys):
    # N=1 is the same launch shape as M=1: comparing it with itself proves nothing
    out = tmp_path / "p.json"
    code = main(["probe-ops", "--sizes", "1", "--hidden", "64", "--json", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "--sizes 1: M=1 against M=1" in err and not out.exists()


def test_probe_ops_names_the_cpu_it_ran_on(tmp_path, capsys, monkeypatch):
    import torch

    # without a GPU (as torch sees it) the default is the CPU, named as such
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    out = tmp_path / "p.json"
    code = main(["probe-ops", "--sizes", "1,2", "--hidden", "32", "--vocab", "64",
                 "--heads", "2", "--head-dim", "8", "--json", str(out)])  # fmt: skip
    r = json.loads(out.read_text())
    assert r["device"] == "cpu" and r["device_name"].startswith("CPU")
    assert r["dtypes"] == ["float32"] and [p["dtype"] for p in r["probes"]] == ["float32"]
    assert [o["op"] for o in r["probes"][0]["ops"]] == [
        "matmul", "addmm", "linear", "bmm", "rms_norm", "log_softmax", "softmax", "mean",
        "sdpa_prefill", "sdpa_decode",
    ]  # fmt: skip
    printed = capsys.readouterr().out
    assert f"on cpu: {r['device_name']} (float32" in printed.replace("\n", " ")
    assert f"on cpu ({r['device_name']})" in printed
    assert code == (0 if r["identical"] else 1)


def test_probe_ops_defaults_to_the_gpu_in_bf16_and_fp32_when_torch_sees_one(monkeypatch):
    import torch

    from kltui.dumps import probe_ops

    class Stop(Exception):
        """Raised where the probing would start (this machine has no GPU to probe)."""

    seen = {}

    def stop(a):
        seen.update(vars(a))
        raise Stop

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(probe_ops, "probe", stop)
    with pytest.raises(Stop):
        main(["probe-ops", "--sizes", "2"])
    assert seen["device"] == "cuda" and seen["dtypes"] == ["bfloat16", "float32"]


def test_probe_ops_reports_each_n_and_exit_follows_the_table(tmp_path, capsys):
    out = tmp_path / "p.json"
    code = main(
        [
            "probe-ops",
            "--device",
            "cpu",
            "--sizes",
            "1,4,64",
            "--hidden",
            "128",
            "--vocab",
            "512",
            "--json",
            str(out),
        ]
    )
    r = json.loads(out.read_text())
    assert r["device"] == "cpu" and r["dtypes"] == ["float32"] and r["sizes"] == [1, 4, 64]
    for o in r["probes"][0]["ops"]:
        assert [x["n"] for x in o["results"]] == [1, 4, 64]
        for x in o["results"]:
            assert x["identical"] == (x["max_abs_diff"] == 0)
        assert o["results"][0]["identical"]  # N=1
    assert code == (0 if r["identical"] else 1)
    printed = capsys.readouterr().out
    assert "N=64" in printed and "rms_norm" in printed


@pytest.mark.parametrize(
    "args, msg",
    [
        (["--sizes", "a,b"], "--sizes"),
        (["--device", "cuda"], "cuda"),
        (["--dtype", "int8"], "--dtype"),
        (["--device", "nope"], "--device"),
    ],
)
def test_probe_ops_bad_input(args, msg, capsys):
    import torch

    if args == ["--device", "cuda"] and torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    code = main(["probe-ops", *args])
    err = capsys.readouterr().err
    assert code == 2 and msg in err and len(err.strip().splitlines()) == 1


def test_ctrl_c_while_capturing_is_130(tmp_path, capsys):
    # a server that accepts and never answers holds the capture until the SIGINT
    import signal
    import threading

    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(8)
        accepted = threading.Event()

        def hold():
            conns = []
            while not accepted.is_set() or len(conns) < 8:
                try:
                    conns.append(srv.accept()[0])
                except OSError:
                    return
                accepted.set()

        threading.Thread(target=hold, daemon=True).start()

        def interrupt():
            # a real signal, as Ctrl-C sends: _thread.interrupt_main only sets Python's flag,
            # which a main thread blocked in the event loop's poll does not see until the
            # request times out (the test then took 600 s instead of one)
            if accepted.wait(30):
                os.kill(os.getpid(), signal.SIGINT)

        threading.Thread(target=interrupt, daemon=True).start()
        url = f"127.0.0.1:{srv.getsockname()[1]}"
        code = main(["dumps", "--server", url, "--dump-dir", str(tmp_path)])
    assert accepted.is_set()
    assert code == 130, capsys.readouterr().err
