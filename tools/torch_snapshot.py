#!/usr/bin/env python3
"""PyTorch memory snapshots <-> memplan traces, with nothing but the standard library.

  torch_snapshot.py to-trace SNAPSHOT.pickle -o TRACE.csv|.json [--device N]
      Reads a snapshot written by torch.cuda.memory._dump_snapshot() (or the dict of
      torch.cuda.memory._snapshot(), pickled) with its allocation history
      (torch.cuda.memory._record_memory_history() on), and writes the device's trace: one buffer per
      `alloc` event, alive until its `free_completed` event (or to the end), time = the event's
      index. Tags come from the allocation's innermost Python frame outside torch
      ("model.py:42:forward"). Prints PyTorch's reserved peak over the same history (segment_alloc
      and segment_free events, from what was reserved when it began), so `memplan plan TRACE` can
      be compared with it.

  torch_snapshot.py from-plan PLAN.csv|.json -o SNAPSHOT.pickle [--base ADDRESS]
      Writes a plan (a trace with offsets, from `memplan plan -o`) as a snapshot that PyTorch's
      memory viewer opens (torch.cuda._memory_viz, pytorch.org/memory_viz): one segment, the
      arena, with each buffer allocated at base + offset over its lifetime.

Errors name the file and what was expected; a snapshot of another layout is refused.
"""
import argparse
import csv
import json
import pickle
import sys

TRACE_SCHEMA = "memplan.trace"
TRACE_VERSION = 1


class InputError(Exception):
    pass


def read_snapshot(path):
    try:
        with open(path, "rb") as f:
            data = pickle.load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot open for reading ({e.strerror})")
    except Exception as e:  # pickle raises many types on foreign bytes
        raise InputError(f"{path}: not a pickled PyTorch memory snapshot ({e})")
    if not isinstance(data, dict) or "device_traces" not in data or "segments" not in data:
        keys = sorted(data.keys()) if isinstance(data, dict) else type(data).__name__
        raise InputError(
            f"{path}: not a PyTorch memory snapshot: expected a dict with 'segments' and "
            f"'device_traces' (torch.cuda.memory._snapshot() of PyTorch >= 2.1), found {keys}")
    return data


def frame_tag(frames):
    """The innermost frame outside torch itself: where the user's code allocated."""
    for f in frames or []:
        filename = str(f.get("filename", ""))
        if "/torch/" in filename or filename.startswith("??") or not filename:
            continue
        name = str(f.get("name", "")).replace(",", ";")
        return f"{filename.rsplit('/', 1)[-1]}:{f.get('line', 0)}:{name}".replace(",", ";")
    return ""


def snapshot_to_buffers(data, device, path):
    traces = data["device_traces"]
    if device >= len(traces):
        raise InputError(f"{path}: no device {device} (the snapshot has {len(traces)})")
    events = traces[device]
    if not events:
        raise InputError(
            f"{path}: device {device} has no allocation history; record it with "
            "torch.cuda.memory._record_memory_history() before the code you snapshot")
    live = {}  # address -> index in buffers
    buffers = []
    # Reserved when the history began: the segments at the snapshot, less those the history made.
    reserved = sum(seg.get("total_size", 0) for seg in data["segments"]
                   if seg.get("device", device) == device)
    for e in events:
        if e.get("action") == "segment_alloc":
            reserved -= e.get("size", 0)
        elif e.get("action") == "segment_free":
            reserved += e.get("size", 0)
    reserved = peak_reserved = max(reserved, 0)
    time = 0
    for i, e in enumerate(events):
        action = e.get("action")
        if action is None or "addr" not in e or "size" not in e:
            raise InputError(f"{path}: device_traces[{device}][{i}] is not an allocator event "
                             f"(expected 'action', 'addr' and 'size'): {sorted(e)}")
        if action == "segment_alloc":
            reserved += e["size"]
            peak_reserved = max(peak_reserved, reserved)
        elif action == "segment_free":
            reserved -= e["size"]
        elif action == "alloc":
            live[e["addr"]] = len(buffers)
            buffers.append({"id": f"b{len(buffers)}", "lower": time, "upper": None,
                            "size": int(e["size"]), "tag": frame_tag(e.get("frames"))})
            time += 1
        elif action == "free_completed":
            index = live.pop(e["addr"], None)
            if index is not None:  # freed memory allocated before the history began: skip
                buffers[index]["upper"] = time
                time += 1
    for b in buffers:
        if b["upper"] is None:
            b["upper"] = time + 1  # still allocated when the snapshot was taken
    return buffers, peak_reserved


def write_trace(buffers, out):
    if out.endswith(".json"):
        with open(out, "w") as f:
            f.write(f'{{"schema": "{TRACE_SCHEMA}", "schema_version": {TRACE_VERSION}, "buffers": [')
            for i, b in enumerate(buffers):
                row = {k: v for k, v in b.items() if v != "" and v is not None}
                f.write(("\n  " if i == 0 else ",\n  ") + json.dumps(row, separators=(",", ":")))
            f.write("\n]}\n")
        return
    columns = ["id", "lower", "upper", "size", "alignment", "offset", "tag"]
    columns = [c for c in columns if any(c in b for b in buffers)] or columns[:4]
    with open(out, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(columns)
        for b in buffers:
            w.writerow([b.get(c, "") for c in columns])


def read_plan(path):
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise InputError(f"{path}: cannot open for reading ({e.strerror})")
    if text.lstrip().startswith("{"):
        data = json.loads(text)
        if data.get("schema") != TRACE_SCHEMA or data.get("schema_version") != TRACE_VERSION:
            raise InputError(f"{path}: expected a {TRACE_SCHEMA} version {TRACE_VERSION} file")
        buffers = data["buffers"]
    else:
        buffers = [
            {k.lower(): (v if k.lower() in ("id", "tag") else int(v)) for k, v in row.items()}
            for row in csv.DictReader(text.splitlines())
        ]
    if not buffers or any("offset" not in b for b in buffers):
        raise InputError(f"{path}: not a plan: every buffer needs an offset "
                         "(write one with `memplan plan TRACE -o PLAN.csv`)")
    return buffers


def plan_to_snapshot(buffers, base):
    arena = max((b["offset"] + b["size"] for b in buffers if b["size"] > 0), default=0)
    events = []
    for b in buffers:
        if b["size"] <= 0 or b["lower"] >= b["upper"]:
            continue
        frames = [{"filename": "memplan-plan", "line": 0, "name": b.get("tag") or b["id"]}]
        common = {"addr": base + b["offset"], "size": b["size"], "stream": 0, "frames": frames}
        events.append((b["lower"], 1, dict(common, action="alloc")))
        events.append((b["upper"], 0, dict(common, action="free_requested")))
        events.append((b["upper"], 0, dict(common, action="free_completed")))
    events.sort(key=lambda t: (t[0], t[1]))
    trace = [{"action": "segment_alloc", "addr": base, "size": arena, "stream": 0, "frames": []}]
    trace += [e for _, _, e in events]
    for i, e in enumerate(trace):
        e["time_us"] = i
    segment = {"device": 0, "address": base, "total_size": arena, "allocated_size": 0,
               "active_size": 0, "requested_size": 0, "stream": 0, "segment_type": "large",
               "segment_pool_id": (0, 0), "is_expandable": False, "frames": [],
               "blocks": [{"address": base, "size": arena, "requested_size": 0,
                           "state": "inactive", "frames": []}]}
    return {"segments": [segment], "device_traces": [trace], "allocator_settings": {},
            "external_annotations": []}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    to_trace = sub.add_parser("to-trace", help="a snapshot's allocation history as a trace")
    to_trace.add_argument("snapshot")
    to_trace.add_argument("-o", "--out", required=True, help="TRACE.csv or TRACE.json")
    to_trace.add_argument("--device", type=int, default=0)
    from_plan = sub.add_parser("from-plan", help="a plan as a snapshot PyTorch's viewer opens")
    from_plan.add_argument("plan")
    from_plan.add_argument("-o", "--out", required=True, help="SNAPSHOT.pickle")
    from_plan.add_argument("--base", type=lambda s: int(s, 0), default=0x7F0000000000,
                           help="the arena's address in the picture (default 0x7f0000000000)")
    args = parser.parse_args(argv)
    try:
        if args.command == "to-trace":
            buffers, peak_reserved = snapshot_to_buffers(read_snapshot(args.snapshot),
                                                         args.device, args.snapshot)
            write_trace(buffers, args.out)
            print(f"{args.out}: {len(buffers)} buffers; PyTorch reserved peak over this history: "
                  f"{peak_reserved} bytes", file=sys.stderr)
        else:
            snapshot = plan_to_snapshot(read_plan(args.plan), args.base)
            with open(args.out, "wb") as f:
                pickle.dump(snapshot, f)
            print(f"{args.out}: arena of {snapshot['segments'][0]['total_size']} bytes, "
                  f"{sum(1 for e in snapshot['device_traces'][0] if e['action'] == 'alloc')} "
                  "allocations", file=sys.stderr)
    except InputError as e:
        print(f"torch_snapshot: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
