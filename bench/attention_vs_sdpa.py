#!/usr/bin/env python3
"""memplan's attention and PyTorch SDPA (flash and cuDNN) side by side, in one process.

[batch 1, N tokens, 24 heads, head_dim 128] bf16, random inputs, N = 32768 / 75600 / 169000 by
default. Backends: SDPA flash, SDPA cuDNN, and memplan (memplan.attention) dense, top-k 10 % and
tau 1.5 (each with a key-block list per query block, and with one per pair of query blocks: the
modes named "/2", query_blocks_per_list 2) on each Hopper path of MEMPLAN_ATTENTION_KERNEL (tma: the TMA kernel, flash_tma.cu, the
default; wgmma: the cp.async wgmma kernel, flash_wgmma.cu), the variable set before each call
(the library reads it at every launch). Each backend is timed with CUDA events around single calls (median of repeats
after warm-up); the whole set runs `--rounds` times, the order of the backends reversed every
other round, and the table gives the median over rounds.

TFLOP/s counts 4 * b * h * N^2 * d for dense. A sparse call (selection + attention, timed whole)
reports the kept-block rate: 4 * 64 * 64 * d per visited (query block, key block) pair over the
call's time, so it includes selection (bench/attention_bench.cu times the flash kernel alone).
Visited blocks: the library's rule recomputed here in PyTorch (fp32 block means of Q and K,
scores, top-k or mean + tau * std with the cap, plus the diagonal band), since the workspace that
holds the lists is internal to the call; boundary ties may differ from the device's by a block.

With --rope, RoPE joins the call (1-D rotary angles over the token index, interleaved pairs),
as a video DiT runs it: PyTorch's eager RoPE then SDPA cuDNN ("torch-rope+sdpa-cudnn"), PyTorch's
RoPE then memplan.attention ("torch-rope+memplan-..."), and memplan.rope_attention, which rotates
q and k in place and writes selection's block means as it goes ("memplan-rope-..."; it rotates
its own copies again at every call, which moves the kept blocks little). Their kept blocks are
counted on the rotated q and k.

Without an importable memplan (python/ on PYTHONPATH, libmemplan_torch.so built with CUDA) it
runs SDPA only and says so.
Usage: python3 bench/attention_vs_sdpa.py [N ...] [--rounds R] [--json PATH] [--paths a,b]
"""
import argparse
import json
import math
import os
import statistics
import sys

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
import torch.nn.functional as F

HEADS, DIM, BLOCK = 24, 128, 64
DIAGONAL_RADIUS = 1  # memplan::attention::kDiagonalRadius
TAU_CAP_PERCENT = 30.0  # as bench/attention_bench.cu: caps tau's workspace


def load_memplan():
    """memplan installed as PyTorch's allocator (before any CUDA allocation), or None and why."""
    try:
        import memplan
        memplan.torch.install(log_level="warn")
        return memplan, None
    except Exception as err:  # no package, no library, a build without CUDA
        return None, f"{type(err).__name__}: {err}"


def median_ms(fn, reps, warmup):
    for _ in range(warmup):
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


def percent_of(percent, n):
    return min(max(math.ceil(percent / 100.0 * n - 1e-9), 1), n)


def pooled(x):
    """Mean of each 64-token block, fp32 [heads, blocks, dim]; a partial last block averages its
    valid tokens."""
    _, tokens, heads, dim = x.shape
    n = (tokens + BLOCK - 1) // BLOCK
    padded = torch.zeros(n * BLOCK, heads, dim, device=x.device, dtype=torch.float32)
    padded[:tokens] = x[0].float()
    sums = padded.view(n, BLOCK, heads, dim).sum(1)
    counts = torch.full((n, 1, 1), float(BLOCK), device=x.device)
    counts[-1] = tokens - (n - 1) * BLOCK
    return (sums / counts).permute(1, 0, 2).contiguous()


def visited_blocks(q, k, mode, keep_percent=10.0, tau=1.5, query_blocks_per_list=1):
    """Key blocks the library's rule keeps, summed over (head, query block) rows. With
    query_blocks_per_list 2 a list serves the pair (2i, 2i + 1): chosen on the mean of the two
    rows' scores with both diagonal bands kept, and counted once for each block of the pair."""
    pq, pk = pooled(q), pooled(k)
    n = pq.shape[1]
    per = query_blocks_per_list
    lists = (n + per - 1) // per
    first = torch.arange(lists, device=q.device) * per  # each list's first query block
    last = torch.clamp(first + per - 1, max=n - 1)
    total = 0
    for h in range(pq.shape[0]):  # a head at a time: n x n scores
        scores = pq[h] @ pk[h].T
        if per == 2:  # a lone last block (odd n) keeps its own row
            scores = (scores[first] + scores[last]) / 2
        keep = torch.zeros(lists, n, dtype=torch.bool, device=q.device)
        if mode == "topk":
            top = scores.topk(percent_of(keep_percent, n), dim=1).indices
            keep.scatter_(1, top, True)
        else:
            mean = scores.mean(1, keepdim=True)
            std = scores.std(1, correction=0, keepdim=True)
            above = scores > mean + tau * std
            cap = percent_of(TAU_CAP_PERCENT, n)
            capped = above.sum(1) > cap
            if capped.any():  # rows over the cap keep their `cap` best
                top = scores.topk(cap, dim=1).indices
                best = torch.zeros_like(keep).scatter_(1, top, True)
                above = torch.where(capped[:, None], best, above)
            keep |= above
        rows = torch.arange(lists, device=q.device)
        for offset in range(-DIAGONAL_RADIUS, DIAGONAL_RADIUS + per):
            cols = first + offset
            ok = (cols >= 0) & (cols < n) & (cols <= last + DIAGONAL_RADIUS)
            keep[rows[ok], cols[ok]] = True
        total += int((keep.sum(1) * (last - first + 1)).sum())
    return total


def torch_rope(x, cos, sin):
    """Interleaved RoPE in PyTorch's eager ops (fp32 products and sums, then bf16)."""
    xf = x.float()
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    a, b = xf[..., 0::2], xf[..., 1::2]
    return torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2).bfloat16()


def rope_backends(memplan, q, k, v, n, block_flops):
    """RoPE + attention, three ways (the module docstring, --rope)."""
    pos = torch.arange(n, device=q.device, dtype=torch.float64)[:, None]
    freq = 10000.0 ** (-2.0 * torch.arange(DIM // 2, device=q.device, dtype=torch.float64) / DIM)
    cos, sin = (pos * freq).cos().float(), (pos * freq).sin().float()
    table = memplan.rope_table(cos, sin)
    rq, rk = torch_rope(q, cos, sin), torch_rope(k, cos, sin)
    qc, kc = q.clone(), k.clone()  # memplan.rope_attention rotates these in place

    def sdpa_run():
        a, b = torch_rope(q, cos, sin), torch_rope(k, cos, sin)
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            F.scaled_dot_product_attention(a.transpose(1, 2), b.transpose(1, 2), v.transpose(1, 2))
    out = [("torch-rope+sdpa-cudnn", "dense", sdpa_run, 4.0 * HEADS * n * n * DIM)]
    for mode, rule, kwargs in (("topk10/2", "topk", dict(mode="topk", keep_percent=10.0)),
                               ("tau1.5/2", "tau", dict(mode="tau", tau=1.5,
                                                        max_keep_percent=TAU_CAP_PERCENT))):
        policy = memplan.torch.attention_policy(window=(0.0, 1.0), query_blocks_per_list=2,
                                                **kwargs)
        flops = visited_blocks(rq, rk, rule, query_blocks_per_list=2) * block_flops

        def torch_rope_run(policy=policy, step=f"torch-rope-{n}-{mode}"):
            os.environ["MEMPLAN_ATTENTION_KERNEL"] = "tma"
            with memplan.step(step):
                a, b = torch_rope(q, cos, sin), torch_rope(k, cos, sin)
                memplan.attention(a, b, v, policy, 0.5)
                del a, b  # inside the step: freed after it, they would be rogues

        def fused_run(policy=policy, step=f"memplan-rope-{n}-{mode}"):
            os.environ["MEMPLAN_ATTENTION_KERNEL"] = "tma"
            with memplan.step(step):
                memplan.rope_attention(qc, kc, v, table, policy, 0.5)
        out.append((f"torch-rope+memplan-{mode}[tma]", mode, torch_rope_run, flops))
        out.append((f"memplan-rope-{mode}[tma]", mode, fused_run, flops))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[32768, 75600, 169000])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", help="write the results here as JSON too")
    parser.add_argument("--paths", default="tma,wgmma",
                        help="MEMPLAN_ATTENTION_KERNEL values to time memplan on")
    parser.add_argument("--rope", action="store_true",
                        help="also time RoPE + attention: PyTorch's RoPE before SDPA cuDNN and "
                             "memplan.attention, against memplan.rope_attention (pair lists, tma)")
    args = parser.parse_args()

    memplan, why_not = load_memplan()
    device = torch.cuda.get_device_name()
    print(f"device: {device}, torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}")
    if memplan is None:
        print(f"memplan not importable ({why_not}): SDPA only")
    paths = [p for p in args.paths.split(",") if p] if memplan is not None else []

    results = []
    for n in args.sizes:
        q, k, v = (torch.randn(1, n, HEADS, DIM, device="cuda", dtype=torch.bfloat16)
                   for _ in range(3))
        # SDPA's layout [b, h, t, d], contiguous, the same values.
        qt, kt, vt = (x.transpose(1, 2).contiguous() for x in (q, k, v))
        dense_flops = 4.0 * HEADS * n * n * DIM
        block_flops = 4.0 * BLOCK * BLOCK * DIM
        reps, warmup = (10, 2) if n <= 40000 else (5, 1) if n <= 100000 else (3, 1)

        backends = []  # (name, kind, fn, flops)
        for name, backend in (("sdpa-flash", SDPBackend.FLASH_ATTENTION),
                              ("sdpa-cudnn", SDPBackend.CUDNN_ATTENTION)):
            def run(backend=backend):
                with sdpa_kernel(backend):
                    F.scaled_dot_product_attention(qt, kt, vt)
            backends.append((name, "dense", run, dense_flops))
        if memplan is not None:
            policies = {
                "dense": memplan.torch.attention_policy(mode="dense"),
                "topk10": memplan.torch.attention_policy(mode="topk", keep_percent=10.0,
                                                         window=(0.0, 1.0)),
                "tau1.5": memplan.torch.attention_policy(mode="tau", tau=1.5,
                                                         max_keep_percent=TAU_CAP_PERCENT,
                                                         window=(0.0, 1.0)),
            }
            # "/2": one list per pair of query blocks (query_blocks_per_list 2).
            policies["topk10/2"] = memplan.torch.attention_policy(
                mode="topk", keep_percent=10.0, window=(0.0, 1.0), query_blocks_per_list=2)
            policies["tau1.5/2"] = memplan.torch.attention_policy(
                mode="tau", tau=1.5, max_keep_percent=TAU_CAP_PERCENT, window=(0.0, 1.0),
                query_blocks_per_list=2)
            kept = {"topk10": visited_blocks(q, k, "topk"), "tau1.5": visited_blocks(q, k, "tau"),
                    "topk10/2": visited_blocks(q, k, "topk", query_blocks_per_list=2),
                    "tau1.5/2": visited_blocks(q, k, "tau", query_blocks_per_list=2)}
            for path in paths:
                for mode, policy in policies.items():
                    def run(path=path, policy=policy, step=f"attention-{n}-{mode}-{path}"):
                        os.environ["MEMPLAN_ATTENTION_KERNEL"] = path
                        with memplan.step(step):  # the sparse workspace: a step event
                            memplan.attention(q, k, v, policy, 0.5)
                    flops = dense_flops if mode == "dense" else kept[mode] * block_flops
                    backends.append((f"memplan-{mode}[{path}]", mode, run, flops))

        if args.rope:
            backends += rope_backends(memplan, q, k, v, n, block_flops)

        times = {name: [] for name, *_ in backends}
        errors = {}
        for r in range(args.rounds):
            order = backends if r % 2 == 0 else list(reversed(backends))
            for name, _, fn, _ in order:
                if name in errors:
                    continue
                try:
                    times[name].append(median_ms(fn, reps, warmup))
                except Exception as err:  # a backend can refuse a shape; a kernel can fail
                    errors[name] = f"{type(err).__name__}: {str(err).splitlines()[0]}"
        cudnn = statistics.median(times["sdpa-cudnn"]) if times.get("sdpa-cudnn") else None
        # RoPE rows against RoPE + cuDNN (--rope), the others against cuDNN alone.
        rope_cudnn = (statistics.median(times["torch-rope+sdpa-cudnn"])
                      if times.get("torch-rope+sdpa-cudnn") else None)
        for name, mode, _, flops in backends:
            cudnn_ref = rope_cudnn if "rope" in name else cudnn
            row = {"tokens": n, "backend": name, "mode": mode}
            if name in errors:
                row["error"] = errors[name]
                print(f"{name:28s} N={n:<7d} unavailable: {errors[name]}")
            else:
                ms = statistics.median(times[name])
                row.update(ms=ms, tflops=flops / ms * 1e-9, rounds=times[name])
                if mode != "dense":
                    row["density"] = flops / block_flops / (HEADS * ((n + 63) // 64) ** 2)
                if cudnn_ref is not None:
                    row["speedup_vs_cudnn_dense"] = cudnn_ref / ms
                print(f"{name:28s} N={n:<7d} {ms:10.3f} ms  {row['tflops']:6.1f} TFLOP/s"
                      + (f" kept (density {100 * row['density']:.2f} %)" if mode != "dense" else "")
                      + (f"  {cudnn_ref / ms:5.2f}x cuDNN dense" if cudnn_ref is not None
                         else ""))
            results.append(row)
        del q, k, v, qt, kt, vt
        torch.cuda.empty_cache()

    print()
    print("| tokens | backend | time | TFLOP/s (kept for sparse) | vs cuDNN dense (RoPE rows: "
          "vs PyTorch RoPE + cuDNN) |")
    print("| --- | --- | --- | --- | --- |")
    for row in results:
        if "error" in row:
            print(f"| {row['tokens']:,} | {row['backend']} | unavailable | | |")
            continue
        tflops = f"{row['tflops']:.1f}"
        if "density" in row:
            tflops += f" ({100 * row['density']:.1f} % kept)"
        speedup = f"{row['speedup_vs_cudnn_dense']:.2f}x" if "speedup_vs_cudnn_dense" in row else ""
        print(f"| {row['tokens']:,} | {row['backend']} | {row['ms']:.2f} ms | {tflops} | {speedup} |")
    report = {"device": device, "torch": torch.__version__,
              "cudnn": torch.backends.cudnn.version(), "memplan": memplan is not None,
              "memplan_missing_reason": why_not, "rounds": args.rounds, "results": results}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    else:
        print(json.dumps(report))


if __name__ == "__main__":
    sys.exit(main())
