// PooledMeans::InWorkspace: a producer kernel that writes Q, K (and V) writes their pooled means
// with BlockMeans (producer_means.cu stands in for it). Its means must be the library's bits, and
// attention from them must give the block lists and the output of attention that pools itself;
// and selection must read the means given, not Q and K.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gpu_case.hpp"
#include "memplan/error.hpp"
#include "producer_means.hpp"
#include "support/gpu.hpp"

namespace memplan::attention::test {
namespace {

struct MeansCase {
  const char* name;
  SparsityMode mode;
  int query_blocks_per_list;
  int batch;
  std::int64_t tokens;  // not a multiple of 64: the last block is partial
  int head_dim;
};

AttentionPolicy policy_of(const MeansCase& mc) {
  AttentionPolicy p;
  p.mode = mc.mode;
  p.tau = 1.5f;
  p.keep_percent = 10.0f;
  p.max_keep_percent = 30.0f;
  p.coarse_gate = 0.5f;
  p.query_blocks_per_list = mc.query_blocks_per_list;
  return p;
}

// A copy of Q, K and V as a producer writes them, their means in `workspace` (V's only when the
// layout pools V, the coarse branch).
struct ProducedInputs {
  DeviceBuffer q, k, v;
  ProducedInputs(const GpuCase& c, const WorkspaceLayout& layout, DeviceBuffer& workspace)
      : q(c.dq->bytes()), k(c.dk->bytes()), v(c.dv->bytes()) {
    auto* base = static_cast<unsigned char*>(workspace.get());
    copy_with_means(q.get(), c.dq->get(), c.shape, base + layout.pooled_q, false, nullptr);
    copy_with_means(k.get(), c.dk->get(), c.shape, base + layout.pooled_k, true, nullptr);
    copy_with_means(v.get(), c.dv->get(), c.shape,
                    layout.has_pooled_v ? base + layout.pooled_v : nullptr, false, nullptr);
  }
};

std::vector<unsigned char> region(const std::vector<unsigned char>& all, std::size_t offset,
                                  std::size_t bytes) {
  return {all.begin() + static_cast<std::ptrdiff_t>(offset),
          all.begin() + static_cast<std::ptrdiff_t>(offset + bytes)};
}

// Each row's list up to its count (the rest of a row is not written).
std::vector<std::vector<int>> lists(const std::vector<unsigned char>& all,
                                    const WorkspaceLayout& layout, std::int64_t rows) {
  std::vector<std::vector<int>> out;
  const auto* idx = reinterpret_cast<const int*>(all.data() + layout.kv_idx);
  const auto* count = reinterpret_cast<const int*>(all.data() + layout.kv_count);
  for (std::int64_t r = 0; r < rows; ++r) {
    const int n = std::min(count[r], layout.max_k);
    out.emplace_back(idx + r * layout.max_k, idx + r * layout.max_k + n);
    out.back().push_back(count[r]);  // a count past max_k (a dense row) is compared too
  }
  return out;
}

std::string means_case_name(const ::testing::TestParamInfo<MeansCase>& param_info) {
  return param_info.param.name;
}

class PooledMeansFromProducer : public ::testing::TestWithParam<MeansCase> {};

TEST_P(PooledMeansFromProducer, SameMeansListsAndOutputAsPoolingInside) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  const MeansCase& mc = GetParam();
  const AttentionShape shape{mc.batch, mc.tokens, 3, mc.head_dim};
  const AttentionPolicy policy = policy_of(mc);
  GpuCase c(shape, 1.0f);
  SCOPED_TRACE(testing::Message() << "seed " << c.seed);
  const WorkspaceLayout layout = workspace_layout(shape, policy);
  DeviceBuffer inside(layout.bytes), given(layout.bytes), out(c.dout->bytes());
  inside.poison();
  given.poison();
  out.poison();

  launch_attention(shape, c.tensors(), policy, 0.5, inside.get(), inside.bytes(), nullptr);
  const ProducedInputs produced(c, layout, given);
  launch_attention(shape, {produced.q.get(), produced.k.get(), produced.v.get(), out.get()}, policy,
                   0.5, given.get(), given.bytes(), nullptr, PooledMeans::InWorkspace);
  TEST_CUDA(cudaDeviceSynchronize());

  const auto a = inside.download<unsigned char>(layout.bytes);
  const auto b = given.download<unsigned char>(layout.bytes);
  const std::size_t means_bytes = static_cast<std::size_t>(shape.rows()) * mc.head_dim * 4;
  EXPECT_EQ(region(a, layout.pooled_q, means_bytes), region(b, layout.pooled_q, means_bytes));
  EXPECT_EQ(region(a, layout.pooled_k, means_bytes), region(b, layout.pooled_k, means_bytes));
  if (layout.has_pooled_v) {
    EXPECT_EQ(region(a, layout.pooled_v, means_bytes), region(b, layout.pooled_v, means_bytes));
  }
  EXPECT_EQ(lists(a, layout, shape.rows()), lists(b, layout, shape.rows()));
  const auto n = static_cast<std::size_t>(shape.elements());
  EXPECT_EQ(c.dout->download<std::uint16_t>(n), out.download<std::uint16_t>(n));
}

INSTANTIATE_TEST_SUITE_P(
    Modes, PooledMeansFromProducer,
    ::testing::Values(MeansCase{"tau_d128", SparsityMode::Tau, 1, 2, 1000, 128},
                      MeansCase{"topk_pairs_d64", SparsityMode::TopK, 2, 1, 2500, 64},
                      MeansCase{"tau_pairs_d128", SparsityMode::Tau, 2, 1, 4100, 128},
                      MeansCase{"coarse_d128", SparsityMode::Coarse, 1, 1, 1500, 128}),
    means_case_name);

// Means of other inputs in the workspace: the lists are those inputs' lists, so selection read
// the means given and pooled nothing itself.
TEST(PooledMeansFromProducer, SelectionReadsTheMeansGivenNotQAndK) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  const AttentionShape shape{1, 3000, 2, 128};
  AttentionPolicy policy;
  policy.mode = SparsityMode::TopK;
  policy.keep_percent = 10.0f;
  GpuCase first(shape, 1.0f), second(shape, 1.0f);
  SCOPED_TRACE(testing::Message() << "seeds " << first.seed << ", " << second.seed);
  const WorkspaceLayout layout = workspace_layout(shape, policy);
  DeviceBuffer own(layout.bytes), given(layout.bytes);
  launch_selection(shape, first.tensors(), policy, own.get(), own.bytes(), nullptr);
  const ProducedInputs produced(first, layout, given);
  launch_selection(shape, second.tensors(), policy, given.get(), given.bytes(), nullptr,
                   PooledMeans::InWorkspace);
  DeviceBuffer others(layout.bytes);
  launch_selection(shape, second.tensors(), policy, others.get(), others.bytes(), nullptr);
  TEST_CUDA(cudaDeviceSynchronize());
  const auto from_first = lists(own.download<unsigned char>(layout.bytes), layout, shape.rows());
  EXPECT_EQ(from_first, lists(given.download<unsigned char>(layout.bytes), layout, shape.rows()));
  // The two inputs select differently, or the test proves nothing.
  EXPECT_NE(from_first, lists(others.download<unsigned char>(layout.bytes), layout, shape.rows()));
}

}  // namespace
}  // namespace memplan::attention::test
