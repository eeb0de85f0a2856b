// The planner's problem and solution types, in one place (as MiniMalloc keeps them).
//
// A problem is a set of buffers, each with a size and a half-open lifetime [lower, upper). A
// solution gives every buffer a byte offset so that two buffers alive at the same instant never
// share a byte; its arena size is the highest byte any live buffer reaches. The planner knows
// nothing of devices: offsets are plain integers that a later layer adds to an arena base.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "memplan/types.hpp"

namespace memplan::plan {

using Time = std::int64_t;

// The largest size, alignment and fixed offset of one buffer: 2^52 B (4 PiB), far above any
// real buffer.
inline constexpr Bytes kMaxBufferBytes = Bytes{1} << 52;
// The largest arena the planner handles: 2^62 B (4 EiB), half the range of a Bytes. Every plan
// it returns ends below it, and every value a stage computes stays below it plus a few buffer
// sizes and alignments, so no sum can wrap. A problem with more bytes alive at one instant is
// rejected by check_problem; one whose only plans pass it (alignment padding) by the planner.
inline constexpr Bytes kMaxArenaBytes = Bytes{1} << 62;

struct Buffer {
  std::string id;                     // the caller's name (a CSV id); reported in errors
  Time lower = 0;                     // first instant alive
  Time upper = 0;                     // first instant no longer alive: alive on [lower, upper)
  Bytes size = 0;                     // >= 0; a zero-size buffer occupies nothing
  Bytes alignment = 1;                // a power of two; the offset must be a multiple of it
  std::optional<Bytes> fixed_offset;  // decided elsewhere (e.g. a shared prefix): kept as is

  // A buffer that is never alive, or holds no bytes, conflicts with nothing and does not count
  // towards the arena size. The planner places it at its fixed offset, or at 0.
  [[nodiscard]] bool occupies() const { return lower < upper && size > 0; }
};

// True when a and b may not share bytes: both occupy memory and their lifetimes intersect.
[[nodiscard]] inline bool conflicts(const Buffer& a, const Buffer& b) {
  return a.occupies() && b.occupies() && a.lower < b.upper && b.lower < a.upper;
}

struct Problem {
  std::vector<Buffer> buffers;
};

// Throws memplan::InvalidArgument naming the first bad buffer (index, id, field and value):
// negative size, upper < lower, alignment not a power of two, a misaligned or negative fixed
// offset, a size, alignment or fixed offset above kMaxBufferBytes; then more than
// kMaxArenaBytes alive at one instant (naming the instant); then two fixed-offset buffers that
// share bytes while both alive (naming both). O(n log n). Every planner stage expects a problem
// that passes it.
void check_problem(const Problem& problem);

struct Solution {
  std::vector<Bytes> offsets;           // one per buffer, in the problem's order
  Bytes arena_size = 0;                 // max(offset + size) over buffers that occupy memory
  Bytes lower_bound = 0;                // no valid solution is smaller (see lower_bound.hpp)
  std::string algorithm;                // which stage produced it, e.g. "greedy:size/best-fit"
  bool proven_optimal = false;          // arena_size is the smallest possible
  std::chrono::microseconds elapsed{};  // wall time spent planning

  // arena_size / lower_bound (1.0 when both are 0).
  [[nodiscard]] double ratio_to_bound() const {
    if (lower_bound == 0) return arena_size == 0 ? 1.0 : 0.0;
    return static_cast<double>(arena_size) / static_cast<double>(lower_bound);
  }
};

// max(offset + size) over the buffers that occupy memory; 0 for none. Throws
// memplan::InvalidArgument if an offset + size passes the range of Bytes.
[[nodiscard]] Bytes arena_size(const Problem& problem, std::span<const Bytes> offsets);

}  // namespace memplan::plan
