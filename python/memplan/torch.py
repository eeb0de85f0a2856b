"""memplan as PyTorch's CUDA allocator, and memplan's block-sparse attention on torch tensors.

    import memplan
    memplan.torch.install(chunk_bytes=2 << 20)   # before anything allocates CUDA memory

install() hands libmemplan_torch.so's memplan_torch_alloc/memplan_torch_free to
torch.cuda.memory.CUDAPluggableAllocator and makes it the current allocator. From then on every
CUDA tensor of the process comes from memplan: inside `with memplan.step(name):` as the step's
events (recorded once, then replayed from the plan), elsewhere from the persistent pool.
What PyTorch does around a pluggable allocator (empty_cache, record_stream, memory stats, graph
pools) is written down in docs/pytorch.md, "Limitations".
"""

import ctypes
import warnings

from . import _library, api
from .errors import MemplanError

_installed = False
_graph_state_keepers = {}  # device -> an empty graph that keeps its generator's graph state
_warmed_streams = set()  # (device, stream handle) that warm_up made the caches of

ATTENTION_MODES = ("dense", "tau", "topk", "coarse")
ROPE_PAIRS = ("interleaved", "halves")  # memplan_torch_rope_attention's rope_pairs 0 and 1


def install(chunk_bytes=0, reserve_bytes=0, pool_chunk_bytes=0, pool_reserve_bytes=0,
            alignment=0, log_level=None, plan_budget_ms=0, share_pool_chunk=None, library=None):
    """Makes memplan PyTorch's CUDA allocator for this process (0 keeps an option's default;
    the options are memplan.configure's: share_pool_chunk is on unless set False or a
    pool_chunk_bytes other than chunk_bytes is given). Must run before the first CUDA
    allocation: PyTorch cannot swap an allocator in use."""
    global _installed
    import torch

    if _installed:
        raise MemplanError("memplan.torch.install: memplan is installed already in this process")
    if torch.cuda.is_initialized():
        raise MemplanError("memplan.torch.install: CUDA is initialised already, so PyTorch's "
                           "caching allocator is in use; call install before anything touches "
                           "CUDA")
    _library.load(library)
    if api.backend() != "cuda-vmm":
        raise MemplanError(f"memplan.torch.install: {_library.loaded_path()} is the "
                           f"{api.backend()} library; PyTorch needs libmemplan_torch.so")
    api.configure(chunk_bytes=chunk_bytes, reserve_bytes=reserve_bytes,
                  pool_chunk_bytes=pool_chunk_bytes, pool_reserve_bytes=pool_reserve_bytes,
                  alignment=alignment, log_level=log_level, plan_budget_ms=plan_budget_ms,
                  share_pool_chunk=share_pool_chunk)
    allocator = torch.cuda.memory.CUDAPluggableAllocator(
        _library.loaded_path(), "memplan_torch_alloc", "memplan_torch_free")
    try:
        torch.cuda.memory.change_current_allocator(allocator)
    except RuntimeError as e:
        raise MemplanError(
            "memplan.torch.install: PyTorch's allocator is in use already (a CUDA tensor was "
            f"allocated before install); call install first. PyTorch said: {e}") from e
    api._device_hook = torch.cuda.current_device
    _installed = True
    # The current device's compiler now, so that step/scope/pause work before the first tensor.
    api.init(torch.cuda.current_device())
    return allocator


def installed():
    return _installed


def warm_up(stream=None, device=None):
    """Makes PyTorch's per-stream caches for `stream` (default: the current one) now, inside a
    memplan pause: cuBLAS and cuBLASLt keep one workspace per (handle, stream) for the life of the
    process, allocated on first use. Allocated in a step instead, it would be a rogue that never
    dies, holding a range of the planned arena. Once per stream: a later call returns at once."""
    import torch

    device = api.default_device() if device is None else device
    stream = torch.cuda.current_stream(device) if stream is None else stream
    if (device, stream.cuda_stream) in _warmed_streams:
        return
    if not api.initialised(device):
        api.init(device)
    with torch.cuda.stream(stream), api.pause(device), torch.no_grad():
        for dtype in (torch.bfloat16, torch.float16, torch.float32):
            a = torch.ones(64, 64, device=f"cuda:{device}", dtype=dtype)
            bias = torch.ones(64, device=f"cuda:{device}", dtype=dtype)
            torch.nn.functional.linear(a, a, bias)
            a @ a
        if device not in _graph_state_keepers:
            # A CUDA generator allocates its graph state (two 8-byte tensors) when the first
            # graph registers with it and frees it when the last one goes. A graph kept for the
            # process makes that state once, here in the pool, and not in each captured step,
            # where it would break the step's branch and leave rogues.
            graph = torch.cuda.CUDAGraph()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "The CUDA Graph is empty": it is meant to be
                with torch.cuda.graph(graph):  # on its own side stream
                    pass
            _graph_state_keepers[device] = graph
    stream.synchronize()
    _warmed_streams.add((device, stream.cuda_stream))


def attention_policy(mode="tau", tau=1.5, keep_percent=10.0, max_keep_percent=100.0,
                     sink_keys=(0, 0), sink_queries=(0, 0), window=(0.2, 1.0), min_tokens=0,
                     coarse_gate=1.0, query_blocks_per_list=1):
    """A block-sparse attention policy (memplan::attention::AttentionPolicy); blocks are 64
    tokens, sparse only for step fractions inside `window`. `query_blocks_per_list` 2 shares one
    key-block list between the query blocks 2i and 2i + 1 (chosen from their mean scores with both
    diagonal bands forced); 1, the default, gives each query block its own."""
    if mode not in ATTENTION_MODES:
        raise ValueError(f"attention mode {mode!r} is not one of {', '.join(ATTENTION_MODES)}")
    return _library.AttentionPolicy(
        ATTENTION_MODES.index(mode), tau, keep_percent, max_keep_percent, sink_keys[0],
        sink_keys[1], sink_queries[0], sink_queries[1], window[0], window[1], min_tokens,
        coarse_gate, query_blocks_per_list)


def attention_workspace_bytes(batch, tokens, heads, head_dim, policy=None):
    """Bytes of workspace memplan.attention takes for this shape and policy."""
    policy = attention_policy() if policy is None else policy
    bytes_ = api.lib().memplan_torch_attention_workspace_bytes(batch, tokens, heads, head_dim,
                                                               ctypes.byref(policy))
    return api._check(bytes_)


def _check_qkv(call, q, k, v):
    import torch

    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dtype != torch.bfloat16 or not t.is_cuda or t.dim() != 4 or not t.is_contiguous():
            raise ValueError(f"{call}: {name} must be a contiguous bf16 CUDA tensor "
                             f"[batch, tokens, heads, head_dim]; got {t.dtype} {tuple(t.shape)} "
                             f"on {t.device}, contiguous={t.is_contiguous()}")
    if not (q.shape == k.shape == v.shape):
        raise ValueError(f"{call}: q, k, v shapes differ: {tuple(q.shape)}, "
                         f"{tuple(k.shape)}, {tuple(v.shape)}")


def attention(q, k, v, policy=None, step_fraction=0.5):
    """Block-sparse attention of contiguous bf16 [batch, tokens, heads, head_dim] CUDA tensors on
    the current stream; the workspace comes from the running memplan step. Returns the output
    (same shape) and launches nothing else, so it can be captured in a CUDA graph."""
    import torch

    policy = attention_policy() if policy is None else policy
    _check_qkv("memplan.attention", q, k, v)
    out = torch.empty_like(q)
    batch, tokens, heads, head_dim = q.shape
    stream = torch.cuda.current_stream(q.device)
    mode = api.lib().memplan_torch_attention(
        q.device.index, q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), batch, tokens,
        heads, head_dim, ctypes.byref(policy), float(step_fraction),
        ctypes.c_void_p(stream.cuda_stream))
    api._check(mode)
    return out


def rope_table(cos, sin):
    """The angles rope_attention takes: fp32 [tokens, head_dim / 2, 2], (cos, sin) of each pair,
    from `cos` and `sin` of shape [tokens, head_dim / 2] (one angle per rotated pair). A table
    repeated per pair, [tokens, head_dim] as diffusers builds it, gives them as cos[:, ::2] for
    interleaved pairs and cos[:, :head_dim // 2] for halves. Build it once per token count."""
    import torch

    if cos.dim() != 2 or cos.shape != sin.shape:
        raise ValueError(f"memplan.rope_table: cos and sin must both be [tokens, head_dim / 2]; "
                         f"got {tuple(cos.shape)} and {tuple(sin.shape)}")
    return torch.stack((cos.float(), sin.float()), dim=-1).contiguous()


def rope_attention(q, k, v, table, policy=None, step_fraction=0.5, pairs="interleaved"):
    """Rotary position embedding on q and k, in place, then attention of the rotated q and k, in
    one call (q and k hold the rotated values afterwards). `table` comes from rope_table();
    `pairs` says which dims rotate together: "interleaved" (2j, 2j + 1), as complex numbers, or
    "halves" (j, j + head_dim / 2), as `x * cos + rotate_half(x) * sin`. Each pair (x, y) becomes
    (x * cos - y * sin, x * sin + y * cos), every product and sum rounded to fp32 (PyTorch's eager
    ops on bf16 tensors give the same bits), then bf16. In a sparse step the RoPE kernel also
    writes the per-block means selection starts from, so attention does not read q and k again
    to pool them; the output equals that rotation followed by memplan.attention bit for bit."""
    import torch

    policy = attention_policy() if policy is None else policy
    _check_qkv("memplan.rope_attention", q, k, v)
    if pairs not in ROPE_PAIRS:
        raise ValueError(f"memplan.rope_attention: pairs {pairs!r} is not one of "
                         f"{', '.join(ROPE_PAIRS)}")
    batch, tokens, heads, head_dim = q.shape
    if (table.dtype != torch.float32 or table.device != q.device or not table.is_contiguous()
            or tuple(table.shape) != (tokens, head_dim // 2, 2)):
        raise ValueError(f"memplan.rope_attention: table must be a contiguous float32 tensor "
                         f"[{tokens}, {head_dim // 2}, 2] on {q.device} (memplan.rope_table); got "
                         f"{table.dtype} {tuple(table.shape)} on {table.device}, "
                         f"contiguous={table.is_contiguous()}")
    if q.data_ptr() == k.data_ptr():
        raise ValueError("memplan.rope_attention: q and k are one tensor (it would rotate twice)")
    out = torch.empty_like(q)
    stream = torch.cuda.current_stream(q.device)
    mode = api.lib().memplan_torch_rope_attention(
        q.device.index, q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(),
        table.data_ptr(), ROPE_PAIRS.index(pairs), batch, tokens, heads, head_dim,
        ctypes.byref(policy), float(step_fraction), ctypes.c_void_p(stream.cuda_stream))
    api._check(mode)
    return out
