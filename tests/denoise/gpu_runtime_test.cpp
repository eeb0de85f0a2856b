// The denoise runtime's step program on the H200 (skips without a GPU): cuBLAS, memplan's
// attention kernels and CUDA Graphs; the same checks as on the host, with driver call counts.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace denoise::testing
