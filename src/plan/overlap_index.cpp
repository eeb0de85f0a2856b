// The overlap graph by a sweep in start order: a lifetime overlaps exactly the earlier-starting
// ones still alive when it starts. The sweep runs twice (count, then fill) so that the lists
// land in one flat array without an intermediate edge list.
#include "overlap_index.hpp"

#include <algorithm>
#include <numeric>

namespace memplan::plan::detail {

std::vector<Lifetime> lifetimes_of(const Problem& problem, std::span<const std::size_t> which) {
  std::vector<Lifetime> lifetimes;
  lifetimes.reserve(which.size());
  for (const std::size_t i : which) {
    lifetimes.push_back({problem.buffers[i].lower, problem.buffers[i].upper});
  }
  return lifetimes;
}

std::vector<std::int64_t> overlap_degrees(std::span<const Lifetime> lifetimes) {
  std::vector<Time> lowers;
  std::vector<Time> uppers;
  lowers.reserve(lifetimes.size());
  uppers.reserve(lifetimes.size());
  for (const Lifetime& l : lifetimes) {
    lowers.push_back(l.lower);
    uppers.push_back(l.upper);
  }
  std::sort(lowers.begin(), lowers.end());
  std::sort(uppers.begin(), uppers.end());
  std::vector<std::int64_t> degrees;
  degrees.reserve(lifetimes.size());
  for (const Lifetime& l : lifetimes) {
    const auto started_before_end = std::lower_bound(lowers.begin(), lowers.end(), l.upper);
    const auto ended_before_start = std::upper_bound(uppers.begin(), uppers.end(), l.lower);
    degrees.push_back((started_before_end - lowers.begin()) -
                      (ended_before_start - uppers.begin()) - 1);  // minus itself
  }
  return degrees;
}

namespace {

// Calls visit(earlier, later) once for every overlapping pair; false if the deadline came first.
template <typename Visit>
bool sweep_pairs(std::span<const Lifetime> lifetimes, std::span<const int> by_start,
                 std::vector<int>& alive, OverlapIndex::Clock::time_point deadline, Visit&& visit) {
  const bool timed = deadline != OverlapIndex::Clock::time_point::max();
  alive.clear();
  std::size_t visited = 0;
  for (const int v : by_start) {
    if (timed && (++visited & 1023) == 0 && OverlapIndex::Clock::now() >= deadline) return false;
    const Time start = lifetimes[static_cast<std::size_t>(v)].lower;
    std::size_t kept = 0;
    for (const int a : alive) {
      if (lifetimes[static_cast<std::size_t>(a)].upper <= start) continue;  // died: drop it
      alive[kept++] = a;
      visit(a, v);
    }
    alive.resize(kept);
    alive.push_back(v);
  }
  return true;
}

}  // namespace

OverlapIndex::OverlapIndex(std::span<const Lifetime> lifetimes, Clock::time_point deadline) {
  const std::size_t n = lifetimes.size();
  std::vector<int> by_start(n);
  std::iota(by_start.begin(), by_start.end(), 0);
  std::sort(by_start.begin(), by_start.end(), [&](int a, int b) {
    return lifetimes[static_cast<std::size_t>(a)].lower <
           lifetimes[static_cast<std::size_t>(b)].lower;
  });
  std::vector<int> alive;
  std::vector<std::size_t> degree(n + 1, 0);
  complete_ = sweep_pairs(lifetimes, by_start, alive, deadline, [&](int a, int b) {
    ++degree[static_cast<std::size_t>(a)];
    ++degree[static_cast<std::size_t>(b)];
  });
  if (!complete_) {
    starts_.assign(n + 1, 0);
    return;
  }
  starts_.assign(n + 1, 0);
  for (std::size_t v = 0; v < n; ++v) starts_[v + 1] = starts_[v] + degree[v];
  targets_.resize(starts_[n]);
  std::vector<std::size_t> fill(starts_.begin(), starts_.end() - 1);
  complete_ = sweep_pairs(lifetimes, by_start, alive, deadline, [&](int a, int b) {
    targets_[fill[static_cast<std::size_t>(a)]++] = b;
    targets_[fill[static_cast<std::size_t>(b)]++] = a;
  });
}

}  // namespace memplan::plan::detail
