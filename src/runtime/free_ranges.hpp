// Free ranges of an arena's offsets, for the steps that record: after a break the rest of the step
// is served dynamically, best fit, around whatever is still live (the replayed prefix, rogues).
// Recording is the slow path (once per distinct path), so ordered maps are fine here.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <utility>

#include "memplan/types.hpp"

namespace memplan {

class FreeRanges {
 public:
  // Offsets [0, capacity) start free.
  explicit FreeRanges(Bytes capacity);

  // Marks [offset, offset + size) as taken; it must lie in one free range (InvalidState if not).
  void occupy(Bytes offset, Bytes size);
  // Marks the free parts of [offset, offset + size) as taken, whatever else is taken there.
  void occupy_free_parts(Bytes offset, Bytes size);
  // The best-fitting free range that holds `size` bytes at `alignment`; ties go to the lowest
  // offset. nullopt when none does. Offsets count from `origin` (the plans' window, which may
  // start inside a chunk): origin + offset is aligned.
  [[nodiscard]] std::optional<Bytes> allocate(Bytes size, Bytes alignment, Bytes origin = 0);
  // Gives back what occupy() or allocate() took, merging with free neighbours.
  void release(Bytes offset, Bytes size);

  // The highest end of anything taken since construction: how much of the arena was touched.
  [[nodiscard]] Bytes high_water() const noexcept { return high_water_; }

 private:
  void add_free(Bytes offset, Bytes size);
  void remove_free(std::map<Bytes, Bytes>::iterator it);
  void take(Bytes range_offset, Bytes range_size, Bytes offset, Bytes size);

  Bytes high_water_ = 0;
  std::map<Bytes, Bytes> by_offset_;           // offset -> size of each free range
  std::set<std::pair<Bytes, Bytes>> by_size_;  // (size, offset) of each free range
};

}  // namespace memplan
