// Exact search under a time budget: shrink a known plan toward the lower bound by branch and
// bound over canonical placements (see src/plan/canonical_search.hpp for the pruning rules).
//
// The search decides one capacity at a time: "is there a plan no larger than C?". It asks the
// bound first (most real problems reach it), and while that stays open it descends from the best
// plan so far by a stride that doubles with each plan found and halves with each miss (capacities
// well above the optimum are easy, those near an unreachable bound hopeless); every question gets
// a node budget that doubles each round and is tried under several branching orders in turn,
// since one order often solves in a hundred nodes what another cannot in a million: three static
// ones, then short restarts under an order learned from where the search failed (buffers of the
// sections that overflowed most go first). Buffers with fixed offsets are obstacles; those that
// occupy nothing keep their fixed offset or 0.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "memplan/plan/problem.hpp"

namespace memplan::plan {

struct ExactResult {
  std::vector<Bytes> offsets;  // one per buffer; never a worse plan than the seed
  Bytes arena_size = 0;
  Bytes proven_bound = 0;  // no plan is smaller than this (>= the lower bound passed in)
  bool improved = false;   // the search found a smaller plan than the seed
  std::int64_t nodes = 0;  // search nodes spent, over all questions
};

// `seed` must be a valid plan of `problem` (e.g. the greedy one); `lower_bound` a true bound.
// Both functions check the problem first (check_problem's memplan::InvalidArgument).
[[nodiscard]] ExactResult exact_search(const Problem& problem, std::span<const Bytes> seed,
                                       Bytes lower_bound,
                                       std::chrono::steady_clock::time_point deadline);

enum class Feasibility { Found, Infeasible, Unknown };

struct CapacityResult {
  Feasibility status = Feasibility::Unknown;
  std::vector<Bytes> offsets;  // when Found: a plan with arena size <= capacity
  std::int64_t nodes = 0;
};

// One question: a plan no larger than `capacity`, a proof that none exists, or Unknown when
// `node_limit` nodes per static branching order (and four times as many in restarts of the
// learned order) or the deadline ran out first. A capacity above kMaxArenaBytes is a
// memplan::InvalidArgument.
[[nodiscard]] CapacityResult solve_at_capacity(const Problem& problem, Bytes capacity,
                                               std::chrono::steady_clock::time_point deadline,
                                               std::int64_t node_limit = INT64_MAX);

// Whether the exact search may run on this problem: its index must fit in memory comfortably.
[[nodiscard]] bool exact_search_fits(const Problem& problem);

}  // namespace memplan::plan
