// Sums of byte counts that report instead of wrapping. Sizes and offsets come from files and
// callers, and a hostile one makes any sum pass 2^63; where a stage cannot rule that out by the
// problem's limits (kMaxBufferBytes, kMaxArenaBytes), it adds through here.
#pragma once

#include <limits>
#include <optional>

#include "memplan/plan/problem.hpp"

namespace memplan::plan::detail {

// a + b, or nothing when the sum passes the range of Bytes.
[[nodiscard]] inline std::optional<Bytes> checked_add(Bytes a, Bytes b) {
  Bytes sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

// a + b, clamped to the range of Bytes: for values that only order things (the greedy's keys).
[[nodiscard]] inline Bytes saturating_add(Bytes a, Bytes b) {
  return checked_add(a, b).value_or(b > 0 ? std::numeric_limits<Bytes>::max()
                                          : std::numeric_limits<Bytes>::min());
}

}  // namespace memplan::plan::detail
