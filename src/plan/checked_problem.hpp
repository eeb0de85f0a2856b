// check_problem and the lower bound in one pass: both need the sweep over lifetime ends, and on
// a million buffers the second sweep would cost a tenth of a second. plan() uses this. And the
// per-buffer part alone, for the stages callers may run on their own.
#pragma once

#include "memplan/plan/problem.hpp"

namespace memplan::plan::detail {

// Throws as check_problem does; returns lower_bound(problem).
[[nodiscard]] Bytes checked_lower_bound(const Problem& problem);

// check_problem's checks of each buffer alone, O(n): what a stage needs so that its own sums
// cannot wrap (the greedy caps every top at kMaxArenaBytes itself).
void check_buffers(const Problem& problem);

}  // namespace memplan::plan::detail
