"""Finding and loading memplan's C library (include/memplan/c/memplan_torch.h) through ctypes.

Two libraries export the same C API: libmemplan_torch.so (CUDA VMM, for PyTorch) and
libmemplan_c_host.so (host memory, for tests without a GPU). The one loaded is, in order:
the path given to load(), the MEMPLAN_LIBRARY environment variable, a copy next to this package,
or the newest build in the repository checkout this package sits in (build/*/src/c/).
"""

import ctypes
import glob
import os

TORCH_LIBRARY = "libmemplan_torch.so"
HOST_LIBRARY = "libmemplan_c_host.so"

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_REPO_DIR = os.path.dirname(os.path.dirname(_PACKAGE_DIR))

_lib = None
_path = None


class Options(ctypes.Structure):
    _fields_ = [
        ("reserve_bytes", ctypes.c_size_t),
        ("chunk_bytes", ctypes.c_size_t),
        ("pool_reserve_bytes", ctypes.c_size_t),
        ("pool_chunk_bytes", ctypes.c_size_t),
        ("alignment", ctypes.c_size_t),
        ("log_level", ctypes.c_int),
        ("plan_budget_ms", ctypes.c_int64),
        ("share_pool_chunk", ctypes.c_int),
    ]


class StepResult(ctypes.Structure):
    _fields_ = [
        ("kind", ctypes.c_int),
        ("break_reason", ctypes.c_int),
        ("branch", ctypes.c_int64),
        ("step", ctypes.c_uint64),
        ("events", ctypes.c_uint64),
        ("recorded_allocations", ctypes.c_uint64),
        ("rogues", ctypes.c_uint64),
        ("parity", ctypes.c_int),
    ]


class BranchRef(ctypes.Structure):
    _fields_ = [
        ("step", ctypes.c_char_p),
        ("branch", ctypes.c_int64),
        ("parity", ctypes.c_int),
    ]


class PlanEpoch(ctypes.Structure):
    _fields_ = [
        ("window_moves", ctypes.c_uint64),
        ("carried_outputs", ctypes.c_uint64),
    ]


class AttentionPolicy(ctypes.Structure):
    _fields_ = [
        ("mode", ctypes.c_int),
        ("tau", ctypes.c_float),
        ("keep_percent", ctypes.c_float),
        ("max_keep_percent", ctypes.c_float),
        ("sink_keys_begin", ctypes.c_int),
        ("sink_keys_end", ctypes.c_int),
        ("sink_queries_begin", ctypes.c_int),
        ("sink_queries_end", ctypes.c_int),
        ("window_start", ctypes.c_double),
        ("window_end", ctypes.c_double),
        ("min_tokens", ctypes.c_int64),
        ("coarse_gate", ctypes.c_float),
        ("query_blocks_per_list", ctypes.c_int),  # 0 (as left unset) means 1
    ]


_c_int, _c_char_p, _c_void_p = ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p
_PROTOTYPES = {
    "memplan_torch_alloc": (_c_void_p, [ctypes.c_size_t, _c_int, _c_void_p]),
    "memplan_torch_free": (None, [_c_void_p, ctypes.c_size_t, _c_int, _c_void_p]),
    "memplan_torch_version": (_c_char_p, []),
    "memplan_torch_backend": (_c_char_p, []),
    "memplan_torch_default_options": (None, [ctypes.POINTER(Options)]),
    "memplan_torch_configure": (_c_int, [ctypes.POINTER(Options)]),
    "memplan_torch_init": (_c_int, [_c_int]),
    "memplan_torch_initialised": (_c_int, [_c_int]),
    "memplan_torch_begin_step": (_c_int, [_c_int, _c_char_p]),
    "memplan_torch_end_step": (_c_int, [_c_int, ctypes.POINTER(StepResult)]),
    "memplan_torch_abort_step": (_c_int, [_c_int]),
    "memplan_torch_push_scope": (_c_int, [_c_int, _c_char_p]),
    "memplan_torch_pop_scope": (_c_int, [_c_int]),
    "memplan_torch_pause": (_c_int, [_c_int]),
    "memplan_torch_resume": (_c_int, [_c_int]),
    "memplan_torch_trim": (_c_int, [_c_int]),
    "memplan_torch_trim_to": (_c_int, [_c_int, ctypes.POINTER(BranchRef), ctypes.c_size_t]),
    "memplan_torch_release": (_c_int, [_c_int]),
    "memplan_torch_settle": (_c_int, [_c_int, ctypes.POINTER(_c_int)]),
    "memplan_torch_plan_epoch_of": (_c_int, [_c_int, ctypes.POINTER(PlanEpoch)]),
    "memplan_torch_stats_json": (_c_char_p, [_c_int]),
    "memplan_torch_report": (_c_char_p, [_c_int]),
    "memplan_torch_write_branch_trace": (_c_int, [_c_int, _c_char_p, ctypes.c_int64, _c_char_p]),
    "memplan_torch_last_error": (_c_char_p, []),
    "memplan_torch_clear_error": (None, []),
    "memplan_torch_callback_failures": (ctypes.c_uint64, []),
    "memplan_torch_last_callback_error": (_c_char_p, []),
    "memplan_torch_last_callback_status": (_c_int, []),
    "memplan_torch_attention": (
        _c_int,
        [_c_int, _c_void_p, _c_void_p, _c_void_p, _c_void_p, _c_int, ctypes.c_int64, _c_int,
         _c_int, ctypes.POINTER(AttentionPolicy), ctypes.c_double, _c_void_p],
    ),
    "memplan_torch_rope_attention": (
        _c_int,
        [_c_int, _c_void_p, _c_void_p, _c_void_p, _c_void_p, _c_void_p, _c_int, _c_int,
         ctypes.c_int64, _c_int, _c_int, ctypes.POINTER(AttentionPolicy), ctypes.c_double,
         _c_void_p],
    ),
    "memplan_torch_attention_workspace_bytes": (
        ctypes.c_int64,
        [_c_int, ctypes.c_int64, _c_int, _c_int, ctypes.POINTER(AttentionPolicy)],
    ),
}


def candidates(name=TORCH_LIBRARY):
    """Where load() looks for `name`, first match wins."""
    found = []
    if os.environ.get("MEMPLAN_LIBRARY"):
        found.append(os.environ["MEMPLAN_LIBRARY"])
    found.append(os.path.join(_PACKAGE_DIR, name))
    builds = glob.glob(os.path.join(_REPO_DIR, "build", "*", "src", "c", name))
    builds += glob.glob(os.path.join(_REPO_DIR, "build", "src", "c", name))
    found += sorted(builds, key=os.path.getmtime, reverse=True)
    return found


def load(path=None, name=TORCH_LIBRARY):
    """Loads the C library once and returns it; later calls return the same one."""
    global _lib, _path
    if _lib is not None:
        if path is not None and os.path.abspath(path) != _path:
            raise RuntimeError(f"memplan: {_path} is loaded already; cannot load {path} too")
        return _lib
    tried = [path] if path is not None else candidates(name)
    for candidate in tried:
        if candidate and os.path.exists(candidate):
            lib = ctypes.CDLL(os.path.abspath(candidate))
            for symbol, (restype, argtypes) in _PROTOTYPES.items():
                function = getattr(lib, symbol)
                function.restype = restype
                function.argtypes = argtypes
            _lib, _path = lib, os.path.abspath(candidate)
            return _lib
    raise FileNotFoundError(
        f"memplan: {name} not found (looked at {', '.join(t for t in tried if t)}); build it "
        f"(cmake --build <build> --target memplan_torch) or set MEMPLAN_LIBRARY to its path")


def loaded_path():
    """The path of the loaded library, or None."""
    return _path
