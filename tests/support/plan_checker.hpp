// An independent plan checker: a second opinion on src/plan/validator.cpp for tests and fuzzers,
// written apart from it and sharing none of its code. Buffers are rectangles, addresses
// [offset, offset + size) by lifetimes [lower, upper); a plan is valid when no two rectangles
// intersect. The validator sweeps over time; this checker sweeps over addresses, keeping the
// buffers that cover the current address ordered by lifetime. While those lifetimes are disjoint
// they are sorted by end as well as by start, so a new buffer can only meet its two neighbours.
// Every address sum is taken in __int128: no offset + size can wrap, whatever the input.
//
// It lives with the tests, not in the library: its value is being a second, separate
// implementation, and the library keeps one validator (the one plan() runs on every result).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "memplan/plan/problem.hpp"

namespace memplan::plan::testing {

// __extension__: -Wpedantic accepts the GCC/Clang 128-bit integers only so marked.
__extension__ typedef __int128 Wide;
__extension__ typedef unsigned __int128 UnsignedWide;

// fmt cannot print __int128 portably; a plan's numbers fit in 2^64 + 2^64 either way.
inline std::string wide_string(Wide value) {
  if (value == 0) return "0";
  const bool negative = value < 0;
  UnsignedWide magnitude =
      negative ? -static_cast<UnsignedWide>(value) : static_cast<UnsignedWide>(value);
  std::string digits;
  while (magnitude != 0) {
    digits += static_cast<char>('0' + static_cast<int>(magnitude % 10));
    magnitude /= 10;
  }
  if (negative) digits += '-';
  std::reverse(digits.begin(), digits.end());
  return digits;
}

// Holds bytes at some instant: alive for a nonempty time and not empty itself.
inline bool holds_bytes(const Buffer& b) { return b.lower < b.upper && b.size > 0; }

inline Wide end_address(const Buffer& b, Bytes offset) { return Wide{offset} + Wide{b.size}; }

inline std::string describe_placed(const Problem& problem, std::span<const Bytes> offsets,
                                   std::size_t i) {
  const Buffer& b = problem.buffers[i];
  return fmt::format("buffer {} ('{}', [{}, {}) at {} + {})", i, b.id, b.lower, b.upper, offsets[i],
                     b.size);
}

// The first pair of buffers that share a byte while both are alive, by brute force: O(n^2).
// For small inputs and for testing the sweep below.
inline std::optional<std::pair<std::size_t, std::size_t>> overlap_by_pairs(
    const Problem& problem, std::span<const Bytes> offsets) {
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    const Buffer& a = problem.buffers[i];
    if (!holds_bytes(a)) continue;
    for (std::size_t j = i + 1; j < problem.buffers.size(); ++j) {
      const Buffer& b = problem.buffers[j];
      if (!holds_bytes(b)) continue;
      const bool same_time = a.lower < b.upper && b.lower < a.upper;
      const bool same_bytes = Wide{offsets[i]} < end_address(b, offsets[j]) &&
                              Wide{offsets[j]} < end_address(a, offsets[i]);
      if (same_time && same_bytes) return std::pair{i, j};
    }
  }
  return std::nullopt;
}

// Some pair of buffers that share a byte while both are alive, found by the address sweep in
// O(n log n); nullopt when there is none.
inline std::optional<std::pair<std::size_t, std::size_t>> overlap_by_sweep(
    const Problem& problem, std::span<const Bytes> offsets) {
  // (address, 0 = leaves / 1 = enters, buffer): a buffer leaving at x frees x for one entering.
  std::vector<std::tuple<Wide, int, std::size_t>> edges;
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    if (!holds_bytes(problem.buffers[i])) continue;
    edges.emplace_back(Wide{offsets[i]}, 1, i);
    edges.emplace_back(end_address(problem.buffers[i], offsets[i]), 0, i);
  }
  std::sort(edges.begin(), edges.end());
  std::set<std::pair<Time, std::size_t>> covering;  // (lower, buffer) of buffers over the address
  for (const auto& [address, enters, i] : edges) {
    const Buffer& b = problem.buffers[i];
    if (!enters) {
      covering.erase({b.lower, i});
      continue;
    }
    const auto later = covering.lower_bound({b.lower, 0});
    if (later != covering.end() && later->first < b.upper) return std::pair{i, later->second};
    if (later != covering.begin()) {
      const std::size_t earlier = std::prev(later)->second;
      if (problem.buffers[earlier].upper > b.lower) return std::pair{earlier, i};
    }
    covering.emplace(b.lower, i);
  }
  return std::nullopt;
}

// The first thing wrong with `offsets` as a plan of `problem`, in words; nullopt when it is a
// valid plan: one offset per buffer, each >= 0, a multiple of its alignment (a power of two),
// equal to its fixed offset if it has one, and no overlap. With arena_size given, also checks
// that every buffer that holds bytes ends at or below it.
inline std::optional<std::string> plan_fault(const Problem& problem, std::span<const Bytes> offsets,
                                             std::optional<Bytes> arena_size = std::nullopt) {
  if (offsets.size() != problem.buffers.size()) {
    return fmt::format("{} offsets for {} buffers", offsets.size(), problem.buffers.size());
  }
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    const Buffer& b = problem.buffers[i];
    const Bytes offset = offsets[i];
    const auto where = [&] { return describe_placed(problem, offsets, i); };
    if (offset < 0) return fmt::format("{}: negative offset", where());
    const auto alignment = static_cast<std::uint64_t>(b.alignment);
    if (b.alignment <= 0 || (alignment & (alignment - 1)) != 0) {
      return fmt::format("{}: alignment {} is not a positive power of two", where(), b.alignment);
    }
    if (static_cast<std::uint64_t>(offset) % alignment != 0) {
      return fmt::format("{}: offset not a multiple of alignment {}", where(), b.alignment);
    }
    if (b.fixed_offset && *b.fixed_offset != offset) {
      return fmt::format("{}: fixed offset {} not kept", where(), *b.fixed_offset);
    }
    if (arena_size && holds_bytes(b) && end_address(b, offset) > Wide{*arena_size}) {
      return fmt::format("{}: ends at {}, past the arena size {}", where(),
                         wide_string(end_address(b, offset)), *arena_size);
    }
  }
  if (const auto pair = overlap_by_sweep(problem, offsets)) {
    return fmt::format("{} overlaps {}", describe_placed(problem, offsets, pair->first),
                       describe_placed(problem, offsets, pair->second));
  }
  return std::nullopt;
}

// plan_fault for a whole Solution, plus its reported numbers: arena_size is exactly the highest
// end of a buffer that holds bytes, and the lower bound does not exceed it.
inline std::optional<std::string> solution_fault(const Problem& problem, const Solution& solution) {
  if (auto fault = plan_fault(problem, solution.offsets, solution.arena_size)) return fault;
  Wide top = 0;
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    if (holds_bytes(problem.buffers[i])) {
      top = std::max(top, end_address(problem.buffers[i], solution.offsets[i]));
    }
  }
  if (top != Wide{solution.arena_size}) {
    return fmt::format("arena size {} reported, the buffers end at {}", solution.arena_size,
                       wide_string(top));
  }
  if (Wide{solution.lower_bound} > top) {
    return fmt::format("lower bound {} above the arena size of a valid plan, {}",
                       solution.lower_bound, solution.arena_size);
  }
  return std::nullopt;
}

}  // namespace memplan::plan::testing
