// The lower bound: no plan can be smaller than the most bytes alive at one instant, nor than the
// highest byte a fixed-offset buffer reaches. Computed by one sweep over lifetime ends, O(n log n).
// Both functions throw memplan::InvalidArgument, naming the instant and the bytes, when the
// bound passes kMaxArenaBytes (check_problem relies on this); they never wrap.
#pragma once

#include "memplan/plan/problem.hpp"

namespace memplan::plan {

[[nodiscard]] Bytes lower_bound(const Problem& problem);

// Total bytes alive at the busiest instant (the sweep alone, ignoring fixed offsets).
[[nodiscard]] Bytes peak_live_bytes(const Problem& problem);

}  // namespace memplan::plan
