// Shared by the solver tests: a compact buffer constructor, hand-made problems with known
// optima, and the checks every result goes through: the library's validator and the independent
// plan checker (tests/support/plan_checker.hpp).
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <span>
#include <string>

#include "memplan/plan/problem.hpp"
#include "memplan/plan/validator.hpp"
#include "support/plan_checker.hpp"

namespace memplan::plan::testing {

inline Buffer buf(Time lower, Time upper, Bytes size, Bytes alignment = 1) {
  return Buffer{.id = "b", .lower = lower, .upper = upper, .size = size, .alignment = alignment};
}

inline Buffer fixed_buf(Time lower, Time upper, Bytes size, Bytes offset) {
  Buffer b = buf(lower, upper, size);
  b.fixed_offset = offset;
  return b;
}

// Every strategy of the greedy portfolio ends at 11 here; the optimum is the bound, 10
// (found by a random search over small problems).
inline Problem greedy_is_suboptimal() {
  return Problem{{buf(1, 5, 2), buf(1, 6, 3), buf(4, 6, 2), buf(0, 4, 3), buf(5, 8, 3),
                  buf(2, 6, 1), buf(2, 3, 1)}};
}

// A long buffer with short ones nested inside its lifetime, stacked two high: optimum 6.
inline Problem nested_lifetimes() {
  return Problem{{buf(0, 10, 4), buf(1, 3, 2), buf(3, 6, 2), buf(6, 9, 2), buf(2, 5, 0)}};
}

// Small random problems with alignments, for properties that must hold on any input.
inline Problem random_problem(std::mt19937& random, int buffers, Time horizon) {
  Problem problem;
  for (int i = 0; i < buffers; ++i) {
    Buffer b;
    b.id = std::to_string(i);
    b.lower = static_cast<Time>(random() % static_cast<unsigned>(horizon));
    b.upper = b.lower + static_cast<Time>(random() % 6);  // zero-length lifetimes included
    b.size = static_cast<Bytes>(random() % 9) * 8;        // zero sizes included
    b.alignment = Bytes{1} << (random() % 4);
    problem.buffers.push_back(std::move(b));
  }
  return problem;
}

inline void expect_valid(const Problem& problem, std::span<const Bytes> offsets) {
  const auto violations = find_violations(problem, offsets);
  EXPECT_TRUE(violations.empty()) << violations.front().message;
  const auto fault = plan_fault(problem, offsets);
  EXPECT_FALSE(fault) << *fault;
}

inline void expect_valid(const Problem& problem, const Solution& solution) {
  EXPECT_NO_THROW(validate(problem, solution));
  const auto fault = solution_fault(problem, solution);
  EXPECT_FALSE(fault) << *fault;
}

}  // namespace memplan::plan::testing
