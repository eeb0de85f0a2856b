"""The memory compiler from Python: steps, scopes, pauses, stats and the report, over the C API.

Every call takes a device (default: the current CUDA device once memplan.torch is installed,
else 0). A failed call raises the memplan.errors exception of its status, with memplan's message.
Failures of the allocator callbacks (a free of a pointer memplan never gave out, a double free,
an allocation that failed), which PyTorch cannot report, are raised when the step they happened
in ends (or by check_callbacks()).
"""

import contextlib
import ctypes
import json
import os

from . import _library
from .errors import MemplanError, error_for

STEP_KINDS = ("replayed", "recorded", "dynamic")
BREAK_REASONS = ("unknown_allocation", "range_occupied", "unexpected_end")

_device_hook = None  # set by memplan.torch.install: the current CUDA device
_release_hooks = []  # called before release(): memplan.graphs drops its graphs
_callback_failures_seen = 0


def lib():
    return _library.load()


def default_device():
    return _device_hook() if _device_hook is not None else 0


def _device(device):
    return default_device() if device is None else int(device)


def _check(status):
    if status < 0:
        raise error_for(status, lib().memplan_torch_last_error().decode())
    return status


def _text(value):
    if value is None:
        raise MemplanError(lib().memplan_torch_last_error().decode())
    return value.decode()


def check_callbacks():
    """Raises the last allocator-callback failure (alloc/free from PyTorch) not raised yet."""
    global _callback_failures_seen
    failures = lib().memplan_torch_callback_failures()
    if failures != _callback_failures_seen:
        new = failures - _callback_failures_seen
        _callback_failures_seen = failures
        message = lib().memplan_torch_last_callback_error().decode()
        status = lib().memplan_torch_last_callback_status()
        raise error_for(status, f"{new} allocator call(s) failed; the last: {message}")


def version():
    return lib().memplan_torch_version().decode()


def backend():
    """The loaded library's backend: "cuda-vmm" or "host"."""
    return lib().memplan_torch_backend().decode()


def default_options():
    options = _library.Options()
    lib().memplan_torch_default_options(ctypes.byref(options))
    return {name: getattr(options, name) for name, _ in _library.Options._fields_}


def configure(chunk_bytes=0, reserve_bytes=0, pool_chunk_bytes=0, pool_reserve_bytes=0,
              alignment=0, log_level=None, plan_budget_ms=0, share_pool_chunk=None):
    """Options of the compilers created from now on (0 keeps the default). log_level: a name
    ("trace", "debug", "info", "warn", "error", "critical", "off") or 0..6; plan_budget_ms: the
    planner's search time for one branch (default 200); share_pool_chunk: True lets the pool lend
    the plans the rest of its top chunk (docs/compiler.md, "The chunk the pool lends"; its chunk
    is then chunk_bytes), False keeps it off, None the default: on, unless pool_chunk_bytes is
    given and differs from chunk_bytes (True with such a pool chunk is InvalidArgument)."""
    levels = ("trace", "debug", "info", "warn", "error", "critical", "off")
    if isinstance(log_level, str):
        if log_level not in levels:
            raise ValueError(f"log_level {log_level!r} is not one of {', '.join(levels)}")
        log_level = levels.index(log_level)
    options = _library.Options(reserve_bytes, chunk_bytes, pool_reserve_bytes, pool_chunk_bytes,
                               alignment, -1 if log_level is None else int(log_level),
                               int(plan_budget_ms),
                               0 if share_pool_chunk is None else 1 if share_pool_chunk else -1)
    _check(lib().memplan_torch_configure(ctypes.byref(options)))


def init(device=None):
    """Creates the device's compiler now (else the first allocation on it does)."""
    _check(lib().memplan_torch_init(_device(device)))


def initialised(device=None):
    return bool(lib().memplan_torch_initialised(_device(device)))


def begin_step(name, device=None):
    _check(lib().memplan_torch_begin_step(_device(device), name.encode()))


def end_step(device=None):
    """Ends the running step; returns what it did (a dict), and raises a pending callback
    failure."""
    result = _library.StepResult()
    _check(lib().memplan_torch_end_step(_device(device), ctypes.byref(result)))
    check_callbacks()
    return {
        "kind": STEP_KINDS[result.kind],
        "replayed": result.kind == 0,
        "break_reason": None if result.break_reason < 0 else BREAK_REASONS[result.break_reason],
        "branch": None if result.branch < 0 else result.branch,
        "step": result.step,
        "events": result.events,
        "recorded_allocations": result.recorded_allocations,
        "rogues": result.rogues,
        "parity": result.parity,
    }


def abort_step(device=None):
    _check(lib().memplan_torch_abort_step(_device(device)))


class _Step(contextlib.AbstractContextManager):
    """with memplan.step("denoise") as s: ...; s.result is end_step()'s dict afterwards."""

    def __init__(self, name, device):
        self.name, self.device, self.result = name, _device(device), None

    def __enter__(self):
        begin_step(self.name, self.device)
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            abort_step(self.device)
            return False
        self.result = end_step(self.device)
        return False


def step(name, device=None):
    return _Step(name, device)


@contextlib.contextmanager
def scope(name, device=None):
    device = _device(device)
    _check(lib().memplan_torch_push_scope(device, name.encode()))
    try:
        yield
    finally:
        _check(lib().memplan_torch_pop_scope(device))


@contextlib.contextmanager
def pause(device=None):
    """Allocations inside go to the persistent pool, not the step (weights, caches, outputs
    kept across steps)."""
    device = _device(device)
    _check(lib().memplan_torch_pause(device))
    try:
        yield
    finally:
        _check(lib().memplan_torch_resume(device))


def stats(device=None):
    """The compiler's counters as a dict (memplan::to_json's schema)."""
    return json.loads(_text(lib().memplan_torch_stats_json(_device(device))))


def plan_epoch(device=None):
    """(window_moves, carried_outputs): the two counters a CUDA graph launched outside steps
    depends on (the plans moved; a step left an output planned in the arena). A cheap call, made
    before every launch of memplan.graphs."""
    epoch = _library.PlanEpoch()
    _check(lib().memplan_torch_plan_epoch_of(_device(device), ctypes.byref(epoch)))
    return epoch.window_moves, epoch.carried_outputs


def report(device=None):
    return _text(lib().memplan_torch_report(_device(device)))


def write_branch_trace(path, step, branch, device=None):
    """Writes a recorded branch of a step (report() lists them) as a planner problem with its
    plan: .csv (MiniMalloc CSV) or .json (memplan's trace) with offsets and tags, or a picture
    (.svg, .html). `memplan plan FILE` re-plans it."""
    _check(lib().memplan_torch_write_branch_trace(_device(device), step.encode(), int(branch),
                                                  os.fsencode(path)))


def trim(device=None):
    """Unmaps what the plans and the live buffers do not need (between steps)."""
    _check(lib().memplan_torch_trim(_device(device)))


def trim_to(held, device=None):
    """Unmaps all planned memory but what the plans of `held` use and the live buffers (between
    steps). `held`: (step name, branch, parity) of each branch that CUDA graphs launched outside
    steps hold, as end_step() reported them for the step that captured the graph. A later step of
    another branch maps back what it uses (memplan.graphs.trim() passes the live graphs')."""
    held = list(held)
    refs = (_library.BranchRef * max(len(held), 1))()
    for ref, (name, branch, parity) in zip(refs, held):
        ref.step, ref.branch, ref.parity = name.encode(), int(branch), int(parity)
    _check(lib().memplan_torch_trim_to(_device(device), refs, len(held)))


def settle(device=None):
    """Between steps, with share_pool_chunk: moves the plans home (past the pool's bytes in its
    top chunk, when that saves the largest plan a chunk) if nothing lives in the planned arena.
    Returns whether they moved (CUDA graphs over the old addresses are then stale: plan_epoch).
    memplan.graphs calls it before each capture."""
    moved = ctypes.c_int(0)
    _check(lib().memplan_torch_settle(_device(device), ctypes.byref(moved)))
    return bool(moved.value)


def release(device=None):
    """Unmaps all planned memory (between steps); CUDA graphs of memplan.graphs are dropped."""
    for hook in _release_hooks:
        hook()
    _check(lib().memplan_torch_release(_device(device)))
