"""torchvision import fix for the SGLang test venv: TEST INFRASTRUCTURE ONLY.

PyPI's torchvision wheels are built against CUDA torch. Beside the CPU torch build their C
extension does not load, and `import torchvision` then fails with
"operator torchvision::nms does not exist" while registering fake kernels for ops whose schemas
the extension would have defined. SGLang 0.5.23 imports torchvision at server start-up (its
multimodal config modules), so the SGLang server started by scripts/real_engines/manage.py gets
this folder on PYTHONPATH.

Only the two schemas are defined (no kernels): the CPU text-only path never calls them, and a
call would fail loudly. torch is imported lazily, on the first import of torchvision, so other
programs run in that venv (pip, for one) do not pay for it.
"""

from __future__ import annotations

import importlib.abc
import sys

SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
)
_libs: list = []  # a Library object unregisters its definitions when collected


def _define_schemas() -> None:
    import torch

    lib = torch.library.Library("torchvision", "FRAGMENT")
    for schema in SCHEMAS:
        name = schema.split("(", 1)[0]
        try:
            torch._C._dispatch_find_schema_or_throw(f"torchvision::{name}", "")
        except RuntimeError:
            lib.define(schema)
    _libs.append(lib)


class _TorchvisionHook(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname == "torchvision":
            sys.meta_path.remove(self)
            _define_schemas()
        return None  # the regular finders do the actual import


sys.meta_path.insert(0, _TorchvisionHook())
