// plan_stages FILE.csv | FAMILY BUFFERS [SEED]: where the planner's time goes on one trace. Times
// each stage through the public API, one at a time and in one thread: the lower bound, every
// greedy strategy under every index that serves it (set-up included, as greedy_plan builds its
// own; set PLAN_STAGES_STRATEGIES=1), the portfolio without a deadline, and plan() with budgets
// of 0, 1000 and 10000 ms (their budget is wall time; the last shows where a run ends when the
// budget is not what stops it). Prints CPU time (std::clock), which another
// process on the same core does not inflate; pin it (taskset -c N) and repeat.
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <string>

#include "memplan/plan/csv.hpp"
#include "memplan/plan/greedy.hpp"
#include "memplan/plan/lower_bound.hpp"
#include "memplan/plan/planner.hpp"
#include "trace_generators.hpp"

namespace {

using namespace memplan::plan;
using memplan::Bytes;
using Clock = std::chrono::steady_clock;

// CPU time in milliseconds: on a shared machine wall time also counts the other processes.
template <class F>
double millis(F&& f) {
  const std::clock_t start = std::clock();
  f();
  return 1000.0 * static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC;
}

Problem load(int argc, char** argv) {
  if (argc == 2) return read_csv_file(argv[1]);
  const auto family = traces::trace_family_from(argv[1]);
  return traces::generate(family, std::stoull(argv[2]), argc > 3 ? std::stoull(argv[3]) : 1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    fmt::print(stderr, "usage: {} FILE.csv | training|inference|graph|random BUFFERS [SEED]\n",
               argv[0]);
    return 2;
  }
  try {
    const Problem problem = load(argc, argv);
    Bytes bound = 0;
    const double bound_ms = millis([&] { bound = lower_bound(problem); });
    fmt::print("{} buffers, lower bound {} ({:.1f} ms)\n", problem.buffers.size(), bound, bound_ms);
    const bool strategies = std::getenv("PLAN_STAGES_STRATEGIES") != nullptr;
    for (const GreedyOrder order :
         {GreedyOrder::Size, GreedyOrder::Pressure, GreedyOrder::Area, GreedyOrder::Length,
          GreedyOrder::Conflicts, GreedyOrder::Start, GreedyOrder::End}) {
      if (!strategies) break;
      for (const Fit fit : {Fit::Best, Fit::First}) {
        GreedyPlan g;
        const GreedyIndex index = std::getenv("PLAN_STAGES_TREE") && order != GreedyOrder::Start &&
                                          order != GreedyOrder::End
                                      ? GreedyIndex::TimeTree
                                      : GreedyIndex::Auto;
        const double ms = millis([&] { g = greedy_plan(problem, order, fit, index); });
        fmt::print("  {:>9}/{:<9} {:10.1f} ms  {:.5f}x\n", to_string(order), to_string(fit), ms,
                   static_cast<double>(g.arena_size) / static_cast<double>(bound));
      }
    }
    GreedyPlan portfolio;
    const double portfolio_ms = millis([&] { portfolio = greedy_portfolio(problem, bound); });
    fmt::print("portfolio (no deadline) {:.1f} ms: {} {:.5f}x\n", portfolio_ms, portfolio.algorithm,
               static_cast<double>(portfolio.arena_size) / static_cast<double>(bound));
    for (const int budget : {0, 1000, 10000}) {
      Solution s;
      const double ms =
          millis([&] { s = plan(problem, {.budget = std::chrono::milliseconds(budget)}); });
      fmt::print("plan(budget {} ms) {:.1f} ms CPU, {:.1f} ms wall: {} {:.5f}x{}\n", budget, ms,
                 static_cast<double>(s.elapsed.count()) / 1000, s.algorithm, s.ratio_to_bound(),
                 s.proven_optimal ? " optimal" : "");
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
