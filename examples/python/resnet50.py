"""torchvision ResNet-50 inference on memplan: random weights, a fixed bf16 batch, one memplan
step per forward (cuDNN in deterministic mode, so every allocator gives the same bits).

    PYTHONPATH=python python3 examples/python/resnet50.py --batch 32 --steps 10 --graphs
"""

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import memplan  # noqa: E402


def build_resnet50(quick=False, batch=None, seed=0):
    """ResNet-50 with seeded random weights, channels-last bf16, and a fixed input batch."""
    import torchvision

    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.manual_seed(seed)
    model = torchvision.models.resnet50(weights=None)
    model = model.to(device="cuda", dtype=torch.bfloat16, memory_format=torch.channels_last)
    batch = batch or (8 if quick else 64)
    generator = torch.Generator(device="cuda").manual_seed(seed + 1)
    images = torch.randn(batch, 3, 224, 224, device="cuda", dtype=torch.bfloat16,
                         generator=generator).contiguous(memory_format=torch.channels_last)
    return model.eval(), (images,)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--graphs", action="store_true")
    args = parser.parse_args()

    memplan.torch.install()
    model, inputs = build_resnet50(batch=args.batch)
    graphed = memplan.graphs.GraphedStep("resnet50", model, enabled=args.graphs)
    with torch.no_grad():
        for i in range(args.steps):
            start = time.perf_counter()
            out = graphed(*inputs)
            torch.cuda.synchronize()
            print(f"resnet50 step {i}: {1e3 * (time.perf_counter() - start):.1f} ms "
                  f"({graphed.last_path}), logits {tuple(out.shape)}")
            del out
    print(memplan.report())


if __name__ == "__main__":
    main()
