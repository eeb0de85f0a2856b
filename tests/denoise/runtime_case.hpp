// A small configuration of the denoise runtime and the checks shared by the host and GPU tests:
// breaks bounded by distinct paths and flat after, rogues learned, replayed steps without memory
// calls, and the same latents in every mode.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string_view>
#include <tuple>
#include <vector>

#include "config.hpp"
#include "model.hpp"
#include "platform.hpp"
#include "run_modes.hpp"
#include "summary.hpp"

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

}  // namespace denoise::testing
