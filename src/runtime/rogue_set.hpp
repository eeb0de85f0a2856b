// The rogues (allocations of finished steps still live) and the window they push the plans into.
// A rogue keeps its bytes where they are; planned offset 0 is at base + window (a whole number of
// chunks, or past the pool's bytes in the chunk the pool lends: window_home.cpp), and the window
// moves to addresses clear of every live rogue (clear_chunk), so plans never work around one. When
// no window fits, the rogues stay in it and replay checks each planned range against them
// (clear()). Offsets of rogues are from the arena's base: windows move.
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

  // Whether [offset, offset + bytes) shares no chunk with a rogue nor with `also_held` (whole
  // chunks).
  [[nodiscard]] bool clear_of_chunks(
      Bytes offset, Bytes bytes, Bytes chunk,
      std::optional<std::pair<Bytes, Bytes>> also_held = std::nullopt) const;
  // The lowest whole-chunk start (0, or where a run of the rogues' chunks ends) of `bytes` bytes
  // that share no chunk with a rogue nor with `also_held` (whole chunks), within `reserved`
  // bytes; nullopt when there is none.
  [[nodiscard]] std::optional<Bytes> clear_chunk(
      Bytes bytes, Bytes chunk, Bytes reserved,
      std::optional<std::pair<Bytes, Bytes>> also_held = std::nullopt) const;

 private:
  std::unordered_map<void*, Rogue> rogues_;
  OccupiedRanges occupied_;  // their ranges
  Bytes window_ = 0;
  bool in_window_ = false;
};

}  // namespace memplan
