#!/usr/bin/env python3
"""PyTorch SDPA (flash and cuDNN backends) on the shapes of bench/attention_bench.cu.

[batch 1, 24 heads, N tokens, head_dim 128] bf16, N = 8192 / 32768 / 75600 by default. Each backend
is timed with CUDA events around single calls, median of repeats after warm-up, on random inputs.
TFLOP/s counts 4 * b * h * N^2 * d (two matrix products, no causal mask).
Usage: python3 bench/attention_vs_sdpa.py [N ...]
"""
import statistics
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
import torch.nn.functional as F


def median_ms(fn, reps):
    for _ in range(2):
        fn()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def main():
    sizes = [int(a) for a in sys.argv[1:]] or [8192, 32768, 75600]
    heads, dim = 24, 128
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"cuDNN {torch.backends.cudnn.version()}")
    for n in sizes:
        q, k, v = (torch.randn(1, heads, n, dim, device="cuda", dtype=torch.bfloat16) for _ in range(3))
        flops = 4.0 * heads * n * n * dim
        reps = 7 if n > 40000 else 15
        for name, backend in (("flash", SDPBackend.FLASH_ATTENTION), ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            try:
                with sdpa_kernel(backend):
                    ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v), reps)
                print(f"sdpa-{name:5s} N={n:<6d} {ms:9.3f} ms  {flops / ms * 1e-9:6.1f} TFLOP/s")
            except RuntimeError as err:  # a backend can refuse a shape
                print(f"sdpa-{name:5s} N={n:<6d} unavailable: {str(err).splitlines()[0]}")
        del q, k, v
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
