// Ranges of an arena held by something the current plan does not know about: rogues of earlier
// steps, a buffer freed later than on record. Replay checks a planned range against them only
// while there are any, so the common case costs one comparison.
#pragma once

#include <iterator>
#include <map>

#include "memplan/types.hpp"

namespace memplan {

class OccupiedRanges {
 public:
  [[nodiscard]] bool empty() const noexcept { return ranges_.empty(); }

  // Ranges may not overlap each other: each is live memory.
  void add(Bytes offset, Bytes size) {
    if (size > 0) ranges_.emplace(offset, size);
  }
  void remove(Bytes offset) { ranges_.erase(offset); }

  [[nodiscard]] bool overlaps(Bytes offset, Bytes size) const {
    if (size <= 0 || ranges_.empty()) return false;
    auto it = ranges_.lower_bound(offset);
    if (it != ranges_.end() && it->first < offset + size) return true;
    return it != ranges_.begin() && std::prev(it)->first + std::prev(it)->second > offset;
  }

  template <class F>
  void for_each(F&& f) const {
    for (const auto& [offset, size] : ranges_) f(offset, size);
  }

 private:
  std::map<Bytes, Bytes> ranges_;  // offset -> size
};

}  // namespace memplan
