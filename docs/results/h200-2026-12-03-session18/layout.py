# Diagnostic (not committed): the bench's Llama graphs loop with the pool/arena layout printed.
import os, sys, importlib.util
REPO = os.getcwd()
sys.path.insert(0, os.path.join(REPO, "python"))
spec = importlib.util.spec_from_file_location("ta", os.path.join(REPO, "bench", "torch_allocators.py"))
ta = importlib.util.module_from_spec(spec); spec.loader.exec_module(ta)
import memplan, torch
share = os.environ.get("SHARE", "1") == "1"
memplan.torch.install(share_pool_chunk=share or None)
torch.cuda.init()
settings = ta.MODELS["llama"][1]
name, fn, step_args, after, final = ta._workload("llama", settings, False)
g = memplan.graphs.GraphedStep(name, fn, capture_after=2)
ws = [p.data_ptr() for p in torch.nn.Module.parameters(fn.__self__) ] if hasattr(fn, "__self__") else []
C = 2 << 20
def show(tag, out=None):
    s = memplan.stats()
    t = out if isinstance(out, torch.Tensor) else (out[0] if isinstance(out, (tuple, list)) else None)
    ptr = f"out ptr {t.data_ptr():#x} mod C {t.data_ptr() % C} bytes {t.numel()*t.element_size()}" if t is not None else ""
    print(f"{tag}: path {g.last_path} moves {s['window_moves']} lent {s['pool_lent_bytes']} "
          f"arena mapped {s['mapped_bytes']} live {s['arena_live_bytes']} pool mapped {s['pool_mapped_bytes']} "
          f"live {s['pool_live_bytes']} (mod C {s['pool_live_bytes'] % C}) rogues {s['live_rogues']} {ptr}", flush=True)
show("start")
with torch.no_grad():
    for i in range(settings["warmup"] + 3):
        if i == settings["warmup"] - 1:
            torch.cuda.synchronize(); memplan.graphs.trim(); show("after graphs.trim")
        out = g(*step_args(i))
        torch.cuda.synchronize()
        show(f"call {i}", out)
        after(out); del out
        show(f"  kept")
print(memplan.report()[:3000])
