// The flash forward kernel against the double reference with the block list expanded to a token
// mask: dense rows, hand-made sparse lists, both head dims, batch > 1 and partial tail blocks.
#include <gtest/gtest.h>

#include <algorithm>

#include "gpu_case.hpp"
#include "support/gpu.hpp"

namespace memplan::attention::test {
namespace {

struct ShapeCase {
  int batch;
  std::int64_t tokens;
  int heads;
  int head_dim;
};

class FlashForward : public ::testing::TestWithParam<ShapeCase> {};

AttentionShape to_shape(const ShapeCase& c) { return {c.batch, c.tokens, c.heads, c.head_dim}; }

TEST_P(FlashForward, DenseMatchesReference) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  GpuCase c(to_shape(GetParam()), 0.0f);
  SCOPED_TRACE(testing::Message() << "seed " << c.seed);
  launch_flash_forward(c.shape, c.tensors(), BlockList{}, nullptr, 0.0f, nullptr);
  TEST_CUDA(cudaDeviceSynchronize());
  const auto want = reference_attention(c.shape, c.q, c.k, c.v, HostBlockList{});
  EXPECT_LE(relative_l2(c.output(), want), kMaxRelativeL2);
}

// Random ascending lists with the diagonal kept; about a third of the blocks per row, some rows
// dense (count == blocks), and list slots past the count filled with garbage the kernel must skip.
TEST_P(FlashForward, SparseListMatchesReference) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  GpuCase c(to_shape(GetParam()), 0.0f);
  SCOPED_TRACE(testing::Message() << "seed " << c.seed);
  const int n = c.shape.blocks();
  HostBlockList list;
  list.max_k = n;
  list.idx.assign(static_cast<std::size_t>(c.shape.rows() * n), -12345);
  list.count.resize(static_cast<std::size_t>(c.shape.rows()));
  std::mt19937 rng(c.seed + 1);
  for (std::int64_t row = 0; row < c.shape.rows(); ++row) {
    const int qb = static_cast<int>(row % n);
    int count = 0;
    const bool dense = rng() % 7 == 0;
    for (int j = 0; j < n; ++j) {
      if (dense || j == qb || rng() % 3 == 0)
        list.idx[static_cast<std::size_t>(row * n + count++)] = j;
    }
    list.count[static_cast<std::size_t>(row)] = dense ? n : count;
  }
  DeviceBuffer idx(list.idx.size() * sizeof(int));
  DeviceBuffer count(list.count.size() * sizeof(int));
  idx.upload(list.idx);
  count.upload(list.count);
  launch_flash_forward(c.shape, c.tensors(), BlockList{idx.as<int>(), count.as<int>(), n}, nullptr,
                       0.0f, nullptr);
  TEST_CUDA(cudaDeviceSynchronize());
  const auto want = reference_attention(c.shape, c.q, c.k, c.v, list);
  EXPECT_LE(relative_l2(c.output(), want), kMaxRelativeL2);
}

INSTANTIATE_TEST_SUITE_P(Shapes, FlashForward,
                         ::testing::Values(ShapeCase{2, 256, 3, 64}, ShapeCase{2, 300, 2, 128},
                                           ShapeCase{1, 37, 2, 64}, ShapeCase{1, 129, 1, 128},
                                           ShapeCase{3, 450, 2, 64}, ShapeCase{1, 640, 2, 128}),
                         [](const auto& param_info) {
                           // Appending (not "b" + string) dodges a GCC 12 -Wrestrict false alarm.
                           const ShapeCase& s = param_info.param;
                           std::string name = "b";
                           name += std::to_string(s.batch);
                           name += "_t";
                           name += std::to_string(s.tokens);
                           name += "_h";
                           name += std::to_string(s.heads);
                           name += "_d";
                           name += std::to_string(s.head_dim);
                           return name;
                         });

}  // namespace
}  // namespace memplan::attention::test
