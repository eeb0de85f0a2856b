// Lower bound by a sweep: sort the lifetime ends, walk them in time order adding sizes at a start
// and subtracting at an end. Ends sort before starts at the same instant because lifetimes are
// half-open: a buffer that dies at t and one born at t are never alive together.
#include "memplan/plan/lower_bound.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace memplan::plan {

Bytes peak_live_bytes(const Problem& problem) {
  std::vector<std::pair<Time, Bytes>> deltas;  // (instant, +size at a start / -size at an end)
  deltas.reserve(2 * problem.buffers.size());
  for (const Buffer& b : problem.buffers) {
    if (!b.occupies()) continue;
    deltas.emplace_back(b.lower, b.size);
    deltas.emplace_back(b.upper, -b.size);
  }
  std::sort(deltas.begin(), deltas.end());  // negative deltas first at equal instants
  Bytes live = 0;
  Bytes peak = 0;
  for (const auto& [when, delta] : deltas) {
    live += delta;
    peak = std::max(peak, live);
  }
  return peak;
}

Bytes lower_bound(const Problem& problem) {
  Bytes bound = peak_live_bytes(problem);
  for (const Buffer& b : problem.buffers) {
    if (b.occupies() && b.fixed_offset) bound = std::max(bound, *b.fixed_offset + b.size);
  }
  return bound;
}

}  // namespace memplan::plan
