"""A new user's first hour with memplan.attention, on shapes no test uses (2026-12-04)."""
import sys, traceback
sys.path.insert(0, "python")
import torch
import torch.nn.functional as F
import memplan

memplan.load()
results = []

def check(name, fn):
    try:
        msg = fn()
        results.append((name, "ok", msg))
    except Exception as e:  # noqa: BLE001
        results.append((name, "FAIL", f"{type(e).__name__}: {e}"))
        traceback.print_exc()

def ref(q, k, v):  # fp32 math reference, [b, t, h, d] layout
    qf, kf, vf = (x.float().transpose(1, 2) for x in (q, k, v))
    return F.scaled_dot_product_attention(qf, kf, vf).transpose(1, 2)

def rel(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm()).item()

def qkv(b, t, h, d, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return [torch.randn(b, t, h, d, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3)]

P = memplan.torch.attention_policy

def dense_odd(d):
    def run():
        q, k, v = qkv(3, 7001, 5, d, seed=d)
        out = memplan.attention(q, k, v, P(mode="dense"))
        e = rel(out, ref(q, k, v))
        assert e < 1e-2, e
        return f"rel err {e:.2e}"
    return run

def topk_all():
    q, k, v = qkv(2, 3333, 3, 128, 1)
    out = memplan.attention(q, k, v, P(mode="topk", keep_percent=100.0, window=(0.0, 1.0)))
    e = rel(out, ref(q, k, v)); assert e < 1e-2, e
    return f"rel err {e:.2e}"

def tiny():
    q, k, v = qkv(1, 17, 1, 64, 2)
    out = memplan.attention(q, k, v, P(mode="tau", window=(0.0, 1.0)))
    e = rel(out, ref(q, k, v)); assert e < 1e-2, e
    return f"rel err {e:.2e}"

def determinism_and_density():
    q, k, v = qkv(1, 20000, 6, 128, 3)
    r = ref(q, k, v)
    msgs = []
    for qb in (1, 2):
        for tau in (0.5, 1.0, 1.5, 2.0):
            pol = P(mode="tau", tau=tau, window=(0.0, 1.0), query_blocks_per_list=qb)
            a = memplan.attention(q, k, v, pol); b = memplan.attention(q, k, v, pol)
            assert torch.equal(a, b), f"tau {tau} qb {qb} not deterministic"
            assert torch.isfinite(a).all()
            msgs.append(f"qb{qb} tau{tau}: {rel(a, r):.3f}")
    return "; ".join(msgs)

def window_dense():
    q, k, v = qkv(1, 4096, 2, 128, 4)
    pol = P(mode="tau", tau=2.0, window=(0.2, 1.0))
    a = memplan.attention(q, k, v, pol, step_fraction=0.1)  # outside the window: dense
    b = memplan.attention(q, k, v, P(mode="dense"))
    assert torch.equal(a, b)
    return "outside the window == dense, bitwise"

def graph_capture():
    q, k, v = qkv(2, 9000, 4, 128, 5)
    pol = P(mode="tau", tau=1.5, window=(0.0, 1.0), sink_keys=(0, 64))
    eager = memplan.attention(q, k, v, pol)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        memplan.attention(q, k, v, pol)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = memplan.attention(q, k, v, pol)
    for i in range(3):
        g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, eager), rel(out, eager)
    q.copy_(torch.randn_like(q)); g.replay(); torch.cuda.synchronize()
    again = memplan.attention(q, k, v, pol)
    assert torch.equal(out, again)
    return "3 replays == eager bitwise; new q replayed == eager bitwise"

def errors():
    msgs = []
    q, k, v = qkv(1, 128, 2, 128)
    for bad, what in ((lambda: memplan.attention(q[:, ::2], k[:, ::2], v[:, ::2]), "strided"),
                      (lambda: memplan.attention(q.half(), k.half(), v.half()), "fp16"),
                      (lambda: memplan.attention(q, k[:, :64], v), "shapes"),
                      (lambda: memplan.attention(q, k, v, P(mode="topk", keep_percent=-3)), "keep -3"),
                      (lambda: memplan.attention(q, k, v, P(mode="tau", query_blocks_per_list=3)), "qb 3"),
                      (lambda: memplan.attention(q.cpu(), k.cpu(), v.cpu()), "cpu")):
        try:
            bad(); msgs.append(f"{what}: NO ERROR")
        except Exception as e:  # noqa: BLE001
            msgs.append(f"{what}: {type(e).__name__}: {e}")
    return "\n    ".join(msgs)

for d in (64, 128):
    check(f"dense b3 t7001 h5 d{d} vs fp32 SDPA", dense_odd(d))
check("topk 100% b2 t3333 h3", topk_all)
check("tau on 17 tokens", tiny)
check("tau determinism and error vs density, 20000 tokens", determinism_and_density)
check("step outside the window runs dense", window_dense)
check("CUDA graph capture of tau with sinks, outside any memplan step", graph_capture)
check("bad inputs give clear errors", errors)
for name, status, msg in results:
    print(f"[{status}] {name}: {msg}")
print("FAILED" if any(s == "FAIL" for _, s, _ in results) else "ALL OK")
