// Best fit with alignment over two indexes of the same free ranges: by size to find the
// smallest range that can hold the request, by offset to merge neighbours on release.
#include "free_ranges.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <vector>

#include "memplan/error.hpp"

namespace memplan {
FreeRanges::FreeRanges(Bytes capacity) {
  if (capacity > 0) add_free(0, capacity);
}

void FreeRanges::add_free(Bytes offset, Bytes size) {
  by_offset_.emplace(offset, size);
  by_size_.emplace(size, offset);
}

void FreeRanges::remove_free(std::map<Bytes, Bytes>::iterator it) {
  by_size_.erase({it->second, it->first});
  by_offset_.erase(it);
}

// Takes [offset, offset + size) out of the free range [range_offset, range_offset + range_size).
void FreeRanges::take(Bytes range_offset, Bytes range_size, Bytes offset, Bytes size) {
  remove_free(by_offset_.find(range_offset));
  if (offset > range_offset) add_free(range_offset, offset - range_offset);
  const Bytes end = offset + size;
  if (end < range_offset + range_size) add_free(end, range_offset + range_size - end);
  high_water_ = std::max(high_water_, end);
}

void FreeRanges::occupy(Bytes offset, Bytes size) {
  if (size <= 0) return;
  auto it = by_offset_.upper_bound(offset);
  if (it == by_offset_.begin() || std::prev(it)->first + std::prev(it)->second < offset + size) {
    throw InvalidState(fmt::format("free ranges: [{}, {}) is not free", offset, offset + size));
  }
  --it;
  take(it->first, it->second, offset, size);
}

void FreeRanges::occupy_free_parts(Bytes offset, Bytes size) {
  const Bytes end = offset + size;
  std::vector<std::pair<Bytes, Bytes>> parts;
  auto it = by_offset_.upper_bound(offset);
  if (it != by_offset_.begin()) --it;
  for (; it != by_offset_.end() && it->first < end; ++it) {
    const Bytes start = std::max(it->first, offset);
    const Bytes stop = std::min(it->first + it->second, end);
    if (start < stop) parts.emplace_back(start, stop - start);
  }
  for (const auto& [start, bytes] : parts) occupy(start, bytes);
}

std::optional<Bytes> FreeRanges::allocate(Bytes size, Bytes alignment, Bytes origin) {
  const Bytes phase = origin % alignment;  // offsets count from an address `origin` past aligned
  for (auto it = by_size_.lower_bound({size, 0}); it != by_size_.end(); ++it) {
    const auto [range_size, range_offset] = *it;
    const Bytes start = align_up(range_offset + phase, alignment) - phase;
    if (start + size <= range_offset + range_size) {
      take(range_offset, range_size, start, size);
      return start;
    }
  }
  return std::nullopt;
}

void FreeRanges::release(Bytes offset, Bytes size) {
  if (size <= 0) return;
  Bytes start = offset;
  Bytes end = offset + size;
  auto next = by_offset_.lower_bound(offset);
  if (next != by_offset_.end() && next->first < end) {
    throw InvalidState(fmt::format("free ranges: [{}, {}) released twice", offset, end));
  }
  if (next != by_offset_.end() && next->first == end) {
    end += next->second;
    next = std::next(next);
    remove_free(std::prev(next));
  }
  if (next != by_offset_.begin()) {
    const auto prev = std::prev(next);
    if (prev->first + prev->second > start) {
      throw InvalidState(
          fmt::format("free ranges: [{}, {}) released twice", offset, offset + size));
    }
    if (prev->first + prev->second == start) {
      start = prev->first;
      remove_free(prev);
    }
  }
  add_free(start, end - start);
}

}  // namespace memplan
