// The planner's front door: lower bound, then the greedy portfolio, then (while a gap to the
// bound remains and the budget allows) the exact search seeded with the greedy result.
// Never returns a plan worse than the greedy one; stops as soon as a plan meets the bound (or
// comes within stop_within_ratio of it).
#pragma once

#include <chrono>

#include "memplan/plan/problem.hpp"

namespace memplan::plan {

struct PlanOptions {
  // Wall time for the whole run, and the plan is the best valid one found when it ends. What
  // always runs, whatever the budget (0 included): the checks and the lower bound (one
  // O(n log n) sweep), the portfolio's first strategy, which always completes so that there is
  // a plan (size/best-fit; above 8,192 buffers size/first-fit on the time tree; above 32,768,
  // or on wide live sets, the start order's O(n log n) sweep), and the validator. Everything
  // else stops at the deadline: each further greedy strategy (checked every 16 placements, and
  // dropped as soon as its pace shows it would end past the deadline), the squeaky-wheel
  // rounds of large problems, and the exact search, which starts only when its model builds
  // within half the time left. So a run takes at most the budget plus that part (about 0.1 s
  // on 60,000 buffers, 0.3-0.5 s on 200,000, one core). Negative: memplan::InvalidArgument;
  // past the clock's range: no limit.
  std::chrono::milliseconds budget{1000};
  bool exact = true;  // false: greedy portfolio only
  // A plan within this fraction of the lower bound ends the work: the portfolio stops at the
  // first such plan and the exact search is skipped. Such a plan is reported as proven optimal
  // only when it meets the bound. 1e-4 costs at most 0.01% and keeps large, nearly-solved
  // problems (somas/bert_base: greedy 0.00001% above the bound) from spending the whole budget
  // on a gap of a few bytes; 0 stops only at the bound itself.
  double stop_within_ratio = 1e-4;
};

// Throws memplan::InvalidArgument for an invalid problem (see check_problem: bad fields, more than
// kMaxArenaBytes alive at once, fixed offsets that collide), for one whose only plans the greedy
// finds pass kMaxArenaBytes (alignment padding), and for a negative budget.
[[nodiscard]] Solution plan(const Problem& problem, const PlanOptions& options = {});

}  // namespace memplan::plan
