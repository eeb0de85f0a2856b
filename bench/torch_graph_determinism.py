"""Is a CUDA Graph replay of a model bitwise equal to its eager run under PyTorch alone (its own
caching allocator, its own torch.cuda.graph, no memplan)? Where it is not, a memplan-graphs run
cannot be either, and the difference is PyTorch's or cuBLAS's, not memplan's.

    python3 bench/torch_graph_determinism.py [--models llama vit resnet50] [--quick]

Per model: two eager runs (is eager deterministic?), then a graph captured the way PyTorch
documents it (warm-up on a side stream, torch.cuda.graph, replay) and its output against eager:
bitwise or the max absolute difference.
"""

import argparse
import os
import sys

import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "examples", "python"))
sys.path.insert(0, os.path.join(REPO, "python"))


def build(model, quick):
    if model == "resnet50":
        import resnet50

        net, inputs = resnet50.build_resnet50(quick=quick)
        return net, inputs
    import hf_models

    net, inputs = hf_models.BUILDERS[model](quick=quick)
    return hf_models.forward_fn(model, net), inputs


def compare(a, b):
    if torch.equal(a, b):
        return "bitwise equal"
    return f"differ: max abs {(a.float() - b.float()).abs().max().item():.3g}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=["llama", "vit", "resnet50"])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    for model in args.models:
        fn, inputs = build(model, args.quick)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.no_grad(), torch.cuda.stream(side):
            eager = fn(*inputs).clone()
            again = fn(*inputs).clone()
            for _ in range(2):
                fn(*inputs)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(graph):
            static_out = fn(*inputs)
        graph.replay()
        torch.cuda.synchronize()
        print(f"{model}: eager twice {compare(eager, again)}; graph replay vs eager "
              f"{compare(static_out, eager)}", flush=True)


if __name__ == "__main__":
    main()
