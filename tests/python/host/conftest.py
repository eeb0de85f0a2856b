"""Fixtures of the host-library tests: the library (MEMPLAN_LIBRARY, set by ctest), small
compiler options for the whole session, and a fresh device index per test (compilers live as long
as the process, one per device)."""

import itertools
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))

import memplan  # noqa: E402

MiB = 1 << 20
_devices = itertools.count(1)  # device 0 stays uninitialised for the error tests


@pytest.fixture(scope="session")
def lib():
    if "MEMPLAN_LIBRARY" not in os.environ:
        pytest.skip("MEMPLAN_LIBRARY is not set (ctest sets it to libmemplan_c_host.so)")
    library = memplan.load()
    memplan.configure(reserve_bytes=256 * MiB, chunk_bytes=2 * MiB, pool_reserve_bytes=256 * MiB,
                      pool_chunk_bytes=2 * MiB, log_level="off")
    return library


def _fresh_device():
    d = next(_devices)
    memplan.init(d)
    return d


@pytest.fixture
def device(lib):
    return _fresh_device()


class Allocator:
    """PyTorch's side of the pluggable allocator: memplan_torch_alloc/free, host stream (NULL)."""

    def __init__(self, lib, device):
        self.lib, self.device = lib, device

    def alloc(self, size):
        return self.lib.memplan_torch_alloc(size, self.device, None)

    def free(self, ptr, size=0):
        self.lib.memplan_torch_free(ptr, size, self.device, None)


@pytest.fixture
def alloc(lib, device):
    return Allocator(lib, device)


@pytest.fixture
def fake(lib, device, monkeypatch):
    """fake_torch.FakeTorch on the test's device, installed as `torch` for memplan.graphs."""
    import memplan.torch as memplan_torch
    from fake_torch import FakeTorch

    f = FakeTorch(lib, device)
    monkeypatch.setitem(sys.modules, "torch", f.module)
    monkeypatch.setattr(memplan_torch, "warm_up",
                        lambda stream=None, device=None: f.warm_ups.append(stream))
    return f


@pytest.fixture
def another_device(lib):
    """A second fresh device, for a control run beside the test's own."""
    return _fresh_device()
