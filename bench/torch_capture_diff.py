"""Which allocations a model makes differently under torch.cuda.graph capture than in an eager
call: the reason a captured step is another branch for memplan (docs/pytorch.md).

    python3 bench/torch_capture_diff.py --models llama vit resnet50 [--quick]

PyTorch's caching allocator only (memplan is not installed): per model, three eager calls on a
side stream, then one eager call and one capture of the same call, each recorded with PyTorch's
memory history (Python stacks). Prints both allocation counts and live peaks, and the
allocations found only in one of the two sequences (difflib over the sizes), grouped by the
innermost Python frame, largest first.
"""

import argparse
import collections
import difflib
import gc
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MiB = 1 << 20


def _recorded(torch, call):
    """(action, size, address, innermost Python frame) of every allocation and free of `call`."""
    torch.cuda.synchronize()
    torch.cuda.memory._record_memory_history(max_entries=500000, stacks="python")
    try:
        result = call()
        torch.cuda.synchronize()
        snapshot = torch.cuda.memory._snapshot()
    finally:
        torch.cuda.memory._record_memory_history(enabled=None)
    events = []
    for trace in snapshot["device_traces"]:
        for e in trace:
            if e["action"] not in ("alloc", "free_completed"):
                continue
            frames = [f"{f['filename'].split('site-packages/')[-1]}:{f['line']} {f['name']}"
                      for f in e.get("frames", []) if f["filename"].endswith(".py")]
            events.append((e["action"], e["size"], e["addr"], frames[0] if frames else "?"))
    return result, events


def _live_peak(events):
    live, peak, sizes = 0, 0, {}
    for action, size, address, _ in events:
        if action == "alloc":
            live += size
            sizes[address] = size
        elif address in sizes:
            live -= sizes.pop(address)
        peak = max(peak, live)
    return peak


def _builders(quick):
    sys.path.insert(0, os.path.join(REPO, "examples", "python"))
    import hf_models
    import resnet50

    def hf(name):
        def build():
            net, inputs = hf_models.BUILDERS[name](quick=quick)
            return hf_models.forward_fn(name, net), inputs
        return build

    def resnet():
        net, inputs = resnet50.build_resnet50(quick=quick)
        return net, inputs

    return {"llama": hf("llama"), "vit": hf("vit"), "resnet50": resnet}


def compare(torch, name, fn, inputs, top):
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.no_grad(), torch.cuda.stream(stream):
        for _ in range(3):
            fn(*inputs)
        out, eager = _recorded(torch, lambda: fn(*inputs))
        del out
        static = [x.clone() for x in inputs]
        graph = torch.cuda.CUDAGraph()

        def capture():
            with torch.cuda.graph(graph, stream=stream):
                return fn(*static)

        out, captured = _recorded(torch, capture)
    eager_allocs = [e for e in eager if e[0] == "alloc"]
    captured_allocs = [e for e in captured if e[0] == "alloc"]
    print(f"== {name}: eager {len(eager_allocs)} allocations, live peak "
          f"{_live_peak(eager) / MiB:.1f} MiB; capture {len(captured_allocs)} allocations, live "
          f"peak {_live_peak(captured) / MiB:.1f} MiB")
    matcher = difflib.SequenceMatcher(None, [e[1] for e in eager_allocs],
                                      [e[1] for e in captured_allocs], autojunk=False)
    differing = collections.Counter()
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for _, size, _, frame in captured_allocs[j1:j2]:
            differing[("capture only", frame, size)] += 1
        for _, size, _, frame in eager_allocs[i1:i2]:
            differing[("eager only", frame, size)] += 1
    if not differing:
        print("   the same allocation sizes in the same order")
    for (side, frame, size), count in sorted(differing.items(),
                                             key=lambda item: -item[1] * item[0][2])[:top]:
        print(f"   {side:12s} {count:4d} x {size:>11,d} B  at {frame}")
    del out, graph
    return differing


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=["llama", "vit", "resnet50"])
    parser.add_argument("--quick", action="store_true", help="the examples' small shapes")
    parser.add_argument("--top", type=int, default=12, help="groups shown per model")
    args = parser.parse_args()
    import torch

    builders = _builders(args.quick)
    for name in args.models:
        if name not in builders:
            sys.exit(f"torch_capture_diff: unknown model {name} (models: {', '.join(builders)})")
        fn, inputs = builders[name]()
        compare(torch, name, fn, inputs, args.top)
        del fn, inputs
        gc.collect()
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
