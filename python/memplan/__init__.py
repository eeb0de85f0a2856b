"""memplan for Python: the memory compiler as PyTorch's CUDA allocator, over memplan's C API.

    import memplan, torch
    memplan.torch.install()                 # before the first CUDA allocation
    for i in range(steps):
        with memplan.step("denoise"):
            x = model(x, t[i])
    print(memplan.report())

Pure Python over ctypes: importing memplan needs neither PyTorch nor a GPU; memplan.torch (the
allocator, attention, graphs) imports PyTorch when first used. See docs/pytorch.md.
"""

import importlib

from .api import (abort_step, backend, begin_step, check_callbacks, configure, default_options,
                  end_step, init, initialised, pause, plan_epoch, release, report, scope, settle,
                  stats, step, trim, trim_to, version, write_branch_trace)
from .errors import (CudaError, DoubleFree, ForeignPointer, InvalidArgument, InvalidPointer,
                     InvalidState, MemplanError, NotInitialised, OutOfMemory, Unsupported)
from ._library import load

__all__ = [
    "abort_step", "attention", "backend", "begin_step", "check_callbacks", "configure",
    "default_options", "end_step", "init", "initialised", "load", "pause", "plan_epoch",
    "release", "report", "rope_attention", "rope_table", "scope", "settle", "stats", "step", "trim",
    "trim_to", "version",
    "write_branch_trace", "CudaError", "DoubleFree", "ForeignPointer", "InvalidArgument",
    "InvalidPointer", "InvalidState", "MemplanError", "NotInitialised", "OutOfMemory",
    "Unsupported",
]


def attention(q, k, v, policy=None, step_fraction=0.5):
    """memplan's block-sparse attention on bf16 [batch, tokens, heads, head_dim] CUDA tensors
    (memplan.torch.attention)."""
    from . import torch as memplan_torch
    return memplan_torch.attention(q, k, v, policy, step_fraction)


def rope_attention(q, k, v, table, policy=None, step_fraction=0.5, pairs="interleaved"):
    """RoPE on q and k in place, then memplan's attention of them, in one call
    (memplan.torch.rope_attention)."""
    from . import torch as memplan_torch
    return memplan_torch.rope_attention(q, k, v, table, policy, step_fraction, pairs)


def rope_table(cos, sin):
    """The fp32 (cos, sin) table rope_attention takes (memplan.torch.rope_table)."""
    from . import torch as memplan_torch
    return memplan_torch.rope_table(cos, sin)


def __getattr__(name):
    # memplan.torch and memplan.graphs import PyTorch: loaded on first use only.
    if name in ("torch", "graphs"):
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'memplan' has no attribute {name!r}")
