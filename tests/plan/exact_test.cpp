// The exact search: proves infeasibility, finds the optimum where greedy does not, never
// returns a worse plan than its seed, and honours alignment and fixed offsets.
#include "memplan/plan/exact.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <limits>

#include "memplan/error.hpp"
#include "memplan/plan/csv.hpp"
#include "memplan/plan/greedy.hpp"
#include "memplan/plan/lower_bound.hpp"
#include "solver_cases.hpp"

namespace memplan::plan {
namespace {

using testing::buf;
using testing::expect_valid;
using testing::fixed_buf;
using Clock = std::chrono::steady_clock;

Clock::time_point generous() { return Clock::now() + std::chrono::seconds(30); }

TEST(ExactCapacity, ProvesThatThreeBuffersAliveTogetherNeedTheirSum) {
  const Problem problem{{buf(0, 4, 1), buf(1, 5, 1), buf(2, 3, 1)}};
  EXPECT_EQ(solve_at_capacity(problem, 2, generous()).status, Feasibility::Infeasible);
  const CapacityResult fits = solve_at_capacity(problem, 3, generous());
  ASSERT_EQ(fits.status, Feasibility::Found);
  expect_valid(problem, fits.offsets);
  EXPECT_LE(arena_size(problem, fits.offsets), 3);
}

TEST(ExactCapacity, FitsAtTheBoundWhenBuffersTakeTurns) {
  // The middle buffer overlaps both others, which never overlap each other: bound 5.
  const Problem problem{{buf(0, 2, 2), buf(1, 3, 3), buf(2, 4, 2)}};
  const CapacityResult answer = solve_at_capacity(problem, 5, generous());
  ASSERT_EQ(answer.status, Feasibility::Found);
  expect_valid(problem, answer.offsets);
  EXPECT_EQ(solve_at_capacity(problem, 4, generous()).status, Feasibility::Infeasible);
}

TEST(ExactCapacity, NodeLimitGivesUnknownNotAWrongAnswer) {
  const Problem problem = testing::greedy_is_suboptimal();
  const CapacityResult answer = solve_at_capacity(problem, 10, generous(), 1);
  EXPECT_NE(answer.status, Feasibility::Infeasible);
}

TEST(ExactCapacity, MinimallocDAndJFitTheirPublishedCapacity) {
  // Their optimum lies between the bound and 1048576; the search finds a plan at 1048576 in a
  // few thousand nodes (a node limit, not a clock, keeps this deterministic under sanitizers).
  for (const char* name : {"D.1048576.csv", "J.1048576.csv"}) {
    SCOPED_TRACE(name);
    const Problem problem = read_csv_file(std::filesystem::path(MEMPLAN_TEST_DATA_DIR) / "traces" /
                                          "minimalloc" / name);
    const CapacityResult answer = solve_at_capacity(problem, 1048576, generous(), 50000);
    ASSERT_EQ(answer.status, Feasibility::Found);
    expect_valid(problem, answer.offsets);
    EXPECT_LE(arena_size(problem, answer.offsets), 1048576);
  }
}

TEST(Exact, FindsTheOptimumWhereGreedyDoesNot) {
  const Problem problem = testing::greedy_is_suboptimal();
  const Bytes bound = lower_bound(problem);
  const GreedyPlan greedy = greedy_portfolio(problem, bound);
  ASSERT_EQ(greedy.arena_size, 11);
  const ExactResult exact = exact_search(problem, greedy.offsets, bound, generous());
  expect_valid(problem, exact.offsets);
  EXPECT_TRUE(exact.improved);
  EXPECT_EQ(exact.arena_size, 10);
  EXPECT_EQ(exact.proven_bound, 10);
}

TEST(Exact, LifetimesSpanningTheWholeTimeRangeAreRankedWithoutOverflow) {
  // A buffer alive over all of time (its length passes INT64_MAX) sits beside the others
  // throughout: the optimum is its size plus theirs, 4 + 10.
  Problem problem = testing::greedy_is_suboptimal();
  problem.buffers.push_back(
      buf(std::numeric_limits<Time>::min(), std::numeric_limits<Time>::max(), 4));
  const Bytes bound = lower_bound(problem);
  const GreedyPlan greedy = greedy_portfolio(problem, bound);
  const ExactResult exact = exact_search(problem, greedy.offsets, bound, generous());
  expect_valid(problem, exact.offsets);
  EXPECT_EQ(exact.arena_size, 14);
  EXPECT_EQ(exact.proven_bound, 14);
}

TEST(ExactCapacity, ACapacityAboveTheArenaLimitIsAnInvalidArgument) {
  EXPECT_THROW(
      (void)solve_at_capacity(testing::greedy_is_suboptimal(), kMaxArenaBytes + 1, generous()),
      InvalidArgument);
}

TEST(Exact, ProvesItsResultUnderAlignment) {
  // Alignment restricts where the buffers may stack; whatever the search returns, it proves
  // nothing smaller exists.
  const Problem problem{{buf(0, 4, 4), buf(0, 4, 4, 8), buf(2, 6, 4, 8)}};
  const GreedyPlan greedy = greedy_portfolio(problem, lower_bound(problem));
  const ExactResult exact = exact_search(problem, greedy.offsets, lower_bound(problem), generous());
  expect_valid(problem, exact.offsets);
  EXPECT_EQ(exact.arena_size, exact.proven_bound);
  EXPECT_EQ(solve_at_capacity(problem, exact.arena_size - 1, generous()).status,
            Feasibility::Infeasible);
}

TEST(Exact, NeverWorseThanTheSeedAndStopsAtThePastDeadline) {
  const Problem problem = testing::greedy_is_suboptimal();
  const GreedyPlan greedy = greedy_portfolio(problem, lower_bound(problem));
  const ExactResult exact =
      exact_search(problem, greedy.offsets, lower_bound(problem), Clock::now());
  expect_valid(problem, exact.offsets);
  EXPECT_LE(exact.arena_size, greedy.arena_size);
}

TEST(Exact, HonoursFixedOffsetsAndAlignment) {
  // The fixed buffer blocks 8..16 while everything lives; the rest must fit around it.
  const Problem problem{{fixed_buf(0, 10, 8, 8), buf(0, 5, 8, 8), buf(5, 10, 8, 8), buf(2, 7, 4, 4),
                         buf(0, 10, 3), buf(4, 4, 50)}};
  const Bytes bound = lower_bound(problem);
  const GreedyPlan greedy = greedy_portfolio(problem, bound);
  const ExactResult exact = exact_search(problem, greedy.offsets, bound, generous());
  expect_valid(problem, exact.offsets);
  EXPECT_EQ(exact.offsets[0], 8);
  EXPECT_EQ(exact.arena_size, exact.proven_bound);  // small enough to prove
}

TEST(Exact, RandomSmallProblemsAreSolvedAndProven) {
  std::mt19937 random(17);
  for (int round = 0; round < 40; ++round) {
    const Problem problem = testing::random_problem(random, 12, 10);
    const Bytes bound = lower_bound(problem);
    const GreedyPlan greedy = greedy_portfolio(problem, bound);
    const ExactResult exact = exact_search(problem, greedy.offsets, bound, generous());
    SCOPED_TRACE(round);
    expect_valid(problem, exact.offsets);
    EXPECT_LE(exact.arena_size, greedy.arena_size);
    ASSERT_EQ(exact.arena_size, exact.proven_bound);
    if (exact.arena_size > 0) {
      EXPECT_EQ(solve_at_capacity(problem, exact.arena_size - 1, generous()).status,
                Feasibility::Infeasible);
    }
  }
}

TEST(Exact, DecomposesIndependentPhases) {
  // Two copies of the hard case, one after the other in time: solved part by part.
  Problem problem = testing::greedy_is_suboptimal();
  for (Buffer b : testing::greedy_is_suboptimal().buffers) {
    b.lower += 100;
    b.upper += 100;
    problem.buffers.push_back(b);
  }
  const GreedyPlan greedy = greedy_portfolio(problem, lower_bound(problem));
  const ExactResult exact = exact_search(problem, greedy.offsets, lower_bound(problem), generous());
  expect_valid(problem, exact.offsets);
  EXPECT_EQ(exact.arena_size, 10);
}

}  // namespace
}  // namespace memplan::plan
