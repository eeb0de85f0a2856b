// plan(): the front door. Hand-made problems with known optima, bad input, and the fields of
// the solution; every result goes through the validator.
#include "memplan/plan/planner.hpp"

#include <gtest/gtest.h>

#include "memplan/error.hpp"
#include "solver_cases.hpp"

namespace memplan::plan {
namespace {

using testing::buf;
using testing::expect_valid;
using testing::fixed_buf;

TEST(Planner, EmptyProblem) {
  const Solution solution = plan(Problem{});
  expect_valid(Problem{}, solution);
  EXPECT_EQ(solution.arena_size, 0);
  EXPECT_EQ(solution.lower_bound, 0);
  EXPECT_TRUE(solution.proven_optimal);
  EXPECT_FALSE(solution.algorithm.empty());
}

TEST(Planner, RejectsAnInvalidProblem) {
  const Problem negative{{buf(0, 4, -1)}};
  EXPECT_THROW((void)plan(negative), InvalidArgument);
  const Problem backwards{{buf(4, 0, 8)}};
  EXPECT_THROW((void)plan(backwards), InvalidArgument);
  const Problem odd_alignment{{buf(0, 4, 8, 3)}};
  EXPECT_THROW((void)plan(odd_alignment), InvalidArgument);
}

TEST(Planner, NestedLifetimes) {
  const Problem problem = testing::nested_lifetimes();
  const Solution solution = plan(problem);
  expect_valid(problem, solution);
  EXPECT_EQ(solution.arena_size, 6);
  EXPECT_TRUE(solution.proven_optimal);
}

TEST(Planner, OneHugeBuffer) {
  const Bytes huge = Bytes{1} << 48;
  const Problem problem{{buf(0, 10, huge), buf(2, 3, 64), buf(4, 5, 64)}};
  const Solution solution = plan(problem);
  expect_valid(problem, solution);
  EXPECT_EQ(solution.arena_size, huge + 64);
  EXPECT_TRUE(solution.proven_optimal);
}

TEST(Planner, ZeroLengthAndZeroSizeBuffers) {
  const Problem problem{{buf(5, 5, 1000), buf(0, 9, 0), buf(0, 9, 16), fixed_buf(1, 1, 8, 32)}};
  const Solution solution = plan(problem);
  expect_valid(problem, solution);
  EXPECT_EQ(solution.offsets[0], 0);
  EXPECT_EQ(solution.offsets[1], 0);
  EXPECT_EQ(solution.offsets[3], 32);
  EXPECT_EQ(solution.arena_size, 16);
}

TEST(Planner, AlignmentCostsPaddingOnlyWhenItMust) {
  // 3 bytes, then 64-aligned 64 bytes alive together: the best is the aligned one at 0.
  const Problem problem{{buf(0, 4, 3), buf(0, 4, 64, 64)}};
  const Solution solution = plan(problem);
  expect_valid(problem, solution);
  EXPECT_EQ(solution.arena_size, 67);
  EXPECT_EQ(solution.offsets[1], 0);
}

TEST(Planner, FixedOffsetsAreKept) {
  const Problem problem{{fixed_buf(0, 10, 16, 16), buf(0, 10, 16), buf(3, 6, 16)}};
  const Solution solution = plan(problem);
  expect_valid(problem, solution);
  EXPECT_EQ(solution.offsets[0], 16);
  EXPECT_EQ(solution.arena_size, 48);
  EXPECT_TRUE(solution.proven_optimal);
}

TEST(Planner, ExactSearchBeatsGreedy) {
  const Problem problem = testing::greedy_is_suboptimal();
  const Solution solution = plan(problem);
  expect_valid(problem, solution);
  EXPECT_EQ(solution.arena_size, 10);
  EXPECT_EQ(solution.algorithm, "exact");
  EXPECT_TRUE(solution.proven_optimal);
}

TEST(Planner, GreedyOnlyWhenAsked) {
  const Problem problem = testing::greedy_is_suboptimal();
  const Solution solution = plan(problem, {.exact = false});
  expect_valid(problem, solution);
  EXPECT_EQ(solution.arena_size, 11);
  EXPECT_TRUE(solution.algorithm.starts_with("greedy:"));
  EXPECT_FALSE(solution.proven_optimal);
}

TEST(Planner, StopsAtAPlanWithinTheRatioWithoutClaimingOptimality) {
  // Greedy ends at 11, the optimum is the bound, 10: within 20% the greedy plan is kept.
  const Problem problem = testing::greedy_is_suboptimal();
  const Solution near = plan(problem, {.stop_within_ratio = 0.2});
  expect_valid(problem, near);
  EXPECT_EQ(near.arena_size, 11);
  EXPECT_TRUE(near.algorithm.starts_with("greedy:"));
  EXPECT_FALSE(near.proven_optimal);
  const Solution exact = plan(problem, {.stop_within_ratio = 0});
  EXPECT_EQ(exact.arena_size, 10);
  EXPECT_TRUE(exact.proven_optimal);
}

TEST(Planner, ZeroBudgetStillGivesAValidPlan) {
  const Problem problem = testing::greedy_is_suboptimal();
  const Solution solution = plan(problem, {.budget = std::chrono::milliseconds(0)});
  expect_valid(problem, solution);
  EXPECT_GE(solution.arena_size, solution.lower_bound);
}

TEST(Planner, RandomProblemsAreValidAndNoWorseThanGreedy) {
  std::mt19937 random(29);
  for (int round = 0; round < 20; ++round) {
    const Problem problem = testing::random_problem(random, 40, 25);
    const Solution greedy = plan(problem, {.exact = false});
    const Solution best = plan(problem, {.budget = std::chrono::milliseconds(50)});
    expect_valid(problem, greedy);
    expect_valid(problem, best);
    EXPECT_LE(best.arena_size, greedy.arena_size);
    EXPECT_GE(best.arena_size, best.lower_bound);
  }
}

}  // namespace
}  // namespace memplan::plan
