// The portfolio: strategies in the order that wins most often, each abandoned once it can no
// longer win, all under one deadline except the first, which always completes so that there is
// a plan. The first is chosen to be cheap: size/best-fit usually; on problems where a run of the
// other orders costs about half a second or more (wide live sets, many overlaps), the start order's
// sweep, O(n log n). Where such a run could not end within minutes, only the sweeps run.
#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "greedy_context.hpp"
#include "memplan/error.hpp"
#include "memplan/plan/greedy.hpp"

namespace memplan::plan {
namespace {

using detail::GreedyContext;
using detail::RunEnd;
using Strategy = std::pair<GreedyOrder, Fit>;

constexpr GreedyOrder kOrders[] = {GreedyOrder::Size,   GreedyOrder::Pressure,  GreedyOrder::Area,
                                   GreedyOrder::Length, GreedyOrder::Conflicts, GreedyOrder::Start,
                                   GreedyOrder::End};
constexpr GreedyOrder kSweptOrders[] = {GreedyOrder::Start, GreedyOrder::End};
constexpr Fit kFits[] = {Fit::Best, Fit::First};

// On expensive problems the portfolio keeps to the orders that win most often (size and
// pressure), so that it stays within seconds without a deadline, then the sweeps (cheap, rarely
// better there). The sweep goes first only where it must: on the synthetic 60,000-buffer problem
// (expensive, not wide) it would win nothing and cost a tenth of the default budget, enough on
// a loaded machine to lose the size order's plans (12–19 % smaller than the sweep's).
constexpr std::size_t kOrdersForExpensiveProblems = 2;

// On large problems (the time tree's, above 8,192 buffers) each run costs 0.1-0.5 s, so the
// deadline reaches only the first few: the strategies in the order that won on large real traces
// (IOPDDL S_1 and Y_1, SOMAS pangu 2.6B: conflicts/best, pressure/best and pressure/best, within
// 0.0-0.8 % of the bound where the rest end 1-40 % above) and generated ones. Size/first-fit
// goes first: never far (0.4-3.3 % above the bound on those three), best on the benchmarks'
// random problem (4.5 % where pressure/best-fit ends 14.8 % above).
constexpr int kSqueakyRounds = 8;

constexpr Strategy kLargeStrategies[] = {
    {GreedyOrder::Size, Fit::First},      {GreedyOrder::Pressure, Fit::Best},
    {GreedyOrder::Conflicts, Fit::Best},  {GreedyOrder::Size, Fit::Best},
    {GreedyOrder::Pressure, Fit::First},  {GreedyOrder::Length, Fit::Best},
    {GreedyOrder::Conflicts, Fit::First}, {GreedyOrder::Length, Fit::First},
    {GreedyOrder::Area, Fit::Best},       {GreedyOrder::Area, Fit::First}};

std::vector<Strategy> strategies(const GreedyContext& context) {
  std::vector<Strategy> chosen;
  if (context.wide()) chosen.emplace_back(GreedyOrder::Start, Fit::First);
  if (context.large() && !context.hopeless()) {
    chosen.insert(chosen.end(), std::begin(kLargeStrategies), std::end(kLargeStrategies));
  } else if (!context.hopeless()) {
    const std::size_t orders =
        context.expensive() ? kOrdersForExpensiveProblems : std::size(kOrders);
    for (std::size_t o = 0; o < orders; ++o) {
      for (const Fit fit : kFits) chosen.emplace_back(kOrders[o], fit);
    }
  }
  for (const GreedyOrder order : kSweptOrders) {  // the sweeps, where the above left them out
    for (const Fit fit : kFits) {
      const Strategy sweep{order, fit};
      if (std::find(chosen.begin(), chosen.end(), sweep) == chosen.end()) chosen.push_back(sweep);
    }
  }
  return chosen;
}

// Squeaky wheel (Joslin and Clements, 1999) on large problems, while the deadline allows: the
// buffers that ended above `good_enough` in the last run move to the front of the winner's
// sequence (keeping their order), and the sequence runs again. Each round costs one run.
void squeak(GreedyContext& context, Strategy winner, GreedyPlan& best,
            std::vector<std::pair<Bytes, Bytes>> spans, Bytes good_enough,
            GreedyContext::Clock::time_point deadline) {
  using Clock = GreedyContext::Clock;
  std::vector<int> sequence = context.order_of(winner.first);
  for (int round = 1; round <= kSqueakyRounds && Clock::now() < deadline; ++round) {
    const auto high = [&](int v) {
      return spans[static_cast<std::size_t>(v)].second > good_enough;
    };
    if (std::is_partitioned(sequence.begin(), sequence.end(), high)) return;  // the same run
    std::stable_partition(sequence.begin(), sequence.end(), high);
    const RunEnd end = context.run_in(sequence, winner.second, best.arena_size - 1, deadline);
    if (end == RunEnd::OutOfTime) return;
    spans.assign(context.spans().begin(), context.spans().end());
    if (end == RunEnd::Done) {
      best = context.plan_named(fmt::format("greedy:{}/{}+squeaky{}", to_string(winner.first),
                                            to_string(winner.second), round));
      if (best.arena_size <= good_enough) return;
    }
  }
}

}  // namespace

GreedyPlan greedy_portfolio(const Problem& problem, Bytes good_enough,
                            std::chrono::steady_clock::time_point deadline) {
  using Clock = GreedyContext::Clock;
  GreedyContext context(problem, GreedyIndex::Auto);
  std::optional<GreedyPlan> best;
  std::optional<std::string> past_limit;  // why a run found no plan within kMaxArenaBytes
  Strategy winner{};
  std::vector<std::pair<Bytes, Bytes>> winner_spans;
  bool first = true;
  for (const auto& [order, fit] : strategies(context)) {
    if (!first && Clock::now() >= deadline) break;
    // Ties keep the earlier plan: a later one must be strictly smaller.
    const Bytes cap = best ? std::min(best->arena_size - 1, kMaxArenaBytes) : kMaxArenaBytes;
    const RunEnd end = context.run(order, fit, cap, first ? Clock::time_point::max() : deadline);
    first = false;
    if (end == RunEnd::OutOfTime) break;
    if (end == RunEnd::GaveUp) {
      if (!best && !past_limit) past_limit = context.describe_stop(order, fit);
      continue;
    }
    best = context.plan(order, fit);
    winner = {order, fit};
    if (context.large()) winner_spans.assign(context.spans().begin(), context.spans().end());
    if (best->arena_size <= good_enough) break;
  }
  if (best && best->arena_size > good_enough && context.large() && !context.hopeless()) {
    squeak(context, winner, *best, std::move(winner_spans), good_enough, deadline);
  }
  if (!best) {
    throw InvalidArgument(fmt::format("no plan fits the largest arena supported, {} B: {}",
                                      kMaxArenaBytes,
                                      past_limit.value_or("the deadline passed first")));
  }
  return *std::move(best);
}

}  // namespace memplan::plan
