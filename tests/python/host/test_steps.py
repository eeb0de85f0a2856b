"""Steps, scopes, pauses, stats and the report through the C API (host library, ctypes)."""

import pytest

import memplan

MiB = 1 << 20


def run_step(alloc, device, name="denoise", sizes=(4 * MiB, 1 * MiB, 3 * MiB)):
    """One step of a small workload: allocations alive together, then freed; returns the
    pointers and end_step's result."""
    with memplan.step(name, device) as s:
        pointers = [alloc.alloc(size) for size in sizes]
        for p, size in zip(pointers, sizes):
            alloc.free(p, size)
    return pointers, s.result


def test_library_is_the_host_twin(lib):
    assert memplan.backend() == "host"
    assert memplan.version().count(".") == 2


def test_first_step_records_then_replays_with_the_same_pointers(alloc, device):
    first, recorded = run_step(alloc, device)
    assert recorded["kind"] == "recorded" and recorded["branch"] == 0
    second, replayed = run_step(alloc, device)
    assert replayed["replayed"] and replayed["branch"] == 0
    assert replayed["events"] == 6 and replayed["rogues"] == 0
    third, _ = run_step(alloc, device)
    assert second == third


def test_replayed_steps_make_no_backend_calls(alloc, device):
    for _ in range(2):
        run_step(alloc, device)
    before = memplan.stats(device)
    for _ in range(5):
        run_step(alloc, device)
    after = memplan.stats(device)
    assert after["steps_replayed"] - before["steps_replayed"] == 5
    assert after["backend_calls"] == before["backend_calls"]
    assert sum(after["backend_calls"].values()) > 0  # the recording did map memory


def test_stats_are_memplans_json(alloc, device):
    run_step(alloc, device)
    stats = memplan.stats(device)
    assert stats["schema"] == "memplan.stats" and stats["schema_version"] >= 1
    assert stats["steps_recorded"] == 1 and stats["branches"] == 1
    assert stats["planned_peak_bytes"] >= 8 * MiB
    assert stats["lower_bound_bytes"] == 8 * MiB


def test_a_new_path_breaks_and_records_a_branch(alloc, device):
    run_step(alloc, device)
    _, result = run_step(alloc, device, sizes=(4 * MiB, 2 * MiB))
    assert result["kind"] == "recorded" and result["break_reason"] == "unknown_allocation"
    assert memplan.stats(device)["breaks"] == 1


def test_scopes_name_the_break_in_the_report(alloc, device):
    run_step(alloc, device, name="vae")
    with memplan.step("vae", device):
        with memplan.scope("decoder", device), memplan.scope("block.3", device):
            p = alloc.alloc(7 * MiB)
        alloc.free(p)
    report = memplan.report(device)
    assert "vae" in report and "decoder/block.3" in report


def test_pause_serves_the_persistent_pool(alloc, device):
    with memplan.step("denoise", device) as s:
        with memplan.pause(device):
            kept = alloc.alloc(1 * MiB)
        scratch = alloc.alloc(1 * MiB)
        alloc.free(scratch)
    assert s.result["rogues"] == 0 and s.result["events"] == 2
    stats = memplan.stats(device)
    assert stats["paused_allocations"] == 1 and stats["pool_live_bytes"] >= 1 * MiB
    alloc.free(kept)
    assert memplan.stats(device)["pool_live_bytes"] == 0


def test_allocations_outside_steps_go_to_the_pool(alloc, device):
    p = alloc.alloc(3 * MiB)
    assert memplan.stats(device)["paused_allocations"] == 1
    alloc.free(p)


def test_a_buffer_live_at_step_end_is_a_rogue(alloc, device):
    with memplan.step("denoise", device) as s:
        out = alloc.alloc(2 * MiB)
    assert s.result["rogues"] == 1
    assert memplan.stats(device)["live_rogues"] == 1
    alloc.free(out)
    assert memplan.stats(device)["live_rogues"] == 0


def test_size_zero_is_null_and_free_of_null_is_nothing(alloc, device):
    with memplan.step("denoise", device) as s:
        assert alloc.alloc(0) is None
        alloc.free(None, 0)
    assert s.result["events"] == 0
    memplan.check_callbacks()  # nothing failed


def test_an_exception_aborts_the_step(alloc, device):
    with pytest.raises(KeyError):
        with memplan.step("denoise", device):
            p = alloc.alloc(1 * MiB)
            raise KeyError("model failed")
    alloc.free(p)
    assert memplan.stats(device)["steps_aborted"] == 1
    _, result = run_step(alloc, device)  # the compiler goes on
    assert result["kind"] == "recorded"


def test_trim_and_release_between_steps_keep_replaying(alloc, device):
    run_step(alloc, device)
    pointers, _ = run_step(alloc, device)  # the plan's (the recording's are best fit)
    memplan.trim(device)
    memplan.release(device)
    assert memplan.stats(device)["mapped_bytes"] == 0
    again, result = run_step(alloc, device)
    assert result["replayed"] and again == pointers


def test_options_reach_new_compilers(lib):
    defaults = memplan.default_options()
    assert defaults["chunk_bytes"] == 2 * MiB and defaults["alignment"] == 256
    assert defaults["pool_chunk_bytes"] == 2 * MiB  # PyTorch's tensors come one by one
    memplan.configure(reserve_bytes=256 * MiB, chunk_bytes=2 * MiB, pool_reserve_bytes=256 * MiB,
                      pool_chunk_bytes=2 * MiB, alignment=4096)
    try:
        device = 60
        memplan.init(device)
        p = lib.memplan_torch_alloc(100, device, None)
        assert p % 4096 == 0
        lib.memplan_torch_free(p, 100, device, None)
    finally:
        memplan.configure(reserve_bytes=256 * MiB, chunk_bytes=2 * MiB,
                          pool_reserve_bytes=256 * MiB, pool_chunk_bytes=2 * MiB)


def test_a_branch_is_written_as_a_planner_problem(alloc, device, tmp_path):
    run_step(alloc, device)
    pointers, _ = run_step(alloc, device)  # the plan's addresses
    path = tmp_path / "denoise-0.csv"
    memplan.write_branch_trace(path, "denoise", 0, device)
    lines = path.read_text().splitlines()
    assert lines[0].startswith("id,lower,upper,size,alignment,offset")
    assert len(lines) == 4  # the header and the step's three buffers
    with pytest.raises(memplan.InvalidArgument, match="branch 3"):
        memplan.write_branch_trace(tmp_path / "x.csv", "denoise", 3, device)
    with pytest.raises(memplan.InvalidArgument, match="x.txt"):
        memplan.write_branch_trace(tmp_path / "x.txt", "denoise", 0, device)
    assert run_step(alloc, device)[0] == pointers


def test_plan_budget_is_an_option(lib):
    assert memplan.default_options()["plan_budget_ms"] == 200
    with pytest.raises(memplan.InvalidArgument, match="plan_budget_ms -1 is negative"):
        memplan.configure(plan_budget_ms=-1)


def test_plan_epoch_counts_what_graphs_depend_on(alloc, device):
    # memplan.graphs checks these two counters before each launch instead of the stats' JSON.
    def epoch_from_stats():
        stats = memplan.stats(device)
        return stats["window_moves"], stats["carried_outputs"]

    assert memplan.plan_epoch(device) == epoch_from_stats() == (0, 0)
    run_step(alloc, device)
    with memplan.step("denoise", device):  # a rogue: kept past the step, over the plan
        rogue = alloc.alloc(4 * MiB)
    run_step(alloc, device)  # the plans move clear of it
    moved = memplan.plan_epoch(device)
    assert moved == epoch_from_stats() and moved[0] >= 1
    alloc.free(rogue)


def test_settle_sends_the_plans_home_with_share_pool_chunk(lib):
    assert memplan.default_options()["share_pool_chunk"] == 1  # on in the C API's door
    with pytest.raises(memplan.InvalidArgument, match="pool_chunk_bytes equal to chunk_bytes"):
        memplan.configure(chunk_bytes=2 * MiB, pool_chunk_bytes=4 * MiB, share_pool_chunk=True)
    memplan.configure(reserve_bytes=256 * MiB, chunk_bytes=2 * MiB, pool_reserve_bytes=256 * MiB,
                      pool_chunk_bytes=2 * MiB, share_pool_chunk=True)
    try:
        device = 61
        memplan.init(device)
        weights = lib.memplan_torch_alloc(300 << 10, device, None)  # outside steps: the pool

        def step(keep=False):
            with memplan.step("work", device):
                a = lib.memplan_torch_alloc(512 << 10, device, None)
                b = lib.memplan_torch_alloc(512 << 10, device, None)
                lib.memplan_torch_free(a, 0, device, None)
                lib.memplan_torch_free(b, 0, device, None)
                kept = lib.memplan_torch_alloc(256 << 10, device, None) if keep else None
            return kept

        rogue = step(keep=True)  # outlives the step: the plans move clear of it
        assert memplan.stats(device)["live_rogues"] == 1
        assert not memplan.settle(device)  # a rogue lives in the arena
        lib.memplan_torch_free(rogue, 0, device, None)
        moves = memplan.plan_epoch(device)[0]
        assert memplan.settle(device)
        stats = memplan.stats(device)
        assert stats["window_moves"] == moves + 1 and stats["pool_lent_bytes"] > 0
        assert not memplan.settle(device)  # home already
        memplan.begin_step("work", device)
        with pytest.raises(memplan.InvalidState, match="settle: a step is running"):
            memplan.settle(device)
        memplan.abort_step(device)
        lib.memplan_torch_free(weights, 0, device, None)
    finally:
        memplan.configure(reserve_bytes=256 * MiB, chunk_bytes=2 * MiB,
                          pool_reserve_bytes=256 * MiB, pool_chunk_bytes=2 * MiB,
                          log_level="off")  # the session's options (conftest.py)


def test_settle_does_nothing_without_share_pool_chunk(alloc, device):
    run_step(alloc, device)
    assert not memplan.settle(device)
    assert memplan.plan_epoch(device) == (0, 0)
