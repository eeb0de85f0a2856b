// Issue 10's randomized differential test (perturbed_steps.hpp): 10,000 perturbed steps against
// the shadow model, under a branch cap that the paths fit in and under one they overrun. A path
// seen before never breaks and never calls the backend; no byte is lost, no live range shared.
#include <iostream>

#include "perturbed_steps.hpp"

namespace memplan::testing {
namespace {

CompilerOptions options_with_cap(std::size_t branch_cap) {
  CompilerOptions options = Harness::small_options();
  options.branch_cap = branch_cap;
  options.over_cap = OverCapPolicy::Dynamic;  // a step past the cap is served and counted
  return options;
}

PerturbedCounts run_perturbed(Harness& h, const PerturbConfig& config, std::uint64_t steps) {
  PerturbedRunner runner(h, config);
  runner.run(steps);
  runner.finish();
  const PerturbedCounts counts = runner.counts();
  std::cout << "seed " << config.seed << ", branch cap " << h.compiler().options().branch_cap
            << ": " << counts.summary() << '\n';
  return counts;
}

void expect_guarantees(const PerturbedCounts& c) {
  EXPECT_EQ(c.overlaps, 0u);
  EXPECT_EQ(c.mismatches, 0u);
  EXPECT_EQ(c.breaks_on_seen_paths, 0u) << "in " << c.seen_path_steps_that_broke << " steps";
  EXPECT_EQ(c.seen_path_memory_calls, 0u);
}

// The test is only as strong as its repetition and its perturbations: many steps must follow a
// seen path (past the cap, only the recorded paths can be seen), and buffers must leak and be
// freed on both sides of a step boundary.
void expect_coverage(const PerturbedCounts& c, double seen_fraction) {
  EXPECT_GT(static_cast<double>(c.seen_path_steps), seen_fraction * static_cast<double>(c.steps));
  EXPECT_GT(c.rogues, 0u);
  EXPECT_GT(c.freed_between_steps, 0u);
  EXPECT_GT(c.freed_in_later_steps, 0u);
}

TEST(PerturbedSteps, SeenPathsNeverBreakNorCallTheBackendAndEveryByteHolds) {
  Harness h(options_with_cap(1024));
  const PerturbedCounts c = run_perturbed(h, PerturbConfig{.seed = 1}, 10'000);
  expect_guarantees(c);
  expect_coverage(c, 0.9);
  EXPECT_EQ(c.dynamic_steps, 0u) << "the paths should fit in the cap";
}

TEST(PerturbedSteps, PastTheBranchCapSeenPathsStillNeverBreak) {
  Harness h(options_with_cap(8));
  const PerturbedCounts c = run_perturbed(h, PerturbConfig{.seed = 2}, 10'000);
  expect_guarantees(c);
  expect_coverage(c, 0.25);
  EXPECT_GT(c.dynamic_steps, 0u) << "the cap should be overrun";
}

}  // namespace
}  // namespace memplan::testing
