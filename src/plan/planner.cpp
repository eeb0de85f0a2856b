// plan(): the stages in order, cheapest first, each allowed to stop the rest. The lower bound
// tells when to stop; the greedy portfolio gives a valid plan in milliseconds (its first
// strategy always completes, the rest stop at the deadline); the exact search only runs while a
// gap remains and the budget allows, and only ever replaces the plan with a smaller one. The
// result is checked by the validator before it leaves: a planner bug becomes an exception,
// never an overlapping plan.
#include "memplan/plan/planner.hpp"

#include <fmt/format.h>

#include "checked_problem.hpp"
#include "core/log.hpp"
#include "memplan/error.hpp"
#include "memplan/plan/exact.hpp"
#include "memplan/plan/greedy.hpp"
#include "memplan/plan/validator.hpp"
#include "search_model.hpp"

namespace memplan::plan {
namespace {

// The largest arena within `ratio` of `bound` (the bound itself for ratio <= 0). Computed in
// long double: bounds reach 2^62, past the exact range of a double product; the slack is capped
// at 2^60, so the sum stays within Bytes.
Bytes within_ratio(Bytes bound, double ratio) {
  if (!(ratio > 0)) return bound;
  const long double slack = static_cast<long double>(bound) * static_cast<long double>(ratio);
  if (slack >= static_cast<long double>(Bytes{1} << 60)) return bound + (Bytes{1} << 60);
  return bound + static_cast<Bytes>(slack);
}

// The exact search's model (overlap lists, sections) is built before its first node and does
// not watch the clock: about 20 ns an entry of wall time on the machine of docs/planner.md
// (SOMAS pangu 2.6B: 33 M entries, 0.7 s under load). The search runs only when the build takes
// at most half of the time left, so that it can neither overrun the budget nor leave no nodes.
constexpr double kModelBuildSecondsPerEntry = 20e-9;

bool model_fits_in(const Problem& problem, std::chrono::steady_clock::time_point deadline) {
  const double left =
      std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
  const double build =
      static_cast<double>(detail::model_footprint(problem)) * kModelBuildSecondsPerEntry;
  return build <= left / 2;
}

// start + budget, or the end of the clock's range for a budget that reaches past it (adding it
// would overflow the clock's 64-bit nanoseconds).
std::chrono::steady_clock::time_point deadline_after(std::chrono::steady_clock::time_point start,
                                                     std::chrono::milliseconds budget) {
  using Clock = std::chrono::steady_clock;
  if (budget.count() < 0) {
    throw InvalidArgument(fmt::format("PlanOptions::budget {} ms is negative", budget.count()));
  }
  const auto room = std::chrono::floor<std::chrono::milliseconds>(Clock::time_point::max() - start);
  return budget >= room ? Clock::time_point::max() : start + budget;
}

}  // namespace

Solution plan(const Problem& problem, const PlanOptions& options) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = deadline_after(start, options.budget);
  Solution solution;
  solution.lower_bound = detail::checked_lower_bound(problem);

  const Bytes good_enough = within_ratio(solution.lower_bound, options.stop_within_ratio);
  GreedyPlan greedy = greedy_portfolio(problem, good_enough, deadline);
  solution.offsets = std::move(greedy.offsets);
  solution.arena_size = greedy.arena_size;
  solution.algorithm = std::move(greedy.algorithm);

  Bytes proven_bound = solution.lower_bound;
  const bool gap = solution.arena_size > good_enough;
  if (gap && options.exact && Clock::now() < deadline && exact_search_fits(problem) &&
      model_fits_in(problem, deadline)) {
    ExactResult exact = exact_search(problem, solution.offsets, solution.lower_bound, deadline);
    if (exact.improved) {
      solution.offsets = std::move(exact.offsets);
      solution.arena_size = exact.arena_size;
      solution.algorithm = "exact";
    }
    proven_bound = exact.proven_bound;
    logger().debug("plan: exact search spent {} nodes, bound raised to {}", exact.nodes,
                   proven_bound);
  }
  solution.proven_optimal = solution.arena_size <= proven_bound;
  solution.elapsed = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
  logger().info("plan: {} buffers, lower bound {}, arena {} ({:.4f}x) by {}{}, {} us",
                problem.buffers.size(), solution.lower_bound, solution.arena_size,
                solution.ratio_to_bound(), solution.algorithm,
                solution.proven_optimal ? ", optimal" : "", solution.elapsed.count());
  validate(problem, solution);
  return solution;
}

}  // namespace memplan::plan
