"""Stand-in for SGLang's GPU kernel package `sgl_kernel`: TEST INFRASTRUCTURE ONLY.

`sglang-kernel` has no CPU build and no source distribution, yet SGLang 0.5.23 imports names
from `sgl_kernel` at module level all over its server code. This module lets those imports
succeed on a CPU-only machine: every attribute is a function that raises NotImplementedError
when called. The CPU path used by kltui's real-engine tests (torch_native attention, float32,
prefill, decode, radix-cache hits, flush) calls none of them, so a call means that path changed
and must fail loudly rather than compute something else.

It is put on PYTHONPATH only for the SGLang server that scripts/real_engines/manage.py starts;
kltui never imports it.
"""

from __future__ import annotations

__version__ = "0.0.0+kltui-standin"


def _missing(name: str):
    def kernel(*args, **kwargs):
        raise NotImplementedError(
            f"sgl_kernel.{name} is a stand-in (scripts/real_engines/sgl_kernel_standin): "
            "no GPU kernel exists on this machine"
        )

    kernel.__name__ = name
    kernel.__qualname__ = name
    return kernel


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    fn = _missing(name)
    globals()[name] = fn
    return fn
