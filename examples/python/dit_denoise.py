"""A video-DiT denoise loop in PyTorch on memplan: the C++ denoise runtime's shapes (30 blocks,
hidden 3072, 24 heads x 128), adaLN blocks with SDPA, flow-matching Euler steps, and memplan's
block-sparse attention for the steps inside a window of the schedule (0.2-1.0 by default).
Random weights (no downloads), seeded, so every allocator computes the same numbers.

    PYTHONPATH=python python3 examples/python/dit_denoise.py --tokens 8192 --steps 10
    PYTHONPATH=python python3 examples/python/dit_denoise.py --tokens 75600 --graphs

Each Euler step is one memplan step ("denoise"); with --graphs it runs through
memplan.graphs.GraphedStep (captured once its branch replays stably). The timestep and the step
size are read from device tensors, so a captured step serves every step of its mode.
"""

import argparse
import math
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import memplan  # noqa: E402

LATENT_CHANNELS = 64  # a 2x2 patch of 16 latent channels


class Block(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads, self.head_dim = heads, hidden // heads
        self.norm1 = nn.LayerNorm(hidden, elementwise_affine=False, eps=1e-6)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.norm2 = nn.LayerNorm(hidden, elementwise_affine=False, eps=1e-6)
        self.fc1 = nn.Linear(hidden, 4 * hidden)
        self.fc2 = nn.Linear(4 * hidden, hidden)
        self.modulation = nn.Linear(hidden, 6 * hidden)

    def attention(self, h, sparse, policy):
        b, t, _ = h.shape
        qkv = self.qkv(h).view(b, t, 3, self.heads, self.head_dim)
        if sparse:  # memplan's layout: [b, t, heads, head_dim], contiguous
            q, k, v = (qkv[:, :, i].contiguous() for i in range(3))
            out = memplan.attention(q, k, v, policy, 0.5)
        else:  # SDPA's layout: [b, heads, t, head_dim]
            q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
            out = F.scaled_dot_product_attention(q, k, v).transpose(1, 2)
        return self.proj(out.reshape(b, t, -1))

    def forward(self, x, c, sparse, policy):
        shift1, scale1, gate1, shift2, scale2, gate2 = self.modulation(c).chunk(6, dim=-1)
        h = self.norm1(x) * (1 + scale1) + shift1
        x = x + gate1 * self.attention(h, sparse, policy)
        h = self.norm2(x) * (1 + scale2) + shift2
        return x + gate2 * self.fc2(F.gelu(self.fc1(h), approximate="tanh"))


class VideoDiT(nn.Module):
    def __init__(self, blocks=30, hidden=3072, heads=24):
        super().__init__()
        self.hidden = hidden
        self.embed = nn.Linear(LATENT_CHANNELS, hidden)
        self.time1 = nn.Linear(256, hidden)
        self.time2 = nn.Linear(hidden, hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads) for _ in range(blocks))
        self.norm = nn.LayerNorm(hidden, elementwise_affine=False, eps=1e-6)
        self.unembed = nn.Linear(hidden, LATENT_CHANNELS)

    def timestep_embedding(self, t):
        half = 128
        freqs = torch.exp(-math.log(10000.0) *
                          torch.arange(half, device=t.device, dtype=torch.float32) / half)
        angles = t.float()[:, None] * 1000.0 * freqs[None]
        emb = torch.cat([angles.cos(), angles.sin()], dim=-1).to(self.embed.weight.dtype)
        return self.time2(F.silu(self.time1(emb)))[:, None, :]

    def forward(self, latents, t, sparse=False, policy=None):
        x = self.embed(latents)
        c = F.silu(self.timestep_embedding(t))
        for block in self.blocks:
            x = block(x, c, sparse, policy)
        return self.unembed(self.norm(x))


def build_model(blocks=30, hidden=3072, heads=24, device="cuda", seed=0):
    """The DiT with seeded random bf16 weights (std 0.02, zero biases), made on the device."""
    torch.manual_seed(seed)
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device(device):
            model = VideoDiT(blocks, hidden, heads)
    finally:
        torch.set_default_dtype(default)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=0.02)
                nn.init.zeros_(m.bias)
    return model.eval()


class DenoiseLoop:
    """Flow matching with Euler steps: x <- x + (t[i+1] - t[i]) * v(x, t[i]), in place.
    step_args(i) gives the arguments of step i for euler_step."""

    def __init__(self, model, tokens, steps, window=(0.2, 1.0), sparse=True, seed=1,
                 policy=None, device="cuda"):
        self.model, self.steps, self.window, self.sparse = model, steps, window, sparse
        self.policy = policy if policy is not None else (
            memplan.torch.attention_policy(mode="tau", window=window))
        generator = torch.Generator(device=device).manual_seed(seed)
        self.x = torch.randn(1, tokens, LATENT_CHANNELS, device=device, dtype=torch.bfloat16,
                             generator=generator)
        self.ts = torch.linspace(1.0, 0.0, steps + 1, device=device, dtype=torch.float32)
        self.dts = (self.ts[1:] - self.ts[:-1]).to(torch.bfloat16)

    def sparse_at(self, i):
        fraction = i / max(1, self.steps - 1)
        return self.sparse and self.window[0] <= fraction <= self.window[1]

    def step_args(self, i):
        return (self.x, self.ts[i:i + 1], self.dts[i:i + 1], self.sparse_at(i))

    def advance(self, out):
        """Takes a step's result: the state itself (eager), or a graph's static copy of it."""
        if out.data_ptr() != self.x.data_ptr():
            self.x.copy_(out)

    def euler_step(self, x, t, dt, sparse):
        with torch.no_grad():
            v = self.model(x, t, sparse, self.policy)
            x.add_(dt * v)
        return x


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--blocks", type=int, default=30)
    parser.add_argument("--window", type=float, nargs=2, default=(0.2, 1.0))
    parser.add_argument("--dense", action="store_true", help="SDPA in every step")
    parser.add_argument("--graphs", action="store_true", help="capture stable steps as graphs")
    parser.add_argument("--second-tokens", type=int, default=0,
                        help="a second pass at another token count (0: none)")
    parser.add_argument("--query-blocks-per-list", type=int, default=1, choices=(1, 2),
                        help="2: one key-block list per pair of query blocks (docs/attention.md)")
    args = parser.parse_args()

    memplan.torch.install()
    model = build_model(blocks=args.blocks)
    for tokens in [args.tokens] + ([args.second_tokens] if args.second_tokens else []):
        policy = memplan.torch.attention_policy(
            mode="tau", window=tuple(args.window),
            query_blocks_per_list=args.query_blocks_per_list)
        loop = DenoiseLoop(model, tokens, args.steps, tuple(args.window), sparse=not args.dense,
                           policy=policy)
        graphed = memplan.graphs.GraphedStep("denoise", loop.euler_step, enabled=args.graphs)
        for i in range(args.steps):
            start = time.perf_counter()
            loop.advance(graphed(*loop.step_args(i)))
            torch.cuda.synchronize()
            print(f"tokens {tokens} step {i}: {1e3 * (time.perf_counter() - start):.1f} ms "
                  f"({'sparse' if loop.sparse_at(i) else 'dense'}, {graphed.last_path})")
        print(f"graphs: {graphed.stats}")
    print(memplan.report())


if __name__ == "__main__":
    main()
