// The denoise runtime's step program on the CPU platform (host backend, float loops): the three
// allocation modes agree bit for bit, breaks are bounded by distinct paths and flat after, rogues
// are learned, replayed steps make no backend memory call, stable steps run as host graphs;
// streamed and naive weights give the resident run's latents bit for bit; lists per pair of query
// blocks keep the modes in agreement.
#include <gtest/gtest.h>

#include <cstddef>
#include <vector>

#include "memplan/error.hpp"
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

// One key-block list per pair of query blocks (--query-blocks-per-list 2): the modes still agree
// bit for bit, and the pairs' lists reach the CPU twin's attention (other latents than one list
// per query block; the seeded run is deterministic).
TEST(HostRuntime, PairListsAgreeAcrossModesAndChangeTheSelection) {
  auto platform = make_cpu_platform();
  Config c = small_config(false);
  c.second_tokens = 0;
  const auto single = run_all(c, *platform);
  c.query_blocks_per_list = 2;
  const auto pairs = run_all(c, *platform);
  expect_runtime_holds(pairs, false);
  EXPECT_TRUE(compare_outputs(pairs).bitwise);
  ASSERT_EQ(pairs[0].latents.size(), single[0].latents.size());
  EXPECT_NE(pairs[0].latents, single[0].latents);
}

}  // namespace
}  // namespace denoise::testing

namespace denoise::testing {
namespace {

TEST(HostRuntime, StreamedAndNaiveWeightsGiveTheResidentLatentsBitForBit) {
  auto platform = make_cpu_platform();
  expect_weights_placements_agree(*platform);
}

TEST(HostRuntime, WeightsPlacementsRefuseTheModesTheyCannotRun) {
  Config c = weights_config(false, Weights::Naive);
  c.modes = {Mode::Graphs};
  c.preset_locked.insert("modes");
  EXPECT_THROW(apply_preset(c, false), memplan::InvalidArgument);
  c.weights = Weights::Streamed;
  c.modes = {Mode::Baseline};
  EXPECT_THROW(apply_preset(c, false), memplan::InvalidArgument);
  c.preset_locked.erase("modes");
  apply_preset(c, false);
  EXPECT_EQ(c.modes, (std::vector<Mode>{Mode::Graphs, Mode::Eager}));
}

TEST(HostRuntime, BudgetsParseInHumanUnits) {
  EXPECT_EQ(parse_bytes("6GiB"), std::size_t{6} << 30);
  EXPECT_EQ(parse_bytes("1.5 MiB"), std::size_t{3} << 19);
  EXPECT_EQ(parse_bytes("2GB"), std::size_t{2000000000});
  EXPECT_EQ(parse_bytes("4096"), 4096u);
  EXPECT_THROW((void)parse_bytes("6 GiBs"), memplan::InvalidArgument);
  EXPECT_THROW((void)parse_bytes("GiB"), memplan::InvalidArgument);
  EXPECT_THROW((void)parse_bytes("-1GiB"), memplan::InvalidArgument);
}

}  // namespace
}  // namespace denoise::testing
