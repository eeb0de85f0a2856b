// The sequence-parallel runtime against the one-device path, shared by the host and GPU tests:
// every rank's latents against the one-device run of the same mode (bit for bit, or a bound),
// the ranks against each other, and every rank's memplan modes converging to replayed steps with
// no memory call.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "runtime_case.hpp"
#include "sp_run.hpp"

namespace denoise::testing {

inline std::vector<RankResults> run_ranks(Config c, int ranks, bool gpu) {
  c.ranks = ranks;
  apply_preset(c, gpu);
  return run_sequence_parallel(c, gpu);
}

inline bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

inline double max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double out = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - b[i]);
    out = std::isnan(d) ? INFINITY : std::max(out, d);
  }
  return out;
}

// Every rank ran every mode of `one` (the one-device run, same modes in the same order); each
// rank's memplan modes replay without memory calls once converged, make the one-device run's
// breaks, and time their collectives except under graphs; the ranks' latents are equal bit for
// bit.
inline void expect_ranks_hold(const std::vector<RankResults>& ranks,
                              const std::vector<ModeResult>& one) {
  ASSERT_FALSE(ranks.empty());
  for (const RankResults& rank : ranks) {
    ASSERT_EQ(rank.modes.size(), one.size()) << "rank " << rank.rank;
    for (std::size_t m = 0; m < one.size(); ++m) {
      const ModeResult& r = rank.modes[m];
      SCOPED_TRACE(::testing::Message() << "rank " << rank.rank << ", " << r.name);
      EXPECT_TRUE(bitwise_equal(r.latents, ranks.front().modes[m].latents));
      for (const StepRow& row : r.rows) EXPECT_EQ(row.collective_ms >= 0, r.mode != Mode::Graphs);
      if (r.mode == Mode::Baseline) continue;
      EXPECT_EQ(r.replayed_step_mem_calls, 0u);
      EXPECT_EQ(r.breaks, one[m].breaks);
      EXPECT_LE(r.planned_bytes, r.lower_bound + r.lower_bound / 50);
      expect_flat_after_convergence(r);
      if (r.mode == Mode::Graphs) {
        EXPECT_GE(r.graph_launches, 1u);
        EXPECT_EQ(r.invalidations, 0u);
      }
    }
  }
}

}  // namespace denoise::testing
