"""Two transformers models built from configs with seeded random weights (nothing downloaded),
each as one forward pass at a fixed shape: a Llama-style decoder and a ViT.

    PYTHONPATH=python python3 examples/python/hf_models.py --model llama --steps 10

Each forward is one memplan step; the logits / hidden states it returns stay alive after the step
(a rogue the first time, then served from the persistent pool at its learned site).
"""

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

import memplan  # noqa: E402

SHAPES = {
    # name: (full config, quick config, input shape)
    "llama": (dict(hidden_size=2048, intermediate_size=5632, num_hidden_layers=16,
                   num_attention_heads=16, num_key_value_heads=8, vocab_size=32000),
              dict(hidden_size=1024, intermediate_size=2816, num_hidden_layers=4,
                   num_attention_heads=8, num_key_value_heads=4, vocab_size=32000)),
    "vit": (dict(hidden_size=1024, intermediate_size=4096, num_hidden_layers=24,
                 num_attention_heads=16, image_size=224, patch_size=16),
            dict(hidden_size=768, intermediate_size=3072, num_hidden_layers=6,
                 num_attention_heads=12, image_size=224, patch_size=16)),
}


def _seeded(factory, seed):
    """The model made on the GPU in bf16 (its random init runs there: fast, and the same numbers
    in every process), in eval mode."""
    torch.manual_seed(seed)
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device("cuda"):
            model = factory()
    finally:
        torch.set_default_dtype(default)
    return model.to(device="cuda", dtype=torch.bfloat16).eval()


def build_llama(quick=False, seq=None, batch=1, seed=0):
    """LlamaForCausalLM from a config, and a fixed batch of token ids; returns (model, inputs)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(**SHAPES["llama"][1 if quick else 0], attn_implementation="sdpa",
                         use_cache=False)
    model = _seeded(lambda: LlamaForCausalLM(config), seed)
    seq = seq or (512 if quick else 2048)
    generator = torch.Generator(device="cuda").manual_seed(seed + 1)
    ids = torch.randint(0, config.vocab_size, (batch, seq), device="cuda", generator=generator)
    return model, (ids,)


def build_vit(quick=False, batch=None, seed=0):
    """ViTModel from a config, and a fixed batch of images; returns (model, inputs)."""
    from transformers import ViTConfig, ViTModel

    config = ViTConfig(**SHAPES["vit"][1 if quick else 0], attn_implementation="sdpa")
    model = _seeded(lambda: ViTModel(config, add_pooling_layer=False), seed)
    batch = batch or (8 if quick else 32)
    generator = torch.Generator(device="cuda").manual_seed(seed + 1)
    pixels = torch.randn(batch, 3, 224, 224, device="cuda", dtype=torch.bfloat16,
                         generator=generator)
    return model, (pixels,)


def forward_fn(name, model):
    """The step's function: inputs -> one output tensor."""
    if name == "llama":
        return lambda ids: model(input_ids=ids).logits
    return lambda pixels: model(pixel_values=pixels).last_hidden_state


BUILDERS = {"llama": build_llama, "vit": build_vit}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(BUILDERS), default="llama")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--graphs", action="store_true")
    args = parser.parse_args()

    memplan.torch.install()
    model, inputs = BUILDERS[args.model](quick=args.quick)
    fn = forward_fn(args.model, model)
    graphed = memplan.graphs.GraphedStep(args.model, fn, enabled=args.graphs)
    with torch.no_grad():
        for i in range(args.steps):
            start = time.perf_counter()
            out = graphed(*inputs)
            torch.cuda.synchronize()
            print(f"{args.model} step {i}: {1e3 * (time.perf_counter() - start):.1f} ms "
                  f"({graphed.last_path}), output {tuple(out.shape)}")
            del out
    print(memplan.report())


if __name__ == "__main__":
    main()
