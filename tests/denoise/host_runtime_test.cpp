// The denoise runtime's step program on the CPU platform (host backend, float loops): the three
// allocation modes agree bit for bit, breaks are bounded by distinct paths and flat after, rogues
// are learned, replayed steps make no backend memory call, stable steps run as host graphs.
#include <gtest/gtest.h>

#include "runtime_case.hpp"

namespace denoise::testing {
namespace {

TEST(HostRuntime, WindowAndSecondPassConvergeAndModesAgree) {
  auto platform = make_cpu_platform();
  const auto results = run_all(small_config(false), *platform);
  expect_runtime_holds(results, false);
  EXPECT_TRUE(compare_outputs(results).bitwise);
  EXPECT_EQ(distinct_paths(results[0]), 4u);  // dense and sparse in both passes
}

TEST(HostRuntime, RopeCacheOutsideAPauseIsOneLearnedRogueAndStaysFlat) {
  auto platform = make_cpu_platform();
  Config c = small_config(false);
  c.rope = RopeCache::Rogue;
  const auto results = run_all(c, *platform);
  expect_runtime_holds(results, true);
  EXPECT_TRUE(compare_outputs(results).bitwise);
}

TEST(HostRuntime, WithoutASecondPassOnlyTheWindowBreaks) {
  auto platform = make_cpu_platform();
  Config c = small_config(false);
  c.second_tokens = 0;
  const auto results = run_all(c, *platform);
  expect_runtime_holds(results, false);
  EXPECT_EQ(results[0].breaks, 1u);
  EXPECT_EQ(results[0].branches, 2u);
}

TEST(HostRuntime, AWholeDenseScheduleHasNoBreak) {
  auto platform = make_cpu_platform();
  Config c = small_config(false);
  c.second_tokens = 0;
  c.window_start = 1.0;  // only the last step is sparse
  c.window_end = 1.0;
  c.steps = 8;
  const auto results = run_all(c, *platform);
  EXPECT_EQ(results[0].breaks, 1u);  // the one sparse step
  EXPECT_TRUE(compare_outputs(results).bitwise);
}

}  // namespace
}  // namespace denoise::testing
