#!/usr/bin/env python3
"""tools/torch_snapshot.py on snapshots shaped as PyTorch writes them (no PyTorch needed):
history to trace, the reserved peak, frames to tags, refusals, and a plan to a snapshot and back.
Usage: torch_snapshot_test.py MEMPLAN_TOOL (the built `memplan` binary)."""
import json
import os
import pickle
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import torch_snapshot  # noqa: E402

TOOL = sys.argv.pop(1) if len(sys.argv) > 1 else "memplan"


def frames(line):
    return [{"filename": "/usr/lib/python3/site-packages/torch/nn/modules/linear.py", "line": 125,
             "name": "forward"},
            {"filename": "/home/me/model.py", "line": line, "name": "forward"}]


def snapshot():
    ev = lambda action, addr, size, line=0: {"action": action, "addr": addr, "size": size,
                                             "stream": 0, "frames": frames(line) if line else []}
    trace = [ev("segment_alloc", 0x1000000, 2 << 20),
             ev("alloc", 0x1000000, 512, 10),
             ev("alloc", 0x1000200, 1024, 11),
             ev("free_requested", 0x1000000, 512),
             ev("free_completed", 0x1000000, 512),
             ev("segment_alloc", 0x2000000, 20 << 20),
             ev("alloc", 0x2000000, 4096, 12),
             ev("free_completed", 0x3000000, 64),  # allocated before the history began
             ev("free_completed", 0x1000200, 1024),
             ev("segment_free", 0x2000000, 20 << 20)]
    return {"segments": [], "device_traces": [trace]}


class TorchSnapshot(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = lambda name: os.path.join(self.dir.name, name)
        with open(self.path("snap.pickle"), "wb") as f:
            pickle.dump(snapshot(), f)

    def tearDown(self):
        self.dir.cleanup()

    def test_history_becomes_a_trace_with_tags_and_the_reserved_peak(self):
        buffers, peak = torch_snapshot.snapshot_to_buffers(snapshot(), 0, "snap")
        self.assertEqual(peak, (2 << 20) + (20 << 20))
        self.assertEqual([(b["lower"], b["upper"], b["size"]) for b in buffers],
                         [(0, 2, 512), (1, 4, 1024), (3, 6, 4096)])
        self.assertEqual(buffers[0]["tag"], "model.py:10:forward")  # the frame outside torch

    def test_the_trace_plans_with_memplan(self):
        self.assertEqual(torch_snapshot.main(["to-trace", self.path("snap.pickle"), "-o",
                                              self.path("t.csv")]), 0)
        out = subprocess.run([TOOL, "plan", self.path("t.csv"), "--json"], capture_output=True,
                             text=True, check=True).stdout
        result = json.loads(out)
        self.assertEqual(result["buffers"], 3)
        self.assertEqual(result["arena_size"], 1024 + 4096)  # b1 overlaps both; b0 and b2 never meet

    def test_a_plan_becomes_a_snapshot_and_back(self):
        torch_snapshot.main(["to-trace", self.path("snap.pickle"), "-o", self.path("t.json")])
        subprocess.run([TOOL, "plan", self.path("t.json"), "-o", self.path("p.csv")], check=True,
                       capture_output=True)
        self.assertEqual(torch_snapshot.main(["from-plan", self.path("p.csv"), "-o",
                                              self.path("p.pickle")]), 0)
        with open(self.path("p.pickle"), "rb") as f:
            snap = pickle.load(f)
        self.assertEqual(snap["segments"][0]["total_size"], 1024 + 4096)
        buffers, peak = torch_snapshot.snapshot_to_buffers(snap, 0, "p")
        self.assertEqual(sorted(b["size"] for b in buffers), [512, 1024, 4096])
        self.assertEqual(peak, 1024 + 4096)

    def test_other_layouts_are_refused_with_what_was_expected(self):
        with open(self.path("old.pickle"), "wb") as f:
            pickle.dump([{"address": 0}], f)  # a list of segments, as PyTorch < 2.1 wrote
        with self.assertRaisesRegex(torch_snapshot.InputError,
                                    "expected a dict with 'segments' and 'device_traces'"):
            torch_snapshot.read_snapshot(self.path("old.pickle"))
        with open(self.path("text.pickle"), "w") as f:
            f.write("id,lower\n")
        with self.assertRaisesRegex(torch_snapshot.InputError, "not a pickled PyTorch memory"):
            torch_snapshot.read_snapshot(self.path("text.pickle"))
        with self.assertRaisesRegex(torch_snapshot.InputError, "no allocation history"):
            torch_snapshot.snapshot_to_buffers({"segments": [], "device_traces": [[]]}, 0, "e")

    def test_a_trace_without_offsets_is_not_a_plan(self):
        torch_snapshot.main(["to-trace", self.path("snap.pickle"), "-o", self.path("t.csv")])
        with self.assertRaisesRegex(torch_snapshot.InputError, "not a plan: every buffer needs"):
            torch_snapshot.read_plan(self.path("t.csv"))


if __name__ == "__main__":
    unittest.main()
