// Period-two placement: a step whose output outlives it by less than one step (a model's logits,
// kept by the caller until the next step's output exists) is planned twice. The plan of even
// parity puts the output at A and holds the previous output's range B (from the step's start
// until it is freed: event `hold_until`, or past the end); the plan of odd parity puts it at B
// and holds A. Steps alternate between them, so each output shares bytes with the temporaries of
// the steps around it and the arena needs only the step's lower bound counting the previous
// output. Both plans are of one branch: the even one in Node::offset, the odd one in
// Node::offset_odd.
#pragma once

#include <chrono>
#include <cstdint>

#include "memplan/plan/problem.hpp"
#include "memplan/tree/allocation_tree.hpp"

namespace memplan::tree {

struct PeriodTwoPlan {
  plan::Solution even;    // output at `output_even`, the previous one held at 0
  plan::Solution odd;     // output at 0, the previous one held at `output_even`
  bool mirrored = false;  // the odd plan is the even one upside down (it was smaller)
};

// Replans every Alloc node on the path of `branch` (the tree's only branch: its offsets are not
// shared) with `output`, an Alloc node on it that the path never frees, as a period-two output:
// it becomes planned (persistent and pool_only cleared, period_two set). Other learned sites of
// the path stay in the pool and lose their offsets. On an error (a problem the planner refuses),
// the tree is left as it was. Throws InvalidArgument when `output` does not qualify.
PeriodTwoPlan plan_period_two(AllocationTree& tree, BranchId branch, NodeId output,
                              std::uint32_t hold_until, std::chrono::milliseconds budget);

}  // namespace memplan::tree
