// Which buffers are alive together: the overlap graph of a set of half-open lifetimes, kept as
// flat adjacency lists (CSR). One sweep builds it in O(n log n + E), E the overlapping pairs, so
// its cost follows the problem's real conflicts instead of all n² pairs. Both the greedy
// placement (the placed neighbours bound a buffer's gaps) and the exact search (placing a buffer
// raises its neighbours' lowest offsets) walk these lists in their hot loops.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "memplan/plan/problem.hpp"

namespace memplan::plan::detail {

struct Lifetime {
  Time lower = 0;
  Time upper = 0;  // half-open, lower < upper
};

// upper - lower, which passes INT64_MAX for lifetimes that span most of the time range: unsigned
// arithmetic is exact here because upper >= lower.
[[nodiscard]] inline std::uint64_t length_of(Time lower, Time upper) {
  return static_cast<std::uint64_t>(upper) - static_cast<std::uint64_t>(lower);
}

// The lifetimes of the chosen buffers of a problem, in the order given.
[[nodiscard]] std::vector<Lifetime> lifetimes_of(const Problem& problem,
                                                 std::span<const std::size_t> which);

// Number of neighbours of each lifetime, by binary search in O(n log n), without building the
// graph: a lifetime overlaps every other one that starts before it ends, except those that
// ended before it started.
[[nodiscard]] std::vector<std::int64_t> overlap_degrees(std::span<const Lifetime> lifetimes);

class OverlapIndex {
 public:
  using Clock = std::chrono::steady_clock;

  // Stops building at `deadline` (checked every thousand vertices), leaving the graph
  // incomplete: only complete graphs may be used.
  explicit OverlapIndex(std::span<const Lifetime> lifetimes,
                        Clock::time_point deadline = Clock::time_point::max());

  [[nodiscard]] bool complete() const { return complete_; }
  [[nodiscard]] std::span<const int> neighbours(int vertex) const {
    const auto v = static_cast<std::size_t>(vertex);
    return {targets_.data() + starts_[v], starts_[v + 1] - starts_[v]};
  }
  [[nodiscard]] std::size_t vertex_count() const { return starts_.size() - 1; }
  [[nodiscard]] std::size_t entry_count() const { return targets_.size(); }

 private:
  std::vector<std::size_t> starts_;  // neighbours of v are targets_[starts_[v], starts_[v+1])
  std::vector<int> targets_;
  bool complete_ = true;
};

}  // namespace memplan::plan::detail
