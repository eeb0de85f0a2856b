// The planner on generated traces above the sizes of the shipped suites (bench/traces): the
// generators' shapes, the budget counted in strategies run rather than seconds, the time tree
// behind the large problems' strategies, and the squeaky-wheel rounds. Kept to about 10,000
// to 35,000 buffers so that the ASan build stays within seconds.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>

#include "memplan/plan/greedy.hpp"
#include "memplan/plan/lower_bound.hpp"
#include "memplan/plan/planner.hpp"
#include "solver_cases.hpp"
#include "trace_generators.hpp"

namespace memplan::plan {
namespace {

using testing::expect_valid;
using traces::TraceFamily;

constexpr TraceFamily kFamilies[] = {TraceFamily::Training, TraceFamily::Inference,
                                     TraceFamily::Graph, TraceFamily::Random};

TEST(GeneratedTraces, HaveAboutTheBuffersAskedForAndRepeatForASeed) {
  for (const TraceFamily family : kFamilies) {
    SCOPED_TRACE(std::string(traces::to_string(family)));
    const Problem problem = traces::generate(family, 3000, 5);
    EXPECT_NO_THROW(check_problem(problem));
    EXPECT_GT(problem.buffers.size(), 2700u);
    EXPECT_LT(problem.buffers.size(), 3300u);
    const Problem again = traces::generate(family, 3000, 5);
    ASSERT_EQ(again.buffers.size(), problem.buffers.size());
    for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
      EXPECT_EQ(again.buffers[i].lower, problem.buffers[i].lower);
      EXPECT_EQ(again.buffers[i].size, problem.buffers[i].size);
    }
  }
}

TEST(GeneratedTraces, MixLongLivedWeightsWithShortLivedActivations) {
  for (const TraceFamily family : {TraceFamily::Training, TraceFamily::Inference}) {
    const Problem problem = traces::generate(family, 3000, 5);
    Time end = 0;
    for (const Buffer& b : problem.buffers) end = std::max(end, b.upper);
    const auto whole =
        std::count_if(problem.buffers.begin(), problem.buffers.end(),
                      [&](const Buffer& b) { return b.lower == 0 && b.upper == end; });
    const auto brief = std::count_if(problem.buffers.begin(), problem.buffers.end(),
                                     [](const Buffer& b) { return b.upper - b.lower <= 2; });
    SCOPED_TRACE(std::string(traces::to_string(family)));
    EXPECT_GT(whole, 100);                                                      // weights
    EXPECT_GT(brief, static_cast<std::ptrdiff_t>(problem.buffers.size() / 2));  // activations
  }
}

TEST(GeneratedTraces, TheGraphFamilysSizesAreOddAsInTheContest) {
  const Problem problem = traces::graph_trace(2000, 3);
  for (const Buffer& b : problem.buffers) {
    EXPECT_EQ(b.size % 2, 1);
    EXPECT_EQ(b.alignment, 1);
  }
}

TEST(LargeProblems, ANoBudgetRunIsTheFirstStrategyAlone) {
  // Above 8,192 buffers the other orders run on the time tree, size/first-fit first; above
  // 32,768 the sweeps go first. With no budget that one strategy is the whole greedy work, and
  // nothing comes after it (no squeaky-wheel round, no exact search).
  const Problem large = traces::random_trace(10000, 2);
  const Solution rushed = plan(large, {.budget = std::chrono::milliseconds(0)});
  expect_valid(large, rushed);
  EXPECT_EQ(rushed.algorithm, "greedy:size/first-fit");
  const Problem wide = traces::graph_trace(34000, 2);
  const Solution rushed_wide = plan(wide, {.budget = std::chrono::milliseconds(0)});
  expect_valid(wide, rushed_wide);
  EXPECT_EQ(rushed_wide.algorithm, "greedy:start/first-fit");
}

TEST(LargeProblems, TheSqueakyWheelImprovesOnTheWinningStrategy) {
  // On this problem size/first-fit wins the strategies, 1.7 % above the bound; moving the
  // buffers that end above the bound to the front of its sequence gains on it.
  const Problem problem = traces::random_trace(9000, 2);
  const GreedyPlan best = greedy_portfolio(problem, lower_bound(problem));
  expect_valid(problem, best.offsets);
  EXPECT_TRUE(best.algorithm.starts_with("greedy:size/first-fit+squeaky")) << best.algorithm;
  EXPECT_LT(best.arena_size, greedy_plan(problem, GreedyOrder::Size, Fit::First).arena_size);
  EXPECT_EQ(best.arena_size, arena_size(problem, best.offsets));
}

}  // namespace
}  // namespace memplan::plan
