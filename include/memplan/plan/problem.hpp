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

namespace memplan::plan {

// Signed on purpose: differences and sums of sizes never wrap silently.
using Bytes = std::int64_t;
using Time = std::int64_t;

struct Buffer {
  std::string id;                      // the caller's name (a CSV id); reported in errors
  Time lower = 0;                      // first instant alive
  Time upper = 0;                      // first instant no longer alive: alive on [lower, upper)
  Bytes size = 0;                      // >= 0; a zero-size buffer occupies nothing
  Bytes alignment = 1;                 // a power of two; the offset must be a multiple of it
  std::optional<Bytes> fixed_offset;   // decided elsewhere (e.g. a shared prefix): kept as is

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
// offset, or sizes so large that offsets could overflow.
void check_problem(const Problem& problem);

struct Solution {
  std::vector<Bytes> offsets;          // one per buffer, in the problem's order
  Bytes arena_size = 0;                // max(offset + size) over buffers that occupy memory
  Bytes lower_bound = 0;               // no valid solution is smaller (see lower_bound.hpp)
  std::string algorithm;               // which stage produced it, e.g. "greedy:size/best-fit"
  bool proven_optimal = false;         // arena_size is the smallest possible
  std::chrono::microseconds elapsed{}; // wall time spent planning

  // arena_size / lower_bound (1.0 when both are 0).
  [[nodiscard]] double ratio_to_bound() const {
    if (lower_bound == 0) return arena_size == 0 ? 1.0 : 0.0;
    return static_cast<double>(arena_size) / static_cast<double>(lower_bound);
  }
};

// max(offset + size) over the buffers that occupy memory; 0 for none.
[[nodiscard]] Bytes arena_size(const Problem& problem, std::span<const Bytes> offsets);

}  // namespace memplan::plan
