// Greedy placement over the interval graph. A buffer's candidate offsets are the gaps between its
// already-placed neighbours (sorted by offset) and the space above them; first-fit takes the
// lowest gap, best-fit the tightest one. Shared set-up (graph, order keys) is built once per
// portfolio, so each extra strategy costs one pass over the graph.
#include "memplan/plan/greedy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <span>
#include <utility>

#include "cross_sections.hpp"
#include "interval_graph.hpp"

namespace memplan::plan {
namespace {

using detail::IntervalGraph;
using detail::Lifetime;
using detail::lifetimes_of;

constexpr Bytes kUnplaced = -1;

Bytes align_up(Bytes value, Bytes alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// Per-buffer keys the orders sort by, computed once for the occupying buffers.
struct OrderKeys {
  std::vector<Bytes> size;
  std::vector<Time> length;
  std::vector<double> area;  // double: size × length may exceed 64 bits; only compared
  std::vector<std::int64_t> conflicts;
  std::vector<Bytes> pressure;
  std::vector<Time> start;
};

OrderKeys order_keys(const Problem& problem, std::span<const std::size_t> occupying,
                     std::span<const Lifetime> lifetimes) {
  OrderKeys keys;
  for (const std::size_t i : occupying) {
    const Buffer& b = problem.buffers[i];
    keys.size.push_back(b.size);
    keys.length.push_back(b.upper - b.lower);
    keys.area.push_back(static_cast<double>(b.size) * static_cast<double>(b.upper - b.lower));
    keys.start.push_back(b.lower);
  }
  keys.conflicts = detail::overlap_degrees(lifetimes);
  const detail::CrossSections sections = detail::cross_sections(lifetimes);
  const detail::RangeMax busiest(sections.totals(keys.size));
  for (std::size_t v = 0; v < occupying.size(); ++v) {
    keys.pressure.push_back(busiest.max(sections.first[v], sections.last[v]));
  }
  return keys;
}

// What every strategy of one problem shares.
class GreedyContext {
 public:
  explicit GreedyContext(const Problem& problem)
      : problem_(problem),
        occupying_(occupying_buffers(problem)),
        lifetimes_(lifetimes_of(problem, occupying_)),
        graph_(lifetimes_),
        keys_(order_keys(problem, occupying_, lifetimes_)) {}

  [[nodiscard]] std::size_t overlap_entries() const { return graph_.entry_count(); }

  // Runs one strategy; gives up (empty plan) as soon as its arena passes `give_up_above`, since
  // an arena only grows as buffers are added and so could no longer win.
  std::optional<GreedyPlan> run(GreedyOrder order, Fit fit,
                                Bytes give_up_above = std::numeric_limits<Bytes>::max()) {
    local_offsets_.assign(occupying_.size(), kUnplaced);
    placed_.assign(occupying_.size(), {kUnplaced, kUnplaced});
    std::vector<int> free;  // the buffers this strategy decides, in its order
    for (std::size_t v = 0; v < occupying_.size(); ++v) {
      const Buffer& b = problem_.buffers[occupying_[v]];
      if (b.fixed_offset) {
        local_offsets_[v] = *b.fixed_offset;  // obstacles before anything else
        placed_[v] = {*b.fixed_offset, *b.fixed_offset + b.size};
      } else {
        free.push_back(static_cast<int>(v));
      }
    }
    sort_by(order, free);
    for (const int v : free) {
      const Bytes offset = place(v, fit);
      const Bytes top = offset + keys_.size[static_cast<std::size_t>(v)];
      local_offsets_[static_cast<std::size_t>(v)] = offset;
      placed_[static_cast<std::size_t>(v)] = {offset, top};
      if (top > give_up_above) return std::nullopt;
    }

    GreedyPlan plan;
    plan.algorithm = fmt::format("greedy:{}/{}", to_string(order), to_string(fit));
    plan.offsets.assign(problem_.buffers.size(), 0);
    for (std::size_t i = 0; i < problem_.buffers.size(); ++i) {
      plan.offsets[i] = problem_.buffers[i].fixed_offset.value_or(0);
    }
    for (std::size_t v = 0; v < occupying_.size(); ++v) {
      plan.offsets[occupying_[v]] = local_offsets_[v];
    }
    plan.arena_size = arena_size(problem_, plan.offsets);
    return plan;
  }

 private:
  static std::vector<std::size_t> occupying_buffers(const Problem& problem) {
    std::vector<std::size_t> occupying;
    for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
      if (problem.buffers[i].occupies()) occupying.push_back(i);
    }
    return occupying;
  }

  // Descending by a primary key, then by a secondary one; stable, so index order breaks ties.
  template <typename Primary, typename Secondary>
  static void sort_descending(std::vector<int>& order, const Primary& primary,
                              const Secondary& secondary) {
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      const auto ua = static_cast<std::size_t>(a);
      const auto ub = static_cast<std::size_t>(b);
      if (primary[ua] != primary[ub]) return primary[ua] > primary[ub];
      return secondary[ua] > secondary[ub];
    });
  }

  void sort_by(GreedyOrder order, std::vector<int>& free) const {
    switch (order) {
      case GreedyOrder::Size: return sort_descending(free, keys_.size, keys_.length);
      case GreedyOrder::Length: return sort_descending(free, keys_.length, keys_.size);
      case GreedyOrder::Area: return sort_descending(free, keys_.area, keys_.size);
      case GreedyOrder::Conflicts: return sort_descending(free, keys_.conflicts, keys_.size);
      case GreedyOrder::Pressure: return sort_descending(free, keys_.pressure, keys_.size);
      case GreedyOrder::Start: {
        std::vector<Time> negated_start(keys_.start.size());
        std::transform(keys_.start.begin(), keys_.start.end(), negated_start.begin(),
                       [](Time t) { return -t; });
        return sort_descending(free, negated_start, keys_.size);
      }
    }
  }

  // The offset `fit` picks for buffer v among the gaps its placed neighbours leave.
  Bytes place(int v, Fit fit) {
    const Buffer& b = problem_.buffers[occupying_[static_cast<std::size_t>(v)]];
    taken_.clear();
    for (const int u : graph_.neighbours(v)) {
      const std::pair<Bytes, Bytes>& span = placed_[static_cast<std::size_t>(u)];
      if (span.first != kUnplaced) taken_.push_back(span);
    }
    std::sort(taken_.begin(), taken_.end(),
              [](const auto& lhs, const auto& rhs) { return lhs.first < rhs.first; });
    Bytes cursor = 0;  // everything below is known taken (or unusable)
    Bytes best = kUnplaced;
    Bytes best_slack = std::numeric_limits<Bytes>::max();
    for (const auto& [begin, end] : taken_) {
      const Bytes start = align_up(cursor, b.alignment);
      if (start + b.size <= begin) {
        if (fit == Fit::First) return start;
        if (begin - start - b.size < best_slack) {
          best_slack = begin - start - b.size;
          best = start;
        }
      }
      cursor = std::max(cursor, end);
    }
    return best != kUnplaced ? best : align_up(cursor, b.alignment);
  }

  const Problem& problem_;
  std::vector<std::size_t> occupying_;  // local index -> problem index
  std::vector<Lifetime> lifetimes_;
  IntervalGraph graph_;
  OrderKeys keys_;
  std::vector<Bytes> local_offsets_;
  std::vector<std::pair<Bytes, Bytes>> placed_;  // [begin, end) once placed: one load per visit
  std::vector<std::pair<Bytes, Bytes>> taken_;  // scratch: [begin, end) of placed neighbours
};

constexpr GreedyOrder kOrders[] = {GreedyOrder::Size,      GreedyOrder::Pressure,
                                   GreedyOrder::Area,      GreedyOrder::Length,
                                   GreedyOrder::Conflicts, GreedyOrder::Start};
constexpr Fit kFits[] = {Fit::Best, Fit::First};

// Above this many overlap entries a run costs tens of milliseconds; the portfolio then keeps
// to the orders that win most often (size and pressure) so that it stays well under a second.
constexpr std::size_t kLargeGraphEntries = std::size_t{1} << 22;
constexpr std::size_t kOrdersForLargeGraphs = 2;

}  // namespace

std::string to_string(GreedyOrder order) {
  switch (order) {
    case GreedyOrder::Size: return "size";
    case GreedyOrder::Length: return "length";
    case GreedyOrder::Area: return "area";
    case GreedyOrder::Conflicts: return "conflicts";
    case GreedyOrder::Pressure: return "pressure";
    case GreedyOrder::Start: return "start";
  }
  return "unknown";
}

std::string to_string(Fit fit) { return fit == Fit::Best ? "best-fit" : "first-fit"; }

GreedyPlan greedy_plan(const Problem& problem, GreedyOrder order, Fit fit) {
  return *GreedyContext(problem).run(order, fit);
}

GreedyPlan greedy_portfolio(const Problem& problem, Bytes good_enough) {
  GreedyContext context(problem);
  const std::span<const GreedyOrder> orders(
      kOrders, context.overlap_entries() > kLargeGraphEntries ? kOrdersForLargeGraphs
                                                              : std::size(kOrders));
  std::optional<GreedyPlan> best;
  for (const GreedyOrder order : orders) {
    for (const Fit fit : kFits) {
      // Ties keep the earlier plan: a later one must be strictly smaller.
      std::optional<GreedyPlan> plan =
          best ? context.run(order, fit, best->arena_size - 1) : context.run(order, fit);
      if (plan) best = std::move(plan);
      if (best->arena_size <= good_enough) return *best;
    }
  }
  return *best;
}

}  // namespace memplan::plan
