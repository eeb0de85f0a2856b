// Issue 10's randomized differential test (perturbed_steps.hpp): 10,000 perturbed steps against
// the shadow model, under a branch cap that the paths fit in and under one they overrun. A path
// seen before never breaks and never calls the backend; no byte is lost, no live range shared.
#include <iostream>

#include "perturbed_steps.hpp"
#include "script_shrink.hpp"

namespace memplan::testing {
namespace {

CompilerOptions options_with_cap(std::size_t branch_cap) {
  CompilerOptions options = Harness::small_options();
  options.branch_cap = branch_cap;
  options.over_cap = OverCapPolicy::Dynamic;  // a step past the cap is served and counted
  return options;
}

// Does `script` break or call the backend in a step of a seen path, on a fresh compiler?
bool fails_on_a_seen_path(const std::string& script, const CompilerOptions& options) {
  try {
    Harness h(options);
    return !seen_path_failures(run_script(h, script)).empty();
  } catch (const std::exception&) {
    return false;
  }
}

PerturbedCounts run_perturbed(const CompilerOptions& options, PerturbConfig config,
                              std::uint64_t steps) {
  Harness h(options);
  config.record_script = true;
  PerturbedRunner runner(h, config);
  runner.run(steps);
  runner.finish();
  const PerturbedCounts counts = runner.counts();
  std::cout << "seed " << config.seed << ", branch cap " << options.branch_cap << ": "
            << counts.summary() << '\n';
  if (counts.seen_path_steps_that_broke > 0 || counts.seen_path_memory_calls > 0) {
    const auto fails = [&](const std::string& s) { return fails_on_a_seen_path(s, options); };
    if (fails(runner.script())) {
      ADD_FAILURE() << "the first failure, shrunk to a step script (branch cap "
                    << options.branch_cap << "):\n"
                    << shrink_script(runner.script(), fails);
    } else {
      ADD_FAILURE() << "the first failure did not replay as a step script";
    }
  }
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

class PerturbedSteps : public ::testing::TestWithParam<unsigned> {};

TEST_P(PerturbedSteps, SeenPathsNeverBreakNorCallTheBackendAndEveryByteHolds) {
  const PerturbedCounts c =
      run_perturbed(options_with_cap(1024), PerturbConfig{.seed = GetParam()}, 10'000);
  expect_guarantees(c);
  expect_coverage(c, 0.9);
  EXPECT_EQ(c.dynamic_steps, 0u) << "the paths should fit in the cap";
}

TEST_P(PerturbedSteps, PastTheBranchCapSeenPathsStillNeverBreak) {
  const PerturbedCounts c =
      run_perturbed(options_with_cap(8), PerturbConfig{.seed = GetParam()}, 10'000);
  expect_guarantees(c);
  expect_coverage(c, 0.25);
  EXPECT_GT(c.dynamic_steps, 0u) << "the cap should be overrun";
}

INSTANTIATE_TEST_SUITE_P(Seeds, PerturbedSteps, ::testing::Values(1u, 2u, 3u));

}  // namespace
}  // namespace memplan::testing
