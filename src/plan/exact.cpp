// The exact search's driver: which capacity to ask about next, with how many nodes, under which
// branching order. The canonical search itself lives in canonical_search.cpp.
#include "memplan/plan/exact.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <tuple>

#include "canonical_search.hpp"
#include "cross_sections.hpp"
#include "learned_order.hpp"
#include "memplan/error.hpp"
#include "search_model.hpp"

namespace memplan::plan {
namespace {

using detail::CanonicalSearch;
using detail::SearchModel;
using detail::SearchOutcome;
using Clock = std::chrono::steady_clock;

// Each search node costs time linear in the buffers of its part: beyond these sizes a budget of
// seconds buys too few nodes to matter, and the index would crowd memory.
constexpr std::size_t kMaxModelEntries = std::size_t{1} << 25;
constexpr std::size_t kMaxSearchBuffers = 20000;

// Restarts under the learned order, after the static orders of a question about the bound: short
// ones (the order learns between them) whose node limit starts at kLearnedFirst and grows slowly
// over the whole search, worth kLearnedShare times a static order's nodes. minimalloc/E, H and I
// reach the bound within tens of milliseconds this way; no static order does within seconds
// (how the share was chosen: docs/planner.md, "Stages"). The descent's questions get none:
// plans above the bound come from the static orders' dives.
constexpr double kLearnedShare = 4.0;
constexpr double kLearnedFirst = 500;
constexpr double kLearnedGrowth = 1.05;

// Branching orders, each descending by three keys: lifetime length (W), area (A) and the
// busiest section total the buffer takes part in (T). WAT, TAW and TWA complement each other.
std::vector<std::vector<int>> branching_ranks(const SearchModel& model) {
  const auto n = static_cast<std::size_t>(model.buffer_count());
  const detail::RangeMax busiest(model.section_totals);
  std::vector<std::tuple<std::uint64_t, double, Bytes>> keys;  // (W, A, T)
  keys.reserve(n);
  for (std::size_t v = 0; v < n; ++v) {
    const std::uint64_t length =
        detail::length_of(model.lifetimes[v].lower, model.lifetimes[v].upper);
    keys.emplace_back(length, static_cast<double>(length) * static_cast<double>(model.size[v]),
                      busiest.max(model.sections.first[v], model.sections.last[v]));
  }
  const auto rank_by = [&](auto key) {
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return key(keys[static_cast<std::size_t>(a)]) > key(keys[static_cast<std::size_t>(b)]);
    });
    std::vector<int> rank(n);
    for (std::size_t r = 0; r < n; ++r)
      rank[static_cast<std::size_t>(order[r])] = static_cast<int>(r);
    return rank;
  };
  return {
      rank_by(
          [](const auto& k) { return std::tuple(std::get<0>(k), std::get<1>(k), std::get<2>(k)); }),
      rank_by(
          [](const auto& k) { return std::tuple(std::get<2>(k), std::get<1>(k), std::get<0>(k)); }),
      rank_by(
          [](const auto& k) { return std::tuple(std::get<2>(k), std::get<0>(k), std::get<1>(k)); }),
  };
}

// One model, its branching orders and a reusable search: answers capacity questions.
class CapacityOracle {
 public:
  explicit CapacityOracle(const Problem& problem)
      : problem_(problem),
        model_(problem),
        ranks_(branching_ranks(model_)),
        learned_(model_, ranks_[1]),
        search_(model_) {
    for (const Buffer& b : problem.buffers) {
      if (b.occupies() && b.fixed_offset)
        fixed_top_ = std::max(fixed_top_, *b.fixed_offset + b.size);
    }
  }

  [[nodiscard]] const SearchModel& model() const { return model_; }

  // Each static branching order in turn gets `node_limit` nodes, then the learned order gets
  // short restarts worth `learned_share` times as many; the first definite answer wins.
  CapacityResult ask(Bytes capacity, std::int64_t node_limit, Clock::time_point deadline,
                     double learned_share) {
    CapacityResult result;
    if (fixed_top_ > capacity) {
      result.status = Feasibility::Infeasible;  // the obstacles alone do not fit
      return result;
    }
    const auto settle_run = [&](const std::vector<int>& rank, std::int64_t limit) {
      const SearchOutcome outcome = search_.run(capacity, rank, limit, deadline);
      result.nodes += search_.nodes();
      learned_.learn(search_.section_failures());
      if (outcome == SearchOutcome::Infeasible) result.status = Feasibility::Infeasible;
      if (outcome == SearchOutcome::Found) {
        result.status = Feasibility::Found;
        result.offsets = full_offsets(search_.offsets());
      }
      return outcome != SearchOutcome::Aborted || search_.deadline_passed();
    };
    for (const std::vector<int>& rank : ranks_) {
      if (settle_run(rank, node_limit)) return result;
    }
    const auto learned_budget =
        static_cast<std::int64_t>(learned_share * static_cast<double>(node_limit));
    for (const std::int64_t spent = result.nodes; result.nodes - spent < learned_budget;) {
      const auto limit = static_cast<std::int64_t>(learned_limit_);
      learned_limit_ *= kLearnedGrowth;
      if (settle_run(learned_.rank(), limit)) return result;
    }
    return result;
  }

 private:
  std::vector<Bytes> full_offsets(std::span<const Bytes> decided) const {
    std::vector<Bytes> offsets(problem_.buffers.size());
    for (std::size_t i = 0; i < offsets.size(); ++i) {
      offsets[i] = problem_.buffers[i].fixed_offset.value_or(0);
    }
    for (std::size_t v = 0; v < decided.size(); ++v) offsets[model_.problem_index[v]] = decided[v];
    return offsets;
  }

  const Problem& problem_;
  SearchModel model_;
  std::vector<std::vector<int>> ranks_;
  detail::LearnedOrder learned_;          // ties broken by TAW
  double learned_limit_ = kLearnedFirst;  // node limit of the next learned restart
  CanonicalSearch search_;
  Bytes fixed_top_ = 0;  // highest byte a fixed-offset buffer reaches
};

}  // namespace

bool exact_search_fits(const Problem& problem) {
  return problem.buffers.size() <= kMaxSearchBuffers &&
         detail::model_footprint(problem) <= kMaxModelEntries;
}

ExactResult exact_search(const Problem& problem, std::span<const Bytes> seed, Bytes lower_bound,
                         Clock::time_point deadline) {
  check_problem(problem);
  ExactResult result;
  result.offsets.assign(seed.begin(), seed.end());
  result.arena_size = arena_size(problem, seed);
  result.proven_bound = lower_bound;
  if (result.arena_size <= lower_bound) return result;

  CapacityOracle oracle(problem);
  const SearchModel& model = oracle.model();
  if (model.buffer_count() == 0) return result;
  const Bytes step = model.granularity;
  Bytes low = align_up(lower_bound, step);  // every plan is a multiple of step: none below
  std::int64_t effort = std::max<std::int64_t>(1000, 2 * model.buffer_count());

  const auto ask = [&](Bytes capacity, std::int64_t node_limit, double learned_share) {
    CapacityResult answer = oracle.ask(capacity, node_limit, deadline, learned_share);
    result.nodes += answer.nodes;
    if (answer.status == Feasibility::Found) {
      const Bytes size = arena_size(problem, answer.offsets);
      if (size < result.arena_size) {
        result.offsets = std::move(answer.offsets);
        result.arena_size = size;
        result.improved = true;
      }
    } else if (answer.status == Feasibility::Infeasible) {
      low = std::max(low, capacity + step);
    }
    return answer.status;
  };
  const auto time_left = [&] { return Clock::now() < deadline; };

  // Rounds with a node limit that doubles each round. First the bound: most problems reach it.
  // Then a descent from the best plan by a stride. Capacities far above the optimum are easy
  // (the search dives straight to a plan), those near an unreachable bound hopeless, and the
  // stride finds the edge between them: it doubles with every plan found and halves at every
  // miss; a round ends at its second miss, and the stride carries over to the next round
  // (minimalloc/D: greedy 1.31x the bound; plans at 1.08x take a thousand nodes, at 1.06x eight
  // thousand, at 1.04x none in sixty thousand).
  Bytes stride = step;
  while (low < result.arena_size && time_left()) {
    ask(low, effort, kLearnedShare);
    const std::int64_t descent_effort =
        std::max<std::int64_t>(effort / 2, 2 * model.buffer_count());
    for (int misses = 0; misses < 2 && time_left();) {
      const Bytes target = std::max(result.arena_size - stride, low + step);
      if (target >= result.arena_size) break;
      if (ask(target, descent_effort, 0) == Feasibility::Found) {
        stride = std::min(stride * 2, kMaxArenaBytes);  // stride <= 2^62: doubling cannot wrap
      } else {
        stride = std::max(step, stride / step / 2 * step);
        ++misses;
      }
    }
    effort *= 2;
  }
  result.proven_bound = std::max(lower_bound, std::min(low, result.arena_size));
  return result;
}

CapacityResult solve_at_capacity(const Problem& problem, Bytes capacity, Clock::time_point deadline,
                                 std::int64_t node_limit) {
  check_problem(problem);
  if (capacity > kMaxArenaBytes) {
    throw InvalidArgument(fmt::format("capacity {} is above the largest arena supported, {} B",
                                      capacity, kMaxArenaBytes));
  }
  CapacityOracle oracle(problem);
  return oracle.ask(capacity, node_limit, deadline, kLearnedShare);
}

}  // namespace memplan::plan
