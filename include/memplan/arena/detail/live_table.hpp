// Live allocations of the persistent pool: offset -> block, an open-addressing hash table with
// linear probing and backward-shift deletion (no tombstones, no per-entry allocation), because
// deallocate() gets only a pointer and the headers cannot live in device memory.
#pragma once

#include "memplan/arena/detail/block_store.hpp"

#include <cstdint>
#include <vector>

namespace memplan::arena::detail {

class LiveTable {
 public:
  LiveTable() { rehash(1024); }

  void insert(std::uint64_t key, std::uint32_t value) {
    if ((size_ + 1) * 4 > slots_.size()) [[unlikely]]
      rehash(slots_.size() * 2);  // load <= 1/4: short probes
    std::size_t i = home(key);
    while (slots_[i].key != kEmpty) i = (i + 1) & mask_;
    slots_[i] = Slot{key, value};
    ++size_;
  }

  std::uint32_t find(std::uint64_t key) const noexcept {
    for (std::size_t i = home(key);; i = (i + 1) & mask_) {
      if (slots_[i].key == key) return slots_[i].value;
      if (slots_[i].key == kEmpty) return kNone;
    }
  }

  // Removes `key` and returns its value, or kNone when absent.
  std::uint32_t take(std::uint64_t key) noexcept {
    std::size_t i = home(key);
    while (slots_[i].key != key) {
      if (slots_[i].key == kEmpty) return kNone;
      i = (i + 1) & mask_;
    }
    const std::uint32_t value = slots_[i].value;
    // Shift later entries of the probe run back into the hole, so lookups never stop early.
    for (std::size_t j = (i + 1) & mask_; slots_[j].key != kEmpty; j = (j + 1) & mask_) {
      const std::size_t h = home(slots_[j].key);
      const bool movable = (j > i) ? (h <= i || h > j) : (h <= i && h > j);
      if (movable) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i].key = kEmpty;
    --size_;
    return value;
  }

  std::size_t size() const noexcept { return size_; }

 private:
  struct Slot {
    std::uint64_t key;
    std::uint32_t value;
  };
  static constexpr std::uint64_t kEmpty = UINT64_MAX;

  std::size_t home(std::uint64_t key) const noexcept {
    return static_cast<std::size_t>(((key >> 8) * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void rehash(std::size_t capacity);  // out of line: rare

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  unsigned shift_ = 64;
  std::size_t size_ = 0;
};

}  // namespace memplan::arena::detail
