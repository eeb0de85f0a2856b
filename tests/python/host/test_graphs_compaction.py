"""GraphedStep's compaction: a capture allocates its static outputs while the caller still holds
the output of the call before (`out = step(x)`), so they land past it in the persistent pool; once
that output is gone, the next launch captures again and keeps the new graph only if its outputs
end lower. Over the real compiler with fake_torch standing in for torch (no GPU)."""

import sys

import memplan
import memplan.graphs
from fake_torch import FakeTorch, loop, plus_one

MiB = 1 << 20


def test_the_recapture_puts_the_outputs_where_the_callers_old_output_was(fake, device):
    g = memplan.graphs.GraphedStep("compact", plus_one(fake), capture_after=2, device=device)
    x = fake.Tensor(3 * MiB, 0)
    seen = loop(g, x, 8)
    paths = [p for p, _, _ in seen]
    assert paths == ["eager"] * 4 + ["captured", "recaptured", "graph", "graph"]
    assert [v for _, _, v in seen] == [10 * i + 1 for i in range(8)]
    eager_out, first, second = seen[3][1], seen[4][1], seen[5][1]
    # The capture's outputs went past the eager output the loop still held; the recapture's take
    # its place, below them, and every later launch returns them.
    assert second == eager_out and second + 3 * MiB <= first
    assert all(ptr == second for _, ptr, _ in seen[5:])
    assert g.stats["captures"] == 1 and g.stats["recaptures"] == 1
    assert g.stats["recaptures_dropped"] == 0 and g.stats["breaks"] == 0
    assert memplan.stats(device)["breaks"] == 0


def test_the_pool_holds_less_once_the_old_outputs_are_trimmed(fake, device, another_device,
                                                              monkeypatch, lib):
    def trimmed_pool(f, dev, compact):
        monkeypatch.setitem(sys.modules, "torch", f.module)
        g = memplan.graphs.GraphedStep("compact", plus_one(f), capture_after=2, device=dev,
                                       compact=compact)
        x = f.Tensor(3 * MiB, 0)
        loop(g, x, 8)
        memplan.graphs.trim(dev)
        return memplan.stats(dev)["pool_mapped_bytes"], g.stats["recaptures"]

    compacted, recaptures = trimmed_pool(fake, device, True)
    control, none = trimmed_pool(FakeTorch(lib, another_device), another_device, False)
    assert recaptures == 1 and none == 0
    # The control keeps the graph's outputs past the hole the eager output left: two more chunks.
    assert compacted < control


def test_no_recapture_while_the_caller_keeps_its_outputs(fake, device):
    g = memplan.graphs.GraphedStep("kept", plus_one(fake), capture_after=2, device=device)
    x = fake.Tensor(1 * MiB, 0)
    kept = []
    seen = loop(g, x, 8, keep=kept)
    assert [p for p, _, _ in seen] == ["eager"] * 4 + ["captured"] + ["graph"] * 3
    assert g.stats["recaptures"] == 0 and g.stats["recaptures_dropped"] == 0


def test_compact_false_never_recaptures(fake, device):
    g = memplan.graphs.GraphedStep("plain", plus_one(fake), capture_after=2, device=device,
                                   compact=False)
    x = fake.Tensor(1 * MiB, 0)
    seen = loop(g, x, 8)
    assert [p for p, _, _ in seen] == ["eager"] * 4 + ["captured"] + ["graph"] * 3
    assert len({ptr for _, ptr, _ in seen[4:]}) == 1
    assert g.stats["recaptures"] == 0 and g.stats["recaptures_dropped"] == 0


def test_a_recapture_that_cannot_go_lower_is_dropped_and_the_old_graph_launches(fake, device):
    g = memplan.graphs.GraphedStep("blocked", plus_one(fake), capture_after=2, device=device)
    x = fake.Tensor(1 * MiB, 0)
    out = None
    for i in range(5):  # record, replay, replay, capture (recording), capture
        out = g(x)
    assert g.last_path == "captured"
    first = out.data_ptr()
    # The loop drops the eager output, but something else of the program takes its room.
    with memplan.pause(device):
        blocker = fake.Tensor(1 * MiB, None)
    assert blocker.data_ptr() < first
    x.value = 7
    out = g(x)
    assert g.last_path == "graph" and out.data_ptr() == first and out.value == 8
    assert g.stats["recaptures"] == 0 and g.stats["recaptures_dropped"] == 1
    x.value = 9
    assert g(x).value == 10 and g.last_path == "graph"  # once: no second try
    assert g.stats["recaptures_dropped"] == 1


def test_a_recapture_that_breaks_leaves_each_call_right(fake, device):
    fn = plus_one(fake)
    odd = [True]

    def odd_under_the_recapture(x):  # the first recapture allocates something new: a break
        if fake.capturing is not None and g.stats["captures"] == 1 and odd[0]:
            odd[0] = False
            scratch = fake.Tensor(64 << 10, None)
            del scratch
        return fn(x)

    g = memplan.graphs.GraphedStep("breaks", odd_under_the_recapture, capture_after=2,
                                   device=device)
    x = fake.Tensor(1 * MiB, 0)
    seen = loop(g, x, 10)
    assert [v for _, _, v in seen] == [10 * i + 1 for i in range(10)]
    # Call 6's recapture recorded a branch, which moved the plans: its graph and the old one
    # are dropped and the call runs eagerly; the key counts eager replays again (calls 6 and 7),
    # captures (call 8) and recaptures (call 9, the output of call 7 gone).
    assert [p for p, _, _ in seen] == ["eager"] * 4 + ["captured"] + ["eager"] * 2 + [
        "captured", "recaptured", "graph"]
    assert g.stats["recaptures"] == 1 and g.stats["recaptures_dropped"] == 1
    assert g.stats["breaks"] == 1 and g.stats["invalidations"] == 1
