// Field test 1: one trace for 50 steps records once and replays 49 times at the same addresses,
// with no backend call after the first step and a plan within 1% of the lower bound.
#include "step_program.hpp"

namespace memplan::testing {
namespace {

TEST(SteadyState, RecordsOnceThenReplaysAtStableAddressesWithoutBackendCalls) {
  Harness h;
  const Program step = dit_step(8, 4096);
  h.run_step(step);  // the recording
  const arena::CallCounts after_recording = h.backend().calls();
  std::vector<void*> replayed;
  for (int s = 1; s < 50; ++s) {
    const std::vector<void*> pointers = h.run_step(step);
    if (s == 1) {
      replayed = pointers;
    } else {
      ASSERT_EQ(pointers, replayed) << "step " << s << " moved a buffer";
    }
  }
  const Stats st = h.compiler().stats();
  EXPECT_EQ(st.steps_recorded, 1u);
  EXPECT_EQ(st.steps_replayed, 49u);
  EXPECT_EQ(st.graph_breaks, 0u);
  EXPECT_EQ(st.branches, 1u);
  EXPECT_EQ(st.rogues, 0u);
  EXPECT_EQ(st.replayed_allocations, 49u * replayed.size());
  EXPECT_EQ((h.backend().calls() - after_recording).total(), 0u);
  EXPECT_LE(static_cast<double>(st.planned_peak_bytes),
            1.01 * static_cast<double>(st.lower_bound_bytes));
  const std::uint64_t chunk = Harness::small_options().chunk_bytes;
  EXPECT_LE(st.mapped_bytes, (st.planned_peak_bytes + chunk - 1) / chunk * chunk);
}

TEST(SteadyState, ReplayedPointersStayInsideTheArenaAndAligned) {
  Harness h;
  const Program step = dit_step(4, 1000);
  h.run_step(step);
  const auto base = reinterpret_cast<std::uintptr_t>(h.compiler().arena_base());
  for (void* p : h.run_step(step)) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    EXPECT_GE(a, base);
    EXPECT_EQ(a % 256, 0u);
  }
}

TEST(SteadyState, TrimAndReleaseKeepAddressesAndMapBackOnTheNextStep) {
  Harness h;
  const Program step = dit_step(4, 4096);
  h.run_step(step);
  const std::vector<void*> before = h.run_step(step);
  h.compiler().release();
  EXPECT_EQ(h.compiler().stats().mapped_bytes, 0u);
  EXPECT_EQ(h.run_step(step), before);  // mapped back at the same addresses
  EXPECT_GT(h.compiler().stats().mapped_bytes, 0u);
  h.compiler().trim();
  EXPECT_EQ(h.run_step(step), before);
  EXPECT_EQ(h.compiler().stats().graph_breaks, 0u);
}

TEST(SteadyState, ReportNamesStepsBranchesAndMemory) {
  Harness h;
  h.run_step(dit_step(2, 512));
  h.run_step(dit_step(2, 512));
  const std::string report = h.compiler().report();
  EXPECT_NE(report.find("steps: 1 recorded, 1 replayed"), std::string::npos) << report;
  EXPECT_NE(report.find("step 'denoise': 2 runs, 1 branches"), std::string::npos) << report;
  EXPECT_NE(report.find("planned peak"), std::string::npos) << report;
}

}  // namespace
}  // namespace memplan::testing
