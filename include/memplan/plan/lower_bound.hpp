// The lower bound: no plan can be smaller than the most bytes alive at one instant, nor than the
// highest byte a fixed-offset buffer reaches. Computed by one sweep over lifetime ends, O(n log n).
// Both functions throw memplan::InvalidArgument, naming the instant and the bytes, when the
// bound passes kMaxArenaBytes (check_problem relies on this); they never wrap.
#pragma once

#include "memplan/plan/problem.hpp"

namespace memplan::plan {

[[nodiscard]] Bytes lower_bound(const Problem& problem);

// The busiest instant: the first instant with the most bytes alive, and those bytes (the sweep
// alone, ignoring fixed offsets); instant 0 and 0 bytes when no buffer occupies memory.
struct Peak {
  Time instant = 0;
  Bytes bytes = 0;
};
[[nodiscard]] Peak find_peak(const Problem& problem);

// Total bytes alive at the busiest instant: find_peak(problem).bytes.
[[nodiscard]] Bytes peak_live_bytes(const Problem& problem);

}  // namespace memplan::plan
