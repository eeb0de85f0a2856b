// Planning a branch: the path from the root to an End node becomes a planner problem (time is an
// event's depth on the path; a buffer lives from its Alloc to its Free, or to the end), the Alloc
// nodes that already have offsets (a prefix shared with other branches) are fixed, and ranges
// still held by rogues are fixed_ranges from when they were taken to the end of the step. The
// planner's offsets are written back to the branch's new nodes.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>
#include <span>

#include "memplan/plan/problem.hpp"
#include "memplan/tree/allocation_tree.hpp"

namespace memplan::tree {

inline constexpr std::uint32_t kToStepEnd = std::numeric_limits<std::uint32_t>::max();

// A range held from event `since` on (0: from the step's start) until event `until` (exclusive:
// an allocation at depth `until` may take it; kToStepEnd: past the step's end).
struct FixedRange {
  Bytes offset = 0;
  Bytes size = 0;
  std::uint32_t since = 0;
  std::uint32_t until = kToStepEnd;
};

// The planner problem of `branch`: one buffer per Alloc node on its path that is not persistent or
// may be forgotten (has an offset, never kept in the pool past its Free node), in path order, then
// one per fixed range. `nodes` receives the Alloc node of each buffer (fixed_ranges have
// none).
// `freed_late` are buffers whose Free nodes before `first_new` (the branch's first node of its
// own) the recording step passed while they were still live: they live on until a later Free
// node, or to the end.
struct FreedLate {
  std::span<const NodeId> buffers;
  NodeId first_new = kNoNode;
};
[[nodiscard]] plan::Problem branch_problem(const AllocationTree& tree, BranchId branch,
                                           std::span<const FixedRange> fixed_ranges,
                                           std::vector<NodeId>* nodes = nullptr,
                                           FreedLate freed_late = {});

// Plans `branch` and stores its offsets and summary in the tree. Returns the planner's solution.
plan::Solution plan_branch(AllocationTree& tree, BranchId branch,
                           std::span<const FixedRange> fixed_ranges,
                           std::chrono::milliseconds budget, FreedLate freed_late = {});

}  // namespace memplan::tree
