// The denoise runtime's step program on the H200 (skips without a GPU): cuBLAS, memplan's
// attention kernels and CUDA Graphs; the same checks as on the host, with driver call counts.
#include <gtest/gtest.h>

#include <cstring>

#include "runtime_case.hpp"
#include "support/gpu.hpp"

namespace denoise::testing {
namespace {

TEST(GpuRuntime, WindowAndSecondPassConvergeAndModesAgree) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  auto platform = make_gpu_platform();
  const auto results = run_all(small_config(true), *platform);
  expect_runtime_holds(results, false);
}

TEST(GpuRuntime, RopeCacheOutsideAPauseIsOneLearnedRogueAndStaysFlat) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  auto platform = make_gpu_platform();
  Config c = small_config(true);
  c.rope = RopeCache::Rogue;
  const auto results = run_all(c, *platform);
  expect_runtime_holds(results, true);
}

TEST(GpuRuntime, PairListsHoldTheRuntimesChecks) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  auto platform = make_gpu_platform();
  Config c = small_config(true);
  c.query_blocks_per_list = 2;
  const auto results = run_all(c, *platform);
  expect_runtime_holds(results, false);
}

TEST(GpuRuntime, StreamedAndNaiveWeightsGiveTheResidentLatentsBitForBit) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  auto platform = make_gpu_platform();
  expect_weights_placements_agree(*platform);
}

// The rope kernel writes sparse attention's pooled means (the default on the GPU), or attention
// pools q and k itself: the same means to the bit (both follow BlockMeans), so the same block
// lists and the same latents in every mode, and the runtime's checks hold. 300 tokens: a partial
// last block; head_dim 64 and 128, the rope kernel's two builds.
TEST(GpuRuntime, MeansFromRopeGiveTheLatentsOfMeansFromAttentionBitForBit) {
  MEMPLAN_SKIP_WITHOUT_GPU();
  auto platform = make_gpu_platform();
  for (const int head_dim : {64, 128}) {
    SCOPED_TRACE(::testing::Message() << "head_dim " << head_dim);
    Config c = small_config(true);
    c.tokens = 300;
    c.head_dim = head_dim;
    c.pooled_means = PooledMeansBy::Rope;
    const auto by_rope = run_all(c, *platform);
    expect_runtime_holds(by_rope, false);
    c.pooled_means = PooledMeansBy::Attention;
    const auto by_attention = run_all(c, *platform);
    ASSERT_EQ(by_rope.size(), by_attention.size());
    for (std::size_t i = 0; i < by_rope.size(); ++i) {
      const auto& a = by_rope[i].latents;
      const auto& b = by_attention[i].latents;
      ASSERT_EQ(a.size(), b.size()) << by_rope[i].name;
      ASSERT_FALSE(a.empty()) << by_rope[i].name;
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << by_rope[i].name;
    }
  }
}

}  // namespace
}  // namespace denoise::testing
