// The flash forward kernel against the double reference with the block list expanded to a token
// mask: dense rows, hand-made sparse lists, both head dims, batch > 1 and partial tail blocks;
// on the default path and, for head_dim 128, on the TMA kernel and the wgmma kernel explicitly
// (TMA's 192-key dense tiles: block counts not a multiple of 3 end with a partly empty tile).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gpu_case.hpp"
#include "kernel_choice.hpp"
#include "support/gpu.hpp"

namespace memplan::attention::test {
namespace {

struct ShapeCase {
  int batch;
  std::int64_t tokens;
  int heads;
  int head_dim;
};

// A shape on one path ("" the default, or a MEMPLAN_ATTENTION_KERNEL value).
struct FlashCase {
  ShapeCase shape;
  const char* kernel;
};

class FlashForward : public ::testing::TestWithParam<FlashCase> {};

AttentionShape to_shape(const ShapeCase& c) { return {c.batch, c.tokens, c.heads, c.head_dim}; }

TEST_P(FlashForward, DenseMatchesReference) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  const ScopedKernel kernel(GetParam().kernel);
  GpuCase c(to_shape(GetParam().shape), 0.0f);
  SCOPED_TRACE(testing::Message() << "seed " << c.seed);
  launch_flash_forward(c.shape, c.tensors(), BlockList{}, nullptr, 0.0f, nullptr);
  TEST_CUDA(cudaDeviceSynchronize());
  const auto want = reference_attention(c.shape, c.q, c.k, c.v, HostBlockList{});
  EXPECT_LE(relative_l2(c.output(), want), kMaxRelativeL2);
}

// Nothing is written past the output: it sits in a buffer with a guard after it, filled with a
// pattern that must survive. The TMA kernel stores a query block's rows with the TMA unit, which
// clips a tail block's rows at the tensor's end (and a dense CTA's second group past the last
// block stores nothing); a store past the end would land in the guard. The reference comparison
// of the other tests checks that every element inside was written.
TEST_P(FlashForward, WritesNothingPastTheOutput) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  const ScopedKernel kernel(GetParam().kernel);
  GpuCase c(to_shape(GetParam().shape), 0.0f);
  SCOPED_TRACE(testing::Message() << "seed " << c.seed);
  const std::size_t bytes = c.dout->bytes();
  constexpr std::size_t kGuard = 64 * 1024;
  DeviceBuffer out(bytes + kGuard);
  TEST_CUDA(cudaMemset(out.get(), 0x5A, bytes + kGuard));
  AttentionTensors tensors = c.tensors();
  tensors.out = out.get();
  launch_flash_forward(c.shape, tensors, BlockList{}, nullptr, 0.0f, nullptr);
  TEST_CUDA(cudaDeviceSynchronize());
  const auto all = out.download<unsigned char>(bytes + kGuard);
  const auto guard_kept = std::count(all.begin() + static_cast<std::ptrdiff_t>(bytes), all.end(),
                                     static_cast<unsigned char>(0x5A));
  EXPECT_EQ(guard_kept, static_cast<std::ptrdiff_t>(kGuard)) << "bytes past the output written";
  const auto want = reference_attention(c.shape, c.q, c.k, c.v, HostBlockList{});
  std::vector<float> got(static_cast<std::size_t>(c.shape.elements()));
  for (std::size_t i = 0; i < got.size(); ++i) {
    got[i] = from_bf16(static_cast<std::uint16_t>(all[2 * i] | (all[2 * i + 1] << 8)));
  }
  EXPECT_LE(relative_l2(got, want), kMaxRelativeL2);
}

// Random ascending lists with the diagonal kept; about a third of the blocks per row, some rows
// dense (count == blocks), and list slots past the count filled with garbage the kernel must skip.
void sparse_list_matches_reference(const FlashCase& fc) {
  const ScopedKernel kernel(fc.kernel);
  GpuCase c(to_shape(fc.shape), 0.0f);
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

TEST_P(FlashForward, SparseListMatchesReference) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  sparse_list_matches_reference(GetParam());
}

// Scores that grow along the keys: key block j's K rows scaled by 1 + 0.9 j, the last block's by
// 3 more, so a row's running max rises by about 3 (log2 units) a block and past its old value by
// more than 8 every few blocks, once by a wide jump. The TMA kernel keeps a row's max while a
// tile's stays within 2^8 of it and rescales O only past that (wgmma_tile.cuh): random inputs
// never get there, these do, every few tiles. Every path runs it.
TEST_P(FlashForward, DenseWithScoresGrowingAlongTheKeysMatchesReference) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  const ScopedKernel kernel(GetParam().kernel);
  GpuCase c(to_shape(GetParam().shape), 0.0f);
  SCOPED_TRACE(testing::Message() << "seed " << c.seed);
  const int blocks = c.shape.blocks();
  const std::int64_t per_token = static_cast<std::int64_t>(c.shape.heads) * c.shape.head_dim;
  for (std::size_t i = 0; i < c.k.values.size(); ++i) {
    const auto token = static_cast<std::int64_t>(i) / per_token % c.shape.tokens;
    const int block = static_cast<int>(token / 64);
    const float factor =
        (1.0f + 0.9f * static_cast<float>(block)) * (block == blocks - 1 ? 3.0f : 1.0f);
    c.k.bits[i] = to_bf16(c.k.values[i] * factor);
    c.k.values[i] = from_bf16(c.k.bits[i]);
  }
  c.dk->upload(c.k.bits);
  launch_flash_forward(c.shape, c.tensors(), BlockList{}, nullptr, 0.0f, nullptr);
  TEST_CUDA(cudaDeviceSynchronize());
  const auto want = reference_attention(c.shape, c.q, c.k, c.v, HostBlockList{});
  EXPECT_LE(relative_l2(c.output(), want), kMaxRelativeL2);
}

std::string case_name(const ::testing::TestParamInfo<FlashCase>& info) {
  // Appending (not "b" + string) dodges a GCC 12 -Wrestrict false alarm.
  const ShapeCase& s = info.param.shape;
  std::string name = "b";
  name += std::to_string(s.batch);
  name += "_t";
  name += std::to_string(s.tokens);
  name += "_h";
  name += std::to_string(s.heads);
  name += "_d";
  name += std::to_string(s.head_dim);
  for (const char* c = info.param.kernel; *c != '\0'; ++c) {
    if (c == info.param.kernel) name += "_";
    name += *c == '-' ? '_' : *c;
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FlashForward,
    ::testing::Values(FlashCase{{2, 256, 3, 64}, ""}, FlashCase{{2, 300, 2, 128}, ""},
                      FlashCase{{1, 37, 2, 64}, ""}, FlashCase{{1, 129, 1, 128}, ""},
                      FlashCase{{3, 450, 2, 64}, ""}, FlashCase{{1, 640, 2, 128}, ""}),
    case_name);

// The TMA kernel (the default on a Hopper device, asked for explicitly here): block counts 1, 3,
// 5, 8, 10, 15 and 24 (dense, on 192-key tiles: last tiles of 1, 3, 2, 2, 1, 3 and 3 listed
// blocks, the rest masked; 24 blocks reuse the 2-stage ring four times), tails of 37, 1, 44, 2
// and 28 tokens and none, batches up to 3 (each batch's tail must read zeros, not the next
// batch's first tokens). Block lists (a ring per group of a CTA): random lists of unequal lengths
// on neighbouring query blocks (the shorter one's empty turns), dense rows among them, odd block
// counts (a CTA's second group without a row), and 1,080 rows of 3 blocks with a tail of 2 tokens.
INSTANTIATE_TEST_SUITE_P(
    Tma, FlashForward,
    ::testing::Values(FlashCase{{1, 37, 2, 128}, "tma"}, FlashCase{{2, 300, 2, 128}, "tma"},
                      FlashCase{{1, 129, 1, 128}, "tma"}, FlashCase{{3, 450, 2, 128}, "tma"},
                      FlashCase{{1, 640, 2, 128}, "tma"}, FlashCase{{2, 960, 2, 128}, "tma"},
                      FlashCase{{1, 1500, 2, 128}, "tma"}, FlashCase{{3, 130, 120, 128}, "tma"}),
    case_name);

// The wgmma kernel with its cp.async ring (the default before the TMA kernel), on the head_dim
// 128 shapes it was tested on as the default, a one-block sequence, a batch of 3 and 24 blocks
// (its dense 4-stage ring wraps six times).
INSTANTIATE_TEST_SUITE_P(
    Wgmma, FlashForward,
    ::testing::Values(FlashCase{{1, 37, 2, 128}, "wgmma"}, FlashCase{{2, 300, 2, 128}, "wgmma"},
                      FlashCase{{1, 129, 1, 128}, "wgmma"}, FlashCase{{1, 640, 2, 128}, "wgmma"},
                      FlashCase{{3, 450, 2, 128}, "wgmma"}, FlashCase{{1, 1500, 2, 128}, "wgmma"}),
    case_name);

}  // namespace
}  // namespace memplan::attention::test
