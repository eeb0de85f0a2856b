"""A new user's check of memplan from PyTorch on models the table does not use: torchvision
ConvNeXt-Tiny (batch 16, bf16) and a GPT-2 decoder from a transformers config (12 layers, 4 x 512
tokens, bf16), random weights. 12 eager steps in memplan.step, then 12 calls of a GraphedStep;
prints breaks, rogues, the backend calls of the last 3 eager steps, the plan against its bound,
each call's path, and whether the last graph launch's output sum equals eager's.

    MEMPLAN_LIBRARY=build/gpu/src/c/libmemplan_torch.so PYTHONPATH=python \
        python3 bench/torch_unseen_models.py
"""
import torch

import memplan

memplan.torch.install()

def measure(name, model, inputs, steps=12):
    """Eager steps, then a GraphedStep of the same model on the same inputs."""
    with torch.no_grad():
        eager = []
        for i in range(steps):
            with memplan.step(name):
                out = model(*inputs)
                out = out.logits if hasattr(out, "logits") else out
            torch.cuda.synchronize()
            eager.append(out.float().sum().item())
            if i == steps - 4:
                before = memplan.stats()
            del out
        after = memplan.stats()
        calls = {k: v - before["backend_calls"][k]
                 for k, v in after["backend_calls"].items() if v != before["backend_calls"][k]}
        print(f"{name} eager: breaks {after['breaks']} branches {after['branches']} "
              f"rogues {after['rogues']} backend calls in the last 3 steps {calls} "
              f"lower bound {after['lower_bound_bytes']} planned peak "
              f"{after['planned_peak_bytes']} finite {all(v == v for v in eager)}")
        g = memplan.graphs.GraphedStep(name + "-g", model)
        outs, paths = [], []
        for i in range(steps):
            out = g(*inputs)
            out = out.logits if hasattr(out, "logits") else out
            torch.cuda.synchronize()
            outs.append(out.float().sum().item())
            paths.append(g.last_path)
            del out
        print(f"{name} graphs: paths {paths} last sums eager {eager[-1]!r} graphs {outs[-1]!r} "
              f"equal {eager[-1] == outs[-1]} stats {dict(g.stats)}")

torch.manual_seed(0)
import torchvision  # noqa: E402
m = torchvision.models.convnext_tiny(weights=None).cuda().to(torch.bfloat16).eval()
x = torch.randn(16, 3, 224, 224, device="cuda", dtype=torch.bfloat16)
measure("convnext", m, (x,))
from transformers import GPT2Config, GPT2LMHeadModel  # noqa: E402
cfg = GPT2Config(n_layer=12, n_embd=768, n_head=12, n_positions=1024)
m2 = GPT2LMHeadModel(cfg).cuda().to(torch.bfloat16).eval()
ids = torch.randint(0, cfg.vocab_size, (4, 512), device="cuda")
measure("gpt2", m2, (ids,))
print(memplan.report()[:3000])
