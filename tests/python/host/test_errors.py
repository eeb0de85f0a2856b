"""Bad input through the C API: a clear error naming the numbers, as a return code and
last-error text in C and as an exception in Python; never a crash, never a corrupted plan."""

import ctypes
import os
import shutil
import subprocess

import pytest

import memplan

MiB = 1 << 20


def steady_pointers(alloc, device):
    with memplan.step("denoise", device):
        a = alloc.alloc(2 * MiB)
        b = alloc.alloc(1 * MiB)
        alloc.free(a)
        alloc.free(b)
    return a, b


def test_a_control_call_on_an_uninitialised_device(lib):
    assert not memplan.initialised(0)
    status = lib.memplan_torch_begin_step(0, b"denoise")
    assert status == -7
    message = lib.memplan_torch_last_error().decode()
    assert "device 0 has no memplan compiler" in message
    with pytest.raises(memplan.NotInitialised, match="memplan_torch_end_step\\(device=0\\)"):
        memplan.end_step(0)
    with pytest.raises(memplan.NotInitialised, match="memplan_torch_settle\\(device=0\\)"):
        memplan.settle(0)


def test_a_device_out_of_range(lib):
    with pytest.raises(memplan.InvalidArgument, match="device 64 is out of range"):
        memplan.init(64)
    assert lib.memplan_torch_alloc(1024, -1, None) is None
    assert "device -1 is out of range" in lib.memplan_torch_last_error().decode()
    with pytest.raises(memplan.InvalidArgument, match="size=1024, device=-1"):
        memplan.check_callbacks()


def test_free_of_a_pointer_memplan_never_gave_out(alloc, device):
    steady_pointers(alloc, device)
    foreign = ctypes.create_string_buffer(64)
    address = ctypes.addressof(foreign)
    alloc.free(address, 64)
    with pytest.raises(memplan.ForeignPointer) as raised:
        memplan.check_callbacks()
    assert hex(address)[2:] in str(raised.value).lower()
    assert f"device={device}" in str(raised.value)


def test_double_free(alloc, device):
    p = alloc.alloc(1 * MiB)
    alloc.free(p, 1 * MiB)
    alloc.free(p, 1 * MiB)
    with pytest.raises(memplan.DoubleFree, match=f"size={1 * MiB}"):
        memplan.check_callbacks()


def test_a_failed_free_inside_a_step_is_raised_when_the_step_ends(alloc, device):
    with pytest.raises(memplan.ForeignPointer):
        with memplan.step("denoise", device):
            alloc.free(0x1000, 16)


def test_free_on_a_device_without_a_compiler(lib):
    lib.memplan_torch_free(0x2000, 16, 0, None)
    with pytest.raises(memplan.NotInitialised, match="device 0 has no memplan compiler"):
        memplan.check_callbacks()


def test_bad_frees_leave_the_plan_intact(alloc, device):
    steady_pointers(alloc, device)
    expected = steady_pointers(alloc, device)
    alloc.free(0x1000, 16)
    alloc.free(expected[0], 2 * MiB)  # freed in the last step already
    with pytest.raises(memplan.InvalidPointer):
        memplan.check_callbacks()
    before = memplan.stats(device)
    assert steady_pointers(alloc, device) == expected
    after = memplan.stats(device)
    assert after["steps_replayed"] == before["steps_replayed"] + 1 and after["breaks"] == 0


def test_a_step_ended_twice(lib, device):
    memplan.begin_step("denoise", device)
    memplan.end_step(device)
    assert lib.memplan_torch_end_step(device, None) == -2
    with pytest.raises(memplan.InvalidState, match=f"memplan_torch_end_step\\(device={device}\\)"):
        memplan.end_step(device)


def test_a_step_begun_inside_a_step(device):
    memplan.begin_step("a", device)
    with pytest.raises(memplan.InvalidState):
        memplan.begin_step("b", device)
    memplan.end_step(device)


def test_unbalanced_scopes_and_pauses(lib, device):
    assert lib.memplan_torch_pop_scope(device) == -2
    assert "no scope is open" in lib.memplan_torch_last_error().decode()
    assert lib.memplan_torch_resume(device) == -2
    assert "no pause is open" in lib.memplan_torch_last_error().decode()
    assert lib.memplan_torch_push_scope(device, None) == -1


def test_a_pause_left_open_keeps_the_step_open(alloc, device):
    memplan.begin_step("denoise", device)
    memplan.api._check(alloc.lib.memplan_torch_pause(device))
    with pytest.raises(memplan.InvalidState):
        memplan.end_step(device)
    memplan.api._check(alloc.lib.memplan_torch_resume(device))
    assert memplan.end_step(device)["kind"] == "recorded"


def test_bad_options(lib):
    with pytest.raises(memplan.InvalidArgument, match="alignment 48 is not a power of two"):
        memplan.configure(alignment=48)
    with pytest.raises(memplan.InvalidArgument, match="log_level 9"):
        memplan.configure(log_level=9)
    assert lib.memplan_torch_configure(None) == -1


def test_release_with_a_live_rogue(alloc, device):
    with memplan.step("denoise", device):
        rogue = alloc.alloc(1 * MiB)
    with pytest.raises(memplan.InvalidState):
        memplan.release(device)
    alloc.free(rogue)
    memplan.release(device)


def test_the_last_error_is_per_call(lib, device):
    lib.memplan_torch_pop_scope(device)
    assert lib.memplan_torch_last_error() != b""
    lib.memplan_torch_clear_error()
    assert lib.memplan_torch_last_error() == b""


def test_attention_needs_the_cuda_library(lib):
    policy = memplan.api._library.AttentionPolicy(1, 1.5, 10.0, 100.0, 0, 0, 0, 0, 0.2, 1.0, 0,
                                                  1.0)
    status = lib.memplan_torch_attention(1, None, None, None, None, 1, 8192, 24, 128,
                                         ctypes.byref(policy), 0.5, None)
    assert status == -8
    assert "needs the CUDA library" in lib.memplan_torch_last_error().decode()
    bytes_ = lib.memplan_torch_attention_workspace_bytes(1, 8192, 24, 128, ctypes.byref(policy))
    assert bytes_ > 0
    policy.mode = 7
    assert lib.memplan_torch_attention_workspace_bytes(1, 8192, 24, 128,
                                                       ctypes.byref(policy)) == -1
    assert "attention mode 7" in lib.memplan_torch_last_error().decode()
    policy.mode = 0
    assert lib.memplan_torch_attention_workspace_bytes(1, 8192, 24, 96, ctypes.byref(policy)) == -1


def test_rope_attention_needs_the_cuda_library(lib):
    policy = memplan.torch.attention_policy(mode="tau")
    status = lib.memplan_torch_rope_attention(1, None, None, None, None, None, 0, 1, 8192, 24,
                                              128, ctypes.byref(policy), 0.5, None)
    assert status == -8
    assert "needs the CUDA library" in lib.memplan_torch_last_error().decode()


def test_attention_policy_takes_one_or_two_query_blocks_per_list(lib):
    single = memplan.torch.attention_policy(mode="topk")
    pairs = memplan.torch.attention_policy(mode="topk", query_blocks_per_list=2)
    single_bytes = memplan.torch.attention_workspace_bytes(1, 8192, 24, 128, single)
    # A pair's list forces a band one block wider: one more kv_idx slot per row.
    assert memplan.torch.attention_workspace_bytes(1, 8192, 24, 128, pairs) > single_bytes
    for bad in (3, -1):
        policy = memplan.torch.attention_policy(mode="topk", query_blocks_per_list=bad)
        with pytest.raises(memplan.InvalidArgument, match=f"query_blocks_per_list = {bad} "):
            memplan.torch.attention_workspace_bytes(1, 8192, 24, 128, policy)
    # A struct built without the field leaves it 0, which means 1.
    unset = memplan.api._library.AttentionPolicy(2, 1.5, 10.0, 100.0, 0, 0, 0, 0, 0.2, 1.0, 0, 1.0)
    assert unset.query_blocks_per_list == 0
    assert lib.memplan_torch_attention_workspace_bytes(1, 8192, 24, 128,
                                                       ctypes.byref(unset)) == single_bytes


def test_only_the_c_api_is_exported(lib):
    nm = os.environ.get("MEMPLAN_NM") or shutil.which("nm")
    if not nm:
        pytest.skip("nm is not installed")
    out = subprocess.run([nm, "-D", "--defined-only", memplan._library.loaded_path()],
                         check=True, capture_output=True, text=True).stdout
    symbols = [line.split()[-1] for line in out.splitlines() if line.strip()]
    assert "memplan_torch_alloc" in symbols and "memplan_torch_free" in symbols
    assert [s for s in symbols if not s.startswith("memplan_torch_")] == []
