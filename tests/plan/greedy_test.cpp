// The greedy portfolio: every order and fit gives a valid plan, honours alignment and fixed
// offsets, and the portfolio keeps the best and stops at the bound.
#include "memplan/plan/greedy.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "memplan/error.hpp"
#include "memplan/plan/lower_bound.hpp"
#include "solver_cases.hpp"
#include "trace_generators.hpp"

namespace memplan::plan {
namespace {

using testing::buf;
using testing::expect_valid;
using testing::fixed_buf;

constexpr GreedyOrder kAllOrders[] = {
    GreedyOrder::Size,     GreedyOrder::Length, GreedyOrder::Area, GreedyOrder::Conflicts,
    GreedyOrder::Pressure, GreedyOrder::Start,  GreedyOrder::End};

TEST(Greedy, EmptyProblemHasEmptyPlan) {
  const GreedyPlan plan = greedy_portfolio(Problem{}, 0);
  EXPECT_TRUE(plan.offsets.empty());
  EXPECT_EQ(plan.arena_size, 0);
}

TEST(Greedy, EveryOrderAndFitIsValidOnRandomProblems) {
  std::mt19937 random(11);
  for (int round = 0; round < 20; ++round) {
    const Problem problem = testing::random_problem(random, 60, 40);
    const Bytes bound = lower_bound(problem);
    for (const GreedyOrder order : kAllOrders) {
      for (const Fit fit : {Fit::Best, Fit::First}) {
        const GreedyPlan plan = greedy_plan(problem, order, fit);
        SCOPED_TRACE(plan.algorithm);
        ASSERT_EQ(plan.offsets.size(), problem.buffers.size());
        expect_valid(problem, plan.offsets);
        EXPECT_EQ(plan.arena_size, arena_size(problem, plan.offsets));
        EXPECT_GE(plan.arena_size, bound);
      }
    }
  }
}

TEST(Greedy, OverlapsScanAndTimeTreeIndexesGiveIdenticalPlans) {
  std::mt19937 random(23);
  for (int round = 0; round < 10; ++round) {
    Problem problem = testing::random_problem(random, 80, 30);
    problem.buffers.push_back(fixed_buf(3, 20, 24, 64));  // an obstacle all must respect
    for (const GreedyOrder order : kAllOrders) {
      for (const Fit fit : {Fit::Best, Fit::First}) {
        const GreedyPlan overlaps = greedy_plan(problem, order, fit, GreedyIndex::Overlaps);
        const GreedyPlan scan = greedy_plan(problem, order, fit, GreedyIndex::Scan);
        const GreedyPlan tree = greedy_plan(problem, order, fit, GreedyIndex::TimeTree);
        SCOPED_TRACE(overlaps.algorithm);
        expect_valid(problem, scan.offsets);
        EXPECT_EQ(overlaps.offsets, scan.offsets);
        EXPECT_EQ(tree.offsets, scan.offsets);
      }
    }
  }
}

TEST(Greedy, TheTimeTreeGivesTheScansPlansOnGeneratedTraces) {
  // Long-lived weights over thousands of short activations, and a compute graph's nested
  // lifetimes: the unions of the tree's nodes merge many buffers into one range there.
  for (const auto family : {traces::TraceFamily::Training, traces::TraceFamily::Graph}) {
    const Problem problem = traces::generate(family, 1500, 7);
    for (const GreedyOrder order : {GreedyOrder::Size, GreedyOrder::Pressure}) {
      for (const Fit fit : {Fit::Best, Fit::First}) {
        const GreedyPlan scan = greedy_plan(problem, order, fit, GreedyIndex::Scan);
        const GreedyPlan tree = greedy_plan(problem, order, fit, GreedyIndex::TimeTree);
        SCOPED_TRACE(fmt::format("{}: {}", traces::to_string(family), scan.algorithm));
        EXPECT_EQ(tree.offsets, scan.offsets);
      }
    }
  }
}

TEST(Greedy, TheSweepsGiveTheStartAndEndOrdersPlansOfTheOtherIndexes) {
  // Fixed buffers that start inside free buffers' lifetimes ("late obstacles") and mixed
  // alignments exercise every path of the sweep: live gaps, the top, and obstacles it must skip.
  std::mt19937 random(41);
  for (int round = 0; round < 200; ++round) {
    Problem problem = testing::random_problem(random, 10 + round, 20 + round / 4);
    for (Buffer& b : problem.buffers) b.size += static_cast<Bytes>(random() % 4);  // misalign
    for (int f = 0; f < round % 5; ++f) {
      const Time lower = static_cast<Time>(random() % 30);
      problem.buffers.push_back(fixed_buf(lower, lower + 1 + static_cast<Time>(random() % 8),
                                          8 + static_cast<Bytes>(random() % 3) * 8,
                                          static_cast<Bytes>(random() % 12) * 16));
    }
    if (!find_fixed_offset_conflicts(problem, 1).empty()) continue;
    for (const GreedyOrder order : {GreedyOrder::Start, GreedyOrder::End}) {
      for (const Fit fit : {Fit::Best, Fit::First}) {
        const GreedyPlan sweep = greedy_plan(problem, order, fit, GreedyIndex::Sweep);
        const GreedyPlan scan = greedy_plan(problem, order, fit, GreedyIndex::Scan);
        SCOPED_TRACE(fmt::format("round {}: {}", round, sweep.algorithm));
        expect_valid(problem, sweep.offsets);
        EXPECT_EQ(sweep.offsets, scan.offsets);
        EXPECT_EQ(sweep.arena_size, scan.arena_size);
      }
    }
  }
}

TEST(Greedy, TheSweepServesTheStartAndEndOrdersOnly) {
  const Problem problem{{buf(0, 4, 8)}};
  EXPECT_THROW((void)greedy_plan(problem, GreedyOrder::Size, Fit::Best, GreedyIndex::Sweep),
               InvalidArgument);
}

TEST(Greedy, NestedLifetimesReachTheBound) {
  const Problem problem = testing::nested_lifetimes();
  const GreedyPlan plan = greedy_portfolio(problem, lower_bound(problem));
  expect_valid(problem, plan.offsets);
  EXPECT_EQ(plan.arena_size, 6);
}

TEST(Greedy, HonoursAlignment) {
  const Problem problem{{buf(0, 4, 3), buf(0, 4, 5, 64), buf(2, 6, 7, 32)}};
  const GreedyPlan plan = greedy_plan(problem, GreedyOrder::Size, Fit::Best);
  expect_valid(problem, plan.offsets);
  EXPECT_EQ(plan.offsets[1] % 64, 0);
  EXPECT_EQ(plan.offsets[2] % 32, 0);
}

TEST(Greedy, FixedOffsetsAreObstacles) {
  // The fixed buffer sits at 10..20; the free ones must go around it, below where they fit.
  const Problem problem{{fixed_buf(0, 10, 10, 10), buf(0, 10, 10), buf(5, 15, 5), buf(0, 3, 20)}};
  for (const Fit fit : {Fit::Best, Fit::First}) {
    const GreedyPlan plan = greedy_plan(problem, GreedyOrder::Size, fit);
    expect_valid(problem, plan.offsets);
    EXPECT_EQ(plan.offsets[0], 10);
    EXPECT_EQ(plan.offsets[1], 0);  // the only gap below the obstacle that holds it
  }
}

TEST(Greedy, BuffersThatOccupyNothingGoToTheirFixedOffsetOrZero) {
  Problem problem{{buf(3, 3, 100), buf(0, 5, 0), buf(0, 5, 8), fixed_buf(2, 2, 16, 64)}};
  const GreedyPlan plan = greedy_portfolio(problem, lower_bound(problem));
  expect_valid(problem, plan.offsets);
  EXPECT_EQ(plan.offsets[0], 0);
  EXPECT_EQ(plan.offsets[1], 0);
  EXPECT_EQ(plan.offsets[3], 64);
  EXPECT_EQ(plan.arena_size, 8);
}

TEST(Greedy, FirstFitTakesTheLowestGapAndBestFitTheTightest) {
  // Obstacles leave a 20-byte gap at 10 and a 5-byte gap at 40; the top starts at 55.
  const Problem problem{
      {fixed_buf(0, 10, 10, 0), fixed_buf(0, 10, 10, 30), fixed_buf(0, 10, 10, 45), buf(0, 10, 5)}};
  const GreedyPlan first = greedy_plan(problem, GreedyOrder::Size, Fit::First);
  const GreedyPlan best = greedy_plan(problem, GreedyOrder::Size, Fit::Best);
  expect_valid(problem, first.offsets);
  expect_valid(problem, best.offsets);
  EXPECT_EQ(first.offsets[3], 10);
  EXPECT_EQ(best.offsets[3], 40);
}

TEST(Greedy, PortfolioKeepsTheBestStrategy) {
  std::mt19937 random(5);
  const Problem problem = testing::random_problem(random, 80, 30);
  const Bytes bound = lower_bound(problem);
  const GreedyPlan best = greedy_portfolio(problem, bound);
  expect_valid(problem, best.offsets);
  for (const GreedyOrder order : kAllOrders) {
    for (const Fit fit : {Fit::Best, Fit::First}) {
      if (best.arena_size > bound) {
        EXPECT_LE(best.arena_size, greedy_plan(problem, order, fit).arena_size);
      }
    }
  }
}

TEST(Greedy, StopsAtTheBoundWithTheFirstStrategyThatMeetsIt) {
  const Problem problem{{buf(0, 4, 8), buf(4, 8, 8)}};
  const GreedyPlan plan = greedy_portfolio(problem, 8);
  EXPECT_EQ(plan.arena_size, 8);
  EXPECT_EQ(plan.algorithm, "greedy:size/best-fit");
}

TEST(Greedy, OneHugeBuffer) {
  const Bytes huge = Bytes{1} << 50;
  const Problem problem{{buf(0, 1, huge), buf(0, 1, 1)}};
  const GreedyPlan plan = greedy_portfolio(problem, huge + 1);
  expect_valid(problem, plan.offsets);
  EXPECT_EQ(plan.arena_size, huge + 1);
}

TEST(Greedy, LifetimesSpanningTheWholeTimeRangeAreOrderedWithoutOverflow) {
  // upper - lower passes INT64_MAX here: the longest lifetime and the earliest start still go
  // first, at offset 0.
  const Time min = std::numeric_limits<Time>::min();
  const Time max = std::numeric_limits<Time>::max();
  const Problem problem{{buf(min, max, 8), buf(0, 10, 16)}};
  for (const GreedyOrder order :
       {GreedyOrder::Length, GreedyOrder::Start, GreedyOrder::Area, GreedyOrder::End}) {
    const GreedyPlan plan = greedy_plan(problem, order, Fit::Best);
    SCOPED_TRACE(plan.algorithm);
    expect_valid(problem, plan.offsets);
    EXPECT_EQ(plan.offsets[0], 0);
    EXPECT_EQ(plan.offsets[1], 8);
  }
  const GreedyPlan tree = greedy_plan(problem, GreedyOrder::Size, Fit::Best, GreedyIndex::TimeTree);
  EXPECT_EQ(tree.offsets, greedy_plan(problem, GreedyOrder::Size, Fit::Best).offsets);
}

TEST(Greedy, AlignmentPaddingPastTheArenaLimitIsANamedError) {
  // 2,049 one-byte buffers aligned to 2^52 and alive together need 2^63 + 1 B: no plan fits.
  Problem problem;
  problem.buffers.assign(2049, buf(0, 1, 1, Bytes{1} << 52));
  try {
    (void)greedy_portfolio(problem, lower_bound(problem));
    ADD_FAILURE() << "no error";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("4611686018427387904"), std::string::npos) << e.what();
  }
  // 1,024 of them fit exactly below the limit, 2^62.
  problem.buffers.resize(1024);
  const GreedyPlan plan = greedy_portfolio(problem, lower_bound(problem));
  expect_valid(problem, plan.offsets);
  EXPECT_EQ(plan.arena_size, 1023 * (Bytes{1} << 52) + 1);
}

TEST(Greedy, BuffersAliveTogetherPastTheArenaLimitAreANamedError) {
  // Called without plan() (which rejects this first): no wrapped key, no wrapped plan.
  Problem problem;
  problem.buffers.assign(2049, buf(0, 1, Bytes{1} << 52));
  EXPECT_THROW((void)greedy_portfolio(problem, 0), InvalidArgument);
}

TEST(Greedy, ChecksEachBufferItself) {
  // Called without plan(), a size past the limits used to wrap the greedy's sums.
  const Problem problem{{buf(0, 4, Bytes{1} << 62), buf(0, 4, Bytes{1} << 62)}};
  EXPECT_THROW((void)greedy_plan(problem, GreedyOrder::Size, Fit::Best), InvalidArgument);
  EXPECT_THROW((void)greedy_portfolio(problem, 0), InvalidArgument);
}

TEST(Greedy, PlansManyBuffers) {
  std::mt19937 random(3);
  const Problem problem = testing::random_problem(random, 20000, 40000);
  const GreedyPlan plan = greedy_portfolio(problem, lower_bound(problem));
  expect_valid(problem, plan.offsets);
}

}  // namespace
}  // namespace memplan::plan
