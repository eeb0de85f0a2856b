// Greedy placement. A buffer's candidate offsets are the gaps between its already-placed
// neighbours (in offset order) and the space above them; first-fit takes the lowest gap, best-fit
// the tightest one (gap_fit.hpp). The neighbours come either from the overlap graph, sorted per
// buffer, or from one offset-ordered list of everything placed (placed_by_offset.hpp), whichever
// is cheaper for the problem's density; the start order sweeps over time instead
// (sweep_greedy.hpp). Shared set-up (index, order keys) is built once per context and only when
// a strategy needs it, so each extra strategy costs one pass.
#include "memplan/plan/greedy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "checked_problem.hpp"
#include "cross_sections.hpp"
#include "gap_fit.hpp"
#include "greedy_context.hpp"
#include "memplan/error.hpp"

namespace memplan::plan {
namespace detail {
namespace {

constexpr Bytes kUnplaced = -1;

// Graph index: a placed neighbour's position in a packed sort key (see place_by_overlaps).
constexpr int kPositionBits = 22;
constexpr std::uint64_t kPositionMask = (std::uint64_t{1} << kPositionBits) - 1;

// Scan costs about n²/2 cheap lifetime checks a run; Graph about E/2 gathered spans sorted at
// log2(d) comparisons each, each comparison several times a check. Scan wins below this ratio.
constexpr double kScanAdvantage = 4.0;
// Above this many overlap entries the graph would take more than 256 MiB (and seconds to
// build): the scan needs no memory, and the portfolio's deadline bounds its time.
constexpr double kMaxOverlapEntries = 1 << 26;
// Above this many overlap entries (Graph) or n² (Scan) a run costs tens of milliseconds.
constexpr double kLargeOverlapEntries = 1 << 22;
constexpr double kLargeScanPairs = 1 << 26;
// ... half a second or more, and (scan only) minutes.
constexpr double kWideOverlapEntries = 1 << 24;
constexpr double kWideScanPairs = 0x1p29;
constexpr double kHopelessScanPairs = 0x1p38;
// Above this many buffers the time tree serves the orders other than start and end: a run
// there costs 0.1-0.5 s at 60,000 buffers where the scan and the graph took 1-4 s. Above the
// second a run costs about half a second or more; above the third (the tree's nodes alone would
// pass 400 B a buffer) none is tried.
constexpr double kTimeTreeBuffers = 8192;
constexpr double kWideTimeTreeBuffers = 32768;
constexpr double kHopelessTimeTreeBuffers = 0x1p19;
// The deadline is read every this many placements: a few microseconds of work on small
// problems, a few milliseconds on the widest ones.
constexpr std::size_t kPlacementsPerClockRead = 16;
constexpr std::size_t kProjectAfterShare = 16;  // see out_of_time

double entries_of(std::span<const std::int64_t> degrees) {
  double entries = 0;
  for (const std::int64_t d : degrees) entries += static_cast<double>(d);
  return entries;
}

GreedyIndex choose_index(std::span<const std::int64_t> degrees) {
  const double entries = entries_of(degrees);
  std::int64_t widest = 1;
  for (const std::int64_t d : degrees) widest = std::max(widest, d);
  const auto n = static_cast<double>(degrees.size());
  if (n > kTimeTreeBuffers) return GreedyIndex::TimeTree;
  const double sort_cost = entries * std::log2(static_cast<double>(widest) + 1) * kScanAdvantage;
  return n * n < sort_cost || entries > kMaxOverlapEntries ? GreedyIndex::Scan
                                                           : GreedyIndex::Overlaps;
}

// The occupying buffers in start order: a buffer's neighbours then sit at nearby indices, so
// gathering their spans touches a few cache lines instead of the whole array.
std::vector<std::size_t> occupying_buffers(const Problem& problem) {
  std::vector<std::pair<Time, std::size_t>> by_start;  // sorted as packed keys: no indirection
  for (std::size_t i = 0; i < problem.buffers.size(); ++i) {
    if (problem.buffers[i].occupies()) by_start.emplace_back(problem.buffers[i].lower, i);
  }
  std::sort(by_start.begin(), by_start.end());
  std::vector<std::size_t> occupying;
  occupying.reserve(by_start.size());
  for (const auto& [lower, i] : by_start) occupying.push_back(i);
  return occupying;
}

}  // namespace

GreedyContext::GreedyContext(const Problem& problem, GreedyIndex index)
    : problem_(problem),
      occupying_(occupying_buffers(problem)),
      lifetimes_(lifetimes_of(problem, occupying_)),
      degrees_(overlap_degrees(lifetimes_)),
      requested_(index),
      generic_(index == GreedyIndex::Overlaps || index == GreedyIndex::Scan ||
                       index == GreedyIndex::TimeTree
                   ? index
                   : choose_index(degrees_)) {
  check_buffers(problem);  // the sums below, and every run's, rely on its limits
  // No offset a run picks exceeds the obstacles' top plus every size and alignment pad.
  double reach = 0;
  for (const std::size_t i : occupying_) {
    const Buffer& b = problem_.buffers[i];
    reach += static_cast<double>(b.size + b.alignment + b.fixed_offset.value_or(0));
  }
  const std::int64_t widest =
      degrees_.empty() ? 0 : *std::max_element(degrees_.begin(), degrees_.end());
  packable_ =
      reach < std::ldexp(1.0, 63 - kPositionBits) && widest < (std::int64_t{1} << kPositionBits);
}

GreedyIndex GreedyContext::index_for(GreedyOrder order) const {
  const bool swept = order == GreedyOrder::Start || order == GreedyOrder::End;
  if (requested_ == GreedyIndex::Sweep && !swept) {
    throw InvalidArgument(fmt::format(
        "GreedyIndex::Sweep serves the start and end orders only, not {}", to_string(order)));
  }
  if (swept && (requested_ == GreedyIndex::Auto || requested_ == GreedyIndex::Sweep)) {
    return GreedyIndex::Sweep;
  }
  return generic_;
}

// What a run's cost grows with under the index (pairs to scan, overlap entries to sort, or
// buffers in the time tree) and where it passes tens of milliseconds, half a second, and what
// no strategy tries.
GreedyContext::CostScale GreedyContext::cost_scale() const {
  const double n = static_cast<double>(occupying_.size());
  switch (generic_) {
    case GreedyIndex::Scan:
      return {n * n, kLargeScanPairs, kWideScanPairs, kHopelessScanPairs};
    case GreedyIndex::TimeTree:
      return {n, kTimeTreeBuffers, kWideTimeTreeBuffers, kHopelessTimeTreeBuffers};
    default:
      return {entries_of(degrees_), kLargeOverlapEntries, kWideOverlapEntries,
              std::numeric_limits<double>::infinity()};
  }
}

bool GreedyContext::expensive() const {
  const CostScale scale = cost_scale();
  return scale.measure > scale.large;
}

bool GreedyContext::wide() const {
  const CostScale scale = cost_scale();
  return scale.measure > scale.wide;
}

bool GreedyContext::hopeless() const {
  const CostScale scale = cost_scale();
  return scale.measure > scale.hopeless;
}

const OrderKeys& GreedyContext::keys() {
  if (keys_) return *keys_;
  OrderKeys& keys = keys_.emplace();
  for (const std::size_t i : occupying_) {
    const Buffer& b = problem_.buffers[i];
    const std::uint64_t length = length_of(b.lower, b.upper);
    keys.size.push_back(b.size);
    keys.length.push_back(length);
    keys.area.push_back(static_cast<double>(b.size) * static_cast<double>(length));
    keys.start.push_back(b.lower);
    keys.end.push_back(b.upper);
  }
  const CrossSections sections = cross_sections(lifetimes_);
  const RangeMax busiest(sections.totals(keys.size));
  for (std::size_t v = 0; v < occupying_.size(); ++v) {
    keys.pressure.push_back(busiest.max(sections.first[v], sections.last[v]));
  }
  return keys;
}

RunEnd GreedyContext::run(GreedyOrder order, Fit fit, Bytes give_up_above,
                          Clock::time_point deadline) {
  span_.assign(occupying_.size(), {kUnplaced, kUnplaced});
  stop_ = {};
  if (index_for(order) == GreedyIndex::Sweep) {
    const bool backwards = order == GreedyOrder::End;
    std::optional<SweepGreedy>& sweep = sweeps_[backwards ? 1 : 0];
    if (!sweep) sweep.emplace(problem_, occupying_, backwards);
    const RunEnd end = sweep->run(fit, give_up_above, deadline, span_);
    stop_ = sweep->stop();
    return end;
  }
  std::vector<int> free = order_of(order);
  return run_in(free, fit, give_up_above, deadline);
}

std::vector<int> GreedyContext::order_of(GreedyOrder order) {
  (void)keys();
  std::vector<int> free;  // the buffers a strategy decides
  for (std::size_t v = 0; v < occupying_.size(); ++v) {
    if (!problem_.buffers[occupying_[v]].fixed_offset) free.push_back(static_cast<int>(v));
  }
  sort_by(order, free);
  return free;
}

RunEnd GreedyContext::run_in(std::span<const int> free, Fit fit, Bytes give_up_above,
                             Clock::time_point deadline) {
  span_.assign(occupying_.size(), {kUnplaced, kUnplaced});
  stop_ = {};
  if (generic_ == GreedyIndex::Overlaps && !overlaps_) {
    overlaps_.emplace(lifetimes_, deadline);
    if (!overlaps_->complete()) {
      overlaps_.reset();
      return RunEnd::OutOfTime;
    }
  }
  if (generic_ == GreedyIndex::Scan) by_offset_.reset(occupying_.size());
  if (generic_ == GreedyIndex::TimeTree) {
    if (!tree_) tree_.emplace(lifetimes_);
    tree_->reset();
  }
  for (std::size_t v = 0; v < occupying_.size(); ++v) {
    const Buffer& b = problem_.buffers[occupying_[v]];
    if (b.fixed_offset) settle(static_cast<int>(v), *b.fixed_offset);  // obstacles first
  }
  const bool timed = deadline != Clock::time_point::max();
  const Clock::time_point started = Clock::now();
  for (std::size_t k = 0; k < free.size(); ++k) {
    const int v = free[k];
    const Bytes top = settle(v, place(v, fit));
    if (top > give_up_above) {
      stop_ = {v, top};
      return RunEnd::GaveUp;
    }
    if (timed && (k + 1) % kPlacementsPerClockRead == 0 &&
        out_of_time(started, deadline, k + 1, free.size())) {
      return RunEnd::OutOfTime;
    }
  }
  return RunEnd::Done;
}

// Past the deadline, or sure to pass it: once a sixteenth of the buffers is placed, a run whose
// pace so far would end after the deadline stops, since its plan would be lost anyway. (Later
// placements see more placed neighbours and cost more, so the pace only underestimates.)
bool GreedyContext::out_of_time(Clock::time_point started, Clock::time_point deadline,
                                std::size_t placed, std::size_t total) {
  const Clock::time_point now = Clock::now();
  if (now >= deadline) return true;
  if (placed < total / kProjectAfterShare) return false;
  const auto spent = std::chrono::duration<double>(now - started).count();
  const double remaining = std::chrono::duration<double>(deadline - now).count();
  return spent * static_cast<double>(total - placed) / static_cast<double>(placed) > remaining;
}

GreedyPlan GreedyContext::plan(GreedyOrder order, Fit fit) const {
  return plan_named(fmt::format("greedy:{}/{}", to_string(order), to_string(fit)));
}

GreedyPlan GreedyContext::plan_named(std::string algorithm) const {
  GreedyPlan plan;
  plan.algorithm = std::move(algorithm);
  plan.offsets.assign(problem_.buffers.size(), 0);
  for (std::size_t i = 0; i < problem_.buffers.size(); ++i) {
    plan.offsets[i] = problem_.buffers[i].fixed_offset.value_or(0);
  }
  for (std::size_t v = 0; v < occupying_.size(); ++v) plan.offsets[occupying_[v]] = span_[v].first;
  plan.arena_size = arena_size(problem_, plan.offsets);
  return plan;
}

std::string GreedyContext::describe_stop(GreedyOrder order, Fit fit) const {
  const auto v = static_cast<std::size_t>(stop_.buffer);
  const std::size_t i = occupying_[v];
  const Buffer& b = problem_.buffers[i];
  return fmt::format(
      "greedy:{}/{} would place buffer {} (id '{}', size {}, alignment {}, "
      "lifetime [{}, {})) to end at {} B",
      to_string(order), to_string(fit), i, b.id, b.size, b.alignment, b.lower, b.upper, stop_.top);
}

// Descending by a primary key, then by a secondary one; the problem's order breaks ties. The
// start order ascends by start instead (negating a start could overflow).
void GreedyContext::sort_by(GreedyOrder order, std::vector<int>& free) const {
  const OrderKeys& k = *keys_;
  const auto sort_descending = [&](const auto& primary, const auto& secondary) {
    std::sort(free.begin(), free.end(), [&](int a, int b) {
      const auto ua = static_cast<std::size_t>(a);
      const auto ub = static_cast<std::size_t>(b);
      if (primary[ua] != primary[ub]) return primary[ua] > primary[ub];
      if (secondary[ua] != secondary[ub]) return secondary[ua] > secondary[ub];
      return occupying_[ua] < occupying_[ub];
    });
  };
  switch (order) {
    case GreedyOrder::Size:
      return sort_descending(k.size, k.length);
    case GreedyOrder::Length:
      return sort_descending(k.length, k.size);
    case GreedyOrder::Area:
      return sort_descending(k.area, k.size);
    case GreedyOrder::Conflicts:
      return sort_descending(degrees_, k.size);
    case GreedyOrder::Pressure:
      return sort_descending(k.pressure, k.size);
    case GreedyOrder::Start: {
      std::vector<Time> later_first(k.start.size());
      std::transform(k.start.begin(), k.start.end(), later_first.begin(),
                     [](Time t) { return ~t; });  // ~t = -t - 1: reverses the order, never wraps
      return sort_descending(later_first, k.size);
    }
    case GreedyOrder::End:
      return sort_descending(k.end, k.size);
  }
}

// Records v at `offset`; returns its top.
Bytes GreedyContext::settle(int v, Bytes offset) {
  const auto i = static_cast<std::size_t>(v);
  span_[i] = {offset, offset + problem_.buffers[occupying_[i]].size};
  if (generic_ == GreedyIndex::Scan) by_offset_.insert(v, lifetimes_[i], offset, span_[i].second);
  if (generic_ == GreedyIndex::TimeTree) tree_->insert(v, offset, span_[i].second);
  return span_[i].second;
}

// The offset `fit` picks for buffer v among the gaps its placed neighbours leave.
Bytes GreedyContext::place(int v, Fit fit) {
  const auto i = static_cast<std::size_t>(v);
  const Buffer& b = problem_.buffers[occupying_[i]];
  GapFit gap(b.size, b.alignment, fit);
  if (generic_ == GreedyIndex::Scan) {
    by_offset_.feed(gap, lifetimes_[i]);
  } else if (generic_ == GreedyIndex::TimeTree) {
    tree_->feed(gap, v);
  } else {
    place_by_overlaps(v, gap);
  }
  return gap.offset();
}

void GreedyContext::place_by_overlaps(int v, GapFit& gap) {
  if (packable_) {
    // Sorting plain integers is about twice as fast as sorting pairs by a key: each begin
    // goes in the high bits, its position in taken_end_ (for the end) in the low ones.
    taken_keys_.clear();
    taken_end_.clear();
    for (const int u : overlaps_->neighbours(v)) {
      const auto [begin, end] = span_[static_cast<std::size_t>(u)];
      if (begin == kUnplaced) continue;
      taken_keys_.push_back(static_cast<std::uint64_t>(begin) << kPositionBits | taken_end_.size());
      taken_end_.push_back(end);
    }
    std::sort(taken_keys_.begin(), taken_keys_.end());
    for (const std::uint64_t key : taken_keys_) {
      if (gap.feed(static_cast<Bytes>(key >> kPositionBits),
                   taken_end_[static_cast<std::size_t>(key & kPositionMask)])) {
        return;
      }
    }
    return;
  }
  taken_.clear();
  for (const int u : overlaps_->neighbours(v)) {
    const auto j = static_cast<std::size_t>(u);
    if (span_[j].first != kUnplaced) taken_.push_back(span_[j]);
  }
  std::sort(taken_.begin(), taken_.end(),
            [](const auto& lhs, const auto& rhs) { return lhs.first < rhs.first; });
  for (const auto& [begin, end] : taken_) {
    if (gap.feed(begin, end)) return;
  }
}

}  // namespace detail

std::string_view to_string(GreedyOrder order) noexcept {
  switch (order) {
    case GreedyOrder::Size:
      return "size";
    case GreedyOrder::Length:
      return "length";
    case GreedyOrder::Area:
      return "area";
    case GreedyOrder::Conflicts:
      return "conflicts";
    case GreedyOrder::Pressure:
      return "pressure";
    case GreedyOrder::Start:
      return "start";
    case GreedyOrder::End:
      return "end";
  }
  return "unknown";
}

std::string_view to_string(Fit fit) noexcept { return fit == Fit::Best ? "best-fit" : "first-fit"; }

GreedyPlan greedy_plan(const Problem& problem, GreedyOrder order, Fit fit, GreedyIndex index) {
  detail::GreedyContext context(problem, index);
  const detail::RunEnd end =
      context.run(order, fit, kMaxArenaBytes, detail::GreedyContext::Clock::time_point::max());
  if (end != detail::RunEnd::Done) {
    throw InvalidArgument(fmt::format("no plan fits the largest arena supported, {} B: {}",
                                      kMaxArenaBytes, context.describe_stop(order, fit)));
  }
  return context.plan(order, fit);
}

}  // namespace memplan::plan
