// The rogues (allocations of finished steps still live) and the window they push the plans into.
// A rogue keeps its bytes where they are; planned offset 0 is at base + window (a whole number of
// chunks), and the window moves to addresses clear of every live rogue (clear_window), so plans
// never work around one. When no window fits, the rogues stay in it and replay checks each planned
// range against them (clear()). Offsets of rogues are from the arena's base: windows move.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "memplan/types.hpp"
#include "occupied_ranges.hpp"

namespace memplan {

// An allocation of a finished step that is still live.
struct Rogue {
  Bytes offset = 0;  // in the planned arena, from its base (not from the window)
  Bytes size = 0;
  std::uint64_t tag = 0;
  std::uint64_t step = 0;
  std::uint32_t since = 0;  // the event (node depth) that allocated it in that step
  std::string step_name;
};

class RogueSet {
 public:
  [[nodiscard]] Bytes window() const noexcept { return window_; }
  // The window could not move clear of them: replay checks each planned range (clear()).
  [[nodiscard]] bool in_window() const noexcept { return in_window_; }
  void set_window(Bytes window, bool rogues_inside) noexcept {
    window_ = window;
    in_window_ = rogues_inside;
  }
  // Whether the planned range [offset, offset + size) of the window holds no rogue's byte.
  [[nodiscard]] bool clear(Bytes offset, Bytes size) const {
    return !in_window_ || !occupied_.overlaps(window_ + offset, size);
  }

  void add(void* p, Rogue rogue);
  // The rogue at `p`, no longer live; nullopt when `p` is none.
  std::optional<Rogue> take(void* p);
  [[nodiscard]] bool contains(void* p) const { return rogues_.contains(p); }
  [[nodiscard]] bool empty() const noexcept { return rogues_.empty(); }
  [[nodiscard]] const std::unordered_map<void*, Rogue>& all() const noexcept { return rogues_; }
  // f(offset, size) for each rogue, by ascending offset.
  template <class F>
  void for_each_range(F&& f) const {
    occupied_.for_each(f);
  }

  // The lowest start, a whole number of `chunk`s, of `need` bytes clear of every rogue's chunks
  // within `reserved` bytes: the window itself when it is clear. nullopt when none is.
  [[nodiscard]] std::optional<Bytes> clear_window(Bytes need, Bytes chunk, Bytes reserved) const;

 private:
  std::unordered_map<void*, Rogue> rogues_;
  OccupiedRanges occupied_;  // their ranges
  Bytes window_ = 0;
  bool in_window_ = false;
};

}  // namespace memplan
