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
#include "memplan/error.hpp"
#include "support/gpu.hpp"

namespace memplan::attention::test {
namespace {

struct ShapeCase {
  int batch;
  std::int64_t tokens;
  int heads;
  int head_dim;
};

// A shape on one path ("" the default, or a MEMPLAN_ATTENTION_KERNEL value); `ctas` > 0 caps the
// persistent kernel's grid (MEMPLAN_ATTENTION_PERSISTENT_CTAS).
struct FlashCase {
  ShapeCase shape;
  const char* kernel;
  int ctas = 0;
};

class FlashForward : public ::testing::TestWithParam<FlashCase> {};

AttentionShape to_shape(const ShapeCase& c) { return {c.batch, c.tokens, c.heads, c.head_dim}; }

TEST_P(FlashForward, DenseMatchesReference) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  const ScopedKernel kernel(GetParam().kernel);
  const ScopedPersistentCtas ctas(GetParam().ctas);
  GpuCase c(to_shape(GetParam().shape), 0.0f);
  SCOPED_TRACE(testing::Message() << "seed " << c.seed);
  launch_flash_forward(c.shape, c.tensors(), BlockList{}, nullptr, 0.0f, nullptr);
  TEST_CUDA(cudaDeviceSynchronize());
  const auto want = reference_attention(c.shape, c.q, c.k, c.v, HostBlockList{});
  EXPECT_LE(relative_l2(c.output(), want), kMaxRelativeL2);
}

// Random ascending lists with the diagonal kept; about a third of the blocks per row, some rows
// dense (count == blocks), and list slots past the count filled with garbage the kernel must skip.
void sparse_list_matches_reference(const FlashCase& fc) {
  const ScopedKernel kernel(fc.kernel);
  const ScopedPersistentCtas ctas(fc.ctas);
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
  DeviceBuffer work_counter(sizeof(unsigned));  // tma-persistent-dynamic's; garbage before launch
  idx.upload(list.idx);
  count.upload(list.count);
  work_counter.poison();
  launch_flash_forward(c.shape, c.tensors(),
                       BlockList{idx.as<int>(), count.as<int>(), n, work_counter.as<unsigned>()},
                       nullptr, 0.0f, nullptr);
  TEST_CUDA(cudaDeviceSynchronize());
  const auto want = reference_attention(c.shape, c.q, c.k, c.v, list);
  EXPECT_LE(relative_l2(c.output(), want), kMaxRelativeL2);
}

TEST_P(FlashForward, SparseListMatchesReference) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  sparse_list_matches_reference(GetParam());
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
  if (info.param.ctas > 0) {
    name += "_ctas";
    name += std::to_string(info.param.ctas);
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

// The persistent TMA kernel on the TMA kernel's shapes, on every CTA the device holds (most of
// these shapes have fewer work items than CTAs: one item a CTA) and on a grid capped at 1, 2 or 7
// CTAs, so each CTA runs many items (up to 720) back to back: the rings' stages and phases and
// the ping-pong turns carry over from item to item, lists of unequal lengths follow each other,
// and the 32-bit tile counter passes many phase flips.
INSTANTIATE_TEST_SUITE_P(TmaPersistent, FlashForward,
                         ::testing::Values(FlashCase{{1, 37, 2, 128}, "tma-persistent"},
                                           FlashCase{{2, 300, 2, 128}, "tma-persistent"},
                                           FlashCase{{1, 129, 1, 128}, "tma-persistent"},
                                           FlashCase{{3, 450, 2, 128}, "tma-persistent"},
                                           FlashCase{{1, 640, 2, 128}, "tma-persistent"},
                                           FlashCase{{2, 960, 2, 128}, "tma-persistent"},
                                           FlashCase{{1, 1500, 2, 128}, "tma-persistent"},
                                           FlashCase{{3, 130, 120, 128}, "tma-persistent"},
                                           FlashCase{{1, 37, 2, 128}, "tma-persistent", 1},
                                           FlashCase{{2, 300, 2, 128}, "tma-persistent", 1},
                                           FlashCase{{3, 450, 2, 128}, "tma-persistent", 2},
                                           FlashCase{{2, 960, 2, 128}, "tma-persistent", 7},
                                           FlashCase{{1, 1500, 2, 128}, "tma-persistent", 2},
                                           FlashCase{{3, 130, 120, 128}, "tma-persistent", 1},
                                           FlashCase{{3, 130, 120, 128}, "tma-persistent", 7}),
                         case_name);

// The persistent kernel taking block-list items from a work counter (dense launches keep the
// static stride): on every resident CTA and on 1, 3 or 7, so CTAs take unequal numbers of items.
INSTANTIATE_TEST_SUITE_P(TmaPersistentDynamic, FlashForward,
                         ::testing::Values(FlashCase{{1, 37, 2, 128}, "tma-persistent-dynamic"},
                                           FlashCase{{3, 450, 2, 128}, "tma-persistent-dynamic"},
                                           FlashCase{{1, 1500, 2, 128}, "tma-persistent-dynamic"},
                                           FlashCase{{3, 130, 120, 128}, "tma-persistent-dynamic"},
                                           FlashCase{{2, 300, 2, 128}, "tma-persistent-dynamic", 1},
                                           FlashCase{{2, 960, 2, 128}, "tma-persistent-dynamic", 3},
                                           FlashCase{
                                               {3, 130, 120, 128}, "tma-persistent-dynamic", 7}),
                         case_name);

// The persistent grid's cap (MEMPLAN_ATTENTION_PERSISTENT_CTAS, read at every launch of the
// persistent kernel) must be a positive number of CTAs; anything else is an error naming it.
TEST(FlashForwardPersistent, BadCtaCapIsAnErrorNamingIt) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  int device = 0;
  cudaDeviceProp prop{};
  TEST_CUDA(cudaGetDevice(&device));
  TEST_CUDA(cudaGetDeviceProperties(&prop, device));
  if (prop.major != 9) GTEST_SKIP() << "the TMA kernels run on compute capability 9.x only";
  const ScopedKernel kernel("tma-persistent");
  GpuCase c({1, 200, 2, 128}, 0.0f);
  for (const char* cap : {"0", "-3", "12x"}) {
    const ScopedEnv env("MEMPLAN_ATTENTION_PERSISTENT_CTAS", cap);
    try {
      launch_flash_forward(c.shape, c.tensors(), BlockList{}, nullptr, 0.0f, nullptr);
      ADD_FAILURE() << "MEMPLAN_ATTENTION_PERSISTENT_CTAS=" << cap << " was accepted";
    } catch (const memplan::InvalidArgument& error) {
      EXPECT_NE(std::string(error.what()).find(std::string("=") + cap), std::string::npos)
          << error.what();
    }
  }
  TEST_CUDA(cudaDeviceSynchronize());
}

// The wgmma kernel with its cp.async ring (the default before the TMA kernel), on the head_dim
// 128 shapes it was tested on as the default, and a one-block sequence.
INSTANTIATE_TEST_SUITE_P(Wgmma, FlashForward,
                         ::testing::Values(FlashCase{{1, 37, 2, 128}, "wgmma"},
                                           FlashCase{{2, 300, 2, 128}, "wgmma"},
                                           FlashCase{{1, 129, 1, 128}, "wgmma"},
                                           FlashCase{{1, 640, 2, 128}, "wgmma"}),
                         case_name);

}  // namespace
}  // namespace memplan::attention::test
