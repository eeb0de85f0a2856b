"""memplan as PyTorch's allocator on a GPU: replay, graphs, attention against SDPA, errors.

This module's process gets memplan installed as PyTorch's CUDA allocator before anything
allocates CUDA memory (the allocator is chosen once per process). Skipped without CUDA PyTorch
or without libmemplan_torch.so."""

import ctypes
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device visible to PyTorch", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

import memplan  # noqa: E402
from memplan.graphs import GraphedStep  # noqa: E402

try:
    memplan.load()
except FileNotFoundError as e:
    pytest.skip(f"libmemplan_torch.so not built: {e}", allow_module_level=True)
memplan.torch.install(log_level="warn")
memplan.torch.warm_up()  # the default stream's cuBLAS workspaces, in the pool

MiB = 1 << 20


def mlp_step(x, w1, w2):
    return torch.relu(x @ w1) @ w2 + x


@pytest.fixture(scope="module")
def weights():
    torch.manual_seed(0)
    w1 = torch.randn(1024, 4096, device="cuda", dtype=torch.bfloat16) * 0.02
    w2 = torch.randn(4096, 1024, device="cuda", dtype=torch.bfloat16) * 0.02
    return w1, w2


def test_memplan_is_the_allocator():
    assert memplan.backend() == "cuda-vmm"
    t = torch.empty(MiB, device="cuda")
    assert memplan.stats()["pool_live_bytes"] >= 4 * MiB
    del t
    assert torch.empty(0, device="cuda").data_ptr() == 0


def test_steps_replay_with_the_same_pointers_and_no_backend_calls(weights):
    x = torch.randn(512, 1024, device="cuda", dtype=torch.bfloat16)
    results, pointers = [], []
    for _ in range(6):
        with memplan.step("mlp") as s:
            y = mlp_step(x, *weights)
            pointers.append(y.data_ptr())
            del y
        results.append(s.result)
        if len(results) == 2:
            calls = memplan.stats()["backend_calls"]
    assert results[0]["kind"] == "recorded"
    assert all(r["replayed"] for r in results[1:])
    assert len(set(pointers[1:])) == 1
    torch.cuda.synchronize()
    assert memplan.stats()["backend_calls"] == calls


def test_graphed_step_captures_and_matches_eager_bitwise(weights):
    x = torch.randn(512, 1024, device="cuda", dtype=torch.bfloat16)
    eager = GraphedStep("graphed-eager", lambda a: mlp_step(a, *weights), enabled=False)
    graphed = GraphedStep("graphed", lambda a: mlp_step(a, *weights), capture_after=2)
    expected = eager(x).clone()
    # Call 1 records, 2 and 3 replay, 4 captures as step "graphed:graph", which records (the
    # graph is dropped, the call runs eagerly), 5 captures again and launches, 6 and 7 launch.
    outs = [graphed(x).clone() for _ in range(7)]
    torch.cuda.synchronize()
    assert graphed.stats["captures"] == 1 and graphed.stats["capture_failures"] == 0
    assert graphed.stats["graph_launches"] == 3 and graphed.stats["eager_steps"] == 4
    for out in outs:
        assert torch.equal(out, expected)
    calls = memplan.stats()["backend_calls"]
    for _ in range(3):
        graphed(x)
    torch.cuda.synchronize()
    assert memplan.stats()["backend_calls"] == calls


def test_graphed_step_recaptures_once_into_the_room_of_the_output_the_loop_held(weights):
    # `y = graphed(x)` keeps the previous output while the next call runs, so the capture's output
    # goes past it in the pool; once it is gone, the next launch captures again and the output
    # takes its room (memplan.graphs, "Compaction"). 24 MiB outputs: larger than any hole the
    # module's earlier tests leave in the pool, so the eager output goes to its top.
    x = torch.randn(12288, 1024, device="cuda", dtype=torch.bfloat16)
    graphed = GraphedStep("graphed-held", lambda a: mlp_step(a, *weights), capture_after=2)
    expected = mlp_step(x, *weights)
    y, paths, pointers = None, [], []
    for _ in range(8):
        y = graphed(x)
        paths.append(graphed.last_path)
        pointers.append(y.data_ptr())
        assert torch.equal(y, expected)
    assert paths == ["eager"] * 4 + ["captured", "recaptured", "graph", "graph"], (
        paths, [hex(p) for p in pointers], graphed.stats)
    assert pointers[5] == pointers[3] and pointers[5] < pointers[4]  # the eager output's room
    assert graphed.stats["recaptures"] == 1 and graphed.stats["recaptures_dropped"] == 0
    calls = memplan.stats()["backend_calls"]
    for _ in range(3):
        y = graphed(x)
    torch.cuda.synchronize()
    assert torch.equal(y, expected) and memplan.stats()["backend_calls"] == calls


def test_graphed_step_follows_new_inputs(weights):
    graphed = GraphedStep("graphed-inputs", lambda a: mlp_step(a, *weights), capture_after=1)
    xs = [torch.randn(256, 1024, device="cuda", dtype=torch.bfloat16) for _ in range(5)]
    outs = [graphed(x).clone() for x in xs]
    assert graphed.stats["graph_launches"] >= 2
    for x, out in zip(xs, outs):
        assert torch.equal(out, mlp_step(x, *weights))


def test_a_graphed_step_never_enabled_warms_a_cold_stream_up_first(weights):
    # A stream nobody warmed up: its cuBLAS workspaces would be allocated in the first step (a
    # rogue for the life of the process, a second branch); GraphedStep(enabled=False) warms the
    # caller's stream first, as GraphedStep does its side stream.
    x = torch.randn(512, 1024, device="cuda", dtype=torch.bfloat16)
    eager = GraphedStep("cold-stream", lambda a: mlp_step(a, *weights), enabled=False)
    before = memplan.stats()
    with torch.cuda.stream(torch.cuda.Stream()):
        for _ in range(4):
            y = eager(x)
            assert eager.last_path == "eager"
            del y
        torch.cuda.current_stream().synchronize()
    after = memplan.stats()
    # The one rogue is the first step's output (live at its end; its site goes to the pool),
    # not a workspace: rogue bytes are the output's.
    assert after["rogues"] - before["rogues"] == 1
    assert after["rogue_bytes"] - before["rogue_bytes"] == x.numel() * x.element_size()
    assert after["breaks"] == before["breaks"]
    assert after["steps_recorded"] - before["steps_recorded"] == 1
    assert after["steps_replayed"] - before["steps_replayed"] == 3


def test_graphs_trim_keeps_the_graphs_branch_and_an_eager_step_maps_back(weights):
    # Key (512 rows) is captured; key (4096 rows), the eager step's other branch, stays eager.
    # memplan.graphs.trim() unmaps what only the eager branch uses; the graph still computes
    # bitwise what it did, with no backend call, and the eager step maps back what it uses.
    graphed = GraphedStep("graphs-trim", lambda a: mlp_step(a, *weights), capture_after=1)
    small = torch.randn(512, 1024, device="cuda", dtype=torch.bfloat16)
    large = torch.randn(4096, 1024, device="cuda", dtype=torch.bfloat16)
    # The large key's branch first: recording a branch once a graph lives moves the plans clear of
    # the graph's output (a rogue in the arena) and drops the graph.
    graphed.enabled = False
    for _ in range(2):
        expected_large = graphed(large).clone()
    graphed.enabled = True
    # record (a break: the second branch), replay, capture (the capture step's recording),
    # capture, launch
    for _ in range(5):
        expected = graphed(small).clone()
    assert graphed.last_path == "graph"
    graphed.enabled = False
    assert torch.equal(graphed(large), expected_large) and graphed.last_path == "eager"
    torch.cuda.synchronize()
    [(name, _, parity)] = graphed.held_branches()  # the small key's graph, still live
    assert name == "graphs-trim:graph" and parity == 0
    memplan.trim()
    trimmed = memplan.stats()["mapped_bytes"]
    memplan.graphs.trim()
    assert memplan.stats()["mapped_bytes"] < trimmed
    calls = memplan.stats()["backend_calls"]
    assert torch.equal(graphed(small), expected) and graphed.last_path == "graph"
    torch.cuda.synchronize()
    assert memplan.stats()["backend_calls"] == calls
    assert torch.equal(graphed(large), expected_large) and graphed.last_path == "eager"


def sdpa(q, k, v):
    # memplan's layout is [b, t, h, d]; SDPA's is [b, h, t, d].
    out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
    return out.transpose(1, 2)


@pytest.mark.parametrize("tokens", [1024, 4160])
def test_dense_attention_matches_sdpa(tokens):
    torch.manual_seed(1)
    q, k, v = (torch.randn(1, tokens, 8, 128, device="cuda", dtype=torch.bfloat16)
               for _ in range(3))
    policy = memplan.torch.attention_policy(mode="dense")
    out = memplan.attention(q, k, v, policy, 0.5)
    torch.testing.assert_close(out, sdpa(q, k, v), atol=2e-2, rtol=2e-2)


def test_topk_keeping_every_block_matches_sdpa():
    torch.manual_seed(2)
    q, k, v = (torch.randn(2, 2048, 4, 128, device="cuda", dtype=torch.bfloat16)
               for _ in range(3))
    policy = memplan.torch.attention_policy(mode="topk", keep_percent=100.0, window=(0.0, 1.0))
    out = memplan.attention(q, k, v, policy, 0.5)
    torch.testing.assert_close(out, sdpa(q, k, v), atol=2e-2, rtol=2e-2)


def test_sparse_attention_workspace_is_a_step_event():
    q, k, v = (torch.randn(1, 8192, 24, 128, device="cuda", dtype=torch.bfloat16)
               for _ in range(3))
    policy = memplan.torch.attention_policy(mode="tau", window=(0.2, 1.0))
    assert memplan.torch.attention_workspace_bytes(1, 8192, 24, 128, policy) > 0
    results = []
    for _ in range(3):
        with memplan.step("sparse-attention") as s:
            out = memplan.attention(q, k, v, policy, 0.5)
            finite = torch.isfinite(out).all()
            del out
        results.append(s.result)
        assert finite.item()
    assert results[0]["events"] >= 4  # out, the workspace and their frees, at least
    assert results[2]["replayed"] and results[2]["rogues"] == 0


def test_attention_rejects_bad_tensors():
    q = torch.randn(1, 128, 2, 128, device="cuda", dtype=torch.float16)
    with pytest.raises(ValueError, match="bf16"):
        memplan.attention(q, q, q)
    b = torch.randn(1, 128, 2, 96, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(memplan.InvalidArgument, match="96"):
        memplan.attention(b, b, b)


def torch_rope(x, cos, sin, pairs):
    """RoPE in PyTorch's eager ops, as a user writes it: fp32 products and sums, then bf16."""
    xf = x.float()
    c = cos[None, :, None, :]
    s = sin[None, :, None, :]
    if pairs == "interleaved":
        a, b = xf[..., 0::2], xf[..., 1::2]
        return torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2).bfloat16()
    half = x.shape[-1] // 2
    a, b = xf[..., :half], xf[..., half:]
    return torch.cat((a * c - b * s, a * s + b * c), dim=-1).bfloat16()


@pytest.mark.parametrize("pairs", ["interleaved", "halves"])
@pytest.mark.parametrize("mode", ["tau", "topk", "dense"])
def test_rope_attention_equals_torch_rope_then_attention(pairs, mode):
    torch.manual_seed(3)
    batch, tokens, heads, dim = 2, 4000, 4, 128  # the last 64-token block partial
    q, k, v = (torch.randn(batch, tokens, heads, dim, device="cuda", dtype=torch.bfloat16)
               for _ in range(3))
    angles = torch.rand(tokens, dim // 2, device="cuda") * 6.2831853
    cos, sin = angles.cos(), angles.sin()
    table = memplan.rope_table(cos, sin)
    policy = memplan.torch.attention_policy(mode=mode, keep_percent=10.0, max_keep_percent=30.0,
                                            window=(0.0, 1.0))
    rq, rk = torch_rope(q, cos, sin, pairs), torch_rope(k, cos, sin, pairs)
    want = memplan.attention(rq, rk, v, policy, 0.5)
    qr, kr = q.clone(), k.clone()
    got = memplan.rope_attention(qr, kr, v, table, policy, 0.5, pairs=pairs)
    assert torch.equal(qr, rq) and torch.equal(kr, rk)  # PyTorch's own RoPE, to the bit
    assert torch.equal(got, want)


def test_rope_attention_rejects_bad_tables():
    q, k, v = (torch.randn(1, 256, 2, 128, device="cuda", dtype=torch.bfloat16)
               for _ in range(3))
    table = memplan.rope_table(torch.ones(256, 64, device="cuda"), torch.zeros(256, 64,
                                                                             device="cuda"))
    with pytest.raises(ValueError, match=r"table must be a contiguous float32 tensor \[256, 64, 2\]"):
        memplan.rope_attention(q, k, v, table[:128])
    with pytest.raises(ValueError, match="pairs 'complex'"):
        memplan.rope_attention(q, k, v, table, pairs="complex")
    with pytest.raises(ValueError, match="one tensor"):
        memplan.rope_attention(q, q, v, table)
    with pytest.raises(ValueError, match="cos and sin"):
        memplan.rope_table(torch.ones(256, 64), torch.ones(256, 32))


def test_a_foreign_free_is_raised_with_its_pointer():
    buffer = ctypes.create_string_buffer(64)
    memplan.load().memplan_torch_free(ctypes.addressof(buffer), 64, 0, None)
    with pytest.raises(memplan.ForeignPointer, match=hex(ctypes.addressof(buffer))):
        memplan.check_callbacks()


def test_an_allocation_past_the_reserve_is_reported():
    # PyTorch's pluggable allocator does not check for NULL: the tensor comes back without
    # memory, memplan prints the reason on stderr and raises it at the next check.
    try:
        t = torch.empty(1 << 50, dtype=torch.uint8, device="cuda")
        assert t.data_ptr() == 0
        del t
    except RuntimeError as e:  # a PyTorch that checks the pointer itself
        print(f"PyTorch raised: {e}")
    with pytest.raises((memplan.OutOfMemory, memplan.InvalidArgument), match=f"size={1 << 50}"):
        memplan.check_callbacks()
