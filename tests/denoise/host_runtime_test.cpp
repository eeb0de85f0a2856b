// The denoise runtime's step program on the CPU platform (host backend, float loops): the three
// allocation modes agree bit for bit, breaks are bounded by distinct paths and flat after, rogues
// are learned, replayed steps make no backend memory call, stable steps run as host graphs;
// streamed and naive weights give the resident run's latents bit for bit.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <utility>

#include "memplan/error.hpp"
#include "runtime_case.hpp"
#include "weight_sources.hpp"

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

namespace denoise::testing {
namespace {

// Blocks of ~2 MiB (hidden 256) so that a budget can keep some resident and stream the others
// through slots planned in 2 MiB chunks.
Config weights_config(Weights weights) {
  Config c = small_config(false);
  c.blocks = 4;
  c.heads = 4;
  c.head_dim = 64;
  c.mlp_ratio = 2;
  c.tokens = 64;
  c.steps = 4;
  c.second_tokens = 0;
  c.weights = weights;
  return c;
}

std::vector<ModeResult> run_modes(Config c, Platform& platform) {
  apply_preset(c, platform.gpu());
  Model model(c, platform.ops());
  std::vector<ModeResult> out;
  for (Mode m : c.modes) out.push_back(run_mode(m, c, platform, model));
  return out;
}

// For each number of resident blocks a budget in whole MiB gives, the smallest such budget (the
// chunks the pool and the arena map in decide which counts occur).
std::map<std::size_t, std::size_t> budgets_by_resident(Config c, Platform& platform) {
  apply_preset(c, platform.gpu());
  Model model(c, platform.ops());
  memplan::CompilerOptions o;
  o.chunk_bytes = c.chunk_mib << 20;
  o.pool_chunk_bytes = std::size_t{2} << 20;
  std::map<std::size_t, std::size_t> out;
  for (std::size_t mib = 1; mib < 64; ++mib) {
    c.vram_budget = mib << 20;
    try {
      out.emplace(plan_streaming(c, model, o).resident_blocks, c.vram_budget);
    } catch (const memplan::OutOfMemory&) {
    }
  }
  return out;
}

TEST(HostRuntime, StreamedAndNaiveWeightsGiveTheResidentLatentsBitForBit) {
  auto platform = make_cpu_platform();
  const auto resident = run_modes(weights_config(Weights::Resident), *platform);
  ASSERT_EQ(resident.size(), 3u);
  const std::vector<float>& reference = resident.front().latents;

  const Config streamed = weights_config(Weights::Streamed);
  const auto budgets = budgets_by_resident(streamed, *platform);
  ASSERT_TRUE(budgets.contains(0));
  const auto some = std::find_if(budgets.begin(), budgets.end(), [&](const auto& kv) {
    return kv.first > 0 && kv.first < static_cast<std::size_t>(streamed.blocks);
  });
  ASSERT_NE(some, budgets.end()) << "no budget keeps some blocks resident and streams others";
  std::vector<std::pair<std::string, ModeResult>> others;
  for (const auto& [keep, budget] :
       {*budgets.find(0), *some,
        std::pair<const std::size_t, std::size_t>{static_cast<std::size_t>(streamed.blocks), 0}}) {
    Config c = streamed;
    c.vram_budget = budget;
    for (ModeResult& r : run_modes(c, *platform)) {
      SCOPED_TRACE(::testing::Message() << r.name << ", " << keep << " resident");
      ASSERT_TRUE(r.streaming.has_value());
      EXPECT_EQ(r.streaming->resident_blocks, keep);
      EXPECT_EQ(r.streamed_bytes_per_step, r.streaming->streamed_bytes);
      if (budget != 0) {
        EXPECT_LE(r.device_peak_bytes, budget);
      }
      EXPECT_EQ(r.replayed_step_mem_calls, 0u);
      EXPECT_GE(r.steps_replayed, 2u);
      if (r.mode == Mode::Graphs) {
        EXPECT_GE(r.graph_launches, 1u);
      }
      others.emplace_back(fmt::format("streamed, {} resident", keep), std::move(r));
    }
  }
  for (ModeResult& r : run_modes(weights_config(Weights::Naive), *platform)) {
    EXPECT_EQ(r.streamed_bytes_per_step, others.front().second.streaming->streamed_bytes);
    others.emplace_back("naive", std::move(r));
  }
  for (const auto& [what, r] : others) {
    ASSERT_EQ(r.latents.size(), reference.size()) << what << " " << r.name;
    EXPECT_EQ(std::memcmp(r.latents.data(), reference.data(), reference.size() * sizeof(float)), 0)
        << what << " " << r.name;
  }
}

TEST(HostRuntime, WeightsPlacementsRefuseTheModesTheyCannotRun) {
  Config c = weights_config(Weights::Naive);
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
