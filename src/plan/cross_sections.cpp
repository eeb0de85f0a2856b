// Sections by a sweep over lifetime ends: a section closes at the first death after a birth.
// Ends sort before starts at one instant because lifetimes are half-open.
#include "cross_sections.hpp"

#include <algorithm>
#include <bit>
#include <cassert>
#include <tuple>

#include "checked.hpp"

namespace memplan::plan::detail {

CrossSections cross_sections(std::span<const Lifetime> lifetimes) {
  const std::size_t n = lifetimes.size();
  // (instant, 0 for an end / 1 for a start, buffer)
  std::vector<std::tuple<Time, int, int>> events;
  events.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    events.emplace_back(lifetimes[i].lower, 1, static_cast<int>(i));
    events.emplace_back(lifetimes[i].upper, 0, static_cast<int>(i));
  }
  std::sort(events.begin(), events.end());
  CrossSections sections;
  sections.first.assign(n, 0);
  sections.last.assign(n, 0);
  bool grew = false;  // a buffer was born since the last section closed
  for (const auto& [when, is_start, buffer] : events) {
    const auto b = static_cast<std::size_t>(buffer);
    if (is_start) {
      sections.first[b] = sections.count;
      grew = true;
    } else {
      if (grew) {
        ++sections.count;
        grew = false;
      }
      sections.last[b] = sections.count;
    }
  }
  return sections;
}

std::vector<Bytes> CrossSections::totals(std::span<const Bytes> weights) const {
  // Exact for a problem check_problem accepts (no section passes kMaxArenaBytes); past that the
  // sums saturate instead of wrapping, which only the greedy's ordering keys ever see.
  std::vector<Bytes> delta(static_cast<std::size_t>(count) + 1, 0);
  for (std::size_t i = 0; i < first.size(); ++i) {
    Bytes& at_first = delta[static_cast<std::size_t>(first[i])];
    Bytes& at_last = delta[static_cast<std::size_t>(last[i])];
    at_first = saturating_add(at_first, weights[i]);
    at_last = saturating_add(at_last, -weights[i]);
  }
  std::vector<Bytes> sums(static_cast<std::size_t>(count), 0);
  Bytes running = 0;
  for (std::size_t s = 0; s < sums.size(); ++s) {
    sums[s] = running = saturating_add(running, delta[s]);
  }
  return sums;
}

std::vector<int> CrossSections::crossings() const {
  if (count == 0) return {};
  std::vector<int> delta(static_cast<std::size_t>(count), 0);
  for (std::size_t i = 0; i < first.size(); ++i) {
    // crosses the boundaries first .. last-2 (between s and s+1)
    if (last[i] - first[i] < 2) continue;
    ++delta[static_cast<std::size_t>(first[i])];
    --delta[static_cast<std::size_t>(last[i] - 1)];
  }
  std::vector<int> cuts(static_cast<std::size_t>(count - 1), 0);
  int running = 0;
  for (std::size_t s = 0; s < cuts.size(); ++s) cuts[s] = running += delta[s];
  return cuts;
}

RangeMax::RangeMax(std::vector<Bytes> values) {
  levels_.push_back(std::move(values));
  for (std::size_t width = 2; width <= levels_[0].size(); width *= 2) {
    const std::vector<Bytes>& below = levels_.back();
    std::vector<Bytes> level(levels_[0].size() - width + 1);
    for (std::size_t i = 0; i < level.size(); ++i) {
      level[i] = std::max(below[i], below[i + width / 2]);
    }
    levels_.push_back(std::move(level));
  }
}

Bytes RangeMax::max(int first, int last) const {
  assert(first < last);
  const auto width = static_cast<unsigned>(last - first);
  const auto k = static_cast<std::size_t>(std::bit_width(width) - 1);
  const auto lo = static_cast<std::size_t>(first);
  const auto hi = static_cast<std::size_t>(last) - (std::size_t{1} << k);
  return std::max(levels_[k][lo], levels_[k][hi]);
}

}  // namespace memplan::plan::detail
