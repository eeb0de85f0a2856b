// RoPE (memplan/attention/rope.hpp): the kernel's rotated q and k against a host reference of
// rope.hpp's arithmetic, bit for bit, for both pairings, head_dim 64 and 128, batches and a
// partial last block; launch_rope_attention against launch_rope followed by launch_attention
// (means pooled inside) bit for bit in every mode, its means against the library's pooling, in
// a CUDA graph as eagerly; and the argument checks, which throw before anything is launched (so
// they run without a GPU too).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu_case.hpp"
#include "memplan/attention/rope.hpp"
#include "memplan/error.hpp"
#include "support/gpu.hpp"

namespace memplan::attention::test {
namespace {

// fp32 [tokens, head_dim / 2, 2] of random angles in [-pi, pi] (cos, sin of each).
std::vector<float> random_table(const AttentionShape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> angle(-3.14159265f, 3.14159265f);
  std::vector<float> table(static_cast<std::size_t>(shape.tokens) * shape.head_dim);
  for (std::size_t i = 0; i < table.size(); i += 2) {
    const float a = angle(rng);
    table[i] = std::cos(a);
    table[i + 1] = std::sin(a);
  }
  return table;
}

// A case's inputs (GpuCase) with a random angle table for its shape, on the device too.
struct RopeInputs {
  GpuCase c;
  std::vector<float> table;
  DeviceBuffer device_table;
  explicit RopeInputs(const AttentionShape& shape)
      : c(shape, 0.5f), device_table(static_cast<std::size_t>(shape.tokens) * shape.head_dim * 4) {
    std::mt19937 rng(c.seed);
    table = random_table(shape, rng);
    device_table.upload(table);
  }
  [[nodiscard]] RopeTable rope(RopePairs pairs) const { return {device_table.as<float>(), pairs}; }
};

// Copies of q and k for a second path (RoPE rewrites them in place).
void copy_tensor(DeviceBuffer& to, const DeviceBuffer& from) {
  TEST_CUDA(cudaMemcpy(to.get(), from.get(), from.bytes(), cudaMemcpyDeviceToDevice));
}

// rope.hpp's arithmetic: each product and the sum rounded to fp32 on its own (volatile keeps the
// compiler from fusing them), then to bf16.
float first_of(float x, float y, float c, float s) {
  const volatile float a = x * c;
  const volatile float b = y * s;
  return a - b;
}
float second_of(float x, float y, float c, float s) {
  const volatile float a = x * s;
  const volatile float b = y * c;
  return a + b;
}

std::vector<std::uint16_t> reference_rope(const AttentionShape& shape, const Tensor& in,
                                          const std::vector<float>& table, RopePairs pairs) {
  const int d = shape.head_dim;
  const int half = d / 2;
  std::vector<std::uint16_t> out(in.bits.size());
  for (std::int64_t row = 0; row < shape.elements() / d; ++row) {  // (batch, token, head)
    const std::int64_t token = row / shape.heads % shape.tokens;
    const float* x = in.values.data() + row * d;
    std::uint16_t* o = out.data() + row * d;
    for (int j = 0; j < half; ++j) {
      const int a = pairs == RopePairs::Interleaved ? 2 * j : j;
      const int b = pairs == RopePairs::Interleaved ? 2 * j + 1 : j + half;
      const float c = table[static_cast<std::size_t>((token * half + j) * 2)];
      const float s = table[static_cast<std::size_t>((token * half + j) * 2 + 1)];
      o[a] = to_bf16(first_of(x[a], x[b], c, s));
      o[b] = to_bf16(second_of(x[a], x[b], c, s));
    }
  }
  return out;
}

struct RopeCase {
  const char* name;
  int batch;
  std::int64_t tokens;
  int heads;
  int head_dim;
  RopePairs pairs;
};

class RopeKernel : public ::testing::TestWithParam<RopeCase> {};

TEST_P(RopeKernel, RotatesQAndKLikeTheReferenceBitForBit) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  const RopeCase rc = GetParam();
  const AttentionShape shape{rc.batch, rc.tokens, rc.heads, rc.head_dim};
  const RopeInputs in(shape);
  const GpuCase& c = in.c;
  launch_rope(shape, c.dq->get(), c.dk->get(), in.rope(rc.pairs), nullptr);
  TEST_CUDA(cudaDeviceSynchronize());
  const auto n = static_cast<std::size_t>(shape.elements());
  const auto q = c.dq->download<std::uint16_t>(n);
  const auto k = c.dk->download<std::uint16_t>(n);
  const auto want_q = reference_rope(shape, c.q, in.table, rc.pairs);
  const auto want_k = reference_rope(shape, c.k, in.table, rc.pairs);
  std::size_t wrong = 0;
  std::size_t first = n;
  for (std::size_t i = 0; i < n; ++i) {
    if (q[i] != want_q[i] || k[i] != want_k[i]) {
      if (wrong++ == 0) first = i;
    }
  }
  EXPECT_EQ(wrong, 0u) << "seed " << c.seed << ": first difference at element " << first << " (q "
                       << q[first % n] << " vs " << want_q[first % n] << ")";
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, RopeKernel,
    ::testing::Values(RopeCase{"Interleaved128", 1, 1000, 3, 128, RopePairs::Interleaved},
                      RopeCase{"Halves128", 1, 1000, 3, 128, RopePairs::Halves},
                      RopeCase{"Interleaved64Batch2", 2, 777, 2, 64, RopePairs::Interleaved},
                      RopeCase{"Halves64Batch2", 2, 777, 2, 64, RopePairs::Halves},
                      RopeCase{"HalvesOneToken", 3, 1, 1, 128, RopePairs::Halves},
                      RopeCase{"InterleavedWholeBlocks", 1, 256, 4, 128, RopePairs::Interleaved}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

struct FusedCase {
  const char* name;
  SparsityMode mode;
  int query_blocks_per_list;
  double step_fraction;  // 0.1: before the window, so the call runs dense
  RopePairs pairs;
  int head_dim;
};

AttentionPolicy policy_of(const FusedCase& fc) {
  AttentionPolicy p;
  p.mode = fc.mode;
  p.tau = 1.5f;
  p.keep_percent = 10.0f;
  p.max_keep_percent = 30.0f;
  p.coarse_gate = 0.5f;
  p.window_start = 0.2;
  p.window_end = 1.0;
  p.query_blocks_per_list = fc.query_blocks_per_list;
  return p;
}

class RopeAttention : public ::testing::TestWithParam<FusedCase> {};

// The fused call against RoPE, then attention pooling the rotated q and k itself: the same
// rotated q and k, the same means where the fused call wrote them, the same output.
TEST_P(RopeAttention, EqualsRopeThenAttentionBitForBit) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  const FusedCase fc = GetParam();
  const AttentionShape shape{2, 1500, 3, fc.head_dim};  // 24 blocks, the last partial
  const AttentionPolicy policy = policy_of(fc);
  const RopeInputs in(shape);
  const GpuCase& fused = in.c;
  const RopeTable rope = in.rope(fc.pairs);

  const std::size_t bytes = static_cast<std::size_t>(shape.elements()) * 2;
  DeviceBuffer q(bytes), k(bytes), out(bytes);  // the two-call path's copies of q and k
  copy_tensor(q, *fused.dq);
  copy_tensor(k, *fused.dk);
  out.poison();

  const WorkspaceLayout layout = workspace_layout(shape, policy);
  DeviceBuffer ws_fused(layout.bytes), ws_apart(layout.bytes);
  const SparsityMode mode = launch_rope_attention(
      shape, fused.dq->get(), fused.dk->get(), fused.dv->get(), fused.dout->get(), rope, policy,
      fc.step_fraction, ws_fused.get(), layout.bytes, nullptr);
  launch_rope(shape, q.get(), k.get(), rope, nullptr);
  const SparsityMode apart_mode =
      launch_attention(shape, {q.get(), k.get(), fused.dv->get(), out.get()}, policy,
                       fc.step_fraction, ws_apart.get(), layout.bytes, nullptr);
  TEST_CUDA(cudaDeviceSynchronize());
  EXPECT_EQ(mode, apart_mode);
  EXPECT_EQ(mode, fc.step_fraction < 0.2 ? SparsityMode::Dense : fc.mode);

  const auto n = static_cast<std::size_t>(shape.elements());
  EXPECT_EQ(fused.dq->download<std::uint16_t>(n), q.download<std::uint16_t>(n)) << "rotated q";
  EXPECT_EQ(fused.dk->download<std::uint16_t>(n), k.download<std::uint16_t>(n)) << "rotated k";
  EXPECT_EQ(fused.dout->download<std::uint16_t>(n), out.download<std::uint16_t>(n))
      << "output, seed " << fused.seed;
  if (mode != SparsityMode::Dense) {  // the means, written by RoPE or (coarse) pooled inside
    const auto a = ws_fused.download<unsigned char>(layout.bytes);
    const auto b = ws_apart.download<unsigned char>(layout.bytes);
    const std::size_t end = layout.has_pooled_v ? layout.pooled_v : layout.pooled_k;
    ASSERT_LT(layout.pooled_q, end);
    EXPECT_EQ(0, std::memcmp(a.data() + layout.pooled_q, b.data() + layout.pooled_q,
                             end - layout.pooled_q))
        << "pooled means of q (and k)";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Modes, RopeAttention,
    ::testing::Values(
        FusedCase{"Tau", SparsityMode::Tau, 1, 0.5, RopePairs::Interleaved, 128},
        FusedCase{"TauPairs", SparsityMode::Tau, 2, 0.5, RopePairs::Halves, 128},
        FusedCase{"TopK", SparsityMode::TopK, 1, 0.5, RopePairs::Halves, 64},
        FusedCase{"TopKPairs", SparsityMode::TopK, 2, 0.5, RopePairs::Interleaved, 128},
        FusedCase{"CoarsePoolsInside", SparsityMode::Coarse, 1, 0.5, RopePairs::Interleaved, 128},
        FusedCase{"DenseBeforeTheWindow", SparsityMode::Tau, 1, 0.1, RopePairs::Halves, 128}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

// The means the fused call writes are where launch_attention (PooledMeans::InWorkspace) reads
// them: asserted above through equal outputs. Here the two are not the same bytes, so a kernel
// that wrote the means of the unrotated tensors would be caught even if it selected alike.
TEST(RopeAttention, MeansAreOfTheRotatedValues) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  const AttentionShape shape{1, 640, 2, 128};
  AttentionPolicy policy;
  policy.mode = SparsityMode::TopK;
  policy.keep_percent = 20.0f;
  policy.window_start = 0.0;
  const RopeInputs in(shape);
  const GpuCase& c = in.c;
  const WorkspaceLayout layout = workspace_layout(shape, policy);
  DeviceBuffer rotated(layout.bytes), plain(layout.bytes);
  const std::size_t bytes = static_cast<std::size_t>(shape.elements()) * 2;
  DeviceBuffer q(bytes), k(bytes);
  copy_tensor(q, *c.dq);
  copy_tensor(k, *c.dk);
  launch_rope_with_means(shape, c.dq->get(), c.dk->get(), in.rope(RopePairs::Interleaved), policy,
                         rotated.get(), layout.bytes, nullptr);
  launch_selection(shape, {q.get(), k.get(), c.dv->get(), c.dout->get()}, policy, plain.get(),
                   layout.bytes, nullptr);
  TEST_CUDA(cudaDeviceSynchronize());
  const auto a = rotated.download<float>(layout.bytes / 4);
  const auto b = plain.download<float>(layout.bytes / 4);
  const std::size_t q_floats = static_cast<std::size_t>(shape.rows()) * shape.head_dim;
  EXPECT_NE(
      0, std::memcmp(a.data() + layout.pooled_q / 4, b.data() + layout.pooled_q / 4, q_floats * 4));
}

// A captured call replays as it ran eagerly: RoPE, selection from its means, attention.
TEST(RopeAttention, GraphReplayEqualsEager) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  const AttentionShape shape{1, 2000, 2, 128};
  AttentionPolicy policy;
  policy.mode = SparsityMode::Tau;
  policy.max_keep_percent = 30.0f;
  policy.window_start = 0.0;
  const RopeInputs in(shape);
  const GpuCase& c = in.c;
  const RopeTable rope = in.rope(RopePairs::Halves);
  const std::size_t bytes = static_cast<std::size_t>(shape.elements()) * 2;
  const WorkspaceLayout layout = workspace_layout(shape, policy);
  DeviceBuffer ws(layout.bytes), q(bytes), k(bytes), out(bytes);
  auto reset = [&] {
    copy_tensor(q, *c.dq);
    copy_tensor(k, *c.dk);
    out.poison();
    // The copies and the poison run on the legacy stream, which `stream` (non-blocking) does not
    // wait for.
    TEST_CUDA(cudaDeviceSynchronize());
  };
  cudaStream_t stream = nullptr;
  TEST_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto call = [&] {
    launch_rope_attention(shape, q.get(), k.get(), c.dv->get(), out.get(), rope, policy, 0.5,
                          ws.get(), layout.bytes, stream);
  };
  reset();
  call();
  TEST_CUDA(cudaStreamSynchronize(stream));
  const auto n = static_cast<std::size_t>(shape.elements());
  const auto eager = out.download<std::uint16_t>(n);

  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  TEST_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  call();
  TEST_CUDA(cudaStreamEndCapture(stream, &graph));
  TEST_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 2; ++replay) {
    reset();  // q and k are rotated in place: each replay starts from the inputs
    TEST_CUDA(cudaGraphLaunch(exec, stream));
    TEST_CUDA(cudaStreamSynchronize(stream));
    EXPECT_EQ(out.download<std::uint16_t>(n), eager) << "replay " << replay;
  }
  TEST_CUDA(cudaGraphExecDestroy(exec));
  TEST_CUDA(cudaGraphDestroy(graph));
  TEST_CUDA(cudaStreamDestroy(stream));
}

// Bad arguments throw InvalidArgument naming the fault, before any launch: fake device pointers
// suffice, and no GPU is needed.
class RopeArguments : public ::testing::Test {
 protected:
  static void* fake(std::uintptr_t address) { return reinterpret_cast<void*>(address); }
  const AttentionShape shape{1, 128, 2, 128};
  void* q = fake(0x10000);
  void* k = fake(0x20000);
  const void* v = fake(0x30000);
  void* out = fake(0x40000);
  const float* table = static_cast<const float*>(fake(0x50000));
};

template <typename Call>
std::string message_of(Call&& call) {
  try {
    call();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "(no InvalidArgument)";
}

TEST_F(RopeArguments, AreCheckedBeforeAnyLaunch) {
  const RopeTable good{table, RopePairs::Interleaved};
  EXPECT_NE(message_of([&] {
              launch_rope(shape, q, k, RopeTable{}, nullptr);
            }).find("rope table is null"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              launch_rope(shape, q, k, RopeTable{table + 1, RopePairs::Halves}, nullptr);
            }).find("not 16-byte aligned"),
            std::string::npos);
  EXPECT_NE(message_of([&] { launch_rope(shape, q, q, good, nullptr); }).find("one tensor"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              launch_rope(shape, q, k, RopeTable{table, static_cast<RopePairs>(7)}, nullptr);
            }).find("pairs = 7"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              launch_rope(AttentionShape{1, 128, 2, 96}, q, k, good, nullptr);
            }).find("head_dim"),
            std::string::npos);
  AttentionPolicy tau;
  tau.mode = SparsityMode::Tau;
  EXPECT_NE(message_of([&] {
              launch_rope_attention(shape, q, k, q, out, good, tau, 0.5, fake(0x60000), 1 << 20,
                                    nullptr);
            }).find("v is q or k"),
            std::string::npos);
  EXPECT_NE(message_of([&] {
              launch_rope_attention(shape, q, k, v, out, good, tau, 0.5, fake(0x60000), 16,
                                    nullptr);
            }).find("smaller than"),
            std::string::npos);
  AttentionPolicy coarse;
  coarse.mode = SparsityMode::Coarse;
  EXPECT_NE(message_of([&] {
              launch_rope_with_means(shape, q, k, good, coarse, fake(0x60000), 1 << 20, nullptr);
            }).find("without pooled V, not coarse"),
            std::string::npos);
  AttentionPolicy dense;
  dense.mode = SparsityMode::Dense;
  EXPECT_NE(message_of([&] {
              launch_rope_with_means(shape, q, k, good, dense, fake(0x60000), 1 << 20, nullptr);
            }).find("not dense"),
            std::string::npos);
}

}  // namespace
}  // namespace memplan::attention::test
