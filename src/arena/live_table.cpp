#include "memplan/arena/detail/live_table.hpp"

#include <bit>

namespace memplan::arena::detail {

void LiveTable::rehash(std::size_t capacity) {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(capacity, Slot{kEmpty, kNone});
  mask_ = capacity - 1;
  shift_ = 64u - static_cast<unsigned>(std::countr_zero(capacity));
  size_ = 0;
  for (const Slot& s : old)
    if (s.key != kEmpty) insert(s.key, s.value);
}

}  // namespace memplan::arena::detail
