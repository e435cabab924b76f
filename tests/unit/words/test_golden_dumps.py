"""The dumper hand-over in words: the `kltui dumps` command of a next step (`words/advice`) and
how to relaunch SGLang with the dumper hooks (`dumps/capture.launch_settings`); the dumps screen's
and the diagnosis views' tests assert that they show these."""

from __future__ import annotations

from kltui.dumps.capture import launch_settings
from kltui.words.advice import dumps_command


def test_the_dumps_command():
    assert dumps_command("http://127.0.0.1:30000/") == (
        "kltui dumps --server 127.0.0.1:30000 --dump-dir DIR"
    )
    assert (
        dumps_command("http://h:1", "/tmp/a b") == "kltui dumps --server h:1 --dump-dir '/tmp/a b'"
    )


def test_the_launch_settings():
    assert launch_settings("/d").splitlines() == [
        "launch the server with SGLang's dumper hooks (sglang.srt.debug_utils.dumper):",
        "  DUMPER_ENABLE=0 DUMPER_SERVER_PORT=reuse DUMPER_NON_INTRUSIVE_MODE=all DUMPER_DIR=/d \\",
        "    python -m sglang.launch_server <your flags> --disable-cuda-graph "
        "--disable-prefill-cuda-graph",
        "  (DUMPER_SERVER_PORT=reuse is a literal: it adds /dumper/* to the server's own port; "
        "mode 'all' hooks every module; CUDA graphs replay kernels without running the hooks)",
    ]
