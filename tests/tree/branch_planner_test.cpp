// A branch becomes a planner problem with the right lifetimes, fixed prefix offsets and
// fixed_ranges; planning writes offsets to the new nodes only.
#include <gtest/gtest.h>

#include "memplan/plan/validator.hpp"
#include "memplan/tree/branch_planner.hpp"

namespace memplan::tree {
namespace {

TEST(BranchPlanner, LifetimesFollowThePath) {
  AllocationTree g;
  const NodeId a = g.add_alloc(g.root(), {100, 1, 0});  // depth 1
  const NodeId b = g.add_alloc(a, {50, 1, 0});          // depth 2
  const NodeId fa = g.add_free(b, a);                   // depth 3
  const NodeId c = g.add_alloc(fa, {100, 1, 0});        // depth 4
  const NodeId fb = g.add_free(c, b);
  const NodeId fc = g.add_free(fb, c);
  const BranchId br = g.add_end(fc);
  std::vector<NodeId> nodes;
  const plan::Problem p = branch_problem(g, br, {}, &nodes);
  ASSERT_EQ(p.buffers.size(), 3u);
  EXPECT_EQ(nodes, (std::vector<NodeId>{a, b, c}));
  EXPECT_EQ(p.buffers[0].lower, 1);
  EXPECT_EQ(p.buffers[0].upper, 3);
  EXPECT_EQ(p.buffers[1].upper, 5);
  EXPECT_EQ(p.buffers[2].lower, 4);

  const plan::Solution s = plan_branch(g, br, {}, std::chrono::milliseconds(100));
  EXPECT_EQ(s.arena_size, 150);  // a and c share bytes: a is freed before c is allocated
  EXPECT_EQ(g.branch(br).arena_bytes, 150);
  EXPECT_EQ(g.arena_bytes(), 150);
  for (const NodeId n : nodes) EXPECT_NE(g.node(n).offset, kUnplanned);
}

TEST(BranchPlanner, SharedPrefixKeepsItsOffsetsAndFixedRangesAreAvoided) {
  AllocationTree g;
  const NodeId a = g.add_alloc(g.root(), {64, 64, 0});
  g.node(a).offset = 128;  // planned by an earlier branch
  const NodeId b = g.add_alloc(a, {64, 64, 0});
  const NodeId persistent = g.add_alloc(b, {1 << 20, 64, 0});
  g.node(persistent).persistent = true;  // served by the pool: not in the plan
  const BranchId br = g.add_end(persistent);
  const std::vector<FixedRange> fixed_ranges{{0, 64}};
  const plan::Problem p = branch_problem(g, br, fixed_ranges);
  ASSERT_EQ(p.buffers.size(), 3u);  // a, b, the fixed range
  EXPECT_EQ(p.buffers[0].fixed_offset, 128);
  EXPECT_EQ(p.buffers[2].fixed_offset, 0);

  const plan::Solution s = plan_branch(g, br, fixed_ranges, std::chrono::milliseconds(100));
  plan::validate(p, s);
  EXPECT_EQ(g.node(a).offset, 128);
  EXPECT_EQ(g.node(b).offset, 64);  // the only aligned gap below the prefix
  EXPECT_EQ(g.node(persistent).offset, kUnplanned);
  EXPECT_EQ(s.arena_size, 192);
}

}  // namespace
}  // namespace memplan::tree
