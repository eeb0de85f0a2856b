// The sweep: events in time order, ends before starts at one instant (lifetimes are half-open),
// fixed buffers taken before the free ones that start with them, free ones placed in the start
// order's tie order (larger first, then problem order).
#include "sweep_greedy.hpp"

#include <algorithm>
#include <bit>
#include <tuple>

namespace memplan::plan::detail {

SweepGreedy::SweepGreedy(const Problem& problem, std::span<const std::size_t> occupying,
                         bool backwards) {
  // The orders are sorted as packed keys, not through indices into the buffers: on a million
  // buffers that is the difference between streaming and a cache miss per comparison.
  shape_.reserve(occupying.size());
  std::vector<std::tuple<Time, Bytes, std::size_t, int>> starts;  // (lower, -size, index, v)
  std::vector<std::pair<Time, int>> fixed_starts;                 // (lower, v)
  std::vector<std::pair<Time, int>> ends;                         // (upper, v)
  ends.reserve(occupying.size());
  // The gcd of sizes, alignments and fixed offsets divides the smallest alignment, a power of
  // two, so it is the lowest bit set in any of them (no division per buffer).
  std::uint64_t bits = 0;
  for (std::size_t v = 0; v < occupying.size(); ++v) {
    const Buffer& b = problem.buffers[occupying[v]];
    const auto local = static_cast<int>(v);
    // ~t = -t - 1 reverses the order of instants; [l, u) becomes [~u, ~l), one instant earlier
    // than the exact mirror [-u, -l) throughout.
    const Time lower = backwards ? ~b.upper : b.lower;
    const Time upper = backwards ? ~b.lower : b.upper;
    shape_.push_back({lower, upper, b.size, b.alignment, b.fixed_offset.value_or(-1)});
    bits |= static_cast<std::uint64_t>(b.size | b.alignment);
    if (b.fixed_offset) {
      bits |= static_cast<std::uint64_t>(*b.fixed_offset);
      fixed_starts.emplace_back(lower, local);
    } else {
      starts.emplace_back(lower, -b.size, occupying[v], local);
    }
    ends.emplace_back(upper, local);
  }
  granule_ = bits == 0 ? 1 : Bytes{1} << std::countr_zero(bits);
  std::sort(starts.begin(), starts.end());  // by start, larger first, then problem order
  std::sort(fixed_starts.begin(), fixed_starts.end());
  std::sort(ends.begin(), ends.end());
  for (const auto& start : starts) free_order_.push_back(std::get<3>(start));
  for (const auto& [lower, v] : fixed_starts) fixed_by_lower_.push_back(v);
  for (const auto& [upper, v] : ends) by_upper_.push_back(v);
}

void SweepGreedy::advance_to(Time t, std::span<const std::pair<Bytes, Bytes>> span) {
  for (;;) {
    const bool can_end = next_end_ < by_upper_.size() &&
                         shape_[static_cast<std::size_t>(by_upper_[next_end_])].upper <= t;
    const bool can_start =
        next_fixed_ < fixed_by_lower_.size() &&
        shape_[static_cast<std::size_t>(fixed_by_lower_[next_fixed_])].lower <= t;
    if (!can_end && !can_start) return;
    const auto ending = can_end ? static_cast<std::size_t>(by_upper_[next_end_]) : 0;
    const auto starting = can_start ? static_cast<std::size_t>(fixed_by_lower_[next_fixed_]) : 0;
    if (can_end && (!can_start || shape_[ending].upper <= shape_[starting].lower)) {
      live_.release(span[ending].first);
      ++next_end_;
    } else {
      live_.take(span[starting].first, span[starting].second);
      ++next_fixed_;
    }
  }
}

Bytes SweepGreedy::place(std::size_t v, Fit fit, std::span<const int> late) {
  const Shape& s = shape_[v];
  if (late.empty()) {
    return fit == Fit::First ? live_.first_fit(s.size, s.alignment, 0)
                             : live_.best_fit(s.size, s.alignment);
  }
  late_spans_.clear();
  for (const int f : late) {
    const Shape& o = shape_[static_cast<std::size_t>(f)];
    late_spans_.emplace_back(o.fixed, o.fixed + o.size);
  }
  std::sort(late_spans_.begin(), late_spans_.end());
  if (fit == Fit::Best) {
    GapFit gap(s.size, s.alignment, fit);
    live_.feed(gap, late_spans_);
    return gap.offset();
  }
  // First fit: the lowest offset free of the live spans, then past any late obstacle it hits.
  // Every offset below the furthest end among the obstacles that begin under the buffer's top
  // hits that obstacle, so the search resumes there; each resumption passes one more end.
  late_reach_.clear();
  for (const auto& [begin, end] : late_spans_) {
    late_reach_.push_back(late_reach_.empty() ? end : std::max(late_reach_.back(), end));
  }
  for (Bytes from = 0;;) {
    const Bytes offset = live_.first_fit(s.size, s.alignment, from);
    const auto below_top = std::lower_bound(late_spans_.begin(), late_spans_.end(),
                                            std::pair(offset + s.size, Bytes{0})) -
                           late_spans_.begin();
    if (below_top == 0) return offset;
    const Bytes reach = late_reach_[static_cast<std::size_t>(below_top - 1)];
    if (reach <= offset) return offset;
    from = reach;
  }
}

RunEnd SweepGreedy::run(Fit fit, Bytes give_up_above, Clock::time_point deadline,
                        std::span<std::pair<Bytes, Bytes>> span) {
  live_.reset(granule_);
  next_end_ = 0;
  next_fixed_ = 0;
  stop_ = {};
  for (const int f : fixed_by_lower_) {
    const Shape& s = shape_[static_cast<std::size_t>(f)];
    span[static_cast<std::size_t>(f)] = {s.fixed, s.fixed + s.size};
  }
  const bool timed = deadline != Clock::time_point::max();
  std::size_t placed = 0;
  for (const int v : free_order_) {
    const Shape& s = shape_[static_cast<std::size_t>(v)];
    advance_to(s.lower, span);
    // Fixed buffers not yet taken all start after s.lower: those starting before its end.
    const auto first_late = fixed_by_lower_.begin() + static_cast<std::ptrdiff_t>(next_fixed_);
    const auto end_late = std::partition_point(first_late, fixed_by_lower_.end(), [&](int f) {
      return shape_[static_cast<std::size_t>(f)].lower < s.upper;
    });
    const Bytes offset = place(static_cast<std::size_t>(v), fit, {first_late, end_late});
    const Bytes top = offset + s.size;
    if (top > give_up_above) {
      stop_ = {v, top};
      return RunEnd::GaveUp;
    }
    span[static_cast<std::size_t>(v)] = {offset, top};
    live_.take(offset, top);
    if (timed && (++placed & 15) == 0 && Clock::now() >= deadline) return RunEnd::OutOfTime;
  }
  return RunEnd::Done;
}

}  // namespace memplan::plan::detail
