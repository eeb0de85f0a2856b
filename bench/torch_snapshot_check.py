#!/usr/bin/env python3
"""The PyTorch snapshot round trip on a real model (needs PyTorch and a GPU):
record a small transformer's allocation history, dump the snapshot, turn it into a trace with
tools/torch_snapshot.py, plan it with `memplan plan`, compare with PyTorch's reserved peak, write the
plan back as a snapshot and open it with PyTorch's own viewer code (torch.cuda._memory_viz.trace_plot, segment_plot: the
pages they write load the viewer's script from the network, so this checks what runs offline).

  bench/torch_snapshot_check.py MEMPLAN_TOOL OUT_DIR
"""
import json
import os
import pickle
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import torch_snapshot  # noqa: E402

tool, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)
torch.cuda.empty_cache()
# The whole program in the history, weights included, so PyTorch's reserved peak and memplan's
# arena cover the same buffers.
torch.cuda.memory._record_memory_history(max_entries=1_000_000)
layer = torch.nn.TransformerEncoderLayer(d_model=1024, nhead=16, dim_feedforward=4096,
                                         batch_first=True, dtype=torch.bfloat16, device="cuda")
model = torch.nn.TransformerEncoder(layer, num_layers=6).eval()
x = torch.randn(4, 2048, 1024, dtype=torch.bfloat16, device="cuda")
with torch.no_grad():
    for _ in range(3):
        model(x)
torch.cuda.synchronize()
snapshot_path = os.path.join(out, "snapshot.pickle")
torch.cuda.memory._dump_snapshot(snapshot_path)
torch.cuda.memory._record_memory_history(enabled=None)
stats = torch.cuda.memory_stats()

trace = os.path.join(out, "trace.csv")
assert torch_snapshot.main(["to-trace", snapshot_path, "-o", trace]) == 0
buffers, peak_reserved = torch_snapshot.snapshot_to_buffers(
    torch_snapshot.read_snapshot(snapshot_path), 0, snapshot_path)
plan_path = os.path.join(out, "plan.csv")
result = json.loads(subprocess.run([tool, "plan", trace, "--json", "-o", plan_path],
                                   capture_output=True, text=True, check=True).stdout)
viz_path = os.path.join(out, "plan.pickle")
assert torch_snapshot.main(["from-plan", plan_path, "-o", viz_path]) == 0
with open(viz_path, "rb") as f:
    plan_snapshot = pickle.load(f)
from torch.cuda import _memory_viz  # PyTorch's viewer code, on memplan's snapshot
html = _memory_viz.trace_plot(plan_snapshot)
segment_html = _memory_viz.segment_plot(plan_snapshot)
with open(os.path.join(out, "plan_trace_plot.html"), "w") as f:
    f.write(html)
# (segments() and memory() download flamegraph.pl: not on a machine without network.)
report = {
    "torch": torch.__version__,
    "history_buffers": len(buffers),
    "torch_reserved_peak_in_history_bytes": peak_reserved,
    "torch_reserved_peak_process_bytes": stats["reserved_bytes.all.peak"],
    "torch_allocated_peak_process_bytes": stats["allocated_bytes.all.peak"],
    "memplan_lower_bound_bytes": result["lower_bound"],
    "memplan_arena_bytes": result["arena_size"],
    "memplan_status": result["status"],
    "viewer_trace_plot_html_bytes": len(html),
    "viewer_segment_plot_html_bytes": len(segment_html),
}
print(json.dumps(report, indent=1))
with open(os.path.join(out, "report.json"), "w") as f:
    json.dump(report, f, indent=1)
