// Greedy placement. A buffer's candidate offsets are the gaps between its already-placed
// neighbours (in offset order) and the space above them; first-fit takes the lowest gap, best-fit
// the tightest one (gap_fit.hpp). The neighbours come either from the overlap graph, sorted per
// buffer, or from one offset-ordered list of everything placed (placed_by_offset.hpp), whichever
// is cheaper for the problem's density. Shared set-up (index, order keys) is built once per
// portfolio, so each extra strategy costs one pass.
#include "memplan/plan/greedy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <span>
#include <utility>

#include "cross_sections.hpp"
#include "gap_fit.hpp"
#include "interval_graph.hpp"
#include "placed_by_offset.hpp"

namespace memplan::plan {
namespace {

using detail::IntervalGraph;
using detail::Lifetime;
using detail::lifetimes_of;

constexpr Bytes kUnplaced = -1;

// Graph index: a placed neighbour's position in a packed sort key (see GreedyContext::place).
constexpr int kPositionBits = 22;
constexpr std::uint64_t kPositionMask = (std::uint64_t{1} << kPositionBits) - 1;

// Scan costs about n²/2 cheap lifetime checks a run; Graph about E/2 gathered spans sorted at
// log2(d) comparisons each, each comparison several times a check. Scan wins below this ratio.
constexpr double kScanAdvantage = 4.0;

GreedyIndex choose_index(std::span<const std::int64_t> degrees) {
  double entries = 0;
  std::int64_t widest = 1;
  for (const std::int64_t d : degrees) {
    entries += static_cast<double>(d);
    widest = std::max(widest, d);
  }
  const auto n = static_cast<double>(degrees.size());
  const double sort_cost = entries * std::log2(static_cast<double>(widest) + 1) * kScanAdvantage;
  return n * n < sort_cost ? GreedyIndex::Scan : GreedyIndex::Graph;
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
  GreedyContext(const Problem& problem, GreedyIndex index)
      : problem_(problem),
        occupying_(occupying_buffers(problem)),
        lifetimes_(lifetimes_of(problem, occupying_)),
        keys_(order_keys(problem, occupying_, lifetimes_)),
        index_(index == GreedyIndex::Auto ? choose_index(keys_.conflicts) : index) {
    if (index_ == GreedyIndex::Graph) graph_.emplace(lifetimes_);
    // No offset a run picks exceeds the obstacles' top plus every size and alignment pad.
    double reach = 0;
    std::int64_t widest = 0;
    for (std::size_t v = 0; v < occupying_.size(); ++v) {
      const Buffer& b = problem_.buffers[occupying_[v]];
      reach += static_cast<double>(b.size + b.alignment + b.fixed_offset.value_or(0));
      widest = std::max(widest, keys_.conflicts[v]);
    }
    packable_ = reach < std::ldexp(1.0, 63 - kPositionBits) &&
                widest < (std::int64_t{1} << kPositionBits);
  }

  // Overlap entries (2 per overlapping pair), from the degrees: known without the graph.
  [[nodiscard]] double overlap_entries() const {
    double entries = 0;
    for (const std::int64_t d : keys_.conflicts) entries += static_cast<double>(d);
    return entries;
  }
  [[nodiscard]] GreedyIndex index() const { return index_; }

  // Runs one strategy; gives up (empty plan) as soon as its arena passes `give_up_above`, since
  // an arena only grows as buffers are added and so could no longer win.
  std::optional<GreedyPlan> run(GreedyOrder order, Fit fit,
                                Bytes give_up_above = std::numeric_limits<Bytes>::max()) {
    span_.assign(occupying_.size(), {kUnplaced, kUnplaced});
    by_offset_.reset(occupying_.size());
    std::vector<int> free;  // the buffers this strategy decides, in its order
    for (std::size_t v = 0; v < occupying_.size(); ++v) {
      const Buffer& b = problem_.buffers[occupying_[v]];
      if (b.fixed_offset) {
        settle(static_cast<int>(v), *b.fixed_offset);  // obstacles before anything else
      } else {
        free.push_back(static_cast<int>(v));
      }
    }
    sort_by(order, free);
    for (const int v : free) {
      const Bytes top = settle(v, place(v, fit));
      if (top > give_up_above) return std::nullopt;
    }

    GreedyPlan plan;
    plan.algorithm = fmt::format("greedy:{}/{}", to_string(order), to_string(fit));
    plan.offsets.assign(problem_.buffers.size(), 0);
    for (std::size_t i = 0; i < problem_.buffers.size(); ++i) {
      plan.offsets[i] = problem_.buffers[i].fixed_offset.value_or(0);
    }
    for (std::size_t v = 0; v < occupying_.size(); ++v) {
      plan.offsets[occupying_[v]] = span_[v].first;
    }
    plan.arena_size = arena_size(problem_, plan.offsets);
    return plan;
  }

 private:
  // The occupying buffers in start order: a buffer's neighbours then sit at nearby indices, so
  // gathering their spans touches a few cache lines instead of the whole array.
  static std::vector<std::size_t> occupying_buffers(const Problem& problem) {
    std::vector<std::size_t> occupying;
    for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
      if (problem.buffers[i].occupies()) occupying.push_back(i);
    }
    std::stable_sort(occupying.begin(), occupying.end(), [&](std::size_t a, std::size_t b) {
      return problem.buffers[a].lower < problem.buffers[b].lower;
    });
    return occupying;
  }

  // Descending by a primary key, then by a secondary one; the problem's order breaks ties.
  template <typename Primary, typename Secondary>
  void sort_descending(std::vector<int>& order, const Primary& primary,
                       const Secondary& secondary) const {
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      const auto ua = static_cast<std::size_t>(a);
      const auto ub = static_cast<std::size_t>(b);
      if (primary[ua] != primary[ub]) return primary[ua] > primary[ub];
      if (secondary[ua] != secondary[ub]) return secondary[ua] > secondary[ub];
      return occupying_[ua] < occupying_[ub];
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

  // Records v at `offset`; returns its top.
  Bytes settle(int v, Bytes offset) {
    const auto i = static_cast<std::size_t>(v);
    span_[i] = {offset, offset + keys_.size[i]};
    if (index_ == GreedyIndex::Scan) by_offset_.insert(v, lifetimes_[i], offset, span_[i].second);
    return span_[i].second;
  }

  // The offset `fit` picks for buffer v among the gaps its placed neighbours leave.
  Bytes place(int v, Fit fit) {
    const auto i = static_cast<std::size_t>(v);
    const Buffer& b = problem_.buffers[occupying_[i]];
    detail::GapFit gap(b.size, b.alignment, fit);
    if (index_ == GreedyIndex::Scan) {
      by_offset_.feed(gap, lifetimes_[i]);
      return gap.offset();
    }
    if (packable_) {
      // Sorting plain integers is about twice as fast as sorting pairs by a key: each begin
      // goes in the high bits, its position in taken_end_ (for the end) in the low ones.
      taken_keys_.clear();
      taken_end_.clear();
      for (const int u : graph_->neighbours(v)) {
        const auto j = static_cast<std::size_t>(u);
        const auto [begin, end] = span_[j];
        if (begin == kUnplaced) continue;
        taken_keys_.push_back(static_cast<std::uint64_t>(begin) << kPositionBits |
                              taken_end_.size());
        taken_end_.push_back(end);
      }
      std::sort(taken_keys_.begin(), taken_keys_.end());
      for (const std::uint64_t key : taken_keys_) {
        if (gap.feed(static_cast<Bytes>(key >> kPositionBits),
                     taken_end_[static_cast<std::size_t>(key & kPositionMask)])) {
          break;
        }
      }
      return gap.offset();
    }
    taken_.clear();
    for (const int u : graph_->neighbours(v)) {
      const auto j = static_cast<std::size_t>(u);
      if (span_[j].first != kUnplaced) taken_.push_back(span_[j]);
    }
    std::sort(taken_.begin(), taken_.end(),
              [](const auto& lhs, const auto& rhs) { return lhs.first < rhs.first; });
    for (const auto& [begin, end] : taken_) {
      if (gap.feed(begin, end)) break;
    }
    return gap.offset();
  }

  const Problem& problem_;
  std::vector<std::size_t> occupying_;  // local index -> problem index
  std::vector<Lifetime> lifetimes_;
  OrderKeys keys_;
  GreedyIndex index_;
  std::optional<IntervalGraph> graph_;  // Graph index only
  detail::PlacedByOffset by_offset_;     // Scan index only
  std::vector<std::pair<Bytes, Bytes>> span_;  // per buffer: [offset, top), kUnplaced before
  std::vector<std::pair<Bytes, Bytes>> taken_;  // scratch: [begin, end) of placed neighbours
  bool packable_ = false;  // offsets and degrees small enough for taken_keys_
  std::vector<std::uint64_t> taken_keys_;      // scratch: begin << kPositionBits | position
  std::vector<Bytes> taken_end_;               // scratch: ends, by position
};

constexpr GreedyOrder kOrders[] = {GreedyOrder::Size,      GreedyOrder::Pressure,
                                   GreedyOrder::Area,      GreedyOrder::Length,
                                   GreedyOrder::Conflicts, GreedyOrder::Start};
constexpr Fit kFits[] = {Fit::Best, Fit::First};

// Above this many overlap entries (Graph) or n² (Scan) a run costs tens of milliseconds; the
// portfolio then keeps to the orders that win most often (size and pressure) so that it stays
// well under a second.
constexpr double kLargeGraphEntries = 1 << 22;
constexpr double kLargeScanPairs = 1 << 26;
constexpr std::size_t kOrdersForLargeProblems = 2;

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

GreedyPlan greedy_plan(const Problem& problem, GreedyOrder order, Fit fit, GreedyIndex index) {
  return *GreedyContext(problem, index).run(order, fit);
}

GreedyPlan greedy_portfolio(const Problem& problem, Bytes good_enough) {
  GreedyContext context(problem, GreedyIndex::Auto);
  const double n = static_cast<double>(problem.buffers.size());
  const bool large = context.index() == GreedyIndex::Scan
                         ? n * n > kLargeScanPairs
                         : context.overlap_entries() > kLargeGraphEntries;
  const std::span<const GreedyOrder> orders(
      kOrders, large ? kOrdersForLargeProblems : std::size(kOrders));
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
