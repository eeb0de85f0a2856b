"""memplan.trim_to through the C API (host library, ctypes): only what the held branches' plans
use and the live buffers stay mapped; a step of another branch maps back what it uses and gets
its plan's pointers; bad branches and running steps raise with the numbers, unmapping nothing."""

import ctypes

import pytest

import memplan

MiB = 1 << 20


def run(alloc, device, sizes, name="denoise"):
    """One step: the allocations live together, then freed; its pointers and end_step's dict."""
    with memplan.step(name, device) as s:
        pointers = [alloc.alloc(size) for size in sizes]
        for p, size in zip(pointers, sizes):
            alloc.free(p, size)
    return pointers, s.result


NARROW = (6 * MiB, 2 * MiB)  # branch 0: 8 MiB
WIDE = (6 * MiB, 8 * MiB)  # branch 1: the 6 MiB buffer shared, 8 MiB beside it: 14 MiB


def two_branches(alloc, device):
    assert run(alloc, device, NARROW)[1]["branch"] == 0
    assert run(alloc, device, WIDE)[1]["branch"] == 1
    narrow, result = run(alloc, device, NARROW)
    assert result["replayed"] and result["parity"] == 0
    wide, _ = run(alloc, device, WIDE)
    memplan.trim(device)
    assert memplan.stats(device)["mapped_bytes"] == 14 * MiB
    return narrow, wide


def test_trim_to_keeps_the_held_branch_and_another_maps_back(alloc, device):
    narrow, wide = two_branches(alloc, device)
    memplan.trim_to([("denoise", 0, 0)], device)
    assert memplan.stats(device)["mapped_bytes"] == 8 * MiB
    calls = memplan.stats(device)["backend_calls"]
    again, result = run(alloc, device, NARROW)
    assert result["replayed"] and again == narrow
    assert memplan.stats(device)["backend_calls"] == calls  # the held branch: no call
    again, result = run(alloc, device, WIDE)
    assert result["replayed"] and again == wide
    assert memplan.stats(device)["backend_calls"] != calls  # mapped back as it was served
    assert memplan.stats(device)["mapped_bytes"] == 14 * MiB


def test_trim_to_nothing_keeps_only_live_buffers(alloc, device):
    two_branches(alloc, device)
    memplan.trim_to([], device)
    assert memplan.stats(device)["mapped_bytes"] == 0
    _, result = run(alloc, device, WIDE)
    assert result["replayed"]


def test_trim_to_refuses_what_the_compiler_does_not_have(lib, alloc, device):
    two_branches(alloc, device)
    refused = [
        ([("nope", 0, 0)], memplan.InvalidArgument, "no step named 'nope' has run"),
        ([("denoise", 2, 0)], memplan.InvalidArgument,
         "step 'denoise' has 2 branch\\(es\\); there is no branch 2"),
        ([("denoise", 0, 1)], memplan.InvalidArgument, "has no plan of parity 1"),
        ([("denoise", 0, 3)], memplan.InvalidArgument, "parity 3 of step 'denoise' is not 0 or 1"),
        ([("denoise", -1, 0)], memplan.InvalidArgument, "branch -1 of step 'denoise'"),
        ([("denoise", 0, 0), ("denoise", 9, 0)], memplan.InvalidArgument, "no branch 9"),
    ]
    for held, error, words in refused:
        with pytest.raises(error, match=words):
            memplan.trim_to(held, device)
        assert memplan.stats(device)["mapped_bytes"] == 14 * MiB
    assert lib.memplan_torch_trim_to(device, None, 1) == -1
    assert "held is NULL with count 1" in lib.memplan_torch_last_error().decode()
    with memplan.step("denoise", device):
        with pytest.raises(memplan.InvalidState,
                           match="memplan_torch_trim_to\\(device=%d\\): trim_to: step 'denoise' "
                                 "is running" % device):
            memplan.trim_to([("denoise", 0, 0)], device)
    assert memplan.stats(device)["mapped_bytes"] == 14 * MiB
    with pytest.raises(memplan.NotInitialised):
        memplan.trim_to([], 0)
    # The C struct as ctypes passes it: NULL step name.
    ref = memplan._library.BranchRef(None, 0, 0)
    assert lib.memplan_torch_trim_to(device, ctypes.byref(ref), 1) == -1
    assert "held[0].step is NULL" in lib.memplan_torch_last_error().decode()
