// A small configuration of the denoise runtime and the checks shared by the host and GPU tests:
// breaks bounded by distinct paths and flat after, rogues learned, replayed steps without memory
// calls, and the same latents in every mode; and every weights placement giving the same latents.
#pragma once

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "config.hpp"
#include "memplan/error.hpp"
#include "model.hpp"
#include "platform.hpp"
#include "run_modes.hpp"
#include "summary.hpp"
#include "weight_sources.hpp"

namespace denoise::testing {

inline Config small_config(bool gpu) {
  Config c;
  c.blocks = 2;
  c.tokens = 256;
  c.heads = 2;
  c.head_dim = gpu ? 64 : 16;
  c.steps = 10;
  c.second_tokens = 384;
  c.second_steps = 5;
  c.per_step = false;
  c.chunk_mib = 2;
  for (const char* name :
       {"blocks", "tokens", "heads", "head-dim", "steps", "second-tokens", "second-steps"})
    c.preset_locked.insert(name);
  return c;
}

inline std::vector<ModeResult> run_all(Config c, Platform& platform) {
  apply_preset(c, platform.gpu());
  Model model(c, platform.ops());
  std::vector<ModeResult> out;
  for (Mode m : {Mode::Graphs, Mode::Eager, Mode::Baseline})
    out.push_back(run_mode(m, c, platform, model));
  return out;
}

// Distinct (pass, attention) paths seen: each costs at most one break, the first time.
inline std::size_t distinct_paths(const ModeResult& r) {
  std::set<std::pair<int, Attn>> paths;
  for (const StepRow& row : r.rows) paths.insert({row.pass, row.attn});
  return paths.size();
}

// Once every path has been seen (plus one step for the rogue case's follow-up break), breaks,
// rogues and mapped memory never change, every step replays, and no memory call is made.
inline void expect_flat_after_convergence(const ModeResult& r) {
  std::set<std::pair<int, Attn>> seen;
  std::size_t last_new = 0;
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    if (seen.insert({r.rows[i].pass, r.rows[i].attn}).second) last_new = i;
  }
  const std::size_t converged = last_new + 2;
  ASSERT_LT(converged, r.rows.size()) << "the case is too short to show convergence";
  for (std::size_t i = converged; i < r.rows.size(); ++i) {
    EXPECT_EQ(r.rows[i].breaks, r.rows[converged].breaks) << r.name << " row " << i;
    EXPECT_EQ(r.rows[i].rogues, r.rows[converged].rogues) << r.name << " row " << i;
    EXPECT_EQ(r.rows[i].mapped, r.rows[converged].mapped) << r.name << " row " << i;
    EXPECT_TRUE(r.rows[i].replayed) << r.name << " row " << i;
    EXPECT_EQ(r.rows[i].mem_calls, 0u) << r.name << " row " << i;
  }
}

inline void expect_runtime_holds(const std::vector<ModeResult>& results, bool rogue) {
  ASSERT_EQ(results.size(), 3u);
  const OutputCheck check = compare_outputs(results);
  EXPECT_TRUE(check.within_tolerance) << "max |diff| " << check.max_abs_diff;
  for (const ModeResult& r : {results[0], results[1]}) {
    SCOPED_TRACE(r.name);
    // The first path records; every other distinct path costs one break; the rogue case adds
    // one break for the step after the rogue (the cache is no longer allocated there).
    EXPECT_LE(r.breaks, distinct_paths(r) - 1 + (rogue ? 1 : 0));
    EXPECT_GE(r.breaks, distinct_paths(r) - 1);
    // One rope table per token count, each its own site (learning is by site, not by tag): a
    // rogue once per token count the case runs (one or two), never once per step.
    if (rogue) {
      EXPECT_GE(r.rogues, 1u);
      EXPECT_LE(r.rogues, 2u);
    } else {
      EXPECT_EQ(r.rogues, 0u);
    }
    EXPECT_EQ(r.replayed_step_mem_calls, 0u);
    EXPECT_LE(r.planned_bytes, r.lower_bound + r.lower_bound / 50);
    expect_flat_after_convergence(r);
  }
  EXPECT_EQ(results[0].breaks, results[1].breaks);
  EXPECT_EQ(results[0].steps_replayed, results[1].steps_replayed);
  EXPECT_GE(results[0].captures, 1u);
  EXPECT_EQ(results[0].invalidations, 0u);
  std::size_t graph_steps = 0;
  for (const StepRow& row : results[0].rows)
    graph_steps += std::string_view(row.path) == "graph" || std::string_view(row.path) == "capture";
  EXPECT_EQ(graph_steps, results[0].graph_launches);
  EXPECT_GE(graph_steps, results[0].rows.size() / 2);
  for (const StepRow& row : results[1].rows) EXPECT_EQ(std::string_view(row.path), "eager");
}

// Blocks of 768 KiB on the CPU (hidden 128, chunks of 1 MiB), 1.5 MiB on the GPU (hidden 256,
// chunks of 2 MiB, the VMM granule), so that some budget keeps blocks resident and streams the
// others; small enough to run in seconds in a sanitizer build.
inline Config weights_config(bool gpu, Weights weights) {
  Config c = small_config(gpu);
  c.blocks = 4;
  c.heads = 4;
  c.head_dim = gpu ? 64 : 32;
  c.mlp_ratio = 4;
  c.chunk_mib = gpu ? 2 : 1;
  c.tokens = gpu ? 256 : 64;
  c.steps = 4;
  c.second_tokens = 0;
  c.weights = weights;
  return c;
}

inline std::vector<ModeResult> run_modes(Config c, Platform& platform) {
  apply_preset(c, platform.gpu());
  Model model(c, platform.ops());
  std::vector<ModeResult> out;
  for (Mode m : c.modes) out.push_back(run_mode(m, c, platform, model));
  return out;
}

// For each number of resident blocks a budget in whole MiB gives, the smallest such budget (the
// chunks the pool and the arena map in decide which counts occur).
inline std::map<std::size_t, std::size_t> budgets_by_resident(Config c, Platform& platform) {
  apply_preset(c, platform.gpu());
  Model model(c, platform.ops());
  memplan::CompilerOptions o;
  o.chunk_bytes = c.chunk_mib << 20;
  o.pool_chunk_bytes = c.chunk_mib << 20;
  std::map<std::size_t, std::size_t> out;
  memplan::stream::StreamingInputs in = streaming_inputs(c, model, o);  // one probe
  for (std::size_t mib = 1; mib < 64; ++mib) {
    in.budget_bytes = mib << 20;
    try {
      out.emplace(memplan::stream::choose_streaming(in).resident_blocks, in.budget_bytes);
    } catch (const memplan::OutOfMemory&) {
    }
  }
  return out;
}

// Streamed weights with no block, some and every block resident, and naive weights: the
// resident run's latents bit for bit, no memory call in replayed steps, graphs launched; on the
// CPU the counted peak within the budget (on the GPU the measured one is the lead's figure).
inline void expect_weights_placements_agree(Platform& platform) {
  const bool gpu = platform.gpu();
  const auto resident = run_modes(weights_config(gpu, Weights::Resident), platform);
  ASSERT_EQ(resident.size(), 3u);
  const std::vector<float>& reference = resident.front().latents;

  const Config streamed = weights_config(gpu, Weights::Streamed);
  const auto budgets = budgets_by_resident(streamed, platform);
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
    for (ModeResult& r : run_modes(c, platform)) {
      SCOPED_TRACE(::testing::Message() << r.name << ", " << keep << " resident");
      ASSERT_TRUE(r.streaming.has_value());
      EXPECT_EQ(r.streaming->resident_blocks, keep);
      EXPECT_EQ(r.streamed_bytes_per_step, r.streaming->streamed_bytes);
      if (budget != 0 && !gpu) {
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
  for (ModeResult& r : run_modes(weights_config(gpu, Weights::Naive), platform)) {
    EXPECT_EQ(r.streamed_bytes_per_step, others.front().second.streaming->streamed_bytes);
    others.emplace_back("naive", std::move(r));
  }
  for (const auto& [what, r] : others) {
    ASSERT_EQ(r.latents.size(), reference.size()) << what << " " << r.name;
    EXPECT_EQ(std::memcmp(r.latents.data(), reference.data(), reference.size() * sizeof(float)), 0)
        << what << " " << r.name;
  }
}

}  // namespace denoise::testing
