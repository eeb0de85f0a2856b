// The validator: checks any solution against its problem, independently of how it was made.
// Every planner test runs its results through it. O(n log n): a sweep over time that keeps the
// live buffers ordered by offset, so an overlap is found between neighbours.
#pragma once

#include <string>
#include <vector>

#include "memplan/plan/problem.hpp"

namespace memplan::plan {

struct Violation {
  enum class Kind { WrongCount, Negative, Misaligned, FixedOffsetMoved, OutOfRange, Overlap };
  Kind kind;
  std::size_t buffer = 0;  // index of the offending buffer
  std::size_t other = 0;   // for Overlap: the buffer it overlaps
  std::string message;     // names both buffers, their offsets, sizes and lifetimes
};

// Every problem found, up to max_violations of them (0 = no limit); empty when the offsets are
// valid. Checks: one offset per buffer, offsets >= 0, alignment, fixed offsets kept, offset +
// size within the range of Bytes (OutOfRange), and no two conflicting buffers share a byte.
// Arithmetic never wraps, whatever the problem and offsets hold.
[[nodiscard]] std::vector<Violation> find_violations(const Problem& problem,
                                                     std::span<const Bytes> offsets,
                                                     std::size_t max_violations = 16);

// Overlaps among the fixed-offset buffers alone, each at its fixed offset: while there is one,
// the problem has no valid plan at all. Up to max_violations of them (0 = no limit).
[[nodiscard]] std::vector<Violation> find_fixed_offset_conflicts(const Problem& problem,
                                                                 std::size_t max_violations = 16);

// Throws memplan::Error with the first violation's message, also when solution.arena_size does
// not match the offsets or is below solution.lower_bound.
void validate(const Problem& problem, const Solution& solution);

}  // namespace memplan::plan
