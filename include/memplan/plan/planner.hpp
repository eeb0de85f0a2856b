// The planner's front door: lower bound, then the greedy portfolio, then (while a gap to the
// bound remains and the budget allows) the exact search seeded with the greedy result.
// Never returns a plan worse than the greedy one; stops as soon as a plan meets the bound.
#pragma once

#include <chrono>

#include "memplan/plan/problem.hpp"

namespace memplan::plan {

struct PlanOptions {
  std::chrono::milliseconds budget{1000};  // wall-time limit for the exact search
  bool exact = true;                       // false: greedy portfolio only
};

// Throws memplan::InvalidArgument for an invalid problem (see check_problem).
[[nodiscard]] Solution plan(const Problem& problem, const PlanOptions& options = {});

}  // namespace memplan::plan
