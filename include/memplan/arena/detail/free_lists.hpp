// The free blocks of the persistent pool, segregated by size class with two levels of bitmaps
// (TLSF): insert, remove and find are O(1). find() takes the lowest-addressed block that fits in
// the request's own class (a short scan; its sizes differ by under 1/16), else the first block of
// the lowest non-empty class that surely fits: never more than one class width larger than the
// best fit. Lowest address rather than tightest fit within a class: the pool fills from its
// bottom, so a block freed low (an output the caller dropped) is reused before room at the top,
// which trim() can then give back.
#pragma once

#include "memplan/arena/detail/block_store.hpp"
#include "memplan/arena/detail/size_class.hpp"

#include <array>
#include <bit>
#include <cstdint>

namespace memplan::arena::detail {

class FreeLists {
 public:
  FreeLists() {
    for (auto& row : heads_) row.fill(kNone);
  }

  void insert(BlockStore& blocks, std::uint32_t b) noexcept {
    Block& blk = blocks[b];
    const SizeClass c = class_of(blk.size >> 8);
    std::uint32_t& head = heads_[c.fl][c.sl];
    blk.prev_free = kNone;
    blk.next_free = head;
    if (head != kNone) blocks[head].prev_free = b;
    head = b;
    sl_map_[c.fl] |= 1u << c.sl;
    fl_map_ |= std::uint64_t{1} << c.fl;
  }

  void remove(BlockStore& blocks, std::uint32_t b) noexcept {
    Block& blk = blocks[b];
    if (blk.next_free != kNone) blocks[blk.next_free].prev_free = blk.prev_free;
    if (blk.prev_free != kNone) {
      blocks[blk.prev_free].next_free = blk.next_free;
    } else {
      const SizeClass c = class_of(blk.size >> 8);
      heads_[c.fl][c.sl] = blk.next_free;
      if (blk.next_free == kNone) {
        sl_map_[c.fl] &= ~(1u << c.sl);
        if (sl_map_[c.fl] == 0) fl_map_ &= ~(std::uint64_t{1} << c.fl);
      }
    }
    blk.prev_free = kLive;
  }

  // A free block of at least `size` bytes (a multiple of 256), or kNone.
  std::uint32_t find(const BlockStore& blocks, std::uint64_t size) const noexcept {
    const std::uint64_t units = size >> 8;
    const SizeClass own = class_of(units);
    if (own.fl < kFlCount && (sl_map_[own.fl] >> own.sl & 1u) != 0) {
      std::uint32_t best = kNone;
      std::uint32_t scanned = 0;
      for (std::uint32_t i = heads_[own.fl][own.sl]; i != kNone && scanned < kScan;
           i = blocks[i].next_free, ++scanned) {
        if (blocks[i].size >= size && (best == kNone || blocks[i].offset < blocks[best].offset))
          best = i;
      }
      if (best != kNone) return best;
    }
    SizeClass c = class_at_least(units);
    if (c.fl >= kFlCount) return kNone;
    std::uint32_t sl_bits = sl_map_[c.fl] & (~0u << c.sl);
    if (sl_bits == 0) {
      const std::uint64_t fl_bits = fl_map_ & (~std::uint64_t{0} << (c.fl + 1));
      if (fl_bits == 0) return kNone;
      c.fl = static_cast<unsigned>(std::countr_zero(fl_bits));
      sl_bits = sl_map_[c.fl];
    }
    return heads_[c.fl][static_cast<unsigned>(std::countr_zero(sl_bits))];
  }

  // The largest free block (scans the highest non-empty class only).
  std::uint64_t largest(const BlockStore& blocks) const noexcept {
    if (fl_map_ == 0) return 0;
    const unsigned fl = 63u - static_cast<unsigned>(std::countl_zero(fl_map_));
    const unsigned sl = 31u - static_cast<unsigned>(std::countl_zero(sl_map_[fl]));
    std::uint64_t best = 0;
    for (std::uint32_t i = heads_[fl][sl]; i != kNone; i = blocks[i].next_free)
      best = blocks[i].size > best ? blocks[i].size : best;
    return best;
  }

 private:
  static constexpr std::uint32_t kScan = 8;  // bound on the exact-fit scan of one list

  std::array<std::array<std::uint32_t, kSlCount>, kFlCount> heads_{};
  std::array<std::uint32_t, kFlCount> sl_map_{};
  std::uint64_t fl_map_ = 0;
};

}  // namespace memplan::arena::detail
