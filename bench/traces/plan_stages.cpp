// plan_stages FILE.csv | FAMILY BUFFERS [SEED]: where the planner's time goes on one trace. Times
// each stage through the public API, one at a time and in one thread: the lower bound, every
// greedy strategy under every index that serves it (set-up included, as greedy_plan builds its
// own), the portfolio, and plan() with the default options. Wall clock: run it on an idle core
// (taskset -c N) and repeat.
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
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

template <class F>
double millis(F&& f) {
  const auto start = Clock::now();
  f();
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

Problem load(int argc, char** argv) {
  if (argc == 2) return read_csv_file(argv[1]);
  const auto family = traces::trace_family_from(argv[1]);
  return traces::generate(family, std::stoull(argv[2]), argc > 3 ? std::stoull(argv[3]) : 1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    fmt::print(stderr, "usage: {} FILE.csv | training|inference|graph BUFFERS [SEED]\n", argv[0]);
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
    for (const int budget : {0, 1000}) {
      Solution s;
      const double ms =
          millis([&] { s = plan(problem, {.budget = std::chrono::milliseconds(budget)}); });
      fmt::print("plan(budget {} ms) {:.1f} ms: {} {:.5f}x{}\n", budget, ms, s.algorithm,
                 s.ratio_to_bound(), s.proven_optimal ? " optimal" : "");
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
