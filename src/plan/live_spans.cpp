// Live spans: a map of the taken spans gives each span's neighbours, from which a take or a
// release finds the one gap it splits or the two it joins; both gap indexes follow.
#include "live_spans.hpp"

#include <iterator>
#include <limits>
#include <stdexcept>

namespace memplan::plan::detail {

void LiveSpans::reset(Bytes granule) {
  granule_ = granule;
  spans_.clear();
  by_address_.clear();
  by_length_.clear();
}

void LiveSpans::add_gap(Bytes begin, Bytes end) {
  if (end <= begin) return;
  by_address_.insert({begin, end - begin});
  by_length_.emplace(end - begin, begin);
}

void LiveSpans::remove_gap(Bytes begin, Bytes end) {
  if (end <= begin) return;
  by_address_.erase(begin);
  by_length_.erase({end - begin, begin});
}

void LiveSpans::take(Bytes begin, Bytes end) {
  const auto next = spans_.lower_bound(begin);
  const Bytes below = next == spans_.begin() ? 0 : std::prev(next)->second;
  if (below > begin || (next != spans_.end() && next->first < end)) {
    throw std::logic_error("LiveSpans::take: the span overlaps a taken one");
  }
  if (next != spans_.end()) {
    remove_gap(below, next->first);
    add_gap(end, next->first);
  }  // else the space above everything, which no index holds
  add_gap(below, begin);
  spans_.emplace_hint(next, begin, end);
}

void LiveSpans::release(Bytes begin) {
  const auto span = spans_.find(begin);
  if (span == spans_.end()) throw std::logic_error("LiveSpans::release: nothing taken there");
  const Bytes below = span == spans_.begin() ? 0 : std::prev(span)->second;
  const auto next = std::next(span);
  remove_gap(below, begin);
  if (next != spans_.end()) {
    remove_gap(span->second, next->first);
    add_gap(below, next->first);
  }
  spans_.erase(span);
}

Bytes LiveSpans::first_fit(Bytes size, Bytes alignment, Bytes from) const {
  // The gap holding `from` (or starting where the span holding it ends) first: the tree only
  // finds gaps that begin at or above a point.
  auto next = spans_.upper_bound(from);
  if (next != spans_.begin()) from = std::max(from, std::prev(next)->second);
  Bytes start = align_up(from, alignment);
  if (next == spans_.end()) return start;
  if (start + size <= next->first) return start;
  for (Bytes after = next->second;;) {
    const std::optional<Gap> gap = by_address_.lowest(after, size);
    if (!gap) break;
    start = align_up(gap->begin, alignment);
    if (start + size <= gap->end()) return start;
    after = gap->begin + 1;
  }
  return align_up(top(), alignment);
}

Bytes LiveSpans::best_fit(Bytes size, Bytes alignment) const {
  Bytes best = -1;
  Bytes best_slack = std::numeric_limits<Bytes>::max();
  Bytes best_gap = 0;
  for (auto it = by_length_.lower_bound({size, 0}); it != by_length_.end(); ++it) {
    const auto [length, begin] = *it;
    // Gaps come by length, then address: once even the least slack this gap could have after
    // alignment cannot beat the best (or tie it from a lower address), no later gap can.
    const Bytes most_padding = alignment > granule_ ? alignment - granule_ : 0;
    const Bytes least_slack = length - most_padding - size;
    if (best >= 0 &&
        (least_slack > best_slack || (least_slack == best_slack && begin > best_gap))) {
      break;
    }
    const Bytes start = align_up(begin, alignment);
    if (start + size > begin + length) continue;
    const Bytes slack = begin + length - start - size;
    if (slack < best_slack || (slack == best_slack && start < best)) {
      best = start;
      best_slack = slack;
      best_gap = begin;
    }
  }
  return best >= 0 ? best : align_up(top(), alignment);
}

void LiveSpans::feed(GapFit& fit, std::span<const std::pair<Bytes, Bytes>> others) const {
  auto other = others.begin();
  for (const auto& [begin, end] : spans_) {
    for (; other != others.end() && other->first < begin; ++other) {
      if (fit.feed(other->first, other->second)) return;
    }
    if (fit.feed(begin, end)) return;
  }
  for (; other != others.end(); ++other) {
    if (fit.feed(other->first, other->second)) return;
  }
}

}  // namespace memplan::plan::detail
