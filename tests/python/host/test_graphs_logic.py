"""memplan.graphs.GraphedStep's policy without a GPU (fake_torch.py stands in for torch), over the
real compiler. Checks when it captures, what a launch returns, the eager fallback on a break and on
a failed capture, and that release() drops the graphs. The same checks on CUDA with PyTorch:
tests/python/gpu. Compaction (the recapture once the caller's old output is gone):
test_graphs_compaction.py."""

import pytest

import memplan
import memplan.graphs
from fake_torch import KiB, loop, plus_one


def test_captures_after_stable_replays_and_launches_the_graph(fake, device):
    g = memplan.graphs.GraphedStep("plus", plus_one(fake), capture_after=2, device=device)
    x = fake.Tensor(4 * KiB, 10)
    seen = loop(g, x, 7)
    paths, values = [p for p, _, _ in seen], [v for _, _, v in seen]
    # Call 4 captures as step "plus:graph", which records (the graph is dropped, the call runs
    # eagerly); call 5 captures again and replays: the graph is kept. Call 6 captures once more
    # (compaction: the output call 5 held during the capture is gone) and launches that graph.
    assert paths == ["eager", "eager", "eager", "eager", "captured", "recaptured", "graph"]
    assert values == [1, 11, 21, 31, 41, 51, 61]  # launches see the new input
    assert g.stats["captures"] == 1 and g.stats["recaptures"] == 1
    assert g.stats["graph_launches"] == 3
    assert g.stats["breaks"] == 0 and g.held_branches() == [("plus:graph", 0, 0)]
    stats = memplan.stats(device)
    assert stats["steps_recorded"] == 2  # "plus" and "plus:graph", once each
    assert stats["steps_replayed"] == 5  # 3 eager, the kept capture and the recapture


def test_a_settle_that_finds_no_memory_is_counted_and_the_capture_goes_on(fake, device,
                                                                          monkeypatch):
    # settle() raises OutOfMemory when the plans cannot be mapped at home (the device refusing
    # memory), leaving nothing of the arena mapped: the capture maps its plan where it is.
    refused = []

    def settle_refused(dev=None):
        refused.append(dev)
        raise memplan.errors.OutOfMemory("settle: out of memory (injected)")

    monkeypatch.setattr(memplan.graphs.api, "settle", settle_refused)
    g = memplan.graphs.GraphedStep("plus", plus_one(fake), capture_after=2, device=device,
                                   compact=False)
    x = fake.Tensor(4 * KiB, 10)
    seen = loop(g, x, 7)
    paths, values = [p for p, _, _ in seen], [v for _, _, v in seen]
    # Call 4's capture records (its graph dropped), call 5's replays: one settle before each.
    assert paths == ["eager"] * 4 + ["captured", "graph", "graph"]
    assert values == [10 * i + 1 for i in range(7)]
    assert refused == [device, device] and g.stats["settle_failures"] == 2
    assert g.stats["captures"] == 1 and g.stats["capture_failures"] == 0


def test_each_key_has_its_own_count(fake, device):
    g = memplan.graphs.GraphedStep("keys", plus_one(fake), capture_after=1, device=device)
    small, large = fake.Tensor(4 * KiB, 1), fake.Tensor(8 * KiB, 1)
    g(small)
    g(small)
    g(large)  # another key: eager, it breaks the step's branch
    assert g.last_path == "eager" and g.stats["breaks"] == 1
    assert g(small).value == 2 and g.last_path == "eager"  # its capture recorded "keys:graph"
    assert g(small).value == 2 and g.last_path == "captured"
    assert g(large).value == 2 and g.last_path == "eager"  # its count is its own: 1 replay
    assert g(large).value == 2 and g.last_path == "eager"  # its capture: a new branch
    assert g(large).value == 2 and g.last_path == "captured"
    # Recording large's capture branch moved the window clear of small's graph outputs (rogues
    # in the arena): small's graph is dropped, and small captures again, into the same branch.
    assert g(small).value == 2 and g.last_path == "eager" and g.stats["invalidations"] == 1
    assert g(small).value == 2 and g.last_path == "captured"
    for _ in range(2):  # every branch recorded: the plans stay, both graphs launch
        assert g(large).value == 2 and g.last_path == "graph"
        assert g(small).value == 2 and g.last_path == "graph"


def test_a_break_during_the_capture_drops_the_graph(fake, device):
    fn = plus_one(fake)

    def changing(x):  # the fourth call allocates something new: the capture step breaks
        if g.stats["steps"] == 4:
            fake.Tensor(32 * KiB, None)
        return fn(x)

    g = memplan.graphs.GraphedStep("changing", changing, capture_after=2, device=device)
    x = fake.Tensor(4 * KiB, 5)
    for _ in range(4):
        out = g(x)
    assert g.stats["captures"] == 0 and g.stats["breaks"] == 1
    assert g.last_path == "eager" and out.value == 6  # computed eagerly after the dropped graph


def test_a_failed_capture_leaves_the_key_eager(fake, device):
    fn = plus_one(fake)

    def syncing(x):
        if fake.capturing is not None:
            raise RuntimeError("operation not permitted when stream is capturing")
        return fn(x)

    g = memplan.graphs.GraphedStep("syncing", syncing, capture_after=1, device=device)
    x = fake.Tensor(4 * KiB, 1)
    for _ in range(5):
        assert g(x).value == 2
    assert g.stats["capture_failures"] == 1 and g.stats["graph_launches"] == 0
    assert "stream is capturing" in g.last_capture_error
    assert memplan.stats(device)["steps_aborted"] == 1


def test_release_drops_the_graphs(fake, device):
    g = memplan.graphs.GraphedStep("released", plus_one(fake), capture_after=1, device=device)
    x = fake.Tensor(4 * KiB, 1)
    for _ in range(5):  # record, replay, capture (recording), capture, launch
        g(x)
    assert g.last_path == "graph"
    memplan.release(device)
    assert g.stats["invalidations"] == 1
    assert g(x).value == 2 and g.last_path == "eager"


def test_disabled_runs_every_call_eagerly(fake, device):
    streams = fake.streams_made
    g = memplan.graphs.GraphedStep("eager", plus_one(fake), enabled=False, device=device)
    x = fake.Tensor(4 * KiB, 1)
    for _ in range(5):
        assert g(x).value == 2 and g.last_path == "eager"
    assert g.stats["eager_steps"] == 5 and g.stats["captures"] == 0
    # Nothing is captured, so each call is the step alone, on the caller's stream, which is
    # warmed up (its cuBLAS workspaces made in a pause) as the side stream would be.
    assert fake.streams_made == streams
    assert fake.warm_ups and set(fake.warm_ups) == {None}
    stats = memplan.stats(device)
    assert stats["steps_recorded"] == 1 and stats["steps_replayed"] == 4


def test_a_capture_that_allocates_differently_is_retried_once_and_then_launched(fake, device):
    fn = plus_one(fake)

    def masks_under_capture(x):  # as transformers does: a mask built only while capturing
        if fake.capturing is not None:
            mask = fake.Tensor(8 * KiB, None)
            del mask
        return fn(x)

    g = memplan.graphs.GraphedStep("masks", masks_under_capture, capture_after=2, device=device)
    x = fake.Tensor(4 * KiB, 3)
    paths = []
    for _ in range(6):
        out = g(x)
        paths.append(g.last_path)
    # call 4 captures (the capture step's first: it records, with the mask) and runs eagerly;
    # call 5 captures that branch again; the eager step never broke; call 6 recaptures (the
    # mask again) into the same branch
    assert paths == ["eager", "eager", "eager", "eager", "captured", "recaptured"]
    assert g.stats["breaks"] == 0 and g.stats["captures"] == 1 and out.value == 4
    assert memplan.stats(device)["breaks"] == 0


def test_captures_that_keep_breaking_go_back_to_counting_eager_replays(fake, device):
    fn = plus_one(fake)
    sizes = iter(range(1, 100))

    def new_size_every_capture(x):
        if fake.capturing is not None:
            scratch = fake.Tensor(next(sizes) * KiB, None)
            del scratch
        return fn(x)

    g = memplan.graphs.GraphedStep("dynamic", new_size_every_capture, capture_after=2,
                                   device=device)
    x = fake.Tensor(4 * KiB, 3)
    for _ in range(8):
        assert g(x).value == 4
    # captures at calls 4 (the capture step records) and 5 (a break) fail; 6 and 7 count eager
    # replays again; 8 captures (a break)
    assert g.stats["captures"] == 0 and g.stats["breaks"] == 2
    assert g.stats["eager_steps"] == 8


def test_a_step_that_leaves_an_output_in_the_plans_drops_the_graphs(fake, device):
    # `out = f(x)` keeps each output until the next exists: memplan plans it in the arena (period
    # two), where a graph launched outside steps may write; such a step drops the graphs made
    # before it. The capture step, another step name, ends that placement for its own step's
    # outputs (they go to the pool from then on), so here a second function keeps outputs.
    fn = plus_one(fake)
    g = memplan.graphs.GraphedStep("graphed", fn, capture_after=2, device=device, compact=False)
    x = fake.Tensor(4 * KiB, 1)
    out = None
    for _ in range(6):  # record, replay, replay, capture (recording), capture, launch
        out = g(x)
    assert g.last_path == "graph" and out.value == 2
    assert memplan.stats(device)["period_two_fallbacks"] == 1
    other = memplan.graphs.GraphedStep("kept", fn, enabled=False, device=device)
    kept = None
    for _ in range(3):
        kept = other(x)
    assert memplan.stats(device)["live_carried_outputs"] == 1 and kept.value == 2
    assert g(x).value == 2 and g.last_path == "eager"
    assert g.stats["invalidations"] == 1
    assert kept.value == 2


def test_graphs_trim_keeps_the_live_graphs_branch(fake, device):
    # Key "n" has a graph (2 MiB of scratch); key "w" (6 MiB more: another branch) runs eagerly.
    # graphs.trim() keeps the graph's branch; the launch still computes, and an eager step of the
    # other branch maps back what it uses.
    MiB = 1 << 20
    narrow, wide = plus_one(fake, sizes=(2 * MiB,)), plus_one(fake, sizes=(2 * MiB, 6 * MiB))
    g = memplan.graphs.GraphedStep("trimmed", lambda x, kind: (narrow if kind == "n" else wide)(x),
                                   capture_after=1, enabled=True, device=device)
    x = fake.Tensor(4 * KiB, 1)
    for _ in range(4):  # record, replay, capture (recording), capture
        g(x, "n")
    assert g.last_path == "captured"
    g.enabled = False  # key "w" stays eager
    for _ in range(2):
        assert g(x, "w").value == 2
    assert g.held_branches() == [("trimmed:graph", 0, 0)]
    memplan.trim(device)
    trimmed = memplan.stats(device)["mapped_bytes"]
    memplan.graphs.trim(device)
    assert memplan.stats(device)["mapped_bytes"] == trimmed - 6 * MiB
    x.value = 4
    assert g(x, "n").value == 5 and g.last_path == "graph"
    assert g(x, "w").value == 5 and g.last_path == "eager"
    assert memplan.stats(device)["mapped_bytes"] == trimmed


def test_graphs_trim_without_graphs_is_memplans_trim(fake, device):
    g = memplan.graphs.GraphedStep("no-graphs", plus_one(fake, sizes=(2 << 20,)), enabled=False,
                                   device=device)
    x = fake.Tensor(4 * KiB, 1)
    for _ in range(3):
        g(x)
    memplan.trim(device)
    trimmed = memplan.stats(device)["mapped_bytes"]
    memplan.graphs.trim(device)
    assert memplan.stats(device)["mapped_bytes"] == trimmed > 0


def test_the_capture_step_is_named_apart_from_the_eager_step(fake, device):
    g = memplan.graphs.GraphedStep("named", plus_one(fake), capture_after=1, device=device,
                                   capture_name="named/captured")
    x = fake.Tensor(4 * KiB, 1)
    for _ in range(4):  # record, replay, capture (recording), capture
        g(x)
    assert g.last_path == "captured" and g.held_branches() == [("named/captured", 0, 0)]
    assert "named/captured" in memplan.report(device)
    with pytest.raises(ValueError, match="capture_name must differ from the step name 'same'"):
        memplan.graphs.GraphedStep("same", plus_one(fake), device=device, capture_name="same")
