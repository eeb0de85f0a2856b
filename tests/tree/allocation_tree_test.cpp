// The tree: shared prefixes once, oldest sibling first, matching by key and by a fit predicate,
// truncation of an aborted recording.
#include <gtest/gtest.h>

#include "memplan/error.hpp"
#include "memplan/tree/allocation_tree.hpp"

namespace memplan::tree {
namespace {

const auto kAny = [](NodeId) { return true; };

TEST(AllocationTree, StartsWithARootOnly) {
  const AllocationTree g;
  EXPECT_EQ(g.node_count(), 1u);
  EXPECT_EQ(g.branch_count(), 0u);
  EXPECT_EQ(g.find_alloc(g.root(), {64, 256, 0}, kAny), kNoNode);
  EXPECT_EQ(g.find_end(g.root()), kNoNode);
}

TEST(AllocationTree, MatchesAllocationsByKeyFreesByBufferAndEnds) {
  AllocationTree g;
  const NodeId a = g.add_alloc(g.root(), {64, 256, 0});
  const NodeId b = g.add_alloc(a, {128, 256, 7});
  const NodeId f = g.add_free(b, a);
  const BranchId br = g.add_end(f);
  EXPECT_EQ(g.find_alloc(g.root(), {64, 256, 0}, kAny), a);
  EXPECT_EQ(g.find_alloc(g.root(), {64, 512, 0}, kAny), kNoNode);  // alignment differs
  EXPECT_EQ(g.find_alloc(a, {128, 256, 7}, kAny), b);
  EXPECT_EQ(g.find_alloc(a, {128, 256, 8}, kAny), kNoNode);  // tag differs
  EXPECT_EQ(g.find_free(b, a), f);
  EXPECT_EQ(g.find_free(b, b), kNoNode);
  EXPECT_EQ(g.find_end(f), g.branch(br).end);
  EXPECT_EQ(g.node(f).depth, 3u);
  EXPECT_EQ(g.path_to(g.branch(br).end), (std::vector<NodeId>{a, b, f, g.branch(br).end}));
}

TEST(AllocationTree, FitPredicateSkipsToASiblingWithTheSameKey) {
  AllocationTree g;
  const NodeId older = g.add_alloc(g.root(), {64, 256, 0});
  const NodeId newer = g.add_alloc(g.root(), {64, 256, 0});
  EXPECT_EQ(g.find_alloc(g.root(), {64, 256, 0}, kAny), older);  // oldest first
  EXPECT_EQ(g.find_alloc(g.root(), {64, 256, 0}, [&](NodeId c) { return c != older; }), newer);
}

TEST(AllocationTree, TruncateUnlinksTheNewestChildBehindOlderSiblings) {
  AllocationTree g;
  const NodeId a = g.add_alloc(g.root(), {64, 256, 0});
  const NodeId b = g.add_alloc(g.root(), {32, 256, 0});
  g.truncate(b);
  EXPECT_EQ(g.node(g.root()).first_child, a);
  EXPECT_EQ(g.node(a).next_sibling, kNoNode);
  const NodeId c = g.add_alloc(g.root(), {16, 256, 0});
  EXPECT_EQ(g.node(a).next_sibling, c);
}

TEST(AllocationTree, TruncateForgetsAnAbortedRecordingOnly) {
  AllocationTree g;
  const NodeId a = g.add_alloc(g.root(), {64, 256, 0});
  g.add_end(a);
  const auto first = static_cast<NodeId>(g.node_count());
  const NodeId x = g.add_alloc(a, {32, 256, 0});
  g.add_free(x, a);
  g.truncate(first);
  EXPECT_EQ(g.node_count(), static_cast<std::size_t>(first));
  EXPECT_EQ(g.find_alloc(a, {32, 256, 0}, kAny), kNoNode);
  EXPECT_NE(g.find_end(a), kNoNode);  // the older sibling is still linked
  EXPECT_EQ(g.branch_count(), 1u);
}

TEST(AllocationTree, TruncateTakesTheBranchItsRecordingClosed) {
  AllocationTree g;
  const NodeId a = g.add_alloc(g.root(), {64, 256, 0});
  g.add_end(a);
  g.truncate(a);
  EXPECT_EQ(g.node_count(), 1u);
  EXPECT_EQ(g.branch_count(), 0u);
  EXPECT_EQ(g.node(g.root()).first_child, kNoNode);
}

}  // namespace
}  // namespace memplan::tree
