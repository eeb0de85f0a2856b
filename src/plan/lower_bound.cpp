// Lower bound by a sweep: sort the lifetime ends, walk them in time order adding sizes at a start
// and subtracting at an end. Ends sort before starts at the same instant because lifetimes are
// half-open: a buffer that dies at t and one born at t are never alive together. The running
// total is checked against kMaxArenaBytes at every start, so it never wraps, however many
// buffers are alive at once.
#include "memplan/plan/lower_bound.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "checked.hpp"
#include "memplan/error.hpp"

namespace memplan::plan {
namespace {

[[noreturn]] void too_many_bytes(Time when, std::int64_t alive, std::optional<Bytes> total) {
  throw InvalidArgument(fmt::format(
      "more bytes are alive at instant {} than the largest arena supported, {} B: the first {} "
      "buffers alive there already total {} B",
      when, kMaxArenaBytes, alive,
      total ? fmt::to_string(*total)
            : fmt::format("more than {}", std::numeric_limits<Bytes>::max())));
}

}  // namespace

Peak find_peak(const Problem& problem) {
  // (instant, +size at a start / -size at an end)
  std::vector<std::pair<Time, Bytes>> deltas;
  deltas.reserve(2 * problem.buffers.size());
  for (const Buffer& b : problem.buffers) {
    if (!b.occupies()) continue;
    deltas.emplace_back(b.lower, b.size);
    deltas.emplace_back(b.upper, -b.size);
  }
  std::sort(deltas.begin(), deltas.end());  // negative deltas first at equal instants
  Bytes live = 0;
  Peak peak;
  std::int64_t alive = 0;
  for (const auto& [when, delta] : deltas) {
    alive += delta > 0 ? 1 : -1;
    // live <= kMaxArenaBytes before the add, so only a size past the limits can wrap it.
    const std::optional<Bytes> next = detail::checked_add(live, delta);
    if (!next || *next > kMaxArenaBytes) too_many_bytes(when, alive, next);
    live = *next;
    if (live > peak.bytes) peak = {when, live};
  }
  return peak;
}

Bytes peak_live_bytes(const Problem& problem) { return find_peak(problem).bytes; }

Bytes lower_bound(const Problem& problem) {
  Bytes bound = peak_live_bytes(problem);
  for (const Buffer& b : problem.buffers) {
    if (!b.occupies() || !b.fixed_offset) continue;
    const std::optional<Bytes> top = detail::checked_add(*b.fixed_offset, b.size);
    if (!top || *top > kMaxArenaBytes) {
      throw InvalidArgument(fmt::format(
          "buffer '{}' at fixed offset {} with size {} ends past the largest arena supported, {} B",
          b.id, *b.fixed_offset, b.size, kMaxArenaBytes));
    }
    bound = std::max(bound, *top);
  }
  return bound;
}

}  // namespace memplan::plan
