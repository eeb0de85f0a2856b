"""bench/torch_allocators.py's table from run records (the GPU runs themselves are the lead's):
medians over repeats, the worst memory, the model's largest eager lower bound for every row (the
graphs rows take the bound of the graphs branch), output equality."""

import importlib.util
import os

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
spec = importlib.util.spec_from_file_location(
    "torch_allocators", os.path.join(REPO, "bench", "torch_allocators.py"))
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)

GiB = 1 << 30


def run(allocator, repeat, step_ms, peak, persistent, bound, digest, **extra):
    r = {"model": "vit", "allocator": allocator, "repeat": repeat, "step_ms": step_ms,
         "median_host_ms": 0.1, "peak_total_bytes": peak, "persistent_bytes": persistent,
         "step_peak_bytes": None if peak is None else peak - persistent,
         "lower_bound_bytes": bound,
         "device_used_bytes": peak, "output_sha256": digest}
    r.update(extra)
    return r


def test_rows_take_medians_worst_memory_and_the_largest_bound():
    runs = [
        run("caching", 0, [10.0, 12.0], 6 * GiB, 2 * GiB, 3 * GiB, "a", allocator_calls_measured=0),
        run("caching", 1, [11.0, 13.0], 7 * GiB, 2 * GiB, 3 * GiB, "a", allocator_calls_measured=0),
        run("memplan", 0, [9.0, 9.5], 5 * GiB, 2 * GiB, 2 * GiB, "a", breaks=1, branches=1,
            rogues=1, allocator_calls_measured=0, graphs={"graph_launches": 0}),
        run("memplan-graphs", 0, [8.0], 5 * GiB, 2 * GiB, 2 * GiB, "b", breaks=1, branches=1,
            rogues=1, allocator_calls_measured=3, graphs={"graph_launches": 5}),
        {"model": "vit", "allocator": "async", "repeat": 0, "error": "exit 1: boom"},
    ]
    rows = {r["allocator"]: r for r in bench.summarise(runs)}
    caching = rows["caching"]
    assert caching["median_step_ms"] == 11.5
    assert caching["step_peak_bytes"] == 5 * GiB
    assert caching["lower_bound_bytes"] == 3 * GiB  # the largest of the eager runs' bounds
    assert caching["step_peak_over_lower_bound"] == 5 / 3
    assert rows["memplan"]["lower_bound_bytes"] == 3 * GiB
    assert rows["memplan-graphs"]["lower_bound_bytes"] == 3 * GiB
    assert caching["bitwise_equal_to_caching"] is True
    assert rows["memplan"]["bitwise_equal_to_caching"] is True
    assert rows["memplan-graphs"]["bitwise_equal_to_caching"] is False
    assert rows["memplan-graphs"]["graph_launches"] == 5
    assert rows["async"]["errors"] == ["exit 1: boom"]
    table = bench.markdown(bench.summarise(runs), "header")
    assert table.count("\n| vit |") == 4
    assert "| vit | async | failed: exit 1: boom |" in table
    caching_line = next(line for line in table.splitlines() if line.startswith("| vit | caching"))
    assert "| 5.00 | 3.00 | 1.667 |" in caching_line  # step peak, the bound, their ratio


def test_an_allocator_without_memory_statistics_shows_dashes():
    runs = [run("memplan", 0, [5.0], 3 * GiB, GiB, GiB, "a", breaks=0, branches=1, rogues=0,
                allocator_calls_measured=0),
            run("async", 0, [6.0], None, None, None, "a")]
    rows = {r["allocator"]: r for r in bench.summarise(runs)}
    assert rows["async"]["step_peak_bytes"] is None
    assert rows["async"]["step_peak_over_lower_bound"] is None
    assert rows["async"]["lower_bound_bytes"] == GiB  # memplan's
    line = next(x for x in bench.markdown(bench.summarise(runs), "h").splitlines()
                if x.startswith("| vit | async"))
    assert line.startswith("| vit | async | - | - | 1.00 | - |")


def test_the_graphs_row_counts_its_own_bound_when_capture_holds_more():
    runs = [run("caching", 0, [5.0], 4 * GiB, GiB, GiB, "a", allocator_calls_measured=0),
            run("memplan", 0, [5.0], 3 * GiB, GiB, GiB, "a", breaks=0, branches=1, rogues=0,
                allocator_calls_measured=0),
            run("memplan-graphs", 0, [4.0], 5 * GiB, GiB, 3 * GiB, "a", breaks=1, branches=2,
                rogues=0, allocator_calls_measured=0, graphs={"graph_launches": 3})]
    rows = {r["allocator"]: r for r in bench.summarise(runs)}
    assert rows["caching"]["lower_bound_bytes"] == GiB  # not the capture's
    assert rows["memplan"]["step_peak_over_lower_bound"] == 2.0
    assert rows["memplan-graphs"]["lower_bound_bytes"] == 3 * GiB
    assert rows["memplan-graphs"]["step_peak_over_lower_bound"] == 4 / 3


def test_both_graphs_rows_share_the_capture_bound_and_memplan_graphs_matches_torch_graphs():
    runs = [run("caching", 0, [5.0], 4 * GiB, GiB, GiB, "eager", allocator_calls_measured=0),
            run("memplan-graphs", 0, [4.0], 4 * GiB, GiB, 2 * GiB, "graph", breaks=1,
                branches=2, rogues=0, allocator_calls_measured=0, graphs={"graph_launches": 3}),
            run("caching-graphs", 0, [4.0], 6 * GiB, GiB, 3 * GiB, "graph",
                allocator_calls_measured=0, graphs={"graph_launches": 3})]
    rows = {r["allocator"]: r for r in bench.summarise(runs)}
    assert rows["caching"]["lower_bound_bytes"] == GiB
    assert rows["memplan-graphs"]["lower_bound_bytes"] == 3 * GiB  # caching-graphs' is larger
    assert rows["caching-graphs"]["step_peak_over_lower_bound"] == 5 / 3
    assert rows["memplan-graphs"]["compared_with"] == "caching-graphs"
    assert rows["memplan-graphs"]["bitwise_equal_to_caching"] is True
    assert rows["caching-graphs"]["bitwise_equal_to_caching"] is False  # against eager caching
    line = next(x for x in bench.markdown(bench.summarise(runs), "h").splitlines()
                if x.startswith("| vit | memplan-graphs"))
    assert "| True (vs caching-graphs) | - |" in line


def test_memplan_graphs_equal_to_eager_is_compared_with_eager_when_torch_graphs_differ():
    # The DiT: caching-graphs captured a path that later steps leave (the attention window), so
    # it differs from eager; memplan-graphs re-captured after the break and equals eager.
    runs = [run("caching", 0, [5.0], 4 * GiB, GiB, GiB, "eager", allocator_calls_measured=0),
            run("memplan-graphs", 0, [4.0], 4 * GiB, GiB, 2 * GiB, "eager", breaks=1,
                branches=3, rogues=0, allocator_calls_measured=0, graphs={"graph_launches": 3}),
            run("caching-graphs", 0, [6.0], 6 * GiB, GiB, 3 * GiB, "stale",
                allocator_calls_measured=0, graphs={"graph_launches": 3})]
    rows = {r["allocator"]: r for r in bench.summarise(runs)}
    assert rows["memplan-graphs"]["compared_with"] == "caching"
    assert rows["memplan-graphs"]["bitwise_equal_to_caching"] is True
    assert rows["caching-graphs"]["bitwise_equal_to_caching"] is False
    line = next(x for x in bench.markdown(bench.summarise(runs), "h").splitlines()
                if x.startswith("| vit | memplan-graphs"))
    assert "| True | - |" in line


def test_resume_takes_the_records_an_earlier_invocation_left(tmp_path):
    import json

    record = run("caching", 0, [5.0], 4 * GiB, GiB, GiB, "a")
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "vit.caching.0.json").write_text(json.dumps(record))
    assert bench._earlier_run("vit", "caching", 0, str(tmp_path))["step_ms"] == [5.0]
    assert bench._earlier_run("vit", "caching", 1, str(tmp_path)) is None
    assert bench._earlier_run("vit", "memplan", 0, str(tmp_path)) is None


def test_graphs_rows_take_the_bound_of_the_graphs_branch():
    # A launch allocates nothing and its outputs persist: the graphs rows' bound is what the
    # graph's branch keeps live (1 GiB here), not the eager step's (3 GiB, a new output counted).
    runs = [
        run("caching", 0, [10.0], 6 * GiB, 2 * GiB, 3 * GiB, "a"),
        run("memplan-graphs", 0, [8.0], 3.5 * GiB, 2 * GiB, 4 * GiB, "b",
            graph_branches_bound_bytes=1 * GiB),
        run("caching-graphs", 0, [8.0], 4 * GiB, 2 * GiB, 0, "b"),
    ]
    rows = {r["allocator"]: r for r in bench.summarise(runs)}
    assert rows["caching"]["lower_bound_bytes"] == 3 * GiB
    assert rows["memplan-graphs"]["lower_bound_bytes"] == 1 * GiB
    assert rows["caching-graphs"]["lower_bound_bytes"] == 1 * GiB
    assert rows["memplan-graphs"]["step_peak_over_lower_bound"] == 1.5


def test_the_host_probe_is_the_median_of_the_runs_and_a_dash_without_one():
    # The probe tells a slow process from a fast one; a row shows it only if every run has one
    # (records made before the probe existed show a dash).
    runs = [run("caching", 0, [5.0], 3 * GiB, GiB, GiB, "a", host_probe_us=4.0),
            run("caching", 1, [5.0], 3 * GiB, GiB, GiB, "a", host_probe_us=9.0),
            run("caching", 2, [5.0], 3 * GiB, GiB, GiB, "a", host_probe_us=5.0),
            run("memplan", 0, [5.0], 3 * GiB, GiB, GiB, "a", host_probe_us=4.5),
            run("memplan", 1, [5.0], 3 * GiB, GiB, GiB, "a")]
    rows = {r["allocator"]: r for r in bench.summarise(runs)}
    assert rows["caching"]["host_probe_us"] == 5.0
    assert rows["memplan"]["host_probe_us"] is None
    table = bench.markdown(bench.summarise(runs), "header").splitlines()
    assert table[2].endswith("| bitwise = caching | host probe us | per repeat: step ms (probe us) |")
    assert table[3].count("|") == table[2].count("|") == 17
    assert next(line for line in table if "| caching |" in line).endswith(
        "| 5.0 | 5.00 (4.0) / 5.00 (9.0) / 5.00 (5.0) |")
    assert next(line for line in table if "| memplan |" in line).endswith(
        "| - | 5.00 (4.5) / 5.00 |")


def test_per_repeat_steps_are_in_repeat_order_with_their_probes():
    # Records arrive in the order the driver ran them (alternating); the column follows repeats.
    runs = [run("memplan", 1, [7.0, 9.0], 3 * GiB, GiB, GiB, "a", host_probe_us=10.5),
            run("memplan", 0, [4.0, 5.0, 6.0], 3 * GiB, GiB, GiB, "a", host_probe_us=6.75)]
    rows = {r["allocator"]: r for r in bench.summarise(runs)}
    assert rows["memplan"]["per_repeat"] == [(5.0, 6.75), (8.0, 10.5)]
    line = next(x for x in bench.markdown(bench.summarise(runs), "h").splitlines()
                if "| memplan |" in x)
    assert line.endswith("| 5.00 (6.8) / 8.00 (10.5) |")


def test_the_cublas_setting_is_set_for_every_run_or_left_unset_with_none():
    assert bench.cublas_environment({}, ":4096:8") == {"CUBLAS_WORKSPACE_CONFIG": ":4096:8"}
    assert bench.cublas_environment({"CUBLAS_WORKSPACE_CONFIG": ":16:8"}, ":4096:8") == {
        "CUBLAS_WORKSPACE_CONFIG": ":4096:8"}
    assert bench.cublas_environment({"CUBLAS_WORKSPACE_CONFIG": ":4096:8", "A": "1"}, "none") == {
        "A": "1"}
