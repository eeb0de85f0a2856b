"""The GPU tests' process: memplan installed as PyTorch's CUDA allocator before anything
allocates CUDA memory (the allocator is chosen once per process). Skipped without CUDA PyTorch or
without libmemplan_torch.so."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device visible to PyTorch", allow_module_level=True)

import memplan  # noqa: E402

try:
    memplan.load()
except FileNotFoundError as e:
    pytest.skip(f"libmemplan_torch.so not built: {e}", allow_module_level=True)
memplan.torch.install(log_level="warn")
memplan.torch.warm_up()  # the default stream's cuBLAS workspaces, in the pool
