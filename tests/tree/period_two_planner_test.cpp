// The two plans of a branch with a period-two output: each valid with the previous output held
// where the other plan put the output, both at the bound counting the previous output, and the
// tree untouched when the output does not qualify.
#include <gtest/gtest.h>

#include "memplan/error.hpp"
#include "memplan/plan/validator.hpp"
#include "memplan/tree/branch_planner.hpp"
#include "memplan/tree/period_two_planner.hpp"

namespace memplan::tree {
namespace {

constexpr Bytes kMiB = Bytes{1} << 20;

struct Step {
  AllocationTree g;
  NodeId t1, t2, out;
  BranchId branch;
};

// t1 (3 MiB) and t2 (1 MiB), t1 freed, the output (4 MiB, never freed), t2 freed.
Step output_step() {
  Step s;
  s.t1 = s.g.add_alloc(s.g.root(), {3 * kMiB, 256, 0});  // depth 1
  s.t2 = s.g.add_alloc(s.t1, {1 * kMiB, 256, 0});        // depth 2
  const NodeId f1 = s.g.add_free(s.t2, s.t1);            // depth 3
  s.out = s.g.add_alloc(f1, {4 * kMiB, 256, 0});         // depth 4
  const NodeId f2 = s.g.add_free(s.out, s.t2);           // depth 5
  s.branch = s.g.add_end(f2);                            // depth 6
  s.g.node(s.out).persistent = true;                     // a learned site, as the compiler finds it
  return s;
}

// Each plan of `parity` with the previous output held where the other plan put the output.
void expect_valid(const Step& s, std::uint32_t hold_until) {
  const Node& out = s.g.node(s.out);
  for (const std::uint8_t parity : {std::uint8_t{0}, std::uint8_t{1}}) {
    AllocationTree copy = s.g;
    for (NodeId id = 1; id < copy.node_count(); ++id) {
      if (copy.node(id).kind == EventKind::Alloc)
        copy.node(id).offset = copy.node(id).offset_at(parity);
    }
    const FixedRange previous{out.offset_at(static_cast<std::uint8_t>(1 - parity)), out.key.size, 0,
                              hold_until};
    std::vector<NodeId> nodes;
    const plan::Problem problem = branch_problem(copy, s.branch, {&previous, 1}, &nodes);
    plan::Solution solution;
    for (const plan::Buffer& b : problem.buffers) solution.offsets.push_back(*b.fixed_offset);
    solution.arena_size = plan::arena_size(problem, solution.offsets);
    EXPECT_NO_THROW(plan::validate(problem, solution)) << "parity " << int{parity};
    EXPECT_LE(solution.arena_size, s.g.branch(s.branch).arena_bytes);
  }
}

TEST(PeriodTwoPlanner, BothPlansHoldThePreviousOutputAndMeetTheBound) {
  Step s = output_step();
  const PeriodTwoPlan plans =
      plan_period_two(s.g, s.branch, s.out, kToStepEnd, std::chrono::milliseconds(100));
  // Live at once: previous 4 + t1 3 + t2 1 = 8, then previous 4 + t2 1 + output 4 = 9 MiB.
  EXPECT_EQ(plans.even.lower_bound, 9 * kMiB);
  EXPECT_EQ(plans.even.arena_size, 9 * kMiB);
  EXPECT_EQ(plans.odd.arena_size, 9 * kMiB);
  EXPECT_EQ(s.g.branch(s.branch).arena_bytes, 9 * kMiB);
  EXPECT_EQ(s.g.arena_bytes(), 9 * kMiB);
  const Node& out = s.g.node(s.out);
  EXPECT_TRUE(out.period_two);
  EXPECT_FALSE(out.persistent);
  EXPECT_EQ(out.offset_odd, 0);
  // Both outputs are live at a step's end: their ranges never overlap.
  EXPECT_GE(out.offset, out.key.size);
  expect_valid(s, kToStepEnd);
}

// Freed before the next output exists (event 3), the previous output may share its bytes.
TEST(PeriodTwoPlanner, APreviousOutputFreedEarlyLetsTheOutputTakeItsBytes) {
  Step s = output_step();
  const PeriodTwoPlan plans =
      plan_period_two(s.g, s.branch, s.out, 4, std::chrono::milliseconds(100));
  EXPECT_EQ(plans.even.lower_bound, 8 * kMiB);
  EXPECT_EQ(s.g.branch(s.branch).arena_bytes, 8 * kMiB);
  expect_valid(s, 4);
}

TEST(PeriodTwoPlanner, AnOutputFreedInItsStepIsRefusedAndTheTreeKept) {
  AllocationTree g;
  const NodeId a = g.add_alloc(g.root(), {kMiB, 256, 0});
  g.node(a).offset = 0;
  const NodeId f = g.add_free(a, a);
  const BranchId br = g.add_end(f);
  EXPECT_THROW((void)plan_period_two(g, br, a, kToStepEnd, std::chrono::milliseconds(10)),
               InvalidArgument);
  EXPECT_THROW((void)plan_period_two(g, br, f, kToStepEnd, std::chrono::milliseconds(10)),
               InvalidArgument);
  EXPECT_EQ(g.node(a).offset, 0);
  EXPECT_FALSE(g.node(a).period_two);
}

}  // namespace
}  // namespace memplan::tree
