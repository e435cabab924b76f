"""`kltui serve-reference` (and `python -m kltui.reference serve`): arguments and entry point.

Importing this module is cheap (no torch); `main` imports the server, and with it torch.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from pathlib import Path

from kltui.reference import CHECKPOINT_DIR
from kltui.reference.arch import ARCHS, FLA_CHUNK_SIZE, STRATEGIES, Arch
from kltui.reference.faults import FAULTS, fault_arg

PARENT_PID_ENV = "KLTUI_REFERENCE_PARENT_PID"
PDEATHSIG_ENV = "KLTUI_REFERENCE_PDEATHSIG"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The server's flags, SGLang's names where SGLang has one (--help lists them in this
    order)."""
    parser.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=30000, help="port; 0 picks a free one")
    _add_fault_arguments(parser)
    _add_model_arguments(parser)
    _add_schedule_arguments(parser)
    _add_runtime_arguments(parser)
    _add_cuda_graph_arguments(parser)
    _add_arch_arguments(parser)
    parser.add_argument(
        "--skip-tokenizer-init",
        action="store_true",
        help="as SGLang's flag: ids in and out only; a text prompt gets SGLang's HTTP 400",
    )


def _add_fault_arguments(parser: argparse.ArgumentParser) -> None:
    """Batch invariance, and the state bug to plant (and when it wakes)."""
    parser.add_argument(
        "--deterministic",
        "--enable-deterministic-inference",
        dest="deterministic",
        action="store_true",
        help="batch-invariant kernels: prefill and decode logprobs are bit-identical "
        "(--enable-deterministic-inference is SGLang's name)",
    )
    parser.add_argument(
        "--fault",
        type=fault_arg,
        default="none",
        metavar="FAULT",
        help=f"plant a state bug ({', '.join(FAULTS)}; reference/faults.py says what each does "
        "and what triggers it)",
    )
    parser.add_argument(
        "--fault-window", type=int, default=32, help="attention window of the window-evict fault"
    )
    parser.add_argument(
        "--fault-after-flushes",
        type=int,
        default=0,
        metavar="N",
        help="the planted --fault stays dormant until the N-th successful /flush_cache (a bug "
        "that appears after a server has run a while; /server_info's internal_states says "
        "kltui_fault_active)",
    )


def _add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """What is served and how it answers: the page size, the checkpoint, streaming, the key."""
    parser.add_argument("--page-size", type=int, default=1, help="radix cache page size")
    parser.add_argument(
        "--checkpoint",
        "--model-path",
        dest="checkpoint",
        default=str(CHECKPOINT_DIR),
        help="HF Llama folder to serve (--model-path is SGLang's name)",
    )
    parser.add_argument(
        "--incremental-streaming-output",
        action="store_true",
        help="stream deltas instead of cumulative text/output_ids/logprobs",
    )
    parser.add_argument("--api-key", default=None, help="require 'Authorization: Bearer KEY'")


def _add_schedule_arguments(parser: argparse.ArgumentParser) -> None:
    """The radix cache and the scheduler: what decides which requests share a forward."""
    parser.add_argument(
        "--disable-radix-cache", action="store_true", help="no prefix reuse (cached_tokens = 0)"
    )
    parser.add_argument(
        "--max-total-tokens", type=int, default=65536, help="radix cache capacity in tokens"
    )
    parser.add_argument(
        "--stream-interval", type=int, default=1, help="decode steps per streamed chunk (1)"
    )
    parser.add_argument(
        "--max-running-requests", type=int, default=128, help="requests decoding at once (128)"
    )
    parser.add_argument(
        "--chunked-prefill-size",
        type=int,
        default=8192,
        help="new tokens per prefill step (8192); the chunk-boundary fault cuts there",
    )


def _add_runtime_arguments(parser: argparse.ArgumentParser) -> None:
    """Metrics, forced retractions, seeds, threads and the dtype."""
    parser.add_argument(
        "--enable-metrics",
        action="store_true",
        help="serve SGLang's Prometheus /metrics (retractions, queue, token usage)",
    )
    parser.add_argument(
        "--test-retract-interval",
        type=int,
        default=None,
        metavar="N",
        help="retract the newest running request every N decode steps (SGLang's "
        "SGLANG_TEST_RETRACT_INTERVAL); a correct server answers the same",
    )
    parser.add_argument(
        "--random-seed",
        type=int,
        default=None,
        help="seed of per-request sampling seeds when a request names none (random)",
    )
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument(
        "--dtype",
        default="float32",
        choices=("auto", "float32", "float", "bfloat16", "float16", "half"),
        help="weights, activations and KV cache (SGLang's flag; auto and the default: float32). "
        "bfloat16 batched kernels round like a GPU server's, far above the 1e-9 floor",
    )


def _add_cuda_graph_arguments(parser: argparse.ArgumentParser) -> None:
    """SGLang's CUDA-graph flags."""
    # SGLang's CUDA-graph flags, accepted so that an SGLang command line runs here unchanged. The
    # llama arch has no CUDA graphs (/server_info says disable_cuda_graph: true either way), which
    # makes them the flags a test can show "did not take effect" with; the stateful archs replay
    # "captured" decode steps unless --disable-cuda-graph (what graph-stale-tail needs).
    parser.add_argument(
        "--disable-cuda-graph",
        action="store_true",
        help="mamba and swa archs: no captured decode graphs (llama: accepted and ignored)",
    )
    parser.add_argument(
        "--disable-prefill-cuda-graph",
        action="store_true",
        help="accepted as SGLang's flag and ignored: this server has no CUDA graphs",
    )
    parser.add_argument(
        "--cuda-graph-max-bs",
        type=int,
        default=None,
        metavar="N",
        help="accepted as SGLang's flag and ignored: this server has no CUDA graphs",
    )


def _add_arch_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--arch",
        choices=ARCHS,
        default="llama",
        help="llama (dense, the default); mamba (a recurrent layer whose state the radix cache "
        "keeps at checkpoints); swa (sliding-window attention on alternate layers)",
    )
    parser.add_argument(
        "--mamba-radix-cache-strategy",
        "--mamba-scheduler-strategy",
        dest="mamba_radix_cache_strategy",
        choices=STRATEGIES,
        default="extra_buffer",
        help="--arch mamba: SGLang's strategy (extra_buffer: checkpoints at prefill chunks and "
        "every track interval; no_buffer: only where a request ended)",
    )
    parser.add_argument(
        "--mamba-track-interval",
        type=int,
        default=256,
        help="--arch mamba: decode saves the state every N tokens (256; a multiple of the page)",
    )
    parser.add_argument(
        "--mamba-chunk-size",
        type=int,
        default=FLA_CHUNK_SIZE,
        help="--arch mamba: the model's chunk (config.json's mamba_chunk_size; 64); prefill "
        "saves at multiples of max(chunk, page size)",
    )
    parser.add_argument(
        "--sliding-window",
        type=int,
        default=128,
        help="--arch swa: the window of the sliding layers (128; config.json's sliding_window)",
    )


def _arch(args: argparse.Namespace) -> Arch:
    return Arch(
        name=args.arch,
        page_size=args.page_size,
        mamba_chunk_size=args.mamba_chunk_size,
        mamba_track_interval=args.mamba_track_interval,
        mamba_radix_cache_strategy=args.mamba_radix_cache_strategy,
        sliding_window=args.sliding_window,
        disable_cuda_graph=args.disable_cuda_graph,
    )


def main(args: argparse.Namespace) -> int:
    _watch_parent()
    for flag, value in (
        ("--page-size", args.page_size),
        ("--max-running-requests", args.max_running_requests),
        ("--chunked-prefill-size", args.chunked_prefill_size),
        ("--test-retract-interval", args.test_retract_interval or 1),
    ):
        if value < 1:
            print(f"error: {flag} must be at least 1", file=sys.stderr)
            return 2
    arch = _arch(args)
    if arch.problem():
        print(f"error: {arch.problem()}", file=sys.stderr)
        return 2
    if not (Path(args.checkpoint) / "config.json").is_file():
        print(f"error: no HF checkpoint (config.json) in {args.checkpoint}", file=sys.stderr)
        return 2
    from kltui.reference.server import serve  # torch loads here
    from kltui.reference.state import ServerSettings

    settings = ServerSettings(
        checkpoint=Path(args.checkpoint),
        host=args.host,
        port=args.port,
        deterministic=args.deterministic,
        fault=args.fault,
        fault_window=args.fault_window,
        page_size=args.page_size,
        incremental_streaming_output=args.incremental_streaming_output,
        api_key=args.api_key,
        disable_radix_cache=args.disable_radix_cache,
        max_total_tokens=args.max_total_tokens,
        stream_interval=args.stream_interval,
        random_seed=args.random_seed,
        threads=args.threads,
        skip_tokenizer_init=args.skip_tokenizer_init,
        dtype=args.dtype,
        max_running_requests=args.max_running_requests,
        chunked_prefill_size=args.chunked_prefill_size,
        enable_metrics=args.enable_metrics,
        retract_interval=args.test_retract_interval,
        fault_after_flushes=args.fault_after_flushes,
        arch=arch,
    )
    try:
        return serve(settings, _launch_command())
    except OSError as e:  # typically the port is taken
        print(f"error: cannot serve on {args.host}:{args.port}: {e}", file=sys.stderr)
        return 1


def _launch_command() -> str:
    argv = list(sys.argv)
    if "--api-key" in argv:  # never echo the key through /server_info
        i = argv.index("--api-key")
        if i + 1 < len(argv):
            argv[i + 1] = "***"
    return " ".join([sys.executable, *argv])


def _watch_parent() -> None:
    """Exit when the launching process dies, so a server never outlives its parent.

    PR_SET_PDEATHSIG fires when the launching *thread* exits, so the launcher asks for it only
    when it launched from the main thread; the getppid() watch covers every other case.
    """
    expected = os.environ.get(PARENT_PID_ENV)
    if not expected:
        return
    expected_pid = int(expected)
    if sys.platform.startswith("linux") and os.environ.get(PDEATHSIG_ENV) == "1":
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if os.getppid() != expected_pid:  # the parent died before the watch began
        os._exit(1)

    def watch() -> None:
        while os.getppid() == expected_pid:
            time.sleep(0.25)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
        os._exit(1)  # graceful shutdown did not finish in time

    threading.Thread(target=watch, name="kltui-parent-watch", daemon=True).start()
